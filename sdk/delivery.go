package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aishield/aishield/sdk/inbound"
)

// What the guard delivers of a response (see docs/inbound.md): only what
// it parsed and verified. A redirect, a body whose type or content coding
// it cannot read, or a coding it cannot undo is refused with a
// *GuardError (stage response) wrapping one of these, answered by the HTTP
// doors as a 502 in the API's format.
var (
	// ErrUpstreamRedirect: the upstream answered a redirect (a 3xx with a
	// Location). A client that follows it would send the request again,
	// as the caller wrote it and with its credentials, to a place no
	// policy declares; the guard neither follows nor delivers it.
	ErrUpstreamRedirect = errors.New("upstream redirect")
	// ErrUnreadableResponse: a non-error response whose type (not JSON,
	// not an SSE stream, not UTF-8 plain text) or content coding the
	// guard cannot read, so cannot verify.
	ErrUnreadableResponse = errors.New("response the guard cannot read")
)

// redirectError describes a redirect from dest to location: the target's
// host is named (it tells a wrong base_url apart), never its path or query.
func redirectError(x *Exchange, status int, location string) error {
	where := "another location"
	if u, err := url.Parse(location); err == nil {
		switch {
		case u.Host == "" && !u.IsAbs():
			where = "another path of the same host"
		case u.Host != "" && printableHost(u.Host):
			where = u.Scheme + "://" + u.Host
			if u.Scheme == "" {
				where = u.Host
			}
		}
	}
	return &GuardError{Stage: StageResponse, Exchange: x.ID, Err: fmt.Errorf(
		"%w: upstream %s answered HTTP %d to %s; the guard does not follow redirects (the request would be sent where no policy sends it): fix the destination's base_url (for example http:// to https://, or a missing path)",
		ErrUpstreamRedirect, x.Destination, status, where)}
}

// printableHost reports whether h is a plausible host[:port] to name in a
// message: short, letters, digits and the punctuation of host names and
// IP literals only.
func printableHost(h string) bool {
	if len(h) > 255 {
		return false
	}
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune(".-:[]", c):
		default:
			return false
		}
	}
	return true
}

// Kinds of response bodies the guard reads.
const (
	bodyUnreadable = iota
	bodyJSON
	bodyText
)

// bodyKind tells how the guard reads a non-error response body of type ct:
// JSON (application/json, any +json type; no type at all when the body
// parses as JSON), UTF-8 plain text (text/plain in UTF-8 or US-ASCII), or
// not at all.
func bodyKind(ct string, body []byte) int {
	if strings.TrimSpace(ct) == "" {
		if json.Valid(body) {
			return bodyJSON
		}
		return bodyUnreadable
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return bodyUnreadable
	}
	switch {
	case media == "application/json" || strings.HasPrefix(media, "application/") && strings.HasSuffix(media, "+json"):
		return bodyJSON
	case media == "text/plain" && utf8Charset(params) && utf8.Valid(body):
		return bodyText
	}
	return bodyUnreadable
}

// mediaOf returns the media type of ct for messages ("none" when absent).
func mediaOf(ct string) string {
	if strings.TrimSpace(ct) == "" {
		return "none"
	}
	media, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "malformed"
	}
	return clip(media, 64)
}

// unreadableError describes a non-error response of type ct the guard does
// not read.
func unreadableError(x *Exchange, ct string) error {
	return &GuardError{Stage: StageResponse, Exchange: x.ID, Err: fmt.Errorf(
		"%w: upstream %s answered a body of type %s, which is neither JSON, an SSE stream nor UTF-8 plain text; it is not delivered unverified (a destination's passthrough globs let such paths through)",
		ErrUnreadableResponse, x.Destination, mediaOf(ct))}
}

