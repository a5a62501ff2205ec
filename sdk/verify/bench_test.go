package verify

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
)

// BenchmarkVerify4KB verifies a 4 KB response (whole) against a store that
// remembers a thousand earlier exchanges.
func BenchmarkVerify4KB(b *testing.B) { benchVerify4KB(b, 0, false) }

// BenchmarkVerify4KBPrincipals is BenchmarkVerify4KB with the exchanges
// of 50 principals (the bench exchange is one of them): holders met in the
// store are resolved to tell the principal's own material.
func BenchmarkVerify4KBPrincipals(b *testing.B) { benchVerify4KB(b, 50, false) }

// BenchmarkVerify4KBInstructions is BenchmarkVerify4KBPrincipals with the
// roles of the texts (a system prompt and the user's text): requests are
// recorded under two holders, and the holders met are resolved to tell
// shared instructions too.
func BenchmarkVerify4KBInstructions(b *testing.B) { benchVerify4KB(b, 50, true) }

func benchVerify4KB(b *testing.B, principals int, roles bool) {
	ctx := context.Background()
	v := newTestVerifier(b, Options{})
	g := newGen(1, 2)
	principal := func(i int) string {
		if principals == 0 {
			return ""
		}
		return fmt.Sprint("key-", i%principals)
	}
	withRoles := func(ex *inbound.Exchange) {
		if roles {
			ex.Roles = []string{"system", "user"} // gen's Texts: the system prompt, the user's text
		}
	}
	for i := 0; i < 1000; i++ {
		ge := g.exchange(v, fmt.Sprint("warm-", i))
		ge.ex.Principal = principal(i)
		withRoles(ge.ex)
		if _, err := v.Check(ctx, ge.ex, ge.response, inbound.End{}); err != nil {
			b.Fatal(err)
		}
	}
	ge := g.exchange(v, "bench")
	ge.ex.Principal = principal(7)
	withRoles(ge.ex)
	// The guard passes its outbound findings, hashed under the verifier's
	// key (FindingsKey): Begin does not rescan.
	ge.ex.FindingsKey = v.keyID
	for _, t := range ge.ex.Texts {
		fs, err := v.scanner.ScanString(ctx, t)
		if err != nil {
			b.Fatal(err)
		}
		ge.ex.Findings = append(ge.ex.Findings, fs)
	}
	text := g.sentences(4 << 10)
	// Begin (request side) is done once per exchange by the guard; the
	// benchmark measures the response side: write and close.
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := v.begin(ctx, ge.ex)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Write(ctx, inbound.Delta{Text: text}); err != nil {
			b.Fatal(err)
		}
		s.closed = true // measure without recording the response each loop
		if _, err := s.check(ctx, true); err != nil {
			b.Fatal(err)
		}
		s.release()
	}
}

// BenchmarkBegin4KB is the request side of an exchange, the proxy's hot
// path before the request is answered: Begin of a 4 KB request (with the
// guard's findings, so nothing is rescanned) against a store that remembers
// a thousand earlier exchanges, recording it.
func BenchmarkBegin4KB(b *testing.B) {
	ctx := context.Background()
	v := newTestVerifier(b, Options{})
	g := newGen(5, 6)
	for i := 0; i < 1000; i++ {
		ge := g.exchange(v, fmt.Sprint("warm-", i))
		if _, err := v.Check(ctx, ge.ex, ge.response, inbound.End{}); err != nil {
			b.Fatal(err)
		}
	}
	text := g.sentences(4 << 10)
	fs, err := v.scanner.ScanString(ctx, text)
	if err != nil {
		b.Fatal(err)
	}
	ex := &inbound.Exchange{ID: "bench", Texts: []string{text}, Findings: [][]classifiers.Finding{fs}, FindingsKey: v.keyID}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := v.begin(ctx, ex)
		if err != nil {
			b.Fatal(err)
		}
		s.closed = true
		s.release()
	}
}

