// Package proxy is aishield's local reverse proxy: an OpenAI-compatible
// (and Anthropic messages) HTTP endpoint whose every request and response
// goes through the guard of package sdk, so that applications change only
// their base URL.
//
// # Routing (no open relay)
//
// The upstream is always chosen by the policy, never by the client:
//
//   - /d/{destination}/... forwards to that destination's base_url, with the
//     rest of the path appended: with base_url https://api.openai.com,
//     /d/openai/v1/chat/completions goes to
//     https://api.openai.com/v1/chat/completions.
//   - Any other path goes to the destination named by Options.Upstream, when
//     set: a client whose base URL is http://127.0.0.1:8787/v1 reaches
//     {base_url}/v1/... of that destination.
//
// Destinations without a base_url (or with a scheme other than http and
// https) cannot be reached. Absolute-form and CONNECT requests are refused.
// The caller's credentials (Authorization, x-api-key, ...) pass through to
// the upstream untouched and are never logged.
//
// # Errors
//
// Every failure is answered in the API's own error format (OpenAI's
// {"error":{...}} or Anthropic's {"type":"error","error":{...}}, chosen by
// the path): a blocked request (403, or 400 when over the destination's KV
// capacity), a contaminated response (502), a failure of the guard (500, or
// 400 for an unparsable body), an oversized body (413), an upstream that
// times out (504), cannot be reached or resets (502), or answers 5xx (its
// status, with a clear message). The proxy's own refusals carry
// X-Should-Retry: false. The upstream's own errors below 500 (a 400
// context_length_exceeded, a 401, a 429) pass through unverified, as the
// guard passes them: as the upstream wrote them, status and headers
// (Retry-After) included, when they are in the API's error format; an
// upstream error that is not (an HTML page), and any 5xx, is rewritten in
// that format with the upstream's status, type, code and message, keeping
// its Retry-After, X-Should-Retry, rate-limit and request-ID headers. A
// stream that fails or is cut after its
// headers were sent ends with an error event in the same format; nothing
// unverified is released (the guard holds text back until verified).
//
// # Concurrency
//
// A Proxy is an http.Handler safe for concurrent use.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/verify"
)

// Defaults of Options.
const (
	DefaultMaxBody         = 32 << 20
	DefaultUpstreamTimeout = 2 * time.Minute
	DefaultIdleTimeout     = time.Minute
)

// Options configures a Proxy.
type Options struct {
	// Policy decides what may leave and where requests may go. Required.
	Policy *policies.Policy
	// Upstream names the destination of requests outside /d/{name}/; ""
	// serves only /d/{name}/ paths.
	Upstream string
	// Key keys the classifier's finding hashes; nil draws a random key.
	Key []byte
	// CanaryKey keys canaries; processes sharing a Store should share it so
	// that they can name each other's exchanges. Nil draws a random key.
	CanaryKey []byte
	// Store remembers exchanges for the cross-exchange signal; nil keeps
	// them in memory. A fingerprint.RedisStore shares them between proxies.
	Store fingerprint.Store
	// Audit receives the audit trail (hash-chained JSON lines); nil writes
	// none. The metrics are fed from the same records either way.
	Audit io.Writer
	// MaxBody bounds request bodies and non-streamed response bodies
	// (default DefaultMaxBody).
	MaxBody int64
	// UpstreamTimeout bounds the wait for the upstream's response headers
	// (default DefaultUpstreamTimeout); IdleTimeout bounds the silence
	// between two reads of its body (default DefaultIdleTimeout).
	UpstreamTimeout time.Duration
	IdleTimeout     time.Duration
	// Transport reaches the upstreams; nil builds one with the timeouts
	// above. Its responses' bodies are still subject to IdleTimeout.
	Transport http.RoundTripper
	// Log receives one line per request (method, path, destination,
	// status, duration; never a header or a body). Nil logs nothing.
	Log *slog.Logger
}

// Proxy is the reverse proxy. It is an http.Handler, safe for concurrent
// use.
type Proxy struct {
	opts      Options
	routes    map[string]*route
	upstream  *route
	metrics   *metrics
	log       *slog.Logger
	closeIdle func()
}

