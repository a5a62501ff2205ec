package pagedcache

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestServer is a Server listening on a loopback port for the duration of
// a test, like httptest.Server. It is safe for concurrent use.
type TestServer struct {
	*Server
	// URL is the base URL, e.g. "http://127.0.0.1:41234": the OpenAI API is
	// under URL+"/v1" (an OpenAI client's base URL), the Messages API at
	// URL+"/v1/messages" (an Anthropic client's base URL is URL).
	URL string
	hs  *httptest.Server
}

// NewTestServer starts a Server with the given options on a loopback port
// and closes it when the test ends (t.Cleanup). Invalid options fail the
// test.
func NewTestServer(t testing.TB, opts ...Option) *TestServer {
	t.Helper()
	var o Options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			t.Fatalf("pagedcache.NewTestServer: %v", err)
		}
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("pagedcache.NewTestServer: %v", err)
	}
	hs := httptest.NewServer(s)
	ts := &TestServer{Server: s, URL: hs.URL, hs: hs}
	t.Cleanup(ts.Close)
	return ts
}

// Close shuts the listener down and waits for requests in flight. It may be
// called more than once.
func (ts *TestServer) Close() { ts.hs.Close() }

// Client returns an HTTP client for the server.
func (ts *TestServer) Client() *http.Client { return ts.hs.Client() }
