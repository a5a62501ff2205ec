// Package proxy is aishield's local reverse proxy: an OpenAI-compatible
// (and Anthropic messages) HTTP endpoint whose every request and response
// goes through the guard of package sdk, so that applications change only
// their base URL.
//
// A Proxy is a thin door: an sdk.Transport per reachable destination, all
// of one sdk.Guard (one policy, one classifier and verifier, one audit
// trail). The guard checks, redacts, blocks and verifies; the proxy
// routes, names the principal, drops hop-by-hop headers both ways (with
// the rules of httputil.ReverseProxy), writes answers (flushing streams
// as the guard releases them) and renders errors in the API's format.
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
// The guard decides for the destination of the route, whatever the
// request's model or provider. Destinations without a base_url (or with a
// scheme other than http and https) cannot be reached. Absolute-form and
// CONNECT requests are refused, and protocol upgrades are not forwarded.
// /healthz answers "ok"; /metrics serves Prometheus metrics, fed by the
// guard's audit records (sdk.Options.OnRecord).
//
// The caller's credentials (Authorization, x-api-key, ...) pass through to
// the upstream untouched and are never logged. Forwarded, X-Forwarded-*,
// X-Real-IP and the like are not passed on: the upstream does not learn
// the caller's address, nor what the caller claims it is
// (Options.ForwardClientAddress sets X-Forwarded-For, -Host and -Proto from
// the connection itself).
//
// # Limits and authentication
//
// Every resource a caller can make the proxy hold is bounded (see
// Options): requests at once (429 with Retry-After beyond), the sum of the
// request bodies in flight (429), each body (413), the time to receive a
// body (408, a read deadline lifted once the body is read), and the size of
// a streamed answer (cut by the guard with an error event). Each breach is
// counted in /metrics (aishield_proxy_limit_total).
//
// With Options.CallerKeys, every request but /healthz must present a
// caller key (X-Aishield-Key, or Proxy-Authorization: Bearer), removed
// before forwarding, or is answered 401. Without it the proxy trusts
// whoever reaches it: the CLI refuses to serve a non-loopback address
// without caller keys or mutual TLS.
//
// # Principals
//
// Every request is attributed to a principal, which the audit trail
// records and the verifier uses to tell a caller's own material from
// foreign material: the value of the X-Aishield-Principal header
// (Options.PrincipalHeader) when present, which is removed before
// forwarding; otherwise a keyed hash of the caller's credential (the
// Authorization bearer token, or x-api-key), "key:" and 32 hex digits,
// the same for every proxy sharing Options.CanaryKey; never the credential
// itself. The header is
// trusted: a client that may set it may claim another principal, whose
// material then no longer counts as foreign to it, so the proxy belongs
// behind the organisation's own applications.
//
// # Errors
//
// Every failure is answered in the API's own error format (OpenAI's
// {"error":{...}} or Anthropic's {"type":"error","error":{...}}, chosen by
// the path): a blocked request (403, or 400 when over the destination's KV
// capacity), a contaminated response (502), a failure of the guard (500, or
// 400 for an unparsable body), an oversized request body (413) or response
// body (502, response_too_large), an upstream that times out (504), cannot
// be reached or resets (502), or answers 5xx (its status, with a clear
// message). Errors are told apart by type (sdk.BlockedError,
// sdk.ContaminationError, sdk.GuardError and its stage, sdk.ErrTooLarge),
// never by their text. The proxy's own refusals carry X-Should-Retry:
// false. The upstream's own errors below 500 (a 400
// context_length_exceeded, a 401, a 429) pass through unverified, as the
// guard passes them: as the upstream wrote them, status and headers
// (Retry-After) included, when they are in the API's error format; an
// upstream error that is not (an HTML page), and any 5xx, is rewritten in
// that format with the upstream's status, type, code and message, keeping
// its Retry-After, X-Should-Retry, rate-limit and request-ID headers.
//
// A stream that fails or is cut after its headers were sent ends with one
// error event in the same format, written by the guard's stream filter
// (sdk.StreamOptions.ErrorEvent): aishield_contamination or
// aishield_guard_error for a cut, upstream_timeout or upstream_unavailable
// for an upstream that failed mid-stream, stream_truncated for one that
// ended without its terminal event; the HTTP response then ends cleanly.
// Nothing unverified is released (the guard holds text back until
// verified).
//
// # Concurrency
//
// A Proxy is an http.Handler safe for concurrent use. Close it once it
// serves no more requests.
package proxy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/quarantine"
)

