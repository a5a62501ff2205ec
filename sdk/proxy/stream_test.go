package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
)

// blockNoCanary is blockAll without canaries: the request the proxy sends
// is the client's, so the deterministic model answers it as it answers
// the client directly, and the two streams can be compared piece by piece.
const blockNoCanary = `inbound:
  signals:
    foreign_entity: block
    canary: block
    cross_exchange: block
    template_fragment: block
    usage_mismatch: block
`

// withDecodeDelay sleeps d per generated token, as a real model streams
// (the paged-cache server sends its tokens in batches of 16).
func withDecodeDelay(d time.Duration) pagedcache.Option {
	return func(o *pagedcache.Options) error { o.DecodeTokenDelay = d; return nil }
}

// upstreamEvents is the proxy's transport to the server: it counts the
// reads of the response bodies that brought text (the server flushes each
// event as it decodes it, so with a decode delay each batch of tokens is
// one read).
type upstreamEvents struct {
	rt http.RoundTripper
	n  atomic.Int64
}

func (u *upstreamEvents) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := u.rt.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &u.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if bytes.Contains(p[:n], []byte(`"content":"`)) && !bytes.Contains(p[:n], []byte(`"content":""`)) {
		b.n.Add(1)
	}
	return n, err
}

// streamPieces streams req with c and returns the answer, the pieces it
// arrived in and the time from the request to the first text. A piece is
// an event that carried text, or, when upstream is set, the events that
// carried text while upstream had the same count: what arrived between
// two pieces of the server's answer.
func streamPieces(ctx context.Context, c *openai.Client, req openai.ChatCompletionRequest, upstream *atomic.Int64) (string, int, time.Duration, error) {
	start := time.Now()
	var first time.Duration
	st, err := c.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return "", 0, 0, err
	}
	defer st.Close()
	var b strings.Builder
	pieces, last := 0, int64(-1)
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), pieces, first, nil
		}
		if err != nil {
			return b.String(), pieces, first, err
		}
		text := ""
		for _, ch := range chunk.Choices {
			text += ch.Delta.Content
		}
		if text == "" {
			continue
		}
		if b.Len() == 0 {
			first = time.Since(start)
		}
		b.WriteString(text)
		if upstream == nil {
			pieces++
		} else if n := upstream.Load(); n != last {
			pieces, last = pieces+1, n
		}
	}
}

// TestStreamArrivesInPieces: an answer that the model streams in several
// pieces reaches a go-openai client through the proxy in several pieces
// too, not in one at the end: the verifier holds back only what may still
// turn out to be foreign, and the guard releases the rest of each event at
// once. The shape is asserted, not the time: the same clean prompts (fixed
// seeds) are sent straight to the paged-cache server, which decodes 5 ms
// per token and so sends a batch of 16 tokens every 80 ms, and through the
// proxy; the answers are the same, and one that arrives directly in N >= 3
// pieces arrives through the proxy in 2 pieces or more (a piece: the text
// that arrived before the server sent more).
func TestStreamArrivesInPieces(t *testing.T) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(1<<16, 16), pagedcache.WithContextLen(1<<17), pagedcache.WithSeed(7),
		withDecodeDelay(5*time.Millisecond))
	up := &upstreamEvents{rt: http.DefaultTransport}
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, ts.URL, 1<<16, blockNoCanary), Transport: up})
	direct, proxied := client(ts.URL, "shape"), client(hs.URL, "shape")
	measured, sumDirect, sumProxied := 0, 0, 0
	for seed := uint64(1); seed <= 16; seed++ {
		req := chatReq(fmt.Sprintf("Question %d: %s", seed, prose(seed, 80)), 64, true)
		type result struct {
			text   string
			pieces int
			err    error
		}
		dc := make(chan result, 1)
		go func() {
			text, n, _, err := streamPieces(ctx, direct, req, nil)
			dc <- result{text, n, err}
		}()
		got, np, _, err := streamPieces(ctx, proxied, req, &up.n)
		d := <-dc
		if err != nil || d.err != nil {
			t.Fatalf("seed %d: through the proxy: %v; directly: %v", seed, err, d.err)
		}
		if got != d.text {
			t.Fatalf("seed %d: the proxy delivered %q, the server %q", seed, got, d.text)
		}
		if d.pieces < 3 {
			continue
		}
		measured++
		sumDirect, sumProxied = sumDirect+d.pieces, sumProxied+np
		if np < 2 {
			t.Errorf("seed %d: %d pieces directly, %d through the proxy (%d bytes)", seed, d.pieces, np, len(got))
		}
	}
	if measured < 6 {
		t.Fatalf("only %d answers of 3 pieces or more", measured)
	}
	t.Logf("%d answers of 3 pieces or more: %d pieces directly, %d through the proxy", measured, sumDirect, sumProxied)
}

