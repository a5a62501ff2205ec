package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/sdk"
)

// metricsOf returns the proxy's /metrics page, presenting key when set.
func metricsOf(t testing.TB, base, key string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	if key != "" {
		req.Header.Set(CallerKeyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, data)
	}
	return string(data)
}

// apiErrorOf decodes an OpenAI-format error body.
func apiErrorOf(t testing.TB, body string) (typ, code string) {
	t.Helper()
	var v struct {
		Error struct {
			Type, Code, Message string
		}
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Error.Message == "" {
		t.Fatalf("not an OpenAI error body: %q", body)
	}
	return v.Error.Type, v.Error.Code
}

// gatedUpstream answers chats like fixedUpstream, but each request waits
// for release to be closed; arrived receives one value per request
// arriving.
type gatedUpstream struct {
	*httptest.Server
	arrived chan struct{}
	release chan struct{}
	n       atomic.Int64
}

func newGatedUpstream(t testing.TB) *gatedUpstream {
	u := &gatedUpstream{arrived: make(chan struct{}, 16), release: make(chan struct{})}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.n.Add(1)
		u.arrived <- struct{}{}
		<-u.release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Fine."},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(u.Close)
	return u
}

// TestHardening09ConcurrencyLimit: with MaxConcurrent 2 and two requests
// held by the upstream, a third is answered 429 in OpenAI's format with
// Retry-After, without reaching the upstream, and counted; once the two
// finish, requests are served again.
func TestHardening09ConcurrencyLimit(t *testing.T) {
	up := newGatedUpstream(t)
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound), MaxConcurrent: 2})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ask(ctx, client(hs.URL, fmt.Sprint("held", i)), "What is the weekly schedule?", 8, false)
			errs <- err
		}()
	}
	<-up.arrived
	<-up.arrived
	resp, body := post(t, hs.URL, "What is the weekly schedule?", map[string]string{"Authorization": "Bearer sk-third"})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: %d (Retry-After %q) %s; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if typ, code := apiErrorOf(t, body); typ != "rate_limit_error" || code != "proxy_concurrency_limit" {
		t.Errorf("third request: type %q code %q", typ, code)
	}
	// go-openai sees it as an API error with the status.
	_, err := ask(ctx, client(hs.URL, "fourth"), "What is the weekly schedule?", 8, false)
	var ae *openai.APIError
	if !errors.As(err, &ae) || ae.HTTPStatusCode != http.StatusTooManyRequests {
		t.Errorf("go-openai: %v; want an APIError of status 429", err)
	}
	if n := up.n.Load(); n != 2 {
		t.Errorf("the upstream received %d requests, want the 2 admitted", n)
	}
	close(up.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("admitted request: %v", err)
		}
	}
	if _, err := ask(ctx, client(hs.URL, "after"), "What is the weekly schedule?", 8, false); err != nil {
		t.Errorf("after the burst: %v", err)
	}
	if m := metricsOf(t, hs.URL, ""); !strings.Contains(m, `aishield_proxy_limit_total{limit="concurrency"} 2`) {
		t.Errorf("metrics:\n%s", m)
	}
}

