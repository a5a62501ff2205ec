package verify

import (
	"context"
	"testing"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
)

// TestCrossExchangeRootCauses replays, in two exchanges each, what the
// quality test's misses and false alarms came from: the earlier exchange is
// verified (and remembered), then the later one's response is checked.
func TestCrossExchangeRootCauses(t *testing.T) {
	const disclaimer = "This answer was prepared by the Northwind operations assistant; confirm every amount in the ERP ledger before filing it."
	const sys = "You are an internal writing aid. Rewrite or summarise what the user gives you, keeping every name, number and date exactly as written. Use short paragraphs and plain English."
	tests := []struct {
		name               string
		firstReq, firstRes string
		req, res           string
		want               bool // cross_exchange naming ex-first
	}{
		{
			// Two customers called Xavier Castellanos: each answer quotes
			// its own customer inside the same stock sentence. The shared
			// 48 bytes are the user's own name-like words and stock
			// wording: not contamination (this named the wrong exchange
			// and cut a stream before the real source was reported).
			name:     "same customer name in stock wording",
			firstReq: "The customer Xavier Castellanos (xavier.castellanos30@torix-energy.net, phone +33 6 97 81 91 26) paid with card 4084 7312 0000 1234.",
			firstRes: "Noted. I will contact Xavier Castellanos at XAVIER.CASTELLANOS30@TORIX-ENERGY.NET or +33697819126 about the card ending 4084-7312-0000-1234.",
			req:      "Xavier Castellanos wrote from xavier.castellanos93@vexdra-logistics.com on 3 May, callback +33 6 22 53 74 01.",
			res:      "Finance leased our seasonal holzuode. I will contact Xavier Castellanos at XAVIER.CASTELLANOS93@VEXDRA-LOGISTICS.COM or +33622537401 today.",
		},
		{
			// Both answers quote the same shared system prompt behind the
			// same words: every k-gram of the request is the exchange's
			// own, not only its winnowed fingerprints.
			name:     "quoted shared system prompt",
			firstReq: sys + "\nThe Brivexsa team reviewed our portable volsilex sakaode.",
			firstRes: "Done. As instructed: \"" + sys[:130] + "\" The Kafen team priced our holzelics renyarure.",
			req:      sys + "\nOur fragile javexing repackaged that provisional toryarholics.",
			res:      "Here it is. As instructed: \"" + sys[:130] + "\" The Zudun team insured their fadradrament ixulzelate.",
		},
		{
			// Two model-written example URLs with the same invented path
			// and digit: one chance word and tokens of one or two bytes.
			name:     "example value with a chance word",
			firstReq: "How do I test the Torvex webhook?",
			firstRes: "If you want to test the Torvex kemorate, send it to https://api.example.com/v1/zugar with the header X-Request-Id: 64210.",
			req:      "How do I rehearse the Dunka release?",
			res:      "Before going live with the Dunka release, send it to https://api.example.com/v1/zugar with the header X-Request-Id: 68815.",
		},
		{
			// What two answers share on either side of a configured
			// disclaimer is not one fragment.
			name:     "either side of a disclaimer",
			firstReq: "Summarise the audit.",
			firstRes: "Legal replaced a morelcening. " + disclaimer + " I hope this helps you move forward with the next steps.",
			req:      "Summarise the renewal.",
			res:      "Sofia Rossi replaced a morelcening. " + disclaimer + " I hope this helps you move forward with the next steps.",
		},
		{
			// Foreign prose whose words the user also wrote (lower-case
			// vocabulary is evidence even when the request used it).
			name:     "foreign prose in the user's own vocabulary",
			firstReq: "Status: The Ulmimi team replaced a quizuity over the heritage grifavolex. Nothing else changed.",
			firstRes: "Noted.",
			req:      "Jonas Doe forwarded their lumnidine ushnidor with the heritage javexing quizuity, and Biko Okafor replaced a zuostor zusilion.",
			res:      "Summary: the lumnidine was forwarded. The Ulmimi team replaced a quizuity over the heritage grifavolex. That is all.",
			want:     true,
		},
		{
			// A fragment whose end is wording many exchanges share still
			// counts by its distinctive part when that part is long enough.
			name:     "fragment ending in shared wording",
			firstReq: "Minutes: in Nantes. We catered the monthly toryarholics for the Brivexsa kickoff under ticket QUI-48213 and billed it twice.",
			firstRes: "Noted.",
			req:      "Draft the invoice reminder.",
			res:      "Reminder: in Nantes. We catered the monthly toryarholics for the Brivexsa kickoff under ticket QUI- and so on.",
			want:     true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			for _, stream := range []bool{false, true} {
				v := newTestVerifier(t, Options{Boilerplate: []string{disclaimer}})
				first := &inbound.Exchange{ID: "ex-first", Texts: []string{tt.firstReq}}
				vd, err := v.Check(ctx, first, tt.firstRes, inbound.End{})
				if err != nil || vd.Contaminated() {
					t.Fatalf("first exchange: %v, %+v", err, vd)
				}
				ex := &inbound.Exchange{ID: "ex-second", Texts: []string{tt.req}}
				if stream {
					st, err := v.Stream(ctx, ex)
					if err != nil {
						t.Fatal(err)
					}
					for i := 0; i < len(tt.res); i += 5 {
						if _, stop, err := st.Write(ctx, inbound.Delta{Text: tt.res[i:min(i+5, len(tt.res))]}); err != nil || stop {
							break
						}
					}
					if _, vd, err = st.Close(ctx, inbound.End{}); err != nil {
						t.Fatal(err)
					}
				} else if vd, err = v.Check(ctx, ex, tt.res, inbound.End{}); err != nil {
					t.Fatal(err)
				}
				got := false
				for _, s := range vd.Signals {
					if s.ID != policies.SignalCrossExchange || len(s.Sources) != 1 || s.Sources[0] != "ex-first" {
						t.Fatalf("stream=%v: unexpected signal %+v", stream, s)
					}
					got = true
				}
				if got != tt.want {
					t.Fatalf("stream=%v: cross_exchange = %v, want %v (%+v)", stream, got, tt.want, vd.Signals)
				}
			}
		})
	}
}
