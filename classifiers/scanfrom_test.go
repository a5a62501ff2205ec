package classifiers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// from keeps the findings of fs that start at or after at, as
// partialFindings (detector, span, confidence and hash).
func from(fs []Finding, at int) []partialFinding {
	var out []partialFinding
	for _, f := range fs {
		if f.Start >= at {
			out = append(out, partialFinding{f.Detector, f.Start, f.End, f.Confidence, f.Hash})
		}
	}
	return out
}

// TestScanFrom checks that ScanFrom and ScanPartialFrom return the
// findings of Scan and ScanPartial that start at or after from (detector,
// span, confidence, hash, line and column), and ScanPartial's settled
// offset, on every scanner and text of the partial-scan tests, cut at
// several points and scanned from several offsets.
func TestScanFrom(t *testing.T) {
	ctx := context.Background()
	opts := []PartialOptions{{}, {MaxHold: 256, Hold: 5}}
	for sname, s := range partialScanners(t) {
		for tname, text := range partialTexts() {
			for _, cut := range []int{len(text) / 3, len(text) - 7, len(text)} {
				if cut < 0 {
					continue
				}
				b := []byte(text[:cut])
				whole, err := s.Scan(ctx, b)
				if skip(t, err) {
					continue
				}
				for _, at := range []int{-1, 0, 1, cut / 5, cut / 2, cut - 40, cut, cut + 1} {
					fs, err := s.ScanFrom(ctx, b, at)
					if skip(t, err) {
						continue
					}
					if want, got := positioned(whole, max(at, 0)), positioned(fs, 0); want != got {
						t.Errorf("%s/%s[:%d] ScanFrom %d:\n want %s\n got  %s", sname, tname, cut, at, want, got)
					}
					for _, o := range opts {
						pfs, psettled, err := s.ScanPartial(ctx, b, o)
						if skip(t, err) {
							continue
						}
						got, settled, err := s.ScanPartialFrom(ctx, b, at, o)
						if skip(t, err) {
							continue
						}
						if settled != psettled {
							t.Errorf("%s/%s[:%d] ScanPartialFrom %d %+v: settled %d, ScanPartial's %d", sname, tname, cut, at, o, settled, psettled)
						}
						if want, got := positioned(pfs, max(at, 0)), positioned(got, 0); want != got {
							t.Errorf("%s/%s[:%d] ScanPartialFrom %d %+v:\n want %s\n got  %s", sname, tname, cut, at, o, want, got)
						}
					}
				}
			}
		}
	}
}

// TestScanPartialFromScratch: a PartialScratch reused by the scans of a
// stream (PartialOptions.Scratch) changes nothing: on every scanner and
// text of the partial-scan tests, read as a stream scans it (a region from
// MaxHold bytes before the decided point to the end received, every 29
// bytes), the findings and settled offset with one scratch for all the
// scans are those of a scan without one; texts a normalised view reads
// (full-width digits, zero-width spaces) go through settleView's mapping.
func TestScanPartialFromScratch(t *testing.T) {
	ctx := context.Background()
	texts := partialTexts()
	texts["view"] = "Write to jeanne\u200b.roux@acme-mail.fr or call \uff10\uff16 12 34 56 78, " +
		"card 4916\u00a03385\u00a00608\u00a02832, Dr Oliver Renaud. " + strings.Repeat("and so on, ", 20)
	for sname, s := range partialScanners(t) {
		for tname, text := range texts {
			var sc PartialScratch
			decided := 0
			for end := 29; ; end += 29 {
				end = min(end, len(text))
				lo := max(0, decided-256)
				region := []byte(text[lo:end])
				from := decided - lo
				o := PartialOptions{MaxHold: 256, Hold: 3}
				want, wsettled, err := s.ScanPartialFrom(ctx, region, from, o)
				if skip(t, err) {
					break
				}
				o.Scratch = &sc
				got, settled, err := s.ScanPartialFrom(ctx, region, from, o)
				if skip(t, err) {
					break
				}
				if settled != wsettled {
					t.Fatalf("%s/%s[%d:%d]: settled %d with the scratch, %d without", sname, tname, lo, end, settled, wsettled)
				}
				if w, g := positioned(want, 0), positioned(got, 0); w != g {
					t.Fatalf("%s/%s[%d:%d]:\n without %s\n with    %s", sname, tname, lo, end, w, g)
				}
				decided = max(decided, lo+settled)
				if end == len(text) {
					break
				}
			}
		}
	}
}

// skip reports whether a scan that returned err is not to be compared: a
// custom pattern timed out (a loaded machine, the race detector), which
// leaves its findings incomplete. Other errors fail the test.
func skip(t *testing.T, err error) bool {
	t.Helper()
	var te *TimeoutError
	if errors.As(err, &te) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// positioned renders the findings of fs that start at or after at, with
// their positions.
func positioned(fs []Finding, at int) string {
	var out []string
	for _, f := range fs {
		if f.Start >= at {
			out = append(out, fmt.Sprintf("%v@%d:%d", from([]Finding{f}, 0), f.Line, f.Column))
		}
	}
	return fmt.Sprint(out)
}

// TestScanFromLong checks ScanFrom's long-text path (a text over one
// chunk).
func TestScanFromLong(t *testing.T) {
	ctx := context.Background()
	s, err := New(Options{HashKey: []byte("partial")})
	if err != nil {
		t.Fatal(err)
	}
	s.chunk, s.overlap = 1024, 256 // chunks of a test's size
	text := mixedCorpus(5000, 4)
	whole, err := s.Scan(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) == 0 {
		t.Fatal("no findings in the corpus")
	}
	for _, at := range []int{0, 1500, len(text) - 100, len(text)} {
		fs, err := s.ScanFrom(ctx, text, at)
		if err != nil {
			t.Fatal(err)
		}
		if want, got := positioned(whole, at), positioned(fs, 0); want != got {
			t.Errorf("ScanFrom %d:\n want %s\n got  %s", at, want, got)
		}
	}
}

// FuzzScanFrom: ScanFrom returns Scan's findings from its offset.
func FuzzScanFrom(f *testing.F) {
	for _, text := range partialTexts() {
		f.Add(text[:min(len(text), 400)], uint16(len(text)/5))
	}
	s := partialScanners(f)["custom"]
	f.Fuzz(func(t *testing.T, text string, at uint16) {
		ctx := context.Background()
		k := int(at) % (len(text) + 1)
		whole, _ := s.ScanString(ctx, text)
		fs, _ := s.ScanFrom(ctx, []byte(text), k)
		if want, got := positioned(whole, k), positioned(fs, 0); want != got {
			t.Fatalf("from %d:\n want %s\n got  %s", k, want, got)
		}
		pfs, psettled, _ := s.ScanPartial(ctx, []byte(text), PartialOptions{})
		got, settled, _ := s.ScanPartialFrom(ctx, []byte(text), k, PartialOptions{})
		if want, got := positioned(pfs, k), positioned(got, 0); want != got || settled != psettled {
			t.Fatalf("partial from %d: settled %d, want %d\n want %s\n got  %s", k, settled, psettled, want, got)
		}
	})
}
