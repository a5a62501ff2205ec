package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMemProbe(t *testing.T) {
	up := newFixedUpstream(t, "Fine.")
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound), MaxBody: 64 << 20})
	var sb strings.Builder
	for sb.Len() < 30<<20 {
		sb.WriteString(prose(uint64(sb.Len()), 200))
		sb.WriteString("\n")
	}
	body, _ := json.Marshal(chatReq(sb.String(), 16, false))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, total0 := ms.HeapAlloc, ms.TotalAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
		}
	}()
	start := time.Now()
	req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&ms)
	t.Logf("status %d %.80s body %d MB; %v; peak heap above base %d MB; total alloc %d MB", resp.StatusCode, data, len(body)>>20, time.Since(start), (peak.Load()-base)>>20, (ms.TotalAlloc-total0)>>20)
}