// route is a destination the proxy can reach.
type route struct {
	name string
	base *url.URL
	tr   *sdk.Transport
}

// New builds a Proxy: one guard per reachable destination, all sharing one
// verifier and its fingerprint store.
func New(ctx context.Context, opts Options) (*Proxy, error) {
	if opts.Policy == nil {
		return nil, errors.New("proxy: Options.Policy is required")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.UpstreamTimeout <= 0 {
		opts.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	p := &Proxy{opts: opts, routes: map[string]*route{}, metrics: newMetrics(), log: opts.Log, closeIdle: func() {}}
	base := opts.Transport
	if base == nil {
		t := &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: opts.UpstreamTimeout,
			ExpectContinueTimeout: time.Second,
		}
		base, p.closeIdle = t, t.CloseIdleConnections
	}
	base = &idleTimeout{rt: base, d: opts.IdleTimeout}

	sc, err := opts.Policy.NewScanner(opts.Key)
	if err != nil {
		return nil, fmt.Errorf("proxy: policy %q: %w", opts.Policy.Name, err)
	}
	v, err := verify.New(verify.Options{Inbound: opts.Policy.Inbound, Scanner: sc, Store: opts.Store, CanaryKey: opts.CanaryKey})
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	audit := sdk.NewAuditLog(&auditSink{m: p.metrics, next: opts.Audit}, "")
	for _, d := range opts.Policy.Destinations {
		if d.BaseURL == "" {
			continue
		}
		u, err := url.Parse(d.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		g, err := sdk.New(ctx, sdk.Options{Policy: opts.Policy, Destination: d.Name, Classifier: sc, Verifier: v, AuditLog: audit})
		if err != nil {
			return nil, fmt.Errorf("proxy: destination %q: %w", d.Name, err)
		}
		p.routes[d.Name] = &route{name: d.Name, base: u, tr: &sdk.Transport{Guard: g, Base: base,
			Stream: sdk.StreamOptions{ErrorEvent: true}, MaxBody: opts.MaxBody}}
	}
	if opts.Upstream != "" {
		r, ok := p.routes[opts.Upstream]
		if !ok {
			return nil, fmt.Errorf("proxy: upstream %q is not a destination of policy %q with an http(s) base_url (reachable: %s)",
				opts.Upstream, opts.Policy.Name, strings.Join(p.Destinations(), ", "))
		}
		p.upstream = r
	}
	if len(p.routes) == 0 {
		return nil, fmt.Errorf("proxy: policy %q declares no destination with an http(s) base_url: nothing to forward to", opts.Policy.Name)
	}
	return p, nil
}

// Destinations returns the names of the destinations the proxy forwards
// to, sorted.
func (p *Proxy) Destinations() []string {
	out := make([]string, 0, len(p.routes))
	for n := range p.routes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Close releases idle upstream connections.
func (p *Proxy) Close() { p.closeIdle() }

// ServeHTTP routes /healthz, /metrics and the API paths.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect || (r.RequestURI != "" && !strings.HasPrefix(r.RequestURI, "/")) {
		writeError(w, apiOf(r.URL.Path), http.StatusMethodNotAllowed, "invalid_request_error", "not_a_relay",
			"aishield proxy: absolute-form and CONNECT requests are refused; send API requests to this server's own paths")
		return
	}
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
		return
	case "/metrics":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = p.metrics.write(w)
		return
	}
	rt, rest, ok := p.route(r.URL.Path)
	if !ok {
		msg := fmt.Sprintf("aishield proxy: no destination for %s; use /d/{destination}/... with one of: %s",
			r.URL.Path, strings.Join(p.Destinations(), ", "))
		if name, _, found := strings.Cut(strings.TrimPrefix(r.URL.Path, "/d/"), "/"); strings.HasPrefix(r.URL.Path, "/d/") && found {
			msg = fmt.Sprintf("aishield proxy: %q is not a destination with a base_url in the policy (reachable: %s)",
				name, strings.Join(p.Destinations(), ", "))
		}
		writeError(w, apiOf(r.URL.Path), http.StatusNotFound, "invalid_request_error", "unknown_destination", msg)
		return
	}
	p.forward(w, r, rt, rest)
}

