package sdk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aishield/aishield/internal/inputfile"

	"github.com/aishield/aishield/internal/wire"
)

// DefaultMaxBody bounds the request and (non-streamed) response bodies the
// Transport buffers when Transport.MaxBody is zero.
const DefaultMaxBody = 64 << 20

// Transport is an http.RoundTripper that puts the guard in front of any HTTP
// client: OpenAI (chat completions, completions, responses, embeddings) and
// Anthropic (messages) bodies and SSE streams are understood, other JSON
// bodies have all their strings classified.
//
// Before the guard decides, the request's path is validated
// ([ValidatePath]) and its Content-Encoding (gzip, deflate, br, as an
// ordered list) is undone within MaxBody; the body then goes out plain,
// without Content-Encoding, as the guard re-encoded it (see
// Request.ContentType for the media types it reads).
//
// It follows the RoundTripper contract: the caller's request is never
// modified (it is cloned and the clone gets the filtered body,
// ContentLength and GetBody), the request body is always closed, and an
// error is returned only when there is no response: the inner transport's
// error, or the caller's request body that could not be read.
//
// What the guard refuses gets a response, never an error: a blocked
// request (nothing was sent), a failure of the guard (failing closed) and a
// non-streamed answer that carried foreign material (discarded) are
// answered with an HTTP error in the API's own format ([Refusal]: 403, 400,
// 413, 502 or 500) carrying X-Should-Retry: false. The official OpenAI and
// Anthropic SDKs retry a round trip that fails with an error, which would
// send the prompt again to the service that just leaked; they do not retry
// such a response. The typed error (*BlockedError, *ContaminationError,
// *GuardError) is filed in the request's context for [WithRefusal]; Client
// returns it. A streamed response that turns out contaminated is cut:
// reading its body returns *ContaminationError (or, with
// Stream.ErrorEvent, yields an SSE error event and then io.EOF).
//
// A Transport is safe for concurrent use (its fields must not change once
// it is in use). Its zero value is not usable: it needs a Guard (RoundTrip
// fails closed without one).
type Transport struct {
	// Guard enforces the policy. Required.
	Guard *Guard
	// Base sends the filtered request; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Provider, when set, names the provider of every request ("openai",
	// "anthropic"); otherwise it is inferred from the body.
	Provider string
	// Destination, when set, names the policy destination of every request
	// (Request.Destination): the guard decides for it instead of matching
	// the request's URL, provider and model against the policy. It must be
	// a destination of the guard's policy, otherwise RoundTrip fails with
	// *GuardError (stage parse) and sends nothing. One Guard can so serve
	// several Transports, one per destination (as the proxy does).
	Destination string
	// Principal, when set, names who sends each request
	// (Request.Principal; "" falls back on the guard's Options.Principal).
	// It is called once per RoundTrip, before anything is sent, with the
	// caller's request, which it must not modify; it may be called
	// concurrently.
	Principal func(*http.Request) string
	// Stream tunes the handling of SSE responses.
	Stream StreamOptions
	// MaxBody bounds the bodies the Transport buffers; 0 means
	// DefaultMaxBody.
	MaxBody int64
}

var _ http.RoundTripper = (*Transport)(nil)

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

func (t *Transport) maxBody() int64 {
	if t.MaxBody > 0 {
		return t.MaxBody
	}
	return DefaultMaxBody
}

// readLimited reads all of r up to limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	return readSized(r, limit, -1)
}

// readSized is readLimited for a body that announced its size (a
// Content-Length, -1 unknown): a buffer of that size is taken at once
// instead of growing a 30 MB body through copies of twice its size.
func readSized(r io.Reader, limit, size int64) ([]byte, error) {
	data, err := inputfile.ReadUpTo(r, size, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
	}
	return data, nil
}

// credentialHeaders carry a caller's credentials for a provider; they are
// not sent to the destination a quarantine fails over to.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Openai-Organization", "Openai-Project", "Cookie"}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	x, resp, err := t.roundTrip(req)
	if err == nil {
		return resp, nil
	}
	r, ok := RefusalOf(err)
	if !ok {
		return nil, err // the inner transport's error: nothing was answered
	}
	// The guard refused or failed: answer it as the API would, so that the
	// client does not send the prompt again (see Refusal), and file the
	// typed error for WithRefusal.
	fileRefusal(req.Context(), err)
	anthropic := AnthropicPath(req.URL.Path)
	if x != nil && x.kind != "" {
		anthropic = x.kind == wire.KindAnthropic
	}
	return r.response(req, anthropic), nil
}

// roundTrip is RoundTrip with the guard's refusals as errors.
func (t *Transport) roundTrip(req *http.Request) (*Exchange, *http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = readSized(req.Body, t.maxBody(), req.ContentLength)
		req.Body.Close()
		if err != nil {
			if !errors.Is(err, ErrTooLarge) {
				return nil, nil, err // the caller's body could not be read
			}
			return nil, nil, &GuardError{Stage: StageParse, Err: fmt.Errorf("reading request body: %w", err)}
		}
	}
	if t.Guard == nil {
		return nil, nil, &GuardError{Stage: StageGuard, Err: errors.New("sdk.Transport has no Guard")}
	}
	if cts := req.Header.Values("Content-Type"); len(cts) > 1 {
		return nil, nil, &GuardError{Stage: StageParse, Err: fmt.Errorf("%w: %d Content-Type headers", ErrUnsupportedMedia, len(cts))}
	}
	ctx := req.Context()
	var principal string
	if t.Principal != nil {
		principal = t.Principal(req)
	}
	x, err := t.Guard.Check(ctx, Request{URL: req.URL.String(), Provider: t.Provider, Destination: t.Destination,
		Principal: principal, Body: body, ContentType: req.Header.Get("Content-Type"),
		ContentEncoding: strings.Join(req.Header.Values("Content-Encoding"), ","), MaxBody: t.maxBody()})
	if err != nil {
		return nil, nil, err
	}
	out := req.Clone(ctx)
	if x.URL != "" {
		// The destination is quarantined and the policy fails over: the
		// request goes to the failover destination, without the
		// credentials meant for the quarantined provider.
		u, err := url.Parse(x.URL)
		if err != nil {
			return x, nil, &GuardError{Stage: StageGuard, Exchange: x.ID, Err: err}
		}
		out.URL, out.Host = u, ""
		for _, h := range credentialHeaders {
			out.Header.Del(h)
		}
	}
	// Sent exactly as the guard validated it (Check validates the path and
	// undoes the Content-Encoding): the path is encoded from its decoded
	// form, and the body is plain.
	out.URL.RawPath = ""
	out.Header.Del("Content-Encoding")
	if x.ContentType != "" {
		out.Header.Set("Content-Type", x.ContentType)
	}
	if len(x.Body) > 0 || req.Body != nil {
		sent := x.Body
		out.Body = io.NopCloser(bytes.NewReader(sent))
		out.ContentLength = int64(len(sent))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(sent)), nil }
		if out.Header.Get("Content-Length") != "" {
			out.Header.Set("Content-Length", strconv.Itoa(len(sent)))
		}
	}
	// Let the inner transport negotiate and undo compression, so that the
	// guard reads plain bodies.
	out.Header.Del("Accept-Encoding")

	x.countAhead()
	resp, err := t.base().RoundTrip(out)
	if err != nil {
		x.Fail(0)
		return x, nil, err
	}
	return t.deliver(ctx, x, out, resp)
}
