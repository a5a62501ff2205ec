package classifiers

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestLazyPatternsCompile calls every built-in keyword detector's window
// once, which compiles each of its expressions (New compiles none): a bad
// pattern panics here rather than in a user's first scan.
func TestLazyPatternsCompile(t *testing.T) {
	s, err := New(Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	text := []byte("curl -u a:b -H 'X: y' token=abc npm_ sk- xox AIza -----BEGIN eyJ")
	for _, d := range s.dets {
		if d.window == nil {
			continue
		}
		st := s.getState(context.Background(), text, 0, len(text))
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: window panicked: %v", d.id, r)
				}
			}()
			d.window(st, d, 0, len(text))
		}()
		s.putState(st)
	}
}

// TestConcurrentFirstScans scans from several goroutines with a new
// Scanner, whose expressions and phone tables are all built during these
// first scans, and checks every goroutine gets the serial result (run it
// with -race).
func TestConcurrentFirstScans(t *testing.T) {
	data := denseCorpus(64 << 10)
	data = append(data, "\nsk_live_4eC39HqLyjWDarjtT1zdp7dcZZ curl -u admin:S3cr3tPassw0rd https://x\n"...)
	ref, err := New(Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Scan(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	got := make([][]Finding, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			fs, err := s.Scan(context.Background(), data)
			if err != nil {
				t.Error(err)
			}
			got[i] = fs
		})
	}
	wg.Wait()
	for i := range n {
		if !slices.Equal(got[i], want) {
			t.Errorf("goroutine %d: %d findings, want %d (or different ones)", i, len(got[i]), len(want))
		}
	}
}

// assignedPatterns are the assigned patterns of the secret families.
func assignedPatterns(t testing.TB) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, f := range secretFamilies() {
		for _, p := range f.patterns {
			if strings.Contains(p, assignOp) {
				out = append(out, regexp.MustCompile(p))
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no assigned pattern")
	}
	return out
}

// checkAssignedFrom checks that starting an assigned pattern's search
// where assignedFrom says finds the leftmost match the search from pos
// finds, or that there is none when it says -1.
func checkAssignedFrom(t *testing.T, res []*regexp.Regexp, space func(byte) bool, text []byte, pos int) {
	t.Helper()
	from := assignedFrom(text, pos, len(text), space)
	for _, re := range res {
		want := submatchFrom(re, text, pos, len(text))
		var got []int
		if from >= 0 {
			got = submatchFrom(re, text, from, len(text))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s on %q from %d: assignedFrom %d gives %v, want %v", re, text, pos, from, got, want)
		}
	}
}

// awsRE is secret.aws_secret_access_key's pattern, whose search starts
// where assignedFrom says too (with \s before the operator).
var awsRE = []*regexp.Regexp{regexp.MustCompile(`(?i:secret_?access_?key|aws_?secret)["']?\s*(?:=|:|:=|=>)\s*["']?([A-Za-z0-9/+]{40})`)}

func TestAssignedFrom(t *testing.T) {
	res := assignedPatterns(t)
	v24 := "Ab3dE5fG7hJ9kL1mN3pQ5rS7"
	for _, text := range []string{
		"", "snyk", "snyksnyksnyk", "SNYK_TOKEN=" + uuidSample, "x snyk_api_key: '" + uuidSample + "'",
		"vercel=" + v24, "VERCEL_TOKEN := \"" + v24 + "\"", "vercel.token => " + v24, "a=b vercel=" + v24,
		"ſnyk=" + uuidSample, "okta_key =\t'00" + v24 + v24[:16] + "'", "dd-api-key: " + v24 + v24[:8],
		"cloudflare:cloudflare=" + v24 + v24[:16], "twitch=" + strings.ToLower(v24) + "abcdef",
		"vercel" + strings.Repeat("x", 40) + "=" + v24, "netlify  'x'=" + v24,
		"aws_secret_access_key =\n 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzYXWQMPLEK'", "AWSSECRET\r\n:" + v24 + v24[:16],
		"secretaccesskeysecretaccesskey", "ſecret_access_key: " + v24 + v24[:16],
	} {
		for pos := 0; pos <= len(text); pos++ {
			checkAssignedFrom(t, res, isBlank, []byte(text), pos)
			checkAssignedFrom(t, awsRE, isRESpace, []byte(text), pos)
		}
	}
}

const uuidSample = "3f9a2c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"

func FuzzAssignedFrom(f *testing.F) {
	f.Add([]byte("SNYK_TOKEN = '"+uuidSample+"'"), 0)
	f.Add([]byte("vercel:x vercel="+"Ab3dE5fG7hJ9kL1mN3pQ5rS7"), 3)
	f.Add([]byte("aws_secret\n= wJalrXUtnFEMI/K7MDENG/bPxRfiCYzYXWQMPLEK"), 0)
	res := assignedPatterns(f)
	f.Fuzz(func(t *testing.T, text []byte, pos int) {
		if pos < 0 || pos > len(text) {
			return
		}
		checkAssignedFrom(t, res, isBlank, text, pos)
		checkAssignedFrom(t, awsRE, isRESpace, text, pos)
	})
}