// TestHardening09InFlightBytes: while a request of 600 KB is being served,
// bodies that would take the bytes in flight over MaxInFlightBytes (1 MB)
// are answered 429, a declared one before it is read, a chunked one once
// its bytes do not fit; the upstream receives neither. Once the first is
// served its bytes are given back.
func TestHardening09InFlightBytes(t *testing.T) {
	up := newGatedUpstream(t)
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound), MaxBody: 1 << 20, MaxInFlightBytes: 1 << 20})
	big, _ := json.Marshal(chatReq(prose(3, 200000)[:600000], 8, false))
	send := func(chunked bool) (int, string) {
		var r io.Reader = bytes.NewReader(big)
		if chunked {
			r = io.MultiReader(r) // no length known: sent chunked
		}
		req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions", r)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("chunked %v: %v", chunked, err)
			return 0, ""
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(data)
	}
	first := make(chan int, 1)
	go func() { code, _ := send(false); first <- code }()
	<-up.arrived
	for _, chunked := range []bool{false, true} {
		code, body := send(chunked)
		if code != http.StatusTooManyRequests {
			t.Fatalf("chunked %v: %d %s; want 429", chunked, code, body)
		}
		if _, c := apiErrorOf(t, body); c != "proxy_memory_limit" {
			t.Errorf("chunked %v: code %q", chunked, c)
		}
	}
	if n := up.n.Load(); n != 1 {
		t.Errorf("the upstream received %d requests, want the first only", n)
	}
	close(up.release)
	if code := <-first; code != 200 {
		t.Fatalf("first request: %d", code)
	}
	for _, chunked := range []bool{false, true} {
		if code, body := send(chunked); code != 200 {
			t.Errorf("chunked %v, alone: %d %s", chunked, code, body)
		}
		<-up.arrived
	}
	if m := metricsOf(t, hs.URL, ""); !strings.Contains(m, `aishield_proxy_limit_total{limit="in_flight_bytes"} 2`) {
		t.Errorf("metrics:\n%s", m)
	}
}

// TestHardening09BodySize: a body declared larger than MaxBody is answered
// 413 before it is read, and counted.
func TestHardening09BodySize(t *testing.T) {
	up := newFixedUpstream(t, "Fine.")
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound), MaxBody: 64 << 10})
	resp, body := post(t, hs.URL, prose(4, 20000), nil)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d %s; want 413", resp.StatusCode, body)
	}
	if _, code := apiErrorOf(t, body); code != "request_too_large" {
		t.Errorf("code %q", code)
	}
	if up.count() != 0 {
		t.Error("the upstream received the request")
	}
	if m := metricsOf(t, hs.URL, ""); !strings.Contains(m, `aishield_proxy_limit_total{limit="body_size"} 1`) {
		t.Errorf("metrics:\n%s", m)
	}
}

// sseUpstream streams an OpenAI chat completion of n events carrying
// piece each, then [DONE], unless the client goes away first.
func sseUpstream(t testing.TB, piece string, n int, pause time.Duration) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := range n {
			data, _ := json.Marshal(map[string]any{"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "m",
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}}}})
			if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
				return
			}
			if i%16 == 0 || pause > 0 {
				fl.Flush()
			}
			if pause > 0 {
				time.Sleep(pause)
			}
		}
		stop, _ := json.Marshal(map[string]any{"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", stop)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestHardening09StreamCap: a streamed answer longer than MaxStreamBytes is
// cut: go-openai's stream ends with the guard's error event, far less than
// the stream reaches the client, the audit records a failure at stage
// stream, and the cut is counted.
func TestHardening09StreamCap(t *testing.T) {
	up := sseUpstream(t, "The harbour opens at nine and the ferry leaves at ten. ", 40000, 0) // about 6 MB
	var audit syncBuffer
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound), MaxStreamBytes: 256 << 10,
		AuditLog: sdk.NewAuditLog(&audit, "")})
	st, err := client(hs.URL, "alice").CreateChatCompletionStream(context.Background(), chatReq("Tell me about the harbour.", 8, true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got strings.Builder
	for {
		r, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				t.Fatalf("the stream ended normally after %d bytes of text; want it cut", got.Len())
			}
			if !strings.Contains(err.Error(), "aishield_guard_error") && !strings.Contains(err.Error(), "stream longer than") {
				t.Fatalf("stream error %v; want the guard's cut", err)
			}
			break
		}
		if len(r.Choices) > 0 {
			got.WriteString(r.Choices[0].Delta.Content)
		}
	}
	if got.Len() > 256<<10 {
		t.Errorf("%d bytes of text reached the client, over the 256 KiB cap", got.Len())
	}
	recs := auditRecords(t, audit.String())
	if len(recs) != 1 || recs[0].Failure != sdk.StageStream {
		t.Errorf("audit %+v; want one record failing at stage stream", recs)
	}
	if m := metricsOf(t, hs.URL, ""); !strings.Contains(m, `aishield_proxy_limit_total{limit="stream_bytes"} 1`) {
		t.Errorf("metrics:\n%s", m)
	}
}

