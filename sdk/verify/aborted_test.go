package verify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/inbound"
)

// The aborted exchange's document, and a fragment of it of 52 bytes: its
// fingerprints cover 32 to 47 bytes, under MinSpan (48) but at
// MinAbortSpan (32) or more.
const (
	abortedDoc  = "Discharge letter for the general practitioner. Dr Quentin Imbert, pulmonology, treated the community-acquired pneumonia with amoxicillin for seven days under supervision; HbA1c 7.9 percent at admission."
	abortedFrag = "community-acquired pneumonia with amoxicillin for se"
)

// abortScenario begins and closes the exchange "A" (with end) in a, calls
// between (when not nil), then checks in b an answer holding abortedFrag
// to the clean request of "B".
func abortScenario(t *testing.T, a, b *Verifier, end inbound.End, streamed bool, between func()) *Verdict {
	t.Helper()
	ctx := context.Background()
	st, err := a.Begin(ctx, &inbound.Exchange{ID: "A", Texts: []string{abortedDoc}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write(ctx, inbound.Delta{Text: "The letter"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Close(ctx, end); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between()
	}
	if !streamed {
		return askBakery(t, b, "B")
	}
	s, err := b.Stream(ctx, &inbound.Exchange{ID: "B", Texts: []string{bakeryQuestion}})
	if err != nil {
		t.Fatal(err)
	}
	for p := bakeryAnswer; len(p) > 0; p = p[min(len(p), 5):] {
		if _, stop, err := s.Write(ctx, inbound.Delta{Text: p[:min(len(p), 5)]}); err != nil || stop {
			break
		}
	}
	_, vd, err := s.Close(ctx, inbound.End{FinishReason: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	return vd
}

const (
	bakeryQuestion = "What are good names for a bakery in Porto?"
	bakeryAnswer   = "Here are some ideas: Pão Dourado, " + abortedFrag + " and Forno da Ribeira."
)

// askBakery checks, in v, the bakery answer (holding abortedFrag) to the
// bakery question of exchange id.
func askBakery(t *testing.T, v *Verifier, id string) *Verdict {
	t.Helper()
	vd, err := v.Check(context.Background(), &inbound.Exchange{ID: id, Texts: []string{bakeryQuestion}}, bakeryAnswer, inbound.End{FinishReason: "stop"})
	if err != nil {
		t.Fatal(err)
	}
	return vd
}

func namesAborted(vd *Verdict) bool {
	for _, s := range vd.Signals {
		if s.ID == policies.SignalCrossExchange && s.Action == "block" && len(s.Sources) == 1 && s.Sources[0] == "A" &&
			strings.Contains(s.Message, "ended without a complete answer") {
			return true
		}
	}
	return false
}

func TestAbortedSourceLowerBar(t *testing.T) {
	if n := len(abortedFrag); n != 52 {
		t.Fatalf("fragment of %d bytes", n)
	}
	for _, streamed := range []bool{false, true} {
		for _, tc := range []struct {
			name string
			end  inbound.End
			want bool
		}{
			{"finish reason abort", inbound.End{FinishReason: "abort"}, true},
			{"cut stream", inbound.End{Truncated: true}, true},
			{"complete answer", inbound.End{FinishReason: "stop"}, false},
			{"length", inbound.End{FinishReason: "length"}, false},
		} {
			t.Run(fmt.Sprintf("%s/streamed=%v", tc.name, streamed), func(t *testing.T) {
				v := newTestVerifier(t, Options{})
				vd := abortScenario(t, v, v, tc.end, streamed, nil)
				if got := namesAborted(vd); got != tc.want {
					t.Errorf("cross_exchange naming the aborted exchange: %v, want %v (%+v)", got, tc.want, vd.Signals)
				}
				if !tc.want && vd.Contaminated() {
					t.Errorf("52 bytes shared with a completed exchange flagged: %+v", vd.Signals)
				}
			})
		}
	}
}

func TestAbortWindow(t *testing.T) {
	for _, tc := range []struct {
		after time.Duration
		want  bool
	}{{29 * time.Second, true}, {36 * time.Second, false}} { // window rounded up to a sixth
		start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		now := start
		v := newTestVerifier(t, Options{AbortWindow: 30 * time.Second})
		v.now = func() time.Time { return now }
		vd := abortScenario(t, v, v, inbound.End{FinishReason: "abort"}, false, func() { now = start.Add(tc.after) })
		if got := namesAborted(vd); got != tc.want || !tc.want && vd.Contaminated() {
			t.Errorf("%v after the abort (window 30s): %+v", tc.after, vd.Signals)
		}
	}
	// Off.
	v := newTestVerifier(t, Options{AbortWindow: -1})
	if vd := abortScenario(t, v, v, inbound.End{FinishReason: "abort"}, false, nil); vd.Contaminated() {
		t.Errorf("AbortWindow < 0: %+v", vd.Signals)
	}
}

func TestMarkAborted(t *testing.T) {
	v := newTestVerifier(t, Options{})
	ctx := context.Background()
	// "A" completes, then its caller reports it aborted (it gave up
	// before reading the end, say).
	vd := abortScenario(t, v, v, inbound.End{FinishReason: "stop"}, false, nil)
	if vd.Contaminated() {
		t.Fatalf("before the mark: %+v", vd.Signals)
	}
	if err := v.MarkAborted(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	// (The same answer as B's: it names B too, a completed exchange
	// sharing all of it.)
	if vd := askBakery(t, v, "C"); !namesAborted(vd) {
		t.Errorf("after MarkAborted: %+v", vd.Signals)
	}
}

// TestAbortMarkThroughRedis: two verifiers (two proxy processes) share a
// Redis store; the exchange one saw aborted is a suspect source for the
// other.
func TestAbortMarkThroughRedis(t *testing.T) {
	c := redistest.Client(t)
	a := newTestVerifier(t, Options{Store: fingerprint.NewRedisStore(c, fingerprint.RedisOptions{Key: testStoreKey, Namespace: "abort"})})
	b := newTestVerifier(t, Options{Store: fingerprint.NewRedisStore(c, fingerprint.RedisOptions{Key: testStoreKey, Namespace: "abort"})})
	vd := abortScenario(t, a, b, inbound.End{FinishReason: "abort"}, false, nil)
	if !namesAborted(vd) {
		t.Errorf("the other process's aborted exchange: %+v", vd.Signals)
	}
}
