package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestForwardedHeader: the headers sent upstream for a request, header by
// header: end-to-end headers pass, hop-by-hop ones (and those Connection
// names) do not, nor do the caller's address claims, its proxy key and
// the principal header; Te keeps only "trailers"; a missing User-Agent is
// sent empty (no Go default).
func TestForwardedHeader(t *testing.T) {
	p := &Proxy{opts: Options{PrincipalHeader: DefaultPrincipalHeader}}
	for _, tc := range []struct {
		name string
		in   http.Header
		want http.Header
	}{
		{"end-to-end headers pass",
			http.Header{"Authorization": {"Bearer sk-1"}, "Content-Type": {"application/json"}, "User-Agent": {"app/1"},
				"X-Custom": {"a", "b"}},
			http.Header{"Authorization": {"Bearer sk-1"}, "Content-Type": {"application/json"}, "User-Agent": {"app/1"},
				"X-Custom": {"a", "b"}}},
		{"no user agent is sent empty",
			http.Header{"X-Custom": {"a"}},
			http.Header{"X-Custom": {"a"}, "User-Agent": {""}}},
		{"hop-by-hop headers are dropped",
			http.Header{"Connection": {"keep-alive, X-Hop-A", "x-hop-b"}, "X-Hop-A": {"1"}, "X-Hop-B": {"2"},
				"Keep-Alive": {"timeout=5"}, "Proxy-Connection": {"keep-alive"}, "Proxy-Authenticate": {"Basic"},
				"Proxy-Authorization": {"Bearer pk"}, "Trailer": {"X-T"}, "Transfer-Encoding": {"chunked"},
				"Upgrade": {"websocket"}, "User-Agent": {"ua"}},
			http.Header{"User-Agent": {"ua"}}},
		{"te keeps only trailers",
			http.Header{"Te": {"gzip, Trailers"}, "User-Agent": {"ua"}},
			http.Header{"Te": {"trailers"}, "User-Agent": {"ua"}}},
		{"te without trailers is dropped",
			http.Header{"Te": {"gzip"}, "User-Agent": {"ua"}},
			http.Header{"User-Agent": {"ua"}}},
		{"address claims, proxy key and principal are dropped",
			http.Header{"Forwarded": {"for=192.0.2.1"}, "X-Forwarded-For": {"192.0.2.1"}, "X-Forwarded-Host": {"h"},
				"X-Forwarded-Proto": {"https"}, "X-Forwarded-Port": {"443"}, "X-Forwarded-Prefix": {"/p"},
				"X-Real-Ip": {"192.0.2.1"}, "X-Client-Ip": {"192.0.2.1"}, "True-Client-Ip": {"192.0.2.1"},
				"Cf-Connecting-Ip": {"192.0.2.1"}, CallerKeyHeader: {"ck"}, DefaultPrincipalHeader: {"alice"},
				"User-Agent": {"ua"}},
			http.Header{"User-Agent": {"ua"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			r.Header = tc.in.Clone()
			got := p.forwardedHeader(r)
			if !equalHeaders(got, tc.want) {
				t.Errorf("forwarded %v, want %v", got, tc.want)
			}
			if !equalHeaders(r.Header, tc.in) {
				t.Errorf("the caller's headers changed: %v, want %v", r.Header, tc.in)
			}
		})
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}

// TestForwardedHeaderClientAddress: with ForwardClientAddress the
// X-Forwarded-* headers come from the connection, never from the caller.
func TestForwardedHeaderClientAddress(t *testing.T) {
	p := &Proxy{opts: Options{PrincipalHeader: DefaultPrincipalHeader, ForwardClientAddress: true}}
	r := httptest.NewRequest("POST", "http://proxy.example/v1/chat/completions", nil)
	r.RemoteAddr = "198.51.100.7:4242"
	r.Header.Set("X-Forwarded-For", "192.0.2.1")
	r.Header.Set("X-Forwarded-Proto", "https")
	h := p.forwardedHeader(r)
	for k, want := range map[string]string{"X-Forwarded-For": "198.51.100.7", "X-Forwarded-Host": "proxy.example", "X-Forwarded-Proto": "http"} {
		if got := h.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

// TestCleanQuery: a query that parses passes as it is; one with a ';'
// separator, a bad escape or too many parameters is re-encoded from what
// parses, so that the upstream reads the parameters the proxy reads.
func TestCleanQuery(t *testing.T) {
	many := strings.Repeat("a=1&", maxQueryParams) + "a=1"
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"api-version=2024-06-01", "api-version=2024-06-01"},
		{"a=1&b=%20x", "a=1&b=%20x"},
		{"b=2;a=1", ""},
		{"a=1&b=2;c=3", "a=1"},
		{"a=%zz&b=2", "b=2"},
		{"a=1&b=%2", "a=1"},
		{many, ""},
	} {
		if got := cleanQuery(tc.in); got != tc.want {
			t.Errorf("cleanQuery(%.40q) = %.40q, want %.40q", tc.in, got, tc.want)
		}
	}
}

// TestIsEventStream: the media type decides, parameters and case aside.
func TestIsEventStream(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/event-stream": true, "Text/Event-Stream; charset=utf-8": true, " text/event-stream ;x=1": true,
		"application/json": false, "": false, "text/event-streams": false, "text/plain; x=text/event-stream": false,
	} {
		if got := isEventStream(ct); got != want {
			t.Errorf("isEventStream(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestProxyRequestTrailersNotForwarded: the trailers of a chunked request
// body are not part of what the guard parsed: they are not sent upstream.
func TestProxyRequestTrailersNotForwarded(t *testing.T) {
	up := newFixedUpstream(t, "Noted, thank you.")
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound)})
	body, _ := json.Marshal(chatReq("What are the opening hours?", 16, false))
	req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions", io.MultiReader(bytes.NewReader(body)))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1 // chunked, which carries trailers
	req.Trailer = http.Header{"X-Unchecked": {"jean.dupont@acme-corp.fr"}}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	if h := up.last(); h.Get("X-Unchecked") != "" || h.Get("Trailer") != "" {
		t.Errorf("upstream received %v: the request's trailers must not pass", h)
	}
}

// TestProxyInvalidUpgrade: a request asking to switch to a protocol whose
// name is not printable ASCII (net/http lets obs-text bytes through) is
// refused (502, nothing sent upstream); a printable one is forwarded
// without the upgrade.
func TestProxyInvalidUpgrade(t *testing.T) {
	up := newFixedUpstream(t, "Noted, thank you.")
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound)})
	for _, tc := range []struct {
		upgrade string
		status  int
		sent    int
	}{{"websocket", 200, 1}, {"web\x80socket", 502, 0}} {
		before := up.count()
		raw := rawPost(t, hs.URL, "Connection: Upgrade\r\nUpgrade: "+tc.upgrade+"\r\n")
		if !strings.HasPrefix(raw, fmt.Sprintf("HTTP/1.1 %d ", tc.status)) {
			t.Errorf("upgrade %q: answer %.80q, want %d", tc.upgrade, raw, tc.status)
		}
		if got := up.count() - before; got != tc.sent {
			t.Errorf("upgrade %q: %d requests reached the upstream, want %d", tc.upgrade, got, tc.sent)
		}
		if tc.sent > 0 && (up.last().Get("Upgrade") != "" || up.last().Get("Connection") != "") {
			t.Errorf("upgrade %q: the upstream received %v", tc.upgrade, up.last())
		}
	}
}