// Defaults of Options.
const (
	DefaultMaxBody         = 32 << 20
	DefaultUpstreamTimeout = 2 * time.Minute
	DefaultIdleTimeout     = time.Minute
	// DefaultPrincipalHeader names the request header that names the
	// principal (Options.PrincipalHeader).
	DefaultPrincipalHeader = "X-Aishield-Principal"
)

// maxPrincipal bounds the length of a principal named by header.
const maxPrincipal = 256

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
	// It also keys the principals derived from callers' credentials, so
	// that proxies sharing it name a caller alike (Key when CanaryKey is
	// nil; a random key, which changes with every run, when both are).
	CanaryKey []byte
	// Store remembers exchanges for the cross-exchange signal; nil keeps
	// them in memory. A fingerprint.RedisStore shares them between proxies.
	Store fingerprint.Store
	// Quarantine keeps destinations' health and quarantines; nil keeps
	// them in this process. A quarantine.RedisStore shares them between
	// proxies (and SDK processes), and keeps them across restarts.
	Quarantine quarantine.Store
	// WebhookClient posts the policy's quarantine webhooks; nil uses a
	// client with a 10-second timeout.
	WebhookClient *http.Client
	// AuditLog receives the audit trail (hash-chained JSON lines). Open a
	// file with sdk.OpenAuditLog, which continues the chain of what it
	// already holds; the caller closes it after Close. Nil writes the file
	// of the policy's audit section when it is enabled (opened by the
	// guard the same way, closed by Close), none otherwise. The metrics
	// are fed from the same records either way.
	AuditLog *sdk.AuditLog
	// AuditKey keys the chain of the trail the policy's audit: section
	// opens (sdk.Options.AuditKey); nil keeps plain SHA-256.
	AuditKey []byte
	// PrincipalHeader names the request header that names the principal
	// (see the package documentation); "" means DefaultPrincipalHeader.
	PrincipalHeader string
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
	// status, duration; never a header, a body or a principal), and the
	// reverse proxy's own errors. Nil logs nothing.
	Log *slog.Logger

	// MaxConcurrent bounds the API requests served at once (default
	// DefaultMaxConcurrent; negative: no bound). A request over it waits
	// a moment for a slot, then is answered 429 with Retry-After.
	MaxConcurrent int
	// MaxInFlightBytes bounds the sum of the request bodies being served
	// (default four times MaxBody, DefaultMaxInFlightBytes with the
	// default MaxBody; negative: no bound; at least MaxBody). A request
	// whose declared Content-Length does not fit is answered 429 before
	// its body is read; a body of unknown length reserves its bytes as
	// they come and is answered 429 once they do not fit.
	MaxInFlightBytes int64
	// MaxStreamBytes bounds one streamed response read from the upstream
	// (default DefaultMaxStreamBytes; negative: no bound). A longer stream
	// is cut by the guard with an error event (aishield_guard_error,
	// nothing unverified released) and recorded as a failure of stage
	// "stream".
	MaxStreamBytes int64
	// BodyTimeout bounds the reading of a request body, from the request's
	// arrival (default DefaultBodyTimeout; negative: no bound). A body
	// still arriving then is answered 408. It is a read deadline on the
	// request only: it is lifted once the body is read, so that it does
	// not cut the answer's stream.
	BodyTimeout time.Duration

	// CallerKeys, when set, authenticates callers: every request (but
	// /healthz) must present one of its keys in the X-Aishield-Key header
	// or as "Proxy-Authorization: Bearer KEY", or is answered 401. Both
	// headers are removed before forwarding. Nil lets any caller in: keep
	// such a proxy on loopback, or behind mutual TLS (see the CLI).
	CallerKeys *CallerKeys
	// ForwardClientAddress sets X-Forwarded-For, X-Forwarded-Host and
	// X-Forwarded-Proto on forwarded requests from the connection the proxy
	// served (never from the caller's headers). False sends none of them:
	// Forwarded, X-Forwarded-* and X-Real-IP from the caller are always
	// removed.
	ForwardClientAddress bool
}

// Proxy is the reverse proxy. It is an http.Handler, safe for concurrent
// use.
type Proxy struct {
	opts         Options
	guard        *sdk.Guard
	routes       map[string]*route
	upstream     *route
	metrics      *metrics
	log          *slog.Logger
	principalKey []byte // keys the principals derived from credentials
	closeIdle    func()
	lim          *limiter
	errLog       *log.Logger // the forwarding's own errors
}

