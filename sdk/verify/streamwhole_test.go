package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aishield/aishield/sdk/inbound"
)

// TestStreamedAgreesWithWhole: on a corpus of the quality suite's
// exchanges, clean and contaminated (another exchange's e-mail, canary, a
// 64 to 160-byte window of its request, a chat-template token), a stream
// in pieces of 1, 3, 16 and 61 bytes gets the verdict the whole answer gets:
// the same blocking and the same signals (ID, detector, sources, span),
// with every exchange recorded alike; a blocked stream is cut at its first
// blocking signal, so its signals are those of the whole answer up to it
// (but for a value the cut falls inside of). Each piece size has its own
// verifier, fed the same exchanges in the same order as the whole one.
func TestStreamedAgreesWithWhole(t *testing.T) {
	ctx := context.Background()
	pieces := []int{1, 3, 16, 61}
	mk := func() *Verifier { return newTestVerifier(t, Options{Boilerplate: []string{disclaimer}}) }
	whole := mk()
	streamed := make([]*Verifier, len(pieces))
	for i := range streamed {
		streamed[i] = mk()
	}
	g := newGen(31, 32)
	var done []*genExchange
	n := 240
	if testing.Short() {
		n = 80
	}
	contaminated, blocked := 0, 0
	for i := 0; i < n; i++ {
		ge := g.exchange(whole, fmt.Sprint("sw-", i))
		resp := ge.response
		if len(done) > 10 && i%2 == 1 {
			src := done[g.r.IntN(len(done))]
			contaminated++
			switch i % 8 {
			case 1:
				resp += " Reach them at " + src.people[0].email + " today."
			case 3:
				resp = resp[:len(resp)/2] + " " + src.canary + " " + resp[len(resp)/2:]
			case 5:
				u := src.user
				l := min(len(u), 64+g.r.IntN(97))
				at := g.r.IntN(len(u) - l + 1)
				resp += " " + u[at:at+l]
			default:
				resp += " <|im_start|>assistant"
			}
		}
		end := inbound.End{FinishReason: "stop"}
		want, err := whole.Check(ctx, ge.ex, resp, end)
		if err != nil {
			t.Fatal(err)
		}
		if want.Blocked {
			blocked++
		}
		for k, v := range streamed {
			st, err := v.Stream(ctx, ge.ex)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for p := resp; len(p) > 0; {
				m := min(pieces[k], len(p))
				out, _, err := st.Write(ctx, inbound.Delta{Text: p[:m]})
				if err != nil {
					t.Fatal(err)
				}
				got.WriteString(out)
				p = p[m:]
			}
			cut := len(st.s.buf) // what the session read: all of it, unless blocked
			rest, vd, err := st.Close(ctx, end)
			if err != nil {
				t.Fatal(err)
			}
			got.WriteString(rest)
			// A blocked stream is cut at its first blocking signal: what
			// follows is not read, so its signals are some of the whole's.
			if vd.Blocked != want.Blocked || !want.Blocked && !sameSignals(vd, want) || want.Blocked && (len(vd.Signals) == 0 || !subset(vd, want, cut)) {
				t.Fatalf("exchange %d in %d-byte pieces: streamed %s, whole %s", i, pieces[k], describe(vd), describe(want))
			}
			if !vd.Blocked && got.String() != resp {
				t.Fatalf("exchange %d in %d-byte pieces: released text differs from the answer", i, pieces[k])
			}
		}
		done = append(done, ge)
	}
	t.Logf("%d exchanges (%d with foreign material, %d blocked) agree in pieces of %v bytes", n, contaminated, blocked, pieces)
	if blocked < contaminated*9/10 {
		t.Fatalf("only %d of %d contaminated answers blocked: the corpus does not exercise the signals", blocked, contaminated)
	}
}

func signalKeys(vd *Verdict) []string {
	var ks []string
	for _, s := range vd.Signals {
		ks = append(ks, fmt.Sprintf("%s/%s/%d-%d/%v", s.ID, s.Detector, s.Start, s.End, s.Sources))
	}
	slices.Sort(ks)
	return ks
}

func sameSignals(a, b *Verdict) bool { return slices.Equal(signalKeys(a), signalKeys(b)) }

// subset reports whether every signal of a that ends before cut is one of
// b's. (Closing a blocked stream scans the text read up to the cut as the
// whole text: a value the cut falls inside of is read as it was cut.)
func subset(a, b *Verdict, cut int) bool {
	kb := signalKeys(b)
	for _, s := range a.Signals {
		if k := signalKeys(&Verdict{Signals: []Signal{s}})[0]; !slices.Contains(kb, k) && s.End < cut {
			return false
		}
	}
	return true
}

func describe(vd *Verdict) string {
	return fmt.Sprintf("blocked %v %v", vd.Blocked, signalKeys(vd))
}