// TestHardening09RequestMemory: a 4 MB request through the proxy allocates
// at most 55 times its size in all (43 measured: the body, the guard's
// texts, and the verifier's set of the request's k-grams, 128 MB of it);
// it allocated 89 times its size when the verifier kept every
// fingerprint's offsets, in regrown copies, to record only their hashes.
func TestHardening09RequestMemory(t *testing.T) {
	up := newFixedUpstream(t, "Fine.")
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound), MaxBody: 8 << 20})
	var sb strings.Builder
	for i := uint64(0); sb.Len() < 4<<20; i++ {
		sb.WriteString(prose(i, 200))
		sb.WriteString("\n")
	}
	body, _ := json.Marshal(chatReq(sb.String(), 8, false))
	send := func() {
		req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, data)
		}
	}
	send() // warm the pools
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	send()
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MB request allocated %d MB (%.1f times its size)", len(body)>>20, alloc>>20, float64(alloc)/float64(len(body)))
	if alloc > 55*uint64(len(body)) {
		t.Errorf("a %d-byte request allocated %d bytes, over 55 times its size", len(body), alloc)
	}
}

// TestHardening10BodyTimeout: a request body that stops arriving is
// answered 408 in OpenAI's format once BodyTimeout has passed, instead of
// holding the connection, and never reaches the upstream.
func TestHardening10BodyTimeout(t *testing.T) {
	up := newFixedUpstream(t, "Fine.")
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound), BodyTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The headers and 20 bytes of a 1000-byte body, then nothing.
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":\"m\",\"messa")
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang fails the test rather than blocking it
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("%d %s; want 408", resp.StatusCode, data)
	}
	if _, code := apiErrorOf(t, string(data)); code != "request_timeout" {
		t.Errorf("code %q", code)
	}
	if up.count() != 0 {
		t.Error("the upstream received the request")
	}
	if m := metricsOf(t, hs.URL, ""); !strings.Contains(m, `aishield_proxy_limit_total{limit="body_timeout"} 1`) {
		t.Errorf("metrics:\n%s", m)
	}
}

// TestHardening10BodyTimeoutSparesStreams: the body deadline bounds the
// request only: a stream answered over several times BodyTimeout reaches
// go-openai whole.
func TestHardening10BodyTimeoutSparesStreams(t *testing.T) {
	up := sseUpstream(t, "The ferry leaves at ten. ", 8, 100*time.Millisecond)
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound), BodyTimeout: 150 * time.Millisecond})
	text, err := ask(context.Background(), client(hs.URL, "alice"), "When does the ferry leave?", 8, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("The ferry leaves at ten. ", 8); text != want {
		t.Errorf("got %q, want %q", text, want)
	}
}

// headerUpstream records the headers of the requests it receives and
// answers a fixed chat.
func headerUpstream(t testing.TB) (*fixedUpstream, string) {
	up := newFixedUpstream(t, "Fine.")
	return up, up.URL
}

// TestHardening16ForwardedHeadersDropped: what a caller claims about
// addresses (Forwarded, X-Forwarded-*, X-Real-IP) is not passed upstream;
// with ForwardClientAddress, X-Forwarded-For names the connection's peer,
// not the caller's claim.
func TestHardening16ForwardedHeadersDropped(t *testing.T) {
	claims := map[string]string{"Forwarded": "for=10.9.9.9;host=evil.example", "X-Forwarded-For": "10.9.9.9",
		"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https", "X-Real-IP": "10.9.9.9", "True-Client-IP": "10.9.9.9"}
	for _, forward := range []bool{false, true} {
		up, base := headerUpstream(t)
		_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, base, 0, quietInbound), ForwardClientAddress: forward})
		if resp, body := post(t, hs.URL, "What is the weekly schedule?", claims); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		h := up.last()
		for k := range claims {
			if v := h.Get(k); strings.Contains(v, "10.9.9.9") || strings.Contains(v, "evil.example") || (!forward && v != "") {
				t.Errorf("forward %v: the upstream received %s: %q", forward, k, v)
			}
		}
		if forward && h.Get("X-Forwarded-For") != "127.0.0.1" {
			t.Errorf("forward: X-Forwarded-For %q, want the peer 127.0.0.1", h.Get("X-Forwarded-For"))
		}
	}
}