// route is a destination the proxy can reach.
type route struct {
	name string
	base *url.URL
	tr   *sdk.Transport
}

// call is one API request in flight (the guard's Transport finds it in
// the request's context).
type call struct {
	dest      string
	rest      string // the path appended to the destination's base URL
	api       string // "openai" or "anthropic": the error format
	principal string
	w         *statusRecorder
	// refused returns the guard's refusal of the call, nil when none: the
	// guard's Transport answered it in the API's format already.
	refused func() error
}

type callKey struct{}

func callOf(r *http.Request) *call {
	c, _ := r.Context().Value(callKey{}).(*call)
	return c
}

// New builds a Proxy: one guard for the policy, and a reverse proxy per
// reachable destination whose transport is an sdk.Transport of that guard
// forcing the destination.
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
	if opts.PrincipalHeader == "" {
		opts.PrincipalHeader = DefaultPrincipalHeader
	}
	opts.PrincipalHeader = http.CanonicalHeaderKey(opts.PrincipalHeader)
	if opts.MaxConcurrent == 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.MaxInFlightBytes == 0 {
		opts.MaxInFlightBytes = 4 * opts.MaxBody
	}
	if opts.MaxInFlightBytes > 0 && opts.MaxInFlightBytes < opts.MaxBody {
		return nil, fmt.Errorf("proxy: Options.MaxInFlightBytes (%d) is below MaxBody (%d): a body of MaxBody could never be admitted", opts.MaxInFlightBytes, opts.MaxBody)
	}
	if opts.MaxStreamBytes == 0 {
		opts.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if opts.BodyTimeout == 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.CallerKeys != nil && opts.CallerKeys.Len() == 0 {
		return nil, errors.New("proxy: Options.CallerKeys holds no key")
	}
	secret := opts.CanaryKey
	if len(secret) == 0 {
		secret = opts.Key
	}
	if len(secret) == 0 {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("proxy: drawing a key: %w", err)
		}
	}
	p := &Proxy{opts: opts, routes: map[string]*route{}, metrics: newMetrics(), log: opts.Log, closeIdle: func() {},
		lim: newLimiter(opts.MaxConcurrent, opts.MaxInFlightBytes)}
	if s, ok := opts.Store.(interface{ InvalidRecords() uint64 }); ok {
		p.metrics.storeInvalid = s.InvalidRecords // fingerprint.RedisStore
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("aishield proxy principal"))
	p.principalKey = mac.Sum(nil)

	bases := map[string]*url.URL{}
	for _, d := range opts.Policy.Destinations {
		if d.BaseURL == "" {
			continue
		}
		u, err := url.Parse(d.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		bases[d.Name] = u
	}
	names := slices.Sorted(maps.Keys(bases))
	if _, ok := bases[opts.Upstream]; opts.Upstream != "" && !ok {
		return nil, fmt.Errorf("proxy: upstream %q is not a destination of policy %q with an http(s) base_url (reachable: %s)",
			opts.Upstream, opts.Policy.Name, strings.Join(names, ", "))
	}
	if len(bases) == 0 {
		return nil, fmt.Errorf("proxy: policy %q declares no destination with an http(s) base_url: nothing to forward to", opts.Policy.Name)
	}

	g, err := sdk.New(ctx, sdk.Options{Policy: opts.Policy, Key: opts.Key, Store: opts.Store, CanaryKey: opts.CanaryKey,
		AuditLog: opts.AuditLog, AuditKey: opts.AuditKey, OnRecord: p.metrics.record,
		Quarantine: opts.Quarantine, WebhookClient: opts.WebhookClient})
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p.guard = g
	p.metrics.quarantined = func() map[string]float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out := map[string]float64{}
		for name := range p.routes {
			st, err := g.Quarantine().Check(ctx, name)
			switch {
			case err != nil || st.Unreachable != nil:
				out[name] = -1
			case st.Quarantined:
				out[name] = float64(st.State.Since.Unix())
			default:
				out[name] = 0
			}
		}
		return out
	}

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
			// A request of up to 32 KB (headers and body) leaves in one
			// write, instead of a write per 4 KB.
			WriteBufferSize: 32 << 10,
		}
		base, p.closeIdle = t, t.CloseIdleConnections
	}
	base = &idleTimeout{rt: base, d: opts.IdleTimeout}
	base = &streamCap{rt: base, max: opts.MaxStreamBytes, onCut: func() { p.metrics.limit(limitStreamBytes) }}
	errLog := log.New(io.Discard, "", 0)
	if opts.Log != nil {
		errLog = slog.NewLogLogger(opts.Log.Handler(), slog.LevelWarn)
	}
	p.errLog = errLog
	for _, name := range names {
		p.routes[name] = p.newRoute(name, bases[name], base)
	}
	p.upstream = p.routes[opts.Upstream]
	return p, nil
}