// rawPost sends a chat to the proxy at base over a raw connection with
// the extra header lines and returns the start of the answer.
func rawPost(t *testing.T, base, extra string) string {
	t.Helper()
	body, _ := json.Marshal(chatReq("What are the opening hours?", 16, false))
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s",
		extra, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return fmt.Sprintf("HTTP/1.1 %d %s", resp.StatusCode, data)
}

// TestProxySwitchingProtocols: an upstream that answers 101 although no
// upgrade was forwarded (labelled an event stream, so that the guard hands
// it on rather than reading it whole) gets the caller a 502, and no
// switched connection.
func TestProxySwitchingProtocols(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		w.WriteHeader(http.StatusSwitchingProtocols)
	}))
	t.Cleanup(up.Close)
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound)})
	resp, body := post(t, hs.URL, "What are the opening hours?", nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "upstream_unavailable") {
		t.Errorf("%d %s: want 502 upstream_unavailable", resp.StatusCode, body)
	}
}

// TestProxyResponseTrailers: the trailers of an upstream's answer,
// streamed or not, are not part of what the guard parsed and verified:
// they do not reach the caller, the body does.
func TestProxyResponseTrailers(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Trailer", "X-Upstream-Trailer")
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					for _, s := range []string{"Nine ", "to five."} {
						fmt.Fprintf(w, chunk, s)
					}
					fmt.Fprint(w, "data: [DONE]\n\n")
				} else {
					w.Header().Set("Content-Type", "application/json")
					b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
						"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "Nine to five."}, "finish_reason": "stop"}}})
					w.Write(b)
				}
				w.Header().Set("X-Upstream-Trailer", "jean.dupont@acme-corp.fr")
			}))
			t.Cleanup(up.Close)
			_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound)})
			body, _ := json.Marshal(chatReq("What are the opening hours?", 16, stream))
			resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(data), "five.") {
				t.Fatalf("%d %s", resp.StatusCode, data)
			}
			if len(resp.Trailer) > 0 || resp.Header.Get("Trailer") != "" || strings.Contains(string(data), "acme-corp") {
				t.Errorf("trailers %v, header %v: the upstream's trailers must not pass", resp.Trailer, resp.Header)
			}
		})
	}
}