// route picks the destination of path and the path to append to its
// base URL.
func (p *Proxy) route(path string) (*route, string, bool) {
	if s, ok := strings.CutPrefix(path, "/d/"); ok {
		name, rest, _ := strings.Cut(s, "/")
		rt, ok := p.routes[name]
		return rt, "/" + rest, ok
	}
	if p.upstream != nil {
		return p.upstream, path, true
	}
	return nil, "", false
}

// hopHeaders are not forwarded (RFC 9110, section 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
	for _, f := range src.Values("Connection") {
		for _, k := range strings.Split(f, ",") {
			dst.Del(strings.TrimSpace(k))
		}
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
}

// join appends rest to the base URL's path on a segment boundary.
func join(base *url.URL, rest, rawQuery string) string {
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + rest
	u.RawPath = ""
	u.RawQuery = rawQuery
	return u.String()
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, rt *route, rest string) {
	start := time.Now()
	api := apiOf(rest)
	p.metrics.begin()
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		p.metrics.done(rt.name, rec.status, time.Since(start))
		if p.log != nil {
			p.log.Info("request", "method", r.Method, "path", r.URL.Path, "destination", rt.name,
				"status", rec.status, "duration_ms", time.Since(start).Milliseconds())
		}
	}()

	if r.ContentLength > p.opts.MaxBody {
		writeError(rec, api, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
			fmt.Sprintf("aishield proxy: the request body (%d bytes) is over the %d-byte limit", r.ContentLength, p.opts.MaxBody))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(rec, r.Body, p.opts.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(rec, api, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
				fmt.Sprintf("aishield proxy: the request body is over the %d-byte limit", p.opts.MaxBody))
			return
		}
		writeError(rec, api, http.StatusBadRequest, "invalid_request_error", "unreadable_body", "aishield proxy: could not read the request body")
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, join(rt.base, rest, r.URL.RawQuery), bytes.NewReader(body))
	if err != nil {
		writeError(rec, api, http.StatusBadRequest, "invalid_request_error", "invalid_path", "aishield proxy: invalid request path")
		return
	}
	copyHeader(out.Header, r.Header)
	out.Header.Del("Content-Length")
	out.Header.Del("Accept-Encoding")
	if len(body) == 0 {
		out.Body, out.GetBody, out.ContentLength = http.NoBody, nil, 0
	}

	resp, err := rt.tr.RoundTrip(out)
	if err != nil {
		if r.Context().Err() != nil {
			rec.status = 499 // the client went away
			return
		}
		status, typ, code, msg := classify(err, rt.name)
		writeError(rec, api, status, typ, code, msg)
		return
	}
	defer resp.Body.Close()

	stream := strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
	if resp.StatusCode >= 400 && !stream {
		// The guard passed the provider's error through unverified (it is
		// not model output). Below 500 it reaches the client as written
		// when it is in the API's format; otherwise it is rewritten in
		// that format with its status and the upstream's message.
		data, err := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit+1))
		if err == nil && len(data) <= errorBodyLimit && resp.StatusCode < 500 && isAPIError(api, data) {
			copyHeader(rec.Header(), resp.Header)
			rec.WriteHeader(resp.StatusCode)
			_, _ = rec.Write(data)
			return
		}
		e := upstreamError(data)
		msg := fmt.Sprintf("aishield proxy: upstream %s answered HTTP %d", rt.name, resp.StatusCode)
		if e.Message != "" {
			msg += ": " + e.Message
		}
		typ, code := "upstream_error", "upstream_error"
		if e.Type != "" {
			typ = e.Type
		}
		if e.Code != "" {
			code = e.Code
		}
		for _, h := range passedOnError {
			if v := resp.Header.Values(h); len(v) > 0 {
				rec.Header()[http.CanonicalHeaderKey(h)] = append([]string(nil), v...)
			}
		}
		writeAPIError(rec, api, resp.StatusCode, typ, code, msg)
		return
	}

	copyHeader(rec.Header(), resp.Header)
	if stream {
		rec.Header().Del("Content-Length")
	}
	rec.WriteHeader(resp.StatusCode)
	if !stream {
		_, _ = io.Copy(rec, resp.Body)
		return
	}
	p.pipeStream(rec, resp.Body, api, rt.name)
}

