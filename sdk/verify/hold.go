package verify

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/fingerprint"
)

// Hold-back. A session releases text as soon as it has verified it, and
// holds back only what may still turn out to be foreign material (see
// session.check):
//
//   - entities: whatever the scanner says may still become, change or
//     cancel a finding (classifiers.Scanner.ScanPartial: the trailing token,
//     an open number, name, multi-word keyword or quoted secret, 32 bytes
//     after a value a context word may still change...), a canary or a
//     chat-template token the text ends inside of (canaryTail,
//     templateTail). These are decided once settled, not before: a finding
//     that straddles two pieces is found whole and never half released.
//   - fragments of other exchanges: the text not judged yet, from the first
//     fingerprint not looked up yet (the winnower has not selected it, or
//     it waits for its last word to end), and every run of fingerprints
//     shared with another exchange that may still reach the threshold, from
//     its start; both less the window slack (W-1 normalised bytes: where a
//     fragment whose first fingerprint starts there can begin). See
//     session.crossHold.
//
// In clean prose this is the last fingerprint window and its slack, some
// 25 to 40 bytes; a candidate is never held for more than Verifier.HoldBack
// bytes unless it was already found (as the fixed window of that size did).

// canaryTail returns where a canary that more text may still complete (or,
// a whole canary at the very end, cancel by one more base32 character)
// starts in text; len(text) when none.
func canaryTail(text []byte) int {
	n := len(text)
	for i := max(0, n-CanaryLen); i < n; i++ {
		if text[i] != CanaryPrefix[0] {
			continue
		}
		t := text[i:]
		if len(t) <= len(CanaryPrefix) {
			if strings.HasPrefix(CanaryPrefix, string(t)) {
				return i
			}
			continue
		}
		if bytes.HasPrefix(t, []byte(CanaryPrefix)) && !slices.ContainsFunc(t[len(CanaryPrefix):], func(c byte) bool { return !isBase32(c) }) {
			return i
		}
	}
	return n
}

// tail returns where a template token that more text may still complete
// starts in text (a longer token may start with a whole one at the end);
// len(text) when none.
func (m *templateMatcher) tail(text []byte) int {
	n := len(text)
	for i := max(0, n-m.maxLen+1); i < n; i++ {
		c := text[i]
		if c != '<' && c != '[' {
			continue
		}
		for _, ti := range m.byFirst[c] {
			if tok := templateTokens[ti].text; len(tok) > n-i && strings.HasPrefix(tok, string(text[i:])) {
				return i
			}
		}
	}
	return n
}

// vouch moves the point up to which the text is vouched for: what is
// decided, and before where a fragment of another exchange may still begin
// (all of it when final).
func (s *session) vouch(final bool) {
	release := len(s.buf)
	if !final {
		release = min(s.decided, s.crossLimit())
	}
	s.verified = max(s.verified, release)
}

// crossLimit returns the point before which the text may be released as
// far as fragments of other exchanges go: where one may still begin
// (crossHold), but never more than Verifier.HoldBack bytes back, as the
// fixed window did (a fragment needs far less to be judged; a run of white
// space normalises to a byte); the end of the text when cross-exchange
// fingerprints are off.
func (s *session) crossLimit() int {
	if !s.v.on(policies.SignalCrossExchange) {
		return len(s.buf)
	}
	return max(s.crossHold(), len(s.buf)-s.v.holdBack)
}

// crossHold returns where the text that a fragment of another exchange may
// still begin in starts: the first fingerprint not looked up yet (not
// selected by the winnower, or waiting for its last word), and the start
// of every run shared with another exchange that is not reported and may
// still grow (a counted fingerprint more than MinSpan bytes after its end
// starts a new run), less the window slack.
func (s *session) crossHold() int {
	from := s.win.Frontier()
	if len(s.fps) > 0 {
		from = min(from, s.fps[0].Offset)
	}
	at := from
	for _, r := range s.runs {
		if from-r.end > s.v.opts.MinSpan || slices.Contains(s.reported, r.src) {
			continue
		}
		at = min(at, r.start)
	}
	return s.slack(at)
}

// slack returns the offset W-1 normalised bytes before at in the response:
// where a shared fragment whose first fingerprint starts at at may begin
// (the first window inside it selects one of its first W k-grams). Every
// rune normalises to one byte at least and every run of white space to
// one, so counting them back is never short.
func (s *session) slack(at int) int {
	w := s.v.opts.Fingerprint.Window
	if w <= 0 {
		w = fingerprint.DefaultWindow
	}
	sp := &s.v.slackSpace
	// The rune before i and its size; an ASCII byte is one without
	// decoding.
	last := func(i int) (rune, int) {
		if c := s.buf[i-1]; c < utf8.RuneSelf {
			return rune(c), 1
		}
		return utf8.DecodeLastRune(s.buf[:i])
	}
	space := func(r rune) bool {
		if r < utf8.RuneSelf {
			return sp[r]
		}
		return unicode.IsSpace(r)
	}
	i := at
	for k := 0; k < w-1 && i > 0; k++ {
		r, size := last(i)
		i -= size
		if space(r) {
			for i > 0 {
				r, size := last(i)
				if !space(r) {
					break
				}
				i -= size
			}
		}
	}
	return i
}

// slackSpaces returns, for each ASCII byte, whether slack counts it as
// white space: white space, and with StripPunctuation punctuation and
// symbols, as the fingerprints' normalisation does (non-ASCII runes are
// white space when unicode.IsSpace says so).
func slackSpaces(strip bool) (t [utf8.RuneSelf]bool) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = unicode.IsSpace(r) || strip && (unicode.IsPunct(r) || unicode.IsSymbol(r))
	}
	return t
}