// passUnverified records a response the policy lets through unread (the
// destination's passthrough globs match the request's path).
func (x *Exchange) passUnverified(status int) {
	x.status = status
	if x.session != nil {
		_, _ = safeCall(func() ([]inbound.Signal, error) {
			return x.session.Close(context.Background(), inbound.End{Refused: true})
		})
	}
	x.verdict = VerdictUnverified
	x.g.record(x)
}

// passesThrough reports whether the destination of x lets bodies it cannot
// read through unchecked on path.
func (x *Exchange) passesThrough(path string) bool {
	return x.dest != nil && x.dest.PassesThrough(path)
}

// isEventStream reports whether ct is text/event-stream.
func isEventStream(ct string) bool {
	media, _, err := mime.ParseMediaType(ct)
	return err == nil && media == "text/event-stream"
}

// deliver turns the upstream's response to req into what the caller gets:
// never a redirect; the body decoded of its content codings (bounded by
// MaxBody, delivered without Content-Encoding); an SSE stream filtered by
// Exchange.Stream; any other body read whole and checked by
// Exchange.Response (every status below 400 is verified; a type the guard
// cannot read is refused unless the destination's passthrough globs match
// req's path).
func (t *Transport) deliver(ctx context.Context, x *Exchange, req *http.Request, resp *http.Response) (*Exchange, *http.Response, error) {
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
		resp.Body.Close()
		x.refused(resp.StatusCode, StageResponse)
		return x, nil, redirectError(x, resp.StatusCode, resp.Header.Get("Location"))
	}
	ct := resp.Header.Get("Content-Type")
	codings, err := contentCodings(resp.Header)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrUnreadableResponse, err)
		if t.Guard.policy.FailOpen {
			x.FailedOpen, x.failNote, x.verdict, x.status = true, StageResponse, VerdictUnverified, resp.StatusCode
			t.Guard.record(x)
			return x, resp, nil
		}
		resp.Body.Close()
		x.refused(resp.StatusCode, StageResponse)
		return x, nil, &GuardError{Stage: StageResponse, Exchange: x.ID, Err: err}
	}
	body, err := decodedBody(resp.Body, codings)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrUnreadableResponse, err)
		x.refused(resp.StatusCode, StageResponse)
		return x, nil, &GuardError{Stage: StageResponse, Exchange: x.ID, Err: err}
	}
	innerDecoded := resp.Uncompressed
	if len(codings) > 0 {
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
	if isEventStream(ct) {
		resp.Body = x.Stream(ctx, body, t.Stream)
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		return x, resp, nil
	}
	data, err := readSized(body, t.maxBody(), resp.ContentLength)
	body.Close()
	if err != nil {
		x.Fail(resp.StatusCode)
		if innerDecoded && len(codings) == 0 {
			codings = []string{"gzip"} // undone by the inner http.Transport
		}
		if len(codings) > 0 && !errors.Is(err, ErrTooLarge) && ctx.Err() == nil {
			err = fmt.Errorf("%w: decoding its %s body: %v", ErrUnreadableResponse, strings.Join(codings, ", "), err)
		}
		return x, nil, &GuardError{Stage: StageResponse, Exchange: x.ID, Err: fmt.Errorf("reading response body: %w", err)}
	}
	if resp.StatusCode < 400 && len(bytes.TrimSpace(data)) > 0 && bodyKind(ct, data) == bodyUnreadable && x.passesThrough(req.URL.Path) {
		x.passUnverified(resp.StatusCode)
	} else if data, err = x.Response(ctx, resp.StatusCode, ct, data); err != nil {
		return x, nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
	return x, resp, nil
}

// refused records an exchange whose response the guard refused before
// reading it (a redirect, a body it cannot decode): the verifier is told
// the end was the guard's doing.
func (x *Exchange) refused(status int, stage Stage) {
	x.status, x.failNote = status, stage
	if x.session != nil {
		_, _ = safeCall(func() ([]inbound.Signal, error) {
			return x.session.Close(context.Background(), inbound.End{Refused: true})
		})
	}
	x.verdict = VerdictError
	x.g.record(x)
}