// newRoute builds the route of destination name at base: its Transport
// forces the destination, whatever the request's model or provider.
func (p *Proxy) newRoute(name string, base *url.URL, rt http.RoundTripper) *route {
	tr := &sdk.Transport{Guard: p.guard, Base: rt, Destination: name, MaxBody: p.opts.MaxBody,
		Stream:    sdk.StreamOptions{ErrorEvent: true},
		Principal: func(r *http.Request) string { return callOf(r).principal }}
	return &route{name: name, base: base, tr: tr}
}

// droppedHeaders are removed from every forwarded request: the caller's
// proxy key, and the caller's claims about the client's address, which
// the upstream must not take for the proxy's.
var droppedHeaders = []string{CallerKeyHeader, "Proxy-Authorization", "Forwarded",
	"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-Prefix",
	"X-Real-Ip", "X-Client-Ip", "True-Client-Ip", "Cf-Connecting-Ip"}

// Destinations returns the names of the destinations the proxy forwards
// to, sorted.
func (p *Proxy) Destinations() []string {
	return slices.Sorted(maps.Keys(p.routes))
}

// Guard returns the proxy's guard (its quarantine monitor, its policy).
func (p *Proxy) Guard() *sdk.Guard { return p.guard }

// Close releases idle upstream connections and closes the audit file the
// guard opened from the policy's audit section, if any (not
// Options.AuditLog, which belongs to the caller).
func (p *Proxy) Close() error {
	p.closeIdle()
	return p.guard.Close()
}

// ServeHTTP routes /healthz, /metrics and the API paths.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect || (r.RequestURI != "" && !strings.HasPrefix(r.RequestURI, "/")) {
		writeError(w, apiOf(r.URL.Path), http.StatusMethodNotAllowed, "invalid_request_error", "not_a_relay",
			"aishield proxy: absolute-form and CONNECT requests are refused; send API requests to this server's own paths")
		return
	}
	if r.URL.Path == "/healthz" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
		return
	}
	if !p.authenticated(w, r) {
		return
	}
	switch r.URL.Path {
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

	start := time.Now()
	c := &call{dest: rt.name, rest: rest, api: apiOf(rest), w: &statusRecorder{ResponseWriter: w}}
	defer func() {
		p.metrics.done(rt.name, c.w.status, time.Since(start))
		if p.log != nil {
			p.log.Info("request", "method", r.Method, "path", r.URL.Path, "destination", rt.name,
				"status", c.w.status, "duration_ms", time.Since(start).Milliseconds())
		}
	}()
	// Dot-segments and encoded separators are refused here, on the path
	// as the client sent it (outbound joins the decoded path to the
	// base_url's, which the guard's Transport checks again), so that the
	// path the guard decides for is the one the upstream serves.
	if err := sdk.ValidatePath(r.URL); err != nil {
		writeError(c.w, c.api, http.StatusBadRequest, "invalid_request_error", "invalid_path", "aishield proxy: "+err.Error())
		return
	}
	principal, err := p.principal(r)
	if err != nil {
		writeError(c.w, c.api, http.StatusBadRequest, "invalid_request_error", "invalid_principal", err.Error())
		return
	}
	c.principal = principal
	body, ok := p.admit(c, r)
	if !ok {
		return
	}
	defer p.lim.release()
	if body != nil {
		defer body.releaseAll()
		r.Body = body
	}
	p.metrics.begin()
	defer p.metrics.end()
	ctx, refused := sdk.WithRefusal(context.WithValue(r.Context(), callKey{}, c))
	c.refused = refused
	p.forward(ctx, rt, c, r)
	if err := refused(); err != nil && tooLarge(err) {
		p.metrics.limit(limitBodySize)
	}
}

// tooLarge reports whether the guard refused a request body over
// Options.MaxBody.
func tooLarge(err error) bool {
	var ge *sdk.GuardError
	return errors.As(err, &ge) && ge.Stage == sdk.StageParse && errors.Is(err, sdk.ErrTooLarge)
}