// pipeStream copies a filtered SSE stream to the client, flushing as it
// goes, and ends it with an error event when it breaks or stops short.
func (p *Proxy) pipeStream(w *statusRecorder, body io.Reader, api, dest string) {
	fl, _ := w.ResponseWriter.(http.Flusher)
	tail := &tailWriter{}
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			tail.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the client went away
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err == nil {
			continue
		}
		var be *sdk.BlockedError
		var ce *sdk.ContaminationError
		var ge *sdk.GuardError
		switch {
		case errors.Is(err, io.EOF):
			if !tail.terminated() {
				writeErrorEvent(w, api, "upstream_error", "stream_truncated",
					fmt.Sprintf("aishield proxy: the upstream %s stream ended before its terminal event (truncated); the answer is incomplete", dest))
			}
		case errors.As(err, &ce), errors.As(err, &ge), errors.As(err, &be):
			// The guard already ended the stream with an error event.
		default:
			_, typ, code, msg := classify(err, dest)
			writeErrorEvent(w, api, typ, code, msg)
		}
		if fl != nil {
			fl.Flush()
		}
		return
	}
}

// tailWriter keeps the last bytes of a stream to tell whether it ended
// with its terminal event.
type tailWriter struct{ b []byte }

func (t *tailWriter) Write(p []byte) {
	t.b = append(t.b, p...)
	if len(t.b) > 1024 {
		t.b = append(t.b[:0], t.b[len(t.b)-512:]...)
	}
}

func (t *tailWriter) terminated() bool {
	s := string(t.b)
	for _, end := range []string{"data: [DONE]", "data:[DONE]", "message_stop", "response.completed", "response.incomplete", "response.failed", `"type":"error"`, `{"error":`} {
		if strings.Contains(s, end) {
			return true
		}
	}
	return false
}

// classify maps a round-trip error to an HTTP status and the API error's
// type, code and message.
func classify(err error, dest string) (int, string, string, string) {
	var be *sdk.BlockedError
	var ce *sdk.ContaminationError
	var ge *sdk.GuardError
	var ne net.Error
	switch {
	case errors.As(err, &be):
		if be.OverCapacity {
			return http.StatusBadRequest, "invalid_request_error", "aishield_over_capacity", be.Error()
		}
		return http.StatusForbidden, "aishield_blocked", "aishield_blocked", be.Error()
	case errors.As(err, &ce):
		return http.StatusBadGateway, "aishield_contamination", "aishield_contamination", ce.Error()
	case errors.As(err, &ge):
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || strings.Contains(ge.Error(), "larger than") {
			return http.StatusBadGateway, "upstream_error", "response_too_large", ge.Error()
		}
		if ge.Stage == "parse" {
			return http.StatusBadRequest, "invalid_request_error", "aishield_unparsable", ge.Error()
		}
		return http.StatusInternalServerError, "aishield_guard_error", "aishield_guard_error", ge.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, errIdle), errors.As(err, &ne) && ne.Timeout():
		return http.StatusGatewayTimeout, "upstream_error", "upstream_timeout",
			fmt.Sprintf("aishield proxy: upstream %s timed out", dest)
	default:
		return http.StatusBadGateway, "upstream_error", "upstream_unavailable",
			fmt.Sprintf("aishield proxy: upstream %s failed: %s", dest, scrub(err))
	}
}

