package verify

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/aishield/aishield/sdk/fingerprint"
)

// TestTemplateTokensDoNotNest: no template token can start inside an
// occurrence of another (at a '<' or '[' after its first byte), so the
// tokens found in a text are the same whatever position the search starts
// from, and a session looks for them only after what it has decided.
func TestTemplateTokensDoNotNest(t *testing.T) {
	for _, outer := range templateTokens {
		for k := 1; k < len(outer.text); k++ {
			rest := outer.text[k:]
			for _, inner := range templateTokens {
				if strings.HasPrefix(rest, inner.text) || strings.HasPrefix(inner.text, rest) {
					t.Errorf("%q can start inside %q at byte %d", inner.text, outer.text, k)
				}
			}
		}
	}
}

// TestCanaryPrefixDoesNotOverlapItself: no proper prefix of CanaryPrefix is
// also a suffix of it, so its occurrences never overlap and a search from
// any position finds those after it.
func TestCanaryPrefixDoesNotOverlapItself(t *testing.T) {
	for k := 1; k < len(CanaryPrefix); k++ {
		if strings.HasPrefix(CanaryPrefix, CanaryPrefix[k:]) {
			t.Fatalf("%q overlaps itself at byte %d", CanaryPrefix, k)
		}
	}
}

// searchText is text dense in template tokens, their near misses and
// canaries, cut and joined.
func searchText() []byte {
	var b bytes.Buffer
	toks := TemplateTokens()
	c := "aishield-canary-" + strings.Repeat("abcd2345", 2)
	for i := 0; i < 300; i++ {
		tok := toks[i%len(toks)]
		switch i % 7 {
		case 0:
			b.WriteString(tok)
		case 1:
			b.WriteString(tok[:len(tok)-1]) // cut
		case 2:
			b.WriteString("<" + tok) // '<' before
		case 3:
			b.WriteString("[[" + tok + "]")
		case 4:
			b.WriteString(c[:10+i%len(c[10:])])
		case 5:
			b.WriteString(c + "x")
		case 6:
			b.WriteString("aishield-" + c + " plain text [ and < here ")
		}
		fmt.Fprintf(&b, " w%d ", i)
	}
	return b.Bytes()
}

// TestSearchFrom: the template tokens and canaries found in text[at:] are
// those found in text that start at or after at, for every at; and the
// template search finds the same tokens as a reference that tries every
// position.
func TestSearchFrom(t *testing.T) {
	m := newTemplateMatcher()
	text := searchText()
	var all []templateHit
	m.find(text, func(h templateHit) { all = append(all, h) })
	var ref []templateHit
	for i := range text {
		for _, ti := range m.byFirst[text[i]] {
			if bytes.HasPrefix(text[i:], []byte(templateTokens[ti].text)) {
				ref = append(ref, templateHit{ti, i, i + len(templateTokens[ti].text)})
				break
			}
		}
	}
	if fmt.Sprint(all) != fmt.Sprint(ref) {
		t.Fatalf("find:\n got  %v\n want %v", all, ref)
	}
	var canaries []canaryHit
	findCanaries(text, func(h canaryHit) { canaries = append(canaries, h) })
	if len(all) < 50 || len(canaries) < 40 {
		t.Fatalf("only %d tokens and %d canaries in the sample", len(all), len(canaries))
	}
	for at := 0; at <= len(text); at++ {
		var got, want []templateHit
		m.find(text[at:], func(h templateHit) { got = append(got, templateHit{h.token, h.start + at, h.end + at}) })
		for _, h := range all {
			if h.start >= at {
				want = append(want, h)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("tokens from %d:\n got  %v\n want %v", at, got, want)
		}
		var gotC, wantC []canaryHit
		findCanaries(text[at:], func(h canaryHit) { gotC = append(gotC, canaryHit{h.token, h.start + at, h.end + at}) })
		for _, h := range canaries {
			if h.start >= at {
				wantC = append(wantC, h)
			}
		}
		if fmt.Sprint(gotC) != fmt.Sprint(wantC) {
			t.Fatalf("canaries from %d:\n got  %v\n want %v", at, gotC, wantC)
		}
	}
}

// slackRef is slack decoding every rune and asking the unicode tables.
func slackRef(buf []byte, at, w int, strip bool) int {
	space := func(r rune) bool {
		return unicode.IsSpace(r) || strip && r < utf8.RuneSelf && (unicode.IsPunct(r) || unicode.IsSymbol(r))
	}
	i := at
	for k := 0; k < w-1 && i > 0; k++ {
		r, size := utf8.DecodeLastRune(buf[:i])
		i -= size
		if space(r) {
			for i > 0 {
				r, size := utf8.DecodeLastRune(buf[:i])
				if !space(r) {
					break
				}
				i -= size
			}
		}
	}
	return i
}

// TestSlack: slack's ASCII table gives what the unicode tables give, at
// every offset of a text of white space, punctuation, symbols, accents,
// non-ASCII spaces and invalid bytes, with and without StripPunctuation.
func TestSlack(t *testing.T) {
	text := []byte("Hello,  world!\t\n\u00a0\u2003naïve — «quoted» $5 + 3 = 8; x_y ~ `z` \xff\xc3 end.\u0085" +
		strings.Repeat("a-b c.d  ", 5))
	for _, strip := range []bool{false, true} {
		v := newTestVerifier(t, Options{Fingerprint: fingerprint.Options{StripPunctuation: strip}})
		s := &session{v: v, buf: text}
		for at := 0; at <= len(text); at++ {
			if got, want := s.slack(at), slackRef(text, at, fingerprint.DefaultWindow, strip); got != want {
				t.Fatalf("strip %v, at %d: slack %d, want %d", strip, at, got, want)
			}
		}
	}
}