// admit applies the resource limits to a request before it is served: a
// request slot (MaxConcurrent), its declared body size (MaxBody,
// MaxInFlightBytes) and the body read deadline (BodyTimeout). It answers
// the request itself and returns false when the request is refused; the
// caller releases the slot, and the returned body's reservation, once the
// request is served.
func (p *Proxy) admit(c *call, r *http.Request) (*clientBody, bool) {
	if r.ContentLength > p.opts.MaxBody {
		p.metrics.limit(limitBodySize)
		writeError(c.w, c.api, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
			fmt.Sprintf("aishield proxy: the request body (%d bytes) is larger than the proxy's limit of %d bytes", r.ContentLength, p.opts.MaxBody))
		return nil, false
	}
	if !p.lim.acquire(r.Context()) {
		p.metrics.limit(limitConcurrency)
		writeBusy(c.w, c.api, "proxy_concurrency_limit",
			fmt.Sprintf("aishield proxy: %d requests are being served, the proxy's limit; retry shortly", p.opts.MaxConcurrent))
		return nil, false
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	b := &clientBody{rc: r.Body, lim: p.lim}
	if r.ContentLength > 0 {
		if !p.lim.reserve(r.ContentLength) {
			p.lim.release()
			p.metrics.limit(limitInFlightBytes)
			writeBusy(c.w, c.api, "proxy_memory_limit",
				"aishield proxy: the request bodies in flight are at the proxy's limit; retry shortly")
			return nil, false
		}
		b.reserved = r.ContentLength
	}
	if p.opts.BodyTimeout > 0 {
		rc := http.NewResponseController(c.w)
		if rc.SetReadDeadline(time.Now().Add(p.opts.BodyTimeout)) == nil {
			b.done = func() { _ = rc.SetReadDeadline(time.Time{}) }
		}
	}
	return b, true
}

// writeBusy answers 429 in api's format for a request refused by a
// capacity limit of the proxy: unlike the proxy's other refusals it is
// worth retrying, after Retry-After.
func writeBusy(w http.ResponseWriter, api, code, msg string) {
	writeError(w, api, http.StatusTooManyRequests, "rate_limit_error", code, msg)
}

// authenticated checks the caller's proxy key when Options.CallerKeys is
// set, answering 401 itself when it does not match.
func (p *Proxy) authenticated(w http.ResponseWriter, r *http.Request) bool {
	if p.opts.CallerKeys == nil {
		return true
	}
	key := presentedKey(r)
	if p.opts.CallerKeys.match(key) {
		return true
	}
	p.metrics.unauthenticated()
	msg := "aishield proxy: this proxy requires a caller key: send it in the " + CallerKeyHeader + " header"
	if key != "" {
		msg = "aishield proxy: the caller key is not one of this proxy's"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="aishield proxy"`)
	writeError(w, apiOf(r.URL.Path), http.StatusUnauthorized, "authentication_error", "invalid_caller_key", msg)
	return false
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

// principal names who sends r: the principal header's value, else a keyed
// hash of the caller's credential, else "" (unknown). A header value that
// is too long or not printable is an error.
func (p *Proxy) principal(r *http.Request) (string, error) {
	if v := strings.TrimSpace(r.Header.Get(p.opts.PrincipalHeader)); v != "" {
		if len(v) > maxPrincipal || !utf8.ValidString(v) || strings.IndexFunc(v, func(c rune) bool { return !unicode.IsPrint(c) }) >= 0 {
			return "", fmt.Errorf("aishield proxy: the %s header must be printable text of at most %d bytes", p.opts.PrincipalHeader, maxPrincipal)
		}
		return v, nil
	}
	cred := strings.TrimSpace(r.Header.Get("Authorization"))
	if scheme, tok, ok := strings.Cut(cred, " "); ok && strings.EqualFold(scheme, "Bearer") {
		cred = strings.TrimSpace(tok)
	}
	if cred == "" {
		cred = strings.TrimSpace(r.Header.Get("X-Api-Key"))
	}
	if cred == "" {
		return "", nil
	}
	mac := hmac.New(sha256.New, p.principalKey)
	mac.Write([]byte(cred))
	return "key:" + hex.EncodeToString(mac.Sum(nil)[:16]), nil
}

// modifyResponse renders the upstream's errors that are not in the API's
// format, and its 5xx, in that format (see the package documentation).
// Streams and answers below 400 pass as the guard delivers them.
func (p *Proxy) modifyResponse(c *call, resp *http.Response) {
	if resp.StatusCode < 400 || isStream(resp.Header) || c.refused() != nil {
		return // delivered by the guard, or its own refusal
	}
	// The guard passed the provider's error through unverified (it is not
	// model output), already read whole.
	data, err := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit+1))
	resp.Body.Close()
	if err == nil && len(data) <= errorBodyLimit && resp.StatusCode < 500 && isAPIError(c.api, data) {
		setBody(resp, data)
		return
	}
	e := upstreamError(data)
	msg := fmt.Sprintf("aishield proxy: upstream %s answered HTTP %d", c.dest, resp.StatusCode)
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
	h := http.Header{}
	for _, k := range passedOnError {
		if v := resp.Header.Values(k); len(v) > 0 {
			h[http.CanonicalHeaderKey(k)] = slices.Clone(v)
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	resp.Header = h
	setBody(resp, append(errorBody(c.api, typ, code, msg), '\n'))
}

// setBody makes data the whole body of resp.
func setBody(resp *http.Response, data []byte) {
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
	resp.TransferEncoding = nil
}

func isStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

// errorHandler answers a request that got no response: refused or failed
// by the guard, or the upstream unreachable. A client that went away gets
// nothing (logged as 499).
func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	c := callOf(r)
	// A failed read of the body cancels the request's context too (net/http
	// does): a body read past its deadline is still answered, the caller
	// being there, just slow.
	var cbe *clientBodyError
	if r.Context().Err() != nil && !(errors.As(err, &cbe) && cbe.timedOut()) {
		c.w.status = 499 // the client went away
		return
	}
	status, typ, code, msg := p.classify(err, c.dest)
	writeError(w, c.api, status, typ, code, msg)
}

// classify maps a round-trip error to an HTTP status and the API error's
// type, code and message, by the error's type (never its text). Only errors
// with no response reach it: the guard answers its own refusals (see
// sdk.Refusal), so these are the caller's unreadable body and the
// upstream's failures.
func (p *Proxy) classify(err error, dest string) (int, string, string, string) {
	var cbe *clientBodyError
	var ne net.Error
	switch {
	case errors.Is(err, errInFlight):
		p.metrics.limit(limitInFlightBytes)
		return http.StatusTooManyRequests, "rate_limit_error", "proxy_memory_limit",
			"aishield proxy: the request bodies in flight are at the proxy's limit; retry shortly"
	case errors.As(err, &cbe) && cbe.timedOut():
		p.metrics.limit(limitBodyTimeout)
		return http.StatusRequestTimeout, "invalid_request_error", "request_timeout",
			fmt.Sprintf("aishield proxy: the request body did not arrive within %s", p.opts.BodyTimeout)
	case errors.As(err, &cbe):
		return http.StatusBadRequest, "invalid_request_error", "unreadable_body", "aishield proxy: could not read the request body"
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
// prompt again to a service that leaks. A 429 (a capacity limit of the
// proxy) is the exception: the same request may pass in a moment, so it
// carries Retry-After: 1 and X-Should-Retry: true.
func writeError(w http.ResponseWriter, api string, status int, typ, code, msg string) {
	switch {
	case status == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
		w.Header().Set("X-Should-Retry", "true")
	case !strings.HasPrefix(code, "upstream_"):
		w.Header().Set("X-Should-Retry", "false")
	}
	b := errorBody(api, typ, code, msg)
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// statusRecorder remembers the final status written.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
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

// Unwrap lets http.ResponseController (the flushing of streams, the body
// read deadline) reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// copyBuffers are the buffers streamed response bodies are copied with,
// shared by every route.
var copyBuffers = &bufferPool{}

// bufferPool is a pool of 32 KB buffers, safe for concurrent use.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() *[]byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return v
	}
	buf := make([]byte, 32<<10)
	return &buf
}

func (b *bufferPool) Put(buf *[]byte) { b.p.Put(buf) }

// errIdle is the cause of a request cancelled by idleTimeout. It is a
// timeout (Timeout reports true), which the guard's stream filter reports
// as upstream_timeout.
var errIdle error = idleError{}

type idleError struct{}

func (idleError) Error() string   { return "upstream idle for too long" }
func (idleError) Timeout() bool   { return true }
func (idleError) Temporary() bool { return true }

// idleTimeout cancels an upstream request whose response body stays silent
// longer than d between two reads.
type idleTimeout struct {
	rt http.RoundTripper
	d  time.Duration
}

func (t *idleTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	req = req.WithContext(ctx)
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if resp.Request == nil {
		resp.Request = req
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