// BenchmarkStreamFirstText measures the time to the first text of a
// streamed answer on loopback, straight from the paged-cache server and
// through the proxy, with a model that decodes 25 ms per token (sent in
// batches of 16: the next text comes 400 ms after the first). Iteration i
// sends clean prompt i both ways at once; the benchmark reports the p50
// and p95 of both and of what the proxy adds (goal: under 50 ms added at
// p50), and the pieces the answers arrive in (see TestStreamArrivesInPieces).
// Without canaries the proxy sends the client's request as is, so both
// answers are the same; with them (canary=on) the model also reads the
// canary line, which it may quote and the guard then strips.
func BenchmarkStreamFirstText(b *testing.B) {
	for _, canary := range []bool{false, true} {
		b.Run(fmt.Sprintf("canary=%v", map[bool]string{false: "off", true: "on"}[canary]), func(b *testing.B) {
			benchFirstText(b, canary)
		})
	}
}

func benchFirstText(b *testing.B, canary bool) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(b, pagedcache.WithCapacity(1<<16, 16), pagedcache.WithContextLen(1<<17), pagedcache.WithSeed(7),
		withDecodeDelay(25*time.Millisecond))
	up := &upstreamEvents{rt: http.DefaultTransport}
	pol := testPolicyInbound(b, ts.URL, 1<<16, blockNoCanary)
	if canary {
		pol = testPolicy(b, ts.URL, 1<<16)
	}
	_, hs := startProxy(b, Options{Policy: pol, Transport: up})
	direct, proxied := client(ts.URL, "bench"), client(hs.URL, "bench")
	var ds, ps, added []float64
	var dPieces, pPieces int
	i := 0
	for b.Loop() {
		i++
		req := chatReq(fmt.Sprintf("Question %d: %s", i, prose(uint64(i), 80)), 64, true)
		type result struct {
			first  time.Duration
			pieces int
			err    error
		}
		dc, pc := make(chan result, 1), make(chan result, 1)
		go func() {
			_, n, first, err := streamPieces(ctx, direct, req, nil)
			dc <- result{first, n, err}
		}()
		go func() {
			_, n, first, err := streamPieces(ctx, proxied, req, &up.n)
			pc <- result{first, n, err}
		}()
		d, p := <-dc, <-pc
		if d.err != nil || p.err != nil {
			b.Fatalf("direct: %v, proxied: %v", d.err, p.err)
		}
		if p.pieces == 0 {
			continue // nothing but the canary line, stripped
		}
		ms := func(x time.Duration) float64 { return x.Seconds() * 1e3 }
		ds, ps, added = append(ds, ms(d.first)), append(ps, ms(p.first)), append(added, ms(p.first-d.first))
		dPieces, pPieces = dPieces+d.pieces, pPieces+p.pieces
	}
	if len(ds) == 0 {
		b.Skip("no answer with text")
	}
	q := func(xs []float64, p float64) float64 {
		xs = slices.Sorted(slices.Values(xs))
		return xs[min(len(xs)-1, int(p*float64(len(xs))))]
	}
	b.ReportMetric(q(ds, 0.5), "direct-p50-ms")
	b.ReportMetric(q(ds, 0.95), "direct-p95-ms")
	b.ReportMetric(q(ps, 0.5), "proxied-p50-ms")
	b.ReportMetric(q(ps, 0.95), "proxied-p95-ms")
	b.ReportMetric(q(added, 0.5), "added-p50-ms")
	b.ReportMetric(q(added, 0.95), "added-p95-ms")
	b.ReportMetric(float64(dPieces)/float64(len(ds)), "direct-pieces")
	b.ReportMetric(float64(pPieces)/float64(len(ps)), "proxied-pieces")
}
