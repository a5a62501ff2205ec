package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func newTestVerifier(t testing.TB, opts Options) *Verifier {
	t.Helper()
	if opts.HashKey == nil && opts.Scanner == nil {
		opts.HashKey = testKey
	}
	if opts.CanaryKey == nil {
		opts.CanaryKey = testKey
	}
	v, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ids(vd *Verdict) []string {
	var out []string
	for _, s := range vd.Signals {
		out = append(out, s.ID)
	}
	return out
}

const otherRequest = "Contract review for Northwind Traders: the penalty clause in section 7 now caps damages at 40 percent of annual fees, and the renewal notice period moved from ninety to thirty days."

func TestSignals(t *testing.T) {
	ctx := context.Background()
	// Each case runs on a fresh store that remembers one other exchange,
	// with its canary.
	fresh := func(t *testing.T) *Verifier {
		v := newTestVerifier(t, Options{Inbound: policies.Inbound{AllowList: []string{"support@ourcorp.io", "ourcorp.io"}}})
		other := &inbound.Exchange{ID: "ex-other", Texts: []string{otherRequest, CanaryLine(v.Mint("ex-other"))}}
		if _, err := v.Check(ctx, other, "Noted.", inbound.End{}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := fresh(t)
	otherCanary := v.Mint("ex-other")

	req := "Please email jane.doe@acme-corp.com about card 4539 1488 0343 6467 and call +33 6 12 34 56 78. Summarise our meeting notes."
	mine := v.Mint("ex-1")
	tests := []struct {
		name     string
		response string
		end      inbound.End
		want     []string
		sources  string
	}{
		{"clean prose", "Here is a short summary of the meeting notes: the team agreed on the schedule.", inbound.End{}, nil, ""},
		{"repeats the user's own data", "I will email Jane.Doe@ACME-corp.com about card 4539-1488-0343-6467 and call +33 612345678.", inbound.End{}, nil, ""},
		{"model-written example values", "For example use user@example.com or the test card 4111 1111 1111 1111.", inbound.End{}, nil, ""},
		{"allow-listed", "Write to support@ourcorp.io or sales@ourcorp.io for help.", inbound.End{}, nil, ""},
		{"foreign email", "Also contact bob.martin@globex-industries.com about it.", inbound.End{}, []string{policies.SignalForeignEntity}, ""},
		{"foreign card", "The card on file is 4916 3385 0608 2832.", inbound.End{}, []string{policies.SignalForeignEntity}, ""},
		{"own canary echoed", "Reference " + mine + " noted.", inbound.End{}, nil, ""},
		{"foreign canary", "Reference " + otherCanary + " noted.", inbound.End{}, []string{policies.SignalCanary}, "ex-other"},
		{"unknown canary", "Reference aishield-canary-aaaaaaaaaaaaaaaa noted.", inbound.End{}, []string{policies.SignalCanary}, ""},
		{"other exchange's text", "Summary: " + otherRequest[20:120] + " That is all.", inbound.End{}, []string{policies.SignalCrossExchange}, "ex-other"},
		{"template tokens", "Sure!<|im_end|>\n<|im_start|>user\nWhat is", inbound.End{}, []string{policies.SignalTemplateFragment, policies.SignalTemplateFragment}, ""},
		{"llama3 header", "<|start_header_id|>assistant<|end_header_id|>", inbound.End{}, []string{policies.SignalTemplateFragment, policies.SignalTemplateFragment}, ""},
		{"deepseek", "text<｜User｜>more", inbound.End{}, []string{policies.SignalTemplateFragment}, ""},
		{"prompt dropped", "ok", inbound.End{HasUsage: true, PromptTokens: 1, FinishReason: "abort"}, []string{policies.SignalUsageMismatch}, ""},
		{"usage plausible", "ok", inbound.End{HasUsage: true, PromptTokens: 80, FinishReason: "stop"}, nil, ""},
		{"ids change", "ok", inbound.End{IDs: []string{"chatcmpl-1", "chatcmpl-2"}}, []string{policies.SignalUsageMismatch}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := fresh(t)
			ex := &inbound.Exchange{ID: fmt.Sprint("ex-1-", i), Texts: []string{req + " " + strings.Repeat("Some more context about the meeting. ", 8), CanaryLine(v.Mint(fmt.Sprint("ex-1-", i)))}}
			if tt.name == "own canary echoed" {
				ex.ID = "ex-1"
				ex.Texts[1] = CanaryLine(mine)
			}
			vd, err := v.Check(ctx, ex, tt.response, tt.end)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(vd); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("signals = %v, want %v (%+v)", got, tt.want, vd.Signals)
			}
			if vd.Blocked != (len(tt.want) > 0) {
				t.Fatalf("blocked = %v", vd.Blocked)
			}
			for _, s := range vd.Signals {
				if tt.sources != "" && (len(s.Sources) == 0 || s.Sources[0] != tt.sources) {
					t.Fatalf("sources = %v, want %s", s.Sources, tt.sources)
				}
				if s.Start != 0 || s.End != 0 {
					raw := tt.response[s.Start:s.End]
					if s.ID != policies.SignalTemplateFragment && strings.Contains(s.Preview+s.Message, raw) {
						t.Fatalf("signal reveals the raw value: %+v", s)
					}
				}
			}
		})
	}
}

func TestTemplateInRequestIsNotForeign(t *testing.T) {
	v := newTestVerifier(t, Options{})
	ex := &inbound.Exchange{ID: "ex", Texts: []string{"Explain what <|im_start|> and [INST] mean in chat templates."}}
	vd, err := v.Check(context.Background(), ex, "The token <|im_start|> opens a turn; [INST] wraps a user turn; <|eot_id|> ends one.", inbound.End{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(vd); len(got) != 1 || vd.Signals[0].Preview != "<|eot_id|>" {
		t.Fatalf("signals = %+v, want only <|eot_id|>", vd.Signals)
	}
}

func TestPolicyActions(t *testing.T) {
	v := newTestVerifier(t, Options{Inbound: policies.Inbound{Signals: map[string]policies.SignalAction{
		policies.SignalTemplateFragment: policies.SignalFlag,
		policies.SignalForeignEntity:    policies.SignalOff,
	}}})
	ex := &inbound.Exchange{ID: "ex", Texts: []string{"hello"}}
	vd, err := v.Check(context.Background(), ex, "mail bob.martin@globex-industries.com <|im_end|>", inbound.End{})
	if err != nil {
		t.Fatal(err)
	}
	if vd.Blocked || len(vd.Signals) != 1 || vd.Signals[0].Action != policies.SignalFlag {
		t.Fatalf("verdict = %+v", vd)
	}
}

func TestSharedScannerFindings(t *testing.T) {
	// The guard passes its outbound findings; the verifier uses them
	// instead of rescanning when it shares the scanner.
	sc, err := classifiers.New(classifiers.Options{HashKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	v := newTestVerifier(t, Options{Scanner: sc})
	text := "card 4539 1488 0343 6467"
	fs, _ := sc.ScanString(context.Background(), text)
	ex := &inbound.Exchange{ID: "ex", Texts: []string{text}, Findings: [][]classifiers.Finding{fs}}
	vd, err := v.Check(context.Background(), ex, "Your card 4539148803436467 is noted.", inbound.End{})
	if err != nil || vd.Contaminated() {
		t.Fatalf("verdict = %+v, %v", vd, err)
	}
}

func TestStreamHoldsBackAndCuts(t *testing.T) {
	ctx := context.Background()
	req := "Summarise the customer's ticket politely in two sentences please."
	foreign := "bob.martin@globex-industries.com"
	response := "Thank you for reaching out. " + strings.Repeat("We reviewed the ticket carefully and the fix ships soon. ", 10) + "Contact " + foreign + " for the refund."
	for _, chunk := range []int{1, 3, 7, 64} {
		v := newTestVerifier(t, Options{})
		st, err := v.Stream(ctx, &inbound.Exchange{ID: fmt.Sprint("s", chunk), Texts: []string{req}, Streamed: true})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		stopped := false
		for p := response; len(p) > 0 && !stopped; {
			n := min(chunk, len(p))
			rel, stop, err := st.Write(ctx, inbound.Delta{Text: p[:n], ID: "chatcmpl-1"})
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString(rel)
			stopped = stop
			p = p[n:]
			if strings.Contains(out.String(), "bob.martin@") || strings.Contains(out.String(), "bob.ma") {
				t.Fatalf("chunk %d: released part of the foreign value", chunk)
			}
		}
		rest, vd, err := st.Close(ctx, inbound.End{})
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(rest)
		if !vd.Blocked || ids(vd)[0] != policies.SignalForeignEntity {
			t.Fatalf("chunk %d: verdict %+v", chunk, vd)
		}
		if !strings.HasPrefix(response, out.String()) || out.Len() == 0 {
			t.Fatalf("chunk %d: released %q is not a prefix", chunk, out.String())
		}
	}
	// A clean stream is released whole, unchanged.
	v := newTestVerifier(t, Options{})
	st, _ := v.Stream(ctx, &inbound.Exchange{ID: "clean", Texts: []string{req}})
	var out strings.Builder
	clean := strings.Repeat("All good here, nothing foreign. ", 30)
	for i := 0; i < len(clean); i += 5 {
		rel, _, _ := st.Write(ctx, inbound.Delta{Text: clean[i:min(i+5, len(clean))]})
		out.WriteString(rel)
	}
	rest, vd, _ := st.Close(ctx, inbound.End{})
	out.WriteString(rest)
	if out.String() != clean || vd.Contaminated() {
		t.Fatalf("clean stream: %v %+v", out.String() == clean, vd)
	}
}

func TestStreamIDChange(t *testing.T) {
	ctx := context.Background()
	v := newTestVerifier(t, Options{})
	s, _ := v.Begin(ctx, &inbound.Exchange{ID: "ex", Texts: []string{"hi"}})
	sigs, _ := s.Write(ctx, inbound.Delta{Text: "Hel", ID: "a", Model: "m"})
	if len(sigs) != 0 {
		t.Fatal(sigs)
	}
	sigs, _ = s.Write(ctx, inbound.Delta{Text: "lo", ID: "b", Model: "m"})
	if len(sigs) != 1 || sigs[0].ID != policies.SignalUsageMismatch {
		t.Fatalf("signals = %+v", sigs)
	}
	sigs, _ = s.Close(ctx, inbound.End{IDs: []string{"a", "b"}})
	if len(sigs) != 0 {
		t.Fatalf("reported twice: %+v", sigs)
	}
}

func TestCanaryFormat(t *testing.T) {
	v := newTestVerifier(t, Options{})
	c := v.Mint("exchange-42")
	if len(c) != CanaryLen || !strings.HasPrefix(c, CanaryPrefix) || c != v.Mint("exchange-42") || c == v.Mint("exchange-43") {
		t.Fatalf("canary %q", c)
	}
	line, err := v.MintCanary(context.Background(), &inbound.Exchange{ID: "exchange-42"})
	if err != nil || !strings.Contains(line, c) {
		t.Fatalf("MintCanary = %q, %v", line, err)
	}
	if got := EmbedCanary("You are helpful.", c); !strings.HasPrefix(got, "You are helpful.\n\n") || !strings.Contains(got, c) {
		t.Fatalf("EmbedCanary = %q", got)
	}
	var found []string
	findCanaries([]byte("x"+c+" y aishield-canary-short aishield-canary-"+strings.Repeat("a", 20)), func(h canaryHit) { found = append(found, h.token) })
	if len(found) != 1 || found[0] != c {
		t.Fatalf("found %v", found)
	}
}

// TestSourcedNames checks the rule for detectors whose values answers
// contain legitimately (Options.Sourced, person names by default): a name
// the request did not contain is a foreign entity only when another
// exchange's request carried it, named as the source, and not when many
// did. Each case runs plain and streamed in pieces of 5 bytes.
func TestSourcedNames(t *testing.T) {
	ctx := context.Background()
	const (
		otherReq = "Discharge letter. Patient: Amélie Fontaine, readmitted on Tuesday; see Dr Oliver Renaud."
		req      = "Summarise the letter from Quentin Arnaud about the heating contract."
	)
	tests := []struct {
		name     string
		sourced  []string
		common   int // exchanges besides ex-other whose requests name Albert Einstein
		response string
		want     string // the foreign signal's detector, "" for none
		source   string
	}{
		{"name of another exchange's request", nil, 0, "The patient Amélie Fontaine was readmitted.", "pii.person_name", "ex-other"},
		{"after a title, in capitals", nil, 0, "Ask Dr OLIVER RENAUD about it.", "pii.person_name", "ex-other"},
		{"name no exchange sent", nil, 0, "As Albert Einstein put it, keep it simple.", "", ""},
		{"the request's own name", nil, 0, "Quentin Arnaud asks about the heating contract.", "", ""},
		{"name many exchanges sent", nil, DefaultMaxDocFreq + 1, "As Albert Einstein put it, keep it simple.", "", ""},
		{"name a few exchanges sent", nil, DefaultMaxDocFreq - 1, "As Albert Einstein put it, keep it simple.", "pii.person_name", ""},
		{"no sourced detectors", []string{}, 0, "As Albert Einstein put it, keep it simple.", "pii.person_name", ""},
		{"other detectors need no source", nil, 0, "Write to bob.martin@globex-industries.com today.", "pii.email", ""},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				v := newTestVerifier(t, Options{Sourced: tt.sourced})
				if _, err := v.Check(ctx, &inbound.Exchange{ID: "ex-other", Texts: []string{otherReq}}, "Noted.", inbound.End{}); err != nil {
					t.Fatal(err)
				}
				for i := range tt.common {
					ex := &inbound.Exchange{ID: fmt.Sprint("ex-physics-", i), Texts: []string{fmt.Sprintf("Question %d: what did Albert Einstein say about simplicity?", i)}}
					if _, err := v.Check(ctx, ex, "Noted.", inbound.End{}); err != nil {
						t.Fatal(err)
					}
				}
				ex := &inbound.Exchange{ID: "ex-1", Texts: []string{req}}
				var vd *Verdict
				if stream {
					st, err := v.Stream(ctx, ex)
					if err != nil {
						t.Fatal(err)
					}
					for p := tt.response; len(p) > 0 && !st.Verdict().Blocked; {
						k := min(len(p), 5)
						if _, _, err := st.Write(ctx, inbound.Delta{Text: p[:k]}); err != nil {
							t.Fatal(err)
						}
						p = p[k:]
					}
					if _, vd, err = st.Close(ctx, inbound.End{}); err != nil {
						t.Fatal(err)
					}
				} else {
					var err error
					if vd, err = v.Check(ctx, ex, tt.response, inbound.End{}); err != nil {
						t.Fatal(err)
					}
				}
				if tt.want == "" {
					if vd.Contaminated() {
						t.Fatalf("unexpected signals %+v", vd.Signals)
					}
					return
				}
				if len(vd.Signals) != 1 || vd.Signals[0].ID != policies.SignalForeignEntity || vd.Signals[0].Detector != tt.want || !vd.Blocked {
					t.Fatalf("signals %+v, want one %s %s", vd.Signals, policies.SignalForeignEntity, tt.want)
				}
				s := vd.Signals[0]
				if tt.source != "" && (len(s.Sources) != 1 || s.Sources[0] != tt.source) {
					t.Fatalf("sources %v, want [%s]", s.Sources, tt.source)
				}
				if raw := strings.ToLower(tt.response[s.Start:s.End]); strings.Contains(strings.ToLower(s.Preview+s.Message), raw) {
					t.Fatalf("signal reveals the raw value: %+v", s)
				}
			})
		}
	}
}

// TestScannerAllow: a value the scanner allows (classifiers.Options.Allow,
// a policy's scan.allow) is never foreign, even when another exchange's
// request carried it; other values still are.
func TestScannerAllow(t *testing.T) {
	ctx := context.Background()
	sc, err := classifiers.New(classifiers.Options{HashKey: testKey, Allow: []string{"Dr Oliver Renaud", "help@globex-industries.com"}})
	if err != nil {
		t.Fatal(err)
	}
	v := newTestVerifier(t, Options{Scanner: sc})
	other := &inbound.Exchange{ID: "ex-other", Texts: []string{"Patient: Amélie Fontaine; see Dr Oliver Renaud."}}
	if _, err := v.Check(ctx, other, "Noted.", inbound.End{}); err != nil {
		t.Fatal(err)
	}
	vd, err := v.Check(ctx, &inbound.Exchange{ID: "ex-1", Texts: []string{"Who do I ask about the heating contract?"}},
		"Ask Oliver Renaud or HELP@globex-industries.com; Amélie Fontaine also knows.", inbound.End{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vd.Signals) != 1 || vd.Signals[0].Preview != "A. F." || !slices.Equal(vd.Signals[0].Sources, []string{"ex-other"}) {
		t.Errorf("signals %+v, want only Amélie Fontaine's, from ex-other", vd.Signals)
	}
}

// TestPolicySourced: a policy's inbound.sourced replaces the default list
// of sourced detectors (verify.Options.Sourced still wins).
func TestPolicySourced(t *testing.T) {
	ctx := context.Background()
	v := newTestVerifier(t, Options{Inbound: policies.Inbound{Sourced: []string{"pii.email"}}})
	vd, err := v.Check(ctx, &inbound.Exchange{ID: "ex-1", Texts: []string{"Who handles the heating contract?"}},
		"Ask Oliver Renaud, or write to bob.martin@globex-industries.com.", inbound.End{})
	if err != nil {
		t.Fatal(err)
	}
	// The e-mail needs a source now and has none; the name is an ordinary
	// detector's value and needs none.
	if len(vd.Signals) != 1 || vd.Signals[0].Detector != "pii.person_name" {
		t.Errorf("signals %+v, want the name only", vd.Signals)
	}
}

// TestStreamHoldBack: a session holds back what may still turn out to be
// foreign material, whole, and little else: the last fingerprint window
// and its slack in clean prose.
func TestStreamHoldBack(t *testing.T) {
	ctx := context.Background()
	prose := "Thank you for reaching out. We reviewed the ticket carefully and the fix ships soon. "
	for _, tc := range []struct {
		name, text string
		held       string // must be held whole
	}{
		{"prose", prose + prose, ""},
		{"e-mail", prose + "Write to bob.martin@globex-ind", "bob.martin@globex-ind"},
		{"phone", prose + "Call +33 6 12 34 ", "+33 6 12 34 "},
		{"name", prose + "Ask Dr Oliver Ren", "Oliver Ren"},
		{"banner", prose + "This is for internal use", "for internal use"},
		{"template", prose + "Done.<|im_st", "<|im_st"},
		{"canary", prose + "Ref aishield-canary-abcd", "aishield-canary-abcd"},
		{"card", prose + "Card 4539 1488 0343 6467 then", "4539 1488 0343 6467 then"},
	} {
		v := newTestVerifier(t, Options{})
		s, err := v.begin(ctx, &inbound.Exchange{ID: "hold-" + tc.name, Texts: []string{"Summarise the ticket."}})
		if err != nil {
			t.Fatal(err)
		}
		most := 0
		for p := tc.text; len(p) > 0; {
			k := min(3, len(p))
			if _, err := s.Write(ctx, inbound.Delta{Text: p[:k]}); err != nil {
				t.Fatal(err)
			}
			p = p[k:]
			if len(s.buf) > 64 {
				most = max(most, s.HoldBack())
			}
		}
		held := tc.text[len(tc.text)-s.HoldBack():]
		t.Logf("%-8s held %q (%d bytes at most after the first 64)", tc.name, held, most)
		if !strings.HasSuffix(held, tc.held) {
			t.Errorf("%s: held %q, want %q held whole", tc.name, held, tc.held)
		}
		if tc.held == "" && most > 48 {
			t.Errorf("%s: held up to %d bytes of clean prose", tc.name, most)
		}
		if len(held) > len(tc.held)+48 {
			t.Errorf("%s: held %q, more than %q and a fingerprint window", tc.name, held, tc.held)
		}
		s.release()
	}
}

// TestStreamHoldBackBounded: what a session holds back for the sake of
// fingerprints is bounded by Verifier.HoldBack, even where the text
// normalises to next to nothing (a long run of white space).
func TestStreamHoldBackBounded(t *testing.T) {
	ctx := context.Background()
	v := newTestVerifier(t, Options{})
	s, err := v.begin(ctx, &inbound.Exchange{ID: "spaces", Texts: []string{"Summarise the ticket."}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.release()
	text := "We reviewed the ticket carefully and" + strings.Repeat(" ", 4000) + "the fix ships soon"
	for p := text; len(p) > 0; p = p[min(len(p), 7):] {
		if _, err := s.Write(ctx, inbound.Delta{Text: p[:min(len(p), 7)]}); err != nil {
			t.Fatal(err)
		}
		if hb := s.HoldBack(); hb > v.HoldBack() {
			t.Fatalf("held back %d bytes after %d, more than %d", hb, len(s.buf), v.HoldBack())
		}
	}
}

// TestPromptCountBeforeText: a prompt count reported before the answer's
// text (Anthropic's message_start) is checked on that piece, so a stream
// whose prompt the provider did not process is refused before any text
// goes out, and the count is not reported again at the end. A plausible
// early count raises nothing, and the end's count is still checked.
func TestPromptCountBeforeText(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("The quarterly plan covers hiring, budget and the office move. ", 12)
	for _, tt := range []struct {
		name         string
		early, final int
		atWrite      int // usage_mismatch signals from the first piece
		atClose      int // and from Close
	}{
		{"dropped early", 1, 1, 1, 0},
		{"plausible early, dropped at the end", 150, 1, 0, 1},
		{"plausible", 150, 150, 0, 0},
		{"no early count", 0, 1, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := newTestVerifier(t, Options{})
			s, err := v.Begin(ctx, &inbound.Exchange{ID: "ex-" + tt.name, Texts: []string{long}})
			if err != nil {
				t.Fatal(err)
			}
			count := func(sigs []inbound.Signal) int {
				n := 0
				for _, sg := range sigs {
					if sg.ID == policies.SignalUsageMismatch {
						n++
					}
				}
				return n
			}
			sigs, err := s.Write(ctx, inbound.Delta{ID: "msg_1", PromptTokens: tt.early})
			if err != nil {
				t.Fatal(err)
			}
			if got := count(sigs); got != tt.atWrite {
				t.Fatalf("first piece: %d usage signals, want %d (%+v)", got, tt.atWrite, sigs)
			}
			if _, err := s.Write(ctx, inbound.Delta{Text: "Noted, thanks."}); err != nil {
				t.Fatal(err)
			}
			sigs, err = s.Close(ctx, inbound.End{IDs: []string{"msg_1"}, HasUsage: true, PromptTokens: tt.final, FinishReason: "end_turn"})
			if err != nil {
				t.Fatal(err)
			}
			if got := count(sigs); got != tt.atClose {
				t.Fatalf("close: %d usage signals, want %d (%+v)", got, tt.atClose, sigs)
			}
		})
	}
}
