package pagedcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// proseTokens returns English-like text of at least n cl100k_base tokens.
func proseTokens(tb testing.TB, s *Server, n int) string {
	tb.Helper()
	words := strings.Fields("the customer account invoice shipped on March with total of EUR and a note from support about delivery " +
		"contract renewal, pricing (see appendix) reference number order status pending approved; manager Dana Whitfield wrote:")
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for sb.Len() < n*5 {
		if rng.IntN(9) == 0 {
			fmt.Fprintf(&sb, " %d", rng.IntN(100000))
		} else {
			sb.WriteString(" " + words[rng.IntN(len(words))])
		}
		if rng.IntN(15) == 0 {
			sb.WriteString(".\n")
		}
	}
	text := sb.String()
	// Cut to n tokens (the chat template adds a few more).
	ids := s.tokenize(text)
	if len(ids) < n {
		tb.Fatalf("generated %d tokens, want %d", len(ids), n)
	}
	return string(s.detok(ids[:n]))
}

func chatBody(tb testing.TB, content string, maxTokens int) []byte {
	b, err := json.Marshal(map[string]any{"model": "m", "max_tokens": maxTokens,
		"messages": []map[string]string{{"role": "user", "content": content}}})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkLargePrompt measures parsing, tokenizing and admitting or
// rejecting a prompt of up to 1,048,576 tokens through ServeHTTP, with the
// incident's sizes (capacity 681,280, pages of 64, context 1,048,576).
func BenchmarkLargePrompt(b *testing.B) {
	base, _ := Preset("incident-2026")
	tests := []struct {
		name     string
		tokens   int
		faults   []Fault
		wantCode int
		outcome  string
	}{
		{"reject-front-end-1048576", 1048576, nil, 400, "rejected"},
		{"reject-scheduler-700000", 700000, nil, 400, "rejected"},
		{"incident-decode-700000", 700000, []Fault{FaultOversizeStalePages}, 200, "decoded-after-abort"},
		// Under the fault a prompt under the context length must be counted
		// exactly: the worst case, full tokenization of ~4.5 MB.
		{"incident-decode-1048000", 1048000, []Fault{FaultOversizeStalePages}, 200, "decoded-after-abort"},
		{"admit-600000", 600000, nil, 200, "completed"},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			o := base
			o.Faults, o.DisablePrefixCache = tt.faults, true
			s, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			body := chatBody(b, proseTokens(b, s, tt.tokens), 64)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body)))
				if w.Code != tt.wantCode {
					b.Fatalf("status %d: %.300s", w.Code, w.Body)
				}
			}
			b.StopTimer()
			rec, _ := s.Request(fmt.Sprint(s.seq))
			if rec.Outcome != tt.outcome || (tt.wantCode == 200 && rec.PromptTokens < tt.tokens) {
				b.Fatalf("outcome %q prompt tokens %d", rec.Outcome, rec.PromptTokens)
			}
		})
	}
}

// BenchmarkTokenize measures the cl100k_base tokenizer alone.
func BenchmarkTokenize(b *testing.B) {
	s, _ := New(Options{})
	text := proseTokens(b, s, 100000)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		s.tokenize(text)
	}
}

// BenchmarkChatThroughput: small chat requests from 16 concurrent clients
// of 8 tenants over real loopback HTTP; reports requests per second.
func BenchmarkChatThroughput(b *testing.B) {
	ts := NewTestServer(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = chatBody(b, fmt.Sprintf("Ticket %d: printer on floor %d is jammed again, please advise.", i, i%7), 16)
	}
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			req, _ := http.NewRequest("POST", ts.URL+"/v1/chat/completions", bytes.NewReader(bodies[i%64]))
			req.Header.Set(HeaderTenant, fmt.Sprintf("tenant-%d", i%8))
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkMemoryAtIncidentCapacity reports the heap held by a server with
// the incident's 681,280-token cache after every page has been written and
// registered in the prefix cache.
func BenchmarkMemoryAtIncidentCapacity(b *testing.B) {
	o, _ := Preset("incident-2026")
	o.Faults = nil
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		n := s.MaxRequestInputTokens() - 1
		prompt := make([]uint32, n)
		for i := range prompt {
			prompt[i] = uint32(i % 100000)
		}
		j := s.newJob("chat", "acme", 0)
		j.prompt, j.gen.maxTokens = prompt, 1
		if _, aerr := s.process(context.Background(), j, nil); aerr != nil {
			b.Fatal(aerr)
		}
		prompt, j = nil, nil
		sum := s.Pages()
		if sum.WrittenPages != sum.TotalPages {
			b.Fatalf("written %d of %d pages", sum.WrittenPages, sum.TotalPages)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
		runtime.KeepAlive(s)
	}
}

func BenchmarkPoolTakeRelease(b *testing.B) {
	p := newPool(681280, 64, ReuseLIFO)
	pages := make([]int32, 64)
	b.ReportAllocs()
	for b.Loop() {
		for i := range pages {
			pages[i] = p.take(1, 1)
		}
		for i := len(pages) - 1; i >= 0; i-- {
			p.release(pages[i])
		}
	}
}

// BenchmarkDecode measures the model alone over a prefilled context of
// 1,000 and 600,000 tokens: a quote searches a bounded distance around the
// PRNG's pick, so the cost per answer token does not grow with the context.
func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{1_000, 600_000} {
		b.Run(fmt.Sprintf("context=%d", n), func(b *testing.B) {
			o, _ := Preset("incident-2026")
			o.Faults = nil
			s, err := New(o)
			if err != nil {
				b.Fatal(err)
			}
			j := s.newJob("chat", "acme", 0)
			j.prompt = s.tokenize(proseTokens(b, s, n))
			const maxTokens = 256
			P := s.opts.PageSize
			g := &decodeState{s: s, j: j, rec: &RequestRecord{}}
			s.mu.Lock()
			g.tIdx = s.internTenant("acme")
			for range (len(j.prompt) + maxTokens + P - 1) / P {
				g.pt = append(g.pt, s.pool.take(g.tIdx, j.seq))
			}
			g.writeRange(0, j.prompt)
			s.mu.Unlock()
			tokens := 0
			b.ReportAllocs()
			for i := uint64(0); b.Loop(); i++ {
				g.rec.Reads = g.rec.Reads[:0]
				out, finish := g.decode(context.Background(), maxTokens, i, nil)
				if len(out) == 0 || finish != "stop" {
					b.Fatalf("%d tokens, finish %q", len(out), finish)
				}
				tokens += len(out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens), "ns/token")
		})
	}
}
