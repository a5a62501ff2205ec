package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/aishield/aishield/sdk/quarantine"
)

// Refusal is how an HTTP door answers an exchange the guard refused or
// failed on: a status and an error in the API's own format. The official
// OpenAI and Anthropic SDKs retry a request whose round trip returns an
// error, which would send the prompt again to the service that just
// leaked; a response carrying X-Should-Retry: false is not retried.
type Refusal struct {
	// Status is the HTTP status: 403 blocked, 400 over capacity,
	// unparsable or a refused path, 413 too large, 415 a body the guard
	// cannot read, 502 contaminated (or a response too large), 503 a
	// destination in quarantine, 500 any other failure of the guard.
	Status int
	// Type and Code are the API error's type and code ("aishield_blocked",
	// "aishield_over_capacity", "aishield_contamination",
	// "aishield_quarantined", "aishield_unparsable", "invalid_path", "unsupported_media_type",
	// "request_too_large", "response_too_large", "upstream_redirect",
	// "unreadable_response", "aishield_guard_error").
	Type, Code string
	// Message is the error's text: masked previews only, never a value.
	Message string
}

// RefusalOf returns the refusal of err, a *BlockedError,
// *ContaminationError, *quarantine.Error or *GuardError (wrapped or not); ok is false for any
// other error (a transport failure is not the guard's refusal).
func RefusalOf(err error) (r Refusal, ok bool) {
	var be *BlockedError
	var ce *ContaminationError
	var ge *GuardError
	var qe *quarantine.Error
	switch {
	case errors.As(err, &qe):
		return Refusal{http.StatusServiceUnavailable, "aishield_quarantined", "aishield_quarantined", qe.Error()}, true
	case errors.As(err, &be):
		if be.OverCapacity {
			return Refusal{http.StatusBadRequest, "invalid_request_error", "aishield_over_capacity", be.Error()}, true
		}
		return Refusal{http.StatusForbidden, "aishield_blocked", "aishield_blocked", be.Error()}, true
	case errors.As(err, &ce):
		return Refusal{http.StatusBadGateway, "aishield_contamination", "aishield_contamination", ce.Error()}, true
	case errors.As(err, &ge):
		switch {
		case errors.Is(err, ErrTooLarge) && ge.Stage == StageParse:
			return Refusal{http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", ge.Error()}, true
		case errors.Is(err, ErrTooLarge):
			return Refusal{http.StatusBadGateway, "upstream_error", "response_too_large", ge.Error()}, true
		case errors.Is(err, ErrUnsupportedMedia):
			return Refusal{http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type", ge.Error()}, true
		case errors.Is(err, ErrInvalidPath):
			return Refusal{http.StatusBadRequest, "invalid_request_error", "invalid_path", ge.Error()}, true
		case errors.Is(err, ErrUpstreamRedirect):
			return Refusal{http.StatusBadGateway, "upstream_error", "upstream_redirect", ge.Error()}, true
		case errors.Is(err, ErrUnreadableResponse):
			return Refusal{http.StatusBadGateway, "upstream_error", "unreadable_response", ge.Error()}, true
		case ge.Stage == StageParse:
			return Refusal{http.StatusBadRequest, "invalid_request_error", "aishield_unparsable", ge.Error()}, true
		}
		return Refusal{http.StatusInternalServerError, "aishield_guard_error", "aishield_guard_error", ge.Error()}, true
	}
	return Refusal{}, false
}

// Body renders the refusal in the error format of the API: Anthropic's
// {"type":"error","error":{type,message}} when anthropic is true, else
// OpenAI's {"error":{message,type,param,code}}.
func (r Refusal) Body(anthropic bool) []byte {
	var v any
	if anthropic {
		v = map[string]any{"type": "error", "error": map[string]any{"type": r.Type, "message": r.Message}}
	} else {
		v = map[string]any{"error": map[string]any{"message": r.Message, "type": r.Type, "param": nil, "code": r.Code}}
	}
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// Write answers the refusal on w in the API's format, with
// X-Should-Retry: false (the same request would be refused again, and a
// contaminated answer is no reason to send the prompt again).
func (r Refusal) Write(w http.ResponseWriter, anthropic bool) {
	body := r.Body(anthropic)
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Should-Retry", "false")
	w.WriteHeader(r.Status)
	_, _ = w.Write(body)
}

// response returns the refusal as the response to req.
func (r Refusal) response(req *http.Request, anthropic bool) *http.Response {
	body := r.Body(anthropic)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Should-Retry", "false")
	return &http.Response{Status: fmt.Sprintf("%d %s", r.Status, http.StatusText(r.Status)), StatusCode: r.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}
}

// AnthropicPath reports whether path is the Anthropic messages API, whose
// errors take Anthropic's format.
func AnthropicPath(path string) bool {
	path = strings.TrimSuffix(path, "/")
	return strings.HasSuffix(path, "/messages") || strings.Contains(path, "/messages/")
}

type refusalKey struct{}

// refusalSlot holds the guard's refusal of one request.
type refusalSlot struct {
	mu  sync.Mutex
	err error
}

// WithRefusal returns a context whose requests through a [Transport] file
// the guard's typed error when it refuses them (*BlockedError,
// *ContaminationError, *GuardError), and a function that returns it (nil
// when nothing was refused). The Transport answers a refusal with an HTTP
// error response, which a client turns into an error of its own type; this
// recovers the guard's. Client (the go-openai wrapper) does it for every
// call.
func WithRefusal(ctx context.Context) (context.Context, func() error) {
	s := &refusalSlot{}
	return context.WithValue(ctx, refusalKey{}, s), func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err
	}
}

// fileRefusal records err in ctx's refusal slot, if any (the first one).
func fileRefusal(ctx context.Context, err error) {
	if s, ok := ctx.Value(refusalKey{}).(*refusalSlot); ok {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
	}
}