// keyTransport adds the proxy's caller key to every request of a client.
type keyTransport struct {
	key, header string
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if k.header == "Proxy-Authorization" {
		r.Header.Set(k.header, "Bearer "+k.key)
	} else {
		r.Header.Set(k.header, k.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestHardening16CallerKeys: with CallerKeys, go-openai without a key, or
// with a wrong one, gets 401 in OpenAI's format (counted) and nothing
// reaches the upstream; with a listed key (in X-Aishield-Key, or
// Proxy-Authorization) it is served and the key is not forwarded.
// /metrics needs the key too; /healthz does not.
func TestHardening16CallerKeys(t *testing.T) {
	const key = "team-key-0123456789abcdef"
	keys, err := ParseCallerKeys(strings.NewReader("# the team\n" + key + "\nsha256:" + strings.Repeat("ab", 32) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	up, base := headerUpstream(t)
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, base, 0, quietInbound), CallerKeys: keys})
	ctx := context.Background()
	withKey := func(k, header string) *openai.Client {
		cfg := openai.DefaultConfig("sk-provider")
		cfg.BaseURL = hs.URL + "/v1"
		cfg.HTTPClient = &http.Client{Transport: keyTransport{key: k, header: header}, Timeout: 30 * time.Second}
		return openai.NewClientWithConfig(cfg)
	}
	for _, c := range []*openai.Client{client(hs.URL, "nokey"), withKey("team-key-0123456789abcdeX", CallerKeyHeader)} {
		_, err := ask(ctx, c, "What is the weekly schedule?", 8, false)
		var ae *openai.APIError
		if !errors.As(err, &ae) || ae.HTTPStatusCode != http.StatusUnauthorized || ae.Code != "invalid_caller_key" {
			t.Errorf("without a valid key: %v; want a 401 APIError", err)
		}
	}
	if up.count() != 0 {
		t.Fatalf("the upstream received %d unauthenticated requests", up.count())
	}
	for _, header := range []string{CallerKeyHeader, "Proxy-Authorization"} {
		if _, err := ask(ctx, withKey(key, header), "What is the weekly schedule?", 8, false); err != nil {
			t.Fatalf("with the key in %s: %v", header, err)
		}
		h := up.last()
		if h.Get(CallerKeyHeader) != "" || h.Get("Proxy-Authorization") != "" {
			t.Errorf("the caller key reached the upstream: %v", h)
		}
		if h.Get("Authorization") != "Bearer sk-provider" {
			t.Errorf("the provider key did not pass: %q", h.Get("Authorization"))
		}
	}
	if resp, err := http.Get(hs.URL + "/metrics"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without a key: %v %v", resp.StatusCode, err)
	}
	if resp, err := http.Get(hs.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", resp.StatusCode, err)
	}
	if m := metricsOf(t, hs.URL, key); !strings.Contains(m, "aishield_proxy_unauthenticated_total 3") {
		t.Errorf("metrics:\n%s", m)
	}
}

// TestNewLimitsConsistent: a MaxInFlightBytes below MaxBody is refused (a
// body of MaxBody could never be admitted, and its 429 would be retried
// for ever); by default it is four bodies of MaxBody.
func TestNewLimitsConsistent(t *testing.T) {
	pol := testPolicyInbound(t, "http://127.0.0.1:1", 0, quietInbound)
	if _, err := New(context.Background(), Options{Policy: pol, Upstream: "upstream", MaxBody: 2 << 20, MaxInFlightBytes: 1 << 20}); err == nil {
		t.Error("MaxInFlightBytes below MaxBody accepted")
	}
	p, err := New(context.Background(), Options{Policy: pol, Upstream: "upstream", MaxBody: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.opts.MaxInFlightBytes != 8<<20 || p.opts.MaxConcurrent != DefaultMaxConcurrent || p.opts.MaxStreamBytes != DefaultMaxStreamBytes || p.opts.BodyTimeout != DefaultBodyTimeout {
		t.Errorf("defaults: %+v", p.opts)
	}
}
