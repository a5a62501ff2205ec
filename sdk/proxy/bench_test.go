package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aishield/aishield/pagedcache"
)

// BenchmarkProxyAddedLatency measures what the proxy adds to a 4 KB chat
// request on loopback: each iteration sends the same request straight to
// the paged-cache server and through the proxy, and the benchmark reports
// the p50 of both and of their difference (goal: under 1 ms added at p50).
func BenchmarkProxyAddedLatency(b *testing.B) {
	ts := pagedcache.NewTestServer(b, pagedcache.WithCapacity(1<<20, 16), pagedcache.WithContextLen(1<<21))
	_, hs := startProxy(b, Options{Policy: testPolicy(b, ts.URL, 0)})
	text := prose(1, 700) // about 4 KB of clean prose
	for len(text) < 4096 {
		text += " " + prose(2, 10)
	}
	body, _ := json.Marshal(chatReq(text[:4096], 16, false))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	send := func(url string) time.Duration {
		start := time.Now()
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-bench")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	send(ts.URL)
	send(hs.URL)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	var direct, proxied, added []float64
	for b.Loop() {
		d := send(ts.URL)
		p := send(hs.URL)
		direct = append(direct, d.Seconds()*1e3)
		proxied = append(proxied, p.Seconds()*1e3)
		added = append(added, (p-d).Seconds()*1e3)
	}
	p50 := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	b.ReportMetric(p50(direct), "direct-p50-ms")
	b.ReportMetric(p50(proxied), "proxied-p50-ms")
	b.ReportMetric(p50(added), "added-p50-ms")
}