// scrub renders a transport error without the URL it carries (which may
// hold a query string the caller considers private).
func scrub(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// errorBodyLimit bounds the upstream error bodies the proxy reads.
const errorBodyLimit = 64 << 10

// passedOnError are the upstream headers kept on an error the proxy
// rewrites: when to retry, and the provider's request ID for support.
var passedOnError = []string{"Retry-After", "Retry-After-Ms", "X-Should-Retry", "X-Request-Id", "Request-Id",
	"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests",
	"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"}

// isAPIError tells whether data is an error body in api's format: OpenAI's
// {"error":{"message":...}} or Anthropic's {"type":"error","error":{...}}.
func isAPIError(api string, data []byte) bool {
	var v struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &v) != nil || len(v.Error) == 0 {
		return false
	}
	var e struct {
		Message *string `json:"message"`
	}
	if json.Unmarshal(v.Error, &e) != nil || e.Message == nil {
		return false
	}
	return api != "anthropic" || v.Type == "error"
}

// apiErrorFields are the fields of an upstream error, bounded and on one
// line.
type apiErrorFields struct{ Type, Code, Message string }

// upstreamError extracts the type, code and message of an upstream error
// body in OpenAI's or Anthropic's format; empty fields when there are none
// (an HTML page, garbage).
func upstreamError(data []byte) apiErrorFields {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &v) != nil || len(v.Error) == 0 {
		return apiErrorFields{}
	}
	var e struct {
		Type    any    `json:"type"`
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(v.Error, &e) != nil || e.Message == "" {
		var s string
		if json.Unmarshal(v.Error, &s) == nil {
			e.Message = s
		}
	}
	return apiErrorFields{Type: field(e.Type, 64), Code: field(e.Code, 64), Message: field(e.Message, 300)}
}

// field renders a JSON scalar on one line, at most n bytes (a string's
// whole runes only); "" for anything else.
func field(v any, n int) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return ""
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// apiOf tells the error format of a path: "anthropic" for the messages API,
// "openai" for everything else.
func apiOf(path string) string {
	if strings.HasSuffix(strings.TrimSuffix(path, "/"), "/messages") || strings.Contains(path, "/messages/") {
		return "anthropic"
	}
	return "openai"
}

func errorBody(api, typ, code, msg string) []byte {
	var v any
	if api == "anthropic" {
		v = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	} else {
		v = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
	}
	b, _ := json.Marshal(v)
	return b
}

// writeError answers an error in api's format. The proxy's own refusals
// (every code but the upstream_* ones) carry X-Should-Retry: false, which
// the official OpenAI and Anthropic SDKs obey: the same request would be
// refused again, and a contaminated answer is not a reason to send the
// prompt again to a service that leaks.
func writeError(w http.ResponseWriter, api string, status int, typ, code, msg string) {
	if !strings.HasPrefix(code, "upstream_") {
		w.Header().Set("X-Should-Retry", "false")
	}
	writeAPIError(w, api, status, typ, code, msg)
}

// writeAPIError answers an error in api's format, with the headers already
// set on w.
func writeAPIError(w http.ResponseWriter, api string, status int, typ, code, msg string) {
	b := errorBody(api, typ, code, msg)
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeErrorEvent(w io.Writer, api, typ, code, msg string) {
	b := errorBody(api, typ, code, msg)
	if api == "anthropic" {
		fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
		return
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
}

// statusRecorder remembers the status written.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// errIdle is the cause of a request cancelled by idleTimeout.
var errIdle = errors.New("upstream idle for too long")

// idleTimeout cancels an upstream request whose response body stays silent
// longer than d between two reads.
type idleTimeout struct {
	rt http.RoundTripper
	d  time.Duration
}

func (t *idleTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel(nil)
		return nil, err
	}
	b := &idleBody{rc: resp.Body, cancel: cancel}
	b.timer = time.AfterFunc(t.d, func() { cancel(errIdle) })
	b.d = t.d
	b.ctx = ctx
	resp.Body = b
	return resp, nil
}

type idleBody struct {
	rc     io.ReadCloser
	cancel context.CancelCauseFunc
	ctx    context.Context
	timer  *time.Timer
	d      time.Duration
	once   sync.Once
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.timer.Reset(b.d)
	if err != nil && !errors.Is(err, io.EOF) && errors.Is(context.Cause(b.ctx), errIdle) {
		return n, fmt.Errorf("%w: %w", errIdle, err)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.once.Do(func() {
		b.timer.Stop()
		b.cancel(nil)
	})
	return b.rc.Close()
}
