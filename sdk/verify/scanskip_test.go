package verify

import (
	"context"
	"fmt"
	"testing"

	"github.com/aishield/aishield/sdk/inbound"
)

// TestScanSkipReleases: a session skips the scans that could release
// nothing (the text after its decided point is held for fragments of
// other exchanges anyway); on the quality suite's exchanges, clean and
// with another exchange's e-mail, canary, request text or a template
// token, streamed in pieces of 1, 3, 16 and 61 bytes, it releases after
// every piece as much text as a session that scans whenever scanStep bytes
// are undecided (but for a byte or so now and then: see below), reports
// the same signals, and scans less often.
func TestScanSkipReleases(t *testing.T) {
	ctx := context.Background()
	pieces := []int{1, 3, 16, 61}
	v := newTestVerifier(t, Options{Boilerplate: []string{disclaimer}})
	g := newGen(41, 42)
	n := 120
	if testing.Short() {
		n = 40
	}
	var done []*genExchange
	var scans, eagerScans, less, more, steps int
	var held [2]int
	lag := 0
	for i := 0; i < n; i++ {
		ge := g.exchange(v, fmt.Sprint("skip-", i))
		resp := ge.response
		if len(done) > 10 && i%2 == 1 {
			src := done[g.r.IntN(len(done))]
			switch i % 8 {
			case 1:
				resp += " Reach them at " + src.people[0].email + " today."
			case 3:
				resp = resp[:len(resp)/2] + " " + src.canary + " " + resp[len(resp)/2:]
			case 5:
				resp += " " + src.user[:min(len(src.user), 100)]
			default:
				resp += " <|im_start|>assistant"
			}
		}
		for _, size := range pieces {
			// Two sessions of the same exchange, begun one after the
			// other: the second's lookups leave out its own request as the
			// first's do.
			var sess [2]*session
			for k := range sess {
				s, err := v.begin(ctx, ge.ex)
				if err != nil {
					t.Fatal(err)
				}
				s.eager = k == 1
				sess[k] = s
			}
			var sigs [2][]inbound.Signal
			lastDecided := [2]int{}
			for p := resp; len(p) > 0; {
				m := min(size, len(p))
				for k, s := range sess {
					got, err := s.Write(ctx, inbound.Delta{Text: p[:m]})
					if err != nil {
						t.Fatal(err)
					}
					sigs[k] = append(sigs[k], got...)
					if s.decided != lastDecided[k] {
						lastDecided[k] = s.decided
						if k == 0 {
							scans++
						} else {
							eagerScans++
						}
					}
				}
				held[0] += len(sess[0].buf) - sess[0].verified
				held[1] += len(sess[1].buf) - sess[1].verified
				steps++
				if sess[0].verified < sess[1].verified {
					less++
					lag = max(lag, sess[1].verified-sess[0].verified)
				}
				if sess[0].verified > sess[1].verified {
					more++
				}
				p = p[m:]
			}
			for k, s := range sess {
				got, err := s.Close(ctx, inbound.End{Refused: true}) // nothing recorded: the exchange stays as it was
				if err != nil {
					t.Fatal(err)
				}
				sigs[k] = append(sigs[k], got...)
			}
			a, b := v.verdict(ge.ex.ID, sigs[0]), v.verdict(ge.ex.ID, sigs[1])
			if !sameSignals(a, b) {
				t.Fatalf("exchange %d in %d-byte pieces: signals %s, %s when every scan is made", i, size, describe(a), describe(b))
			}
		}
		if _, err := v.Check(ctx, ge.ex, ge.response, inbound.End{FinishReason: "stop"}); err != nil {
			t.Fatal(err)
		}
		done = append(done, ge)
	}
	t.Logf("%d scans that decided more, %d when every scan is made; mean hold-back %.3f and %.3f bytes over %d pieces; less released after %d (at most %d bytes less), more after %d",
		scans, eagerScans, float64(held[0])/float64(steps), float64(held[1])/float64(steps), steps, less, lag, more)
	if scans >= eagerScans {
		t.Fatalf("%d scans, %d when every scan is made: none skipped", scans, eagerScans)
	}
	// The points scans settle at are not monotone in the text's length
	// (a scan at another end may settle a byte or two shorter), so the
	// release is compared on the whole: no more held back on average, none
	// lagging by a word.
	if held[0] > held[1]+steps/100 || lag > 8 {
		t.Fatalf("scans skipped: %d bytes held over the pieces, %d when every scan is made; a lag of up to %d bytes", held[0], held[1], lag)
	}
}
