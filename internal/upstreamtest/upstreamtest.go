// Package upstreamtest is an upstream for tests of the doors: a real HTTP
// server that records every request as it received it (what left the
// guard) and answers as the test says.
package upstreamtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Request is a request as the upstream received it.
type Request struct {
	// URI is the request target as sent on the wire; Path its decoded path.
	URI, Path string
	Header    http.Header
	Body      []byte
}

// Recorder is a recording upstream.
type Recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []Request
}

// New starts a Recorder, closed when the test ends; answer writes the
// answer to each request (body is the request's body, already read).
func New(t testing.TB, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *Recorder {
	rec := &Recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, Request{URI: r.RequestURI, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		rec.mu.Unlock()
		answer(w, r, body)
	}))
	t.Cleanup(rec.Close)
	return rec
}

// Received returns the requests received so far, in order.
func (rec *Recorder) Received() []Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Request(nil), rec.reqs...)
}

// AnswerOK answers each API with a minimal valid answer saying "ok": a
// chat completion, an Anthropic message, a Responses API response, else a
// file object (uploads).
func AnswerOK(w http.ResponseWriter, r *http.Request, _ []byte) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":1,"total_tokens":21}}`)
	case strings.HasSuffix(r.URL.Path, "/messages"):
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":1}}`)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		io.WriteString(w, `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":20,"output_tokens":1,"total_tokens":21}}`)
	default:
		io.WriteString(w, `{"id":"file-1","object":"file","bytes":1,"created_at":1,"filename":"f","purpose":"assistants","status":"processed"}`)
	}
}