// BenchmarkCheck4KB is a whole exchange as the guard runs it: Begin of a
// request, a 4 KB answer, and Close recording the clean answer. The store
// remembers the last 256 exchanges (Inbound.MaxExchanges 171 sizes the
// default store for 513 holders, and each exchange is two: its request
// and its answer, no instructions) and the 512 exchanges cycle with fresh
// IDs, so every answer is new to the store, as on a clean path.
func BenchmarkCheck4KB(b *testing.B) {
	ctx := context.Background()
	v := newTestVerifier(b, Options{Inbound: policies.Inbound{MaxExchanges: 171}})
	g := newGen(9, 10)
	type pair struct {
		texts  []string
		answer string
	}
	pairs := make([]pair, 512)
	for i := range pairs {
		ge := g.exchange(v, fmt.Sprint("gen-", i))
		// An answer names the request's people or people no request
		// names (see gen.names).
		g.names = []string{ge.people[0].name}
		pairs[i] = pair{ge.ex.Texts, g.sentences(4 << 10)}
		g.names = nil
	}
	b.SetBytes(4 << 10)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := pairs[i%len(pairs)]
		vd, err := v.Check(ctx, &inbound.Exchange{ID: fmt.Sprint("bench-", i), Texts: p.texts}, p.answer, inbound.End{FinishReason: "stop"})
		if err != nil {
			b.Fatal(err)
		}
		if i < len(pairs) && vd.Contaminated() {
			b.Fatalf("clean exchange %d flagged: %+v", i, vd.Signals)
		}
		i++
	}
}

// BenchmarkStream4KB verifies the same 4 KB streamed in 16-byte pieces.
func BenchmarkStream4KB(b *testing.B) {
	ctx := context.Background()
	v := newTestVerifier(b, Options{})
	g := newGen(3, 4)
	ge := g.exchange(v, "bench")
	text := g.sentences(4 << 10)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		st, err := v.Stream(ctx, ge.ex)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(text); i += 16 {
			if _, _, err := st.Write(ctx, inbound.Delta{Text: text[i:min(i+16, len(text))]}); err != nil {
				b.Fatal(err)
			}
		}
		st.s.closed = true
		st.s.release()
	}
}

// FuzzSession feeds arbitrary response text in arbitrary pieces: no panic,
// spans within the text, no raw value in a preview of a foreign entity.
func FuzzSession(f *testing.F) {
	f.Add("Mail bob.martin@globex-industries.com <|im_start|> aishield-canary-abcdefghijklmnop", uint8(3))
	f.Add("\xff\x00<｜User｜>[INST] card 4916 3385 0608 2832", uint8(1))
	f.Add(strings.Repeat("<|", 100), uint8(7))
	f.Add("As Albert Einstein said to Dr Oliver RENAUD and Amélie Fontaine, Jane Doe", uint8(4))
	v, err := New(Options{HashKey: testKey, CanaryKey: testKey})
	if err != nil {
		f.Fatal(err)
	}
	// Another exchange whose request names people, so that a name in the
	// text can be a sourced foreign entity.
	other := &inbound.Exchange{ID: "other", Texts: []string{"Letter from Dr Oliver Renaud about Amélie Fontaine."}}
	if _, err := v.Check(context.Background(), other, "Noted.", inbound.End{}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, step uint8) {
		ctx := context.Background()
		s, err := v.begin(ctx, &inbound.Exchange{ID: "fuzz", Texts: []string{"hello jane.doe@acme-corp.com"}})
		if err != nil {
			t.Fatal(err)
		}
		n := int(step)%17 + 1
		var sigs []inbound.Signal
		for p := text; len(p) > 0; {
			k := min(n, len(p))
			got, err := s.Write(ctx, inbound.Delta{Text: p[:k]})
			if err != nil {
				t.Fatal(err)
			}
			sigs = append(sigs, got...)
			if s.HoldBack() < 0 || s.HoldBack() > len(s.buf) {
				t.Fatalf("hold-back %d of %d bytes", s.HoldBack(), len(s.buf))
			}
			p = p[k:]
		}
		got, err := s.Close(ctx, inbound.End{})
		if err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, got...)
		for _, sg := range sigs {
			if sg.Start < 0 || sg.End > len(text) || sg.Start > sg.End {
				t.Fatalf("span %d-%d outside %d bytes", sg.Start, sg.End, len(text))
			}
			if sg.ID == policies.SignalForeignEntity && len(text[sg.Start:sg.End]) > 8 && strings.Contains(sg.Preview, text[sg.Start:sg.End]) {
				t.Fatalf("preview reveals the value")
			}
		}
	})
}
