package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aishield/aishield/pagedcache"
)

// benchChat is the body of a 4 KB chat of clean documentation prose.
func benchChat() []byte {
	text := prose(1, 700)
	for len(text) < 4096 {
		text += " " + prose(2, 10)
	}
	body, _ := json.Marshal(chatReq(text[:4096], 16, false))
	return body
}

// benchSend posts body to url's chat completions with client and reads the
// whole answer; it fails unless the answer is a 200.
func benchSend(b *testing.B, client *http.Client, url string, body []byte) {
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-bench")
	resp, err := client.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Errorf("status %d", resp.StatusCode)
	}
}

// quantile returns the q-quantile of xs (sorting xs).
func quantile(xs []float64, q float64) float64 {
	slices.Sort(xs)
	return xs[min(len(xs)-1, int(q*float64(len(xs))))]
}

// BenchmarkProxyAddedLatency measures what the proxy adds to a 4 KB chat
// request on loopback, one client: each iteration sends the same request
// straight to the paged-cache server and through the proxy, and the
// benchmark reports the p50 of both, and the p50 and p99 of their
// difference (goals: 0.3 ms added at p50, 1 ms at p99).
func BenchmarkProxyAddedLatency(b *testing.B) {
	ts := pagedcache.NewTestServer(b, pagedcache.WithCapacity(1<<20, 16), pagedcache.WithContextLen(1<<21))
	_, hs := startProxy(b, Options{Policy: testPolicy(b, ts.URL, 0)})
	body := benchChat()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	send := func(url string) time.Duration {
		start := time.Now()
		benchSend(b, client, url, body)
		if b.Failed() {
			b.FailNow()
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
	b.ReportMetric(quantile(direct, 0.5), "direct-p50-ms")
	b.ReportMetric(quantile(proxied, 0.5), "proxied-p50-ms")
	b.ReportMetric(quantile(added, 0.5), "added-p50-ms")
	b.ReportMetric(quantile(added, 0.99), "added-p99-ms")
}

// BenchmarkProxyLoad16 measures the proxy under load: 16 clients send 4 KB
// chats as fast as they can, in phases of loadPhase requests alternately
// straight to the paged-cache server and through the proxy (one direct and
// one proxied phase per iteration). Everything runs in this process: the
// clients, the paged-cache server and, in the proxied phases, the proxy.
// It reports
//
//   - throughput-ratio: the proxied requests per second over the direct
//     ones (goal ≥ 0.9); the proxy competes with the clients and the server
//     for the same cores, as it would on one machine;
//   - proxy-cpu-ms/req: the process's CPU time (user + system, getrusage)
//     of the proxied phases minus that of the direct phases, per request:
//     what the proxy itself spends on a request, both its sides of the
//     HTTP exchange included (goal ≤ 0.25 ms);
//   - direct-req/s and proxied-req/s.
func BenchmarkProxyLoad16(b *testing.B) {
	const clients, loadPhase = 16, 320
	ts := pagedcache.NewTestServer(b, pagedcache.WithCapacity(1<<20, 16), pagedcache.WithContextLen(1<<21))
	_, hs := startProxy(b, Options{Policy: testPolicy(b, ts.URL, 0)})
	body := benchChat()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients}}
	phase := func(url string, n int) (wall, cpu time.Duration) {
		var left atomic.Int64
		left.Store(int64(n))
		var wg sync.WaitGroup
		cpu0 := processCPU(b)
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for left.Add(-1) >= 0 && !b.Failed() {
					benchSend(b, client, url, body)
				}
			})
		}
		wg.Wait()
		wall, cpu = time.Since(start), processCPU(b)-cpu0
		if b.Failed() {
			b.FailNow()
		}
		return wall, cpu
	}
	phase(ts.URL, 2*clients) // warm connections up on both sides
	phase(hs.URL, 2*clients)
	b.ReportAllocs()
	var dWall, dCPU, pWall, pCPU time.Duration
	for b.Loop() {
		w, c := phase(ts.URL, loadPhase)
		dWall, dCPU = dWall+w, dCPU+c
		w, c = phase(hs.URL, loadPhase)
		pWall, pCPU = pWall+w, pCPU+c
	}
	n := float64(b.N * loadPhase)
	b.ReportMetric(n/dWall.Seconds(), "direct-req/s")
	b.ReportMetric(n/pWall.Seconds(), "proxied-req/s")
	b.ReportMetric(dWall.Seconds()/pWall.Seconds(), "throughput-ratio")
	b.ReportMetric((pCPU-dCPU).Seconds()*1e3/n, "proxy-cpu-ms/req")
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
