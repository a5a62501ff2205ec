package classifiers

import (
	"context"
	"slices"
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
