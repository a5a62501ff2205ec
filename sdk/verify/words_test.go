package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aishield/aishield/sdk/inbound"
)

// TestInformativeStreamed: the informative words a session finds around
// any span of its response (in order of position, with gaps, or not), streamed in pieces of any size (words, runes
// and apostrophes cut between pieces), are those Verifier.informativeWords
// finds in the text received so far.
func TestInformativeStreamed(t *testing.T) {
	ctx := context.Background()
	v := newTestVerifier(t, Options{})
	g := newGen(11, 12)
	texts := []string{
		g.sentences(1500),
		"L'entreprise d'Amélie Fontaine n'a pas reçu l'accord d'O'Brien's team: Überprüfung ÉTÉ façade " +
			"naïve'' 'quoted' x'y'z ab'c'de \xff\xfe broken \xc3 rune, Jane-Doe 4916338506082832 " +
			strings.Repeat("données personnelles d'aujourd'hui ", 8),
	}
	r := rand.New(rand.NewPCG(5, 6))
	for ti, text := range texts {
		for _, step := range []int{1, 2, 3, 7, 16, 61, len(text)} {
			s, err := v.begin(ctx, &inbound.Exchange{ID: fmt.Sprint("words-", ti, step), Texts: []string{"Jane Doe asks about Amélie Fontaine and O'Brien"}})
			if err != nil {
				t.Fatal(err)
			}
			for p := 0; p < len(text); p += step {
				// Pieces go into the buffer directly: what is checked is
				// the word cache, not the rest of the session.
				s.buf = append(s.buf, text[p:min(p+step, len(text))]...)
				// Spans in order of position as fingerprints ask (with
				// gaps), and anywhere.
				at := max(0, len(s.buf)-step-r.IntN(80))
				for k := 0; k < 6; k++ {
					start := r.IntN(len(s.buf))
					if k < 3 {
						start, at = min(at, len(s.buf)-1), at+r.IntN(30)
					}
					end := min(len(s.buf), start+1+r.IntN(40))
					s.informative(start, end)
					got := fmt.Sprint(s.words)
					want := fmt.Sprint(v.informativeWords(s.buf, start, end, s.requestWords(), nil))
					if got != want {
						t.Fatalf("text %d, pieces of %d, %d bytes in, span %d-%d:\n got  %s\n want %s", ti, step, len(s.buf), start, end, got, want)
					}
				}
			}
			s.closed = true
			s.release()
		}
	}
}
