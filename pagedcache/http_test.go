package pagedcache

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDebugAndMetricsEndpoints(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t)
	_, r := chat(t, ts.Client(), ts.URL, "acme", "hello world, a short prompt", 8)
	code, body := get(t, ts.URL+"/debug/requests/"+r.ID)
	var rec RequestRecord
	if code != 200 || json.Unmarshal([]byte(body), &rec) != nil || rec.Tenant != "acme" || len(rec.Reads) == 0 {
		t.Fatalf("debug request: %d %s", code, body)
	}
	if code, _ := get(t, ts.URL+"/debug/requests/chatcmpl-pc-999"); code != 404 {
		t.Errorf("unknown id: %d", code)
	}
	code, body = get(t, ts.URL+"/debug/pages")
	var ps PagesSummary
	if code != 200 || json.Unmarshal([]byte(body), &ps) != nil || ps.TotalPages != 4096 || ps.PagesByTenant["acme"] == 0 {
		t.Errorf("debug pages: %d %s", code, body)
	}
	code, body = get(t, ts.URL+"/metrics")
	if code != 200 {
		t.Errorf("metrics: %d", code)
	}
	for _, want := range []string{
		"# TYPE vllm:kv_cache_usage_perc gauge",
		`vllm:num_requests_running{model_name="pagedcache-1"} 0`,
		`vllm:num_requests_waiting{model_name="pagedcache-1"} 0`,
		fmt.Sprintf(`vllm:prompt_tokens_total{model_name="pagedcache-1"} %d`, r.Usage.PromptTokens),
		`vllm:request_success_total{model_name="pagedcache-1",finished_reason="`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for path, want := range map[string]int{"/health": 200, "/v1/models": 200, "/nope": 404} {
		if code, _ := get(t, ts.URL+path); code != want {
			t.Errorf("%s: %d", path, code)
		}
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	s, err := New(Options{MaxBodyBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		body    string
		headers map[string]string
		want    int
	}{
		{"invalid json", "{", nil, 400},
		{"invalid utf-8 and NUL are fine", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\xff\\u0000b\"}]}", nil, 200},
		{"too large", `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 2000) + `"}]}`, nil, 413},
		{"unknown fault", `{"messages":[{"role":"user","content":"a"}]}`, map[string]string{HeaderFault: "meltdown"}, 400},
		{"bad abort", `{"messages":[{"role":"user","content":"a"}]}`, map[string]string{HeaderAbort: "decode"}, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(tt.body))
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.want, w.Body)
			}
			if w.Code != 200 && !strings.Contains(w.Body.String(), `"type":"invalid_request_error"`) {
				t.Errorf("not an OpenAI error: %s", w.Body)
			}
		})
	}
}

// A full queue answers 503; the queued request runs when pages free up.
func TestQueueBoundAnd503(t *testing.T) {
	ts := NewTestServer(t, func(o *Options) error {
		o.MaxRunning, o.MaxWaiting, o.DecodeTokenDelay = 1, 1, 5*time.Millisecond
		return nil
	})
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = chat(t, ts.Client(), ts.URL, "t", fmt.Sprint("slow request ", i), 40)
		}()
		// Wait until the request is running (first) or queued (second).
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			p := ts.Pages()
			if p.Running+p.Waiting == i+1 {
				break
			}
		}
	}
	code, r := chat(t, ts.Client(), ts.URL, "t", "one too many", 4)
	if code != 503 || r.Error == nil || r.Error.Code == nil || *r.Error.Code != "server_overloaded" {
		t.Errorf("third request: %d %+v", code, r.Error)
	}
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Errorf("running and queued requests: %v", codes)
	}
}

func TestRequestLog(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sb strings.Builder
	ts := NewTestServer(t, func(o *Options) error { o.Log = lockedWriter{&mu, &sb}; return nil })
	chat(t, ts.Client(), ts.URL, "acme", "the secret word is PINEAPPLE", 8, "Authorization", "Bearer sk-live-123")
	mu.Lock()
	line := sb.String()
	mu.Unlock()
	if strings.Count(line, "\n") != 1 || !strings.Contains(line, `tenant="acme"`) || !strings.Contains(line, " 200 ") {
		t.Errorf("log = %q", line)
	}
	get(t, ts.URL+"/debug/pages")
	mu.Lock()
	line2 := strings.TrimPrefix(sb.String(), line)
	mu.Unlock()
	if strings.Count(line2, "\n") != 1 || !strings.Contains(line2, `GET "/debug/pages" 200`) {
		t.Errorf("log of a GET = %q", line2)
	}
	if strings.Contains(line, "PINEAPPLE") || strings.Contains(line, "sk-live") {
		t.Errorf("log leaks input: %q", line)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// FuzzServeHTTP sends arbitrary bodies and fault headers through the whole
// server: never a panic, always an answer the API documents, and pages all
// returned afterwards.
func FuzzServeHTTP(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi there"}],"max_tokens":3}`), "", false)
	f.Add([]byte(`{"prompt":"x y z 123456","stream":true,"stream_options":{"include_usage":true}}`), "auto-truncate", true)
	f.Add([]byte("{\"messages\":[{\"role\":\"user\",\"content\":\"\\u0000\xff\xfe 漢字\"}]}"), "oversize-stale-pages,abort-reuse-race", false)
	s, err := New(Options{CapacityTokens: 256, PageSize: 8, ContextLen: 512, MaxWaiting: 4})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, fault string, completions bool) {
		path := "/v1/chat/completions"
		if completions {
			path = "/v1/completions"
		}
		req := httptest.NewRequest("POST", path, strings.NewReader(string(body)))
		req.Header.Set(HeaderFault, fault)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		switch w.Code {
		case 200, 400, 413, 503:
		default:
			t.Fatalf("status %d", w.Code)
		}
		if p := s.Pages(); p.UsedPages != 0 || p.Running != 0 {
			t.Fatalf("pages held after the request: %+v", p)
		}
	})
}
