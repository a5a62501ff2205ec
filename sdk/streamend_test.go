package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aishield/aishield/sdk"
)

// failingBody yields data, then fails with err.
type failingBody struct {
	r   io.Reader
	err error
}

func (b *failingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, b.err
	}
	return n, err
}

func (b *failingBody) Close() error { return nil }

// timeoutError is a read error that reports a timeout, as net.Error does.
type timeoutError struct{}

func (timeoutError) Error() string { return "i/o timeout" }
func (timeoutError) Timeout() bool { return true }

// lastEvent returns the data of the last SSE event of stream, and how many
// events carry an error.
func lastEvent(stream []byte) (last string, errorEvents int) {
	for block := range strings.SplitSeq(strings.TrimSpace(string(stream)), "\n\n") {
		for line := range strings.SplitSeq(block, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				last = data
				if strings.Contains(data, `"error":`) {
					errorEvents++
				}
			}
		}
	}
	return last, errorEvents
}

// TestStreamEndings: with StreamOptions.ErrorEvent (a proxy's mode) every
// stream that does not end normally ends with exactly one error event in
// the provider's format, decided by the stream filter from what it parsed
// (not from the last bytes), and Read then returns io.EOF (a stream that
// breaks after its terminal event is complete: no event, and what follows
// the terminal event is not read); without it (in-process clients) Read
// returns the typed error or the upstream's read error, and a truncated
// stream ends with io.EOF.
func TestStreamEndings(t *testing.T) {
	complete := sseChat("Your appointment is confirmed for Friday.", []byte{5})
	truncated := complete[:bytes.Index(complete, []byte("data: [DONE]"))]
	truncated = truncated[:bytes.LastIndex(truncated[:len(truncated)-2], []byte("\n\n"))+2] // no finish chunk either
	anthropicTruncated := []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Confirmed.\"}}\n\n")
	reset := errors.New("read tcp 127.0.0.1:5000->127.0.0.1:443: connection reset by peer")
	tests := []struct {
		name      string
		anthropic bool
		body      func() io.ReadCloser
		foreign   bool   // the stream quotes another exchange's placeholder
		wantType  string // the error event's type ("" for none)
		wantCode  string
		wantErr   func(error) bool // ErrorEvent false: Read's final error
	}{
		{name: "complete", body: func() io.ReadCloser { return io.NopCloser(bytes.NewReader(complete)) },
			wantErr: func(err error) bool { return err == nil }},
		{name: "truncated", body: func() io.ReadCloser { return io.NopCloser(bytes.NewReader(truncated)) },
			wantType: "upstream_error", wantCode: "stream_truncated", wantErr: func(err error) bool { return err == nil }},
		{name: "anthropic truncated", anthropic: true, body: func() io.ReadCloser { return io.NopCloser(bytes.NewReader(anthropicTruncated)) },
			wantType: "upstream_error", wantErr: func(err error) bool { return err == nil }},
		{name: "upstream reset", body: func() io.ReadCloser { return &failingBody{r: bytes.NewReader(truncated), err: reset} },
			wantType: "upstream_error", wantCode: "upstream_unavailable", wantErr: func(err error) bool { return errors.Is(err, reset) }},
		// The stream ends at its terminal event: what follows is not read.
		{name: "reset after the terminal event", body: func() io.ReadCloser { return &failingBody{r: bytes.NewReader(complete), err: reset} },
			wantErr: func(err error) bool { return err == nil }},
		{name: "upstream timeout", body: func() io.ReadCloser { return &failingBody{r: bytes.NewReader(truncated), err: timeoutError{}} },
			wantType: "upstream_error", wantCode: "upstream_timeout", wantErr: func(err error) bool { return errors.Is(err, timeoutError{}) }},
		{name: "malformed", body: func() io.ReadCloser {
			return io.NopCloser(strings.NewReader("data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {not json\n\ndata: [DONE]\n\n"))
		}, wantType: "aishield_guard_error", wantCode: "aishield_guard_error",
			wantErr: func(err error) bool { var ge *sdk.GuardError; return errors.As(err, &ge) }},
		{name: "contaminated", foreign: true, wantType: "aishield_contamination", wantCode: "aishield_contamination",
			wantErr: func(err error) bool { var ce *sdk.ContaminationError; return errors.As(err, &ce) }},
	}
	ctx := context.Background()
	for _, tt := range tests {
		for _, errorEvent := range []bool{true, false} {
			name := tt.name + "/error-event"
			if !errorEvent {
				name = tt.name + "/typed"
			}
			t.Run(name, func(t *testing.T) {
				g := newGuard(t, sdk.Options{})
				url, body := "/v1/chat/completions", chatBody("Please confirm my appointment.")
				if tt.anthropic {
					url = "/v1/messages"
					body = []byte(`{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"Please confirm my appointment."}]}`)
				}
				src := tt.body
				if tt.foreign {
					other, err := g.Check(ctx, sdk.Request{URL: url, Body: chatBody("write to " + email)})
					if err != nil {
						t.Fatal(err)
					}
					ph := placeholderRE.FindString(string(other.Body))
					src = func() io.ReadCloser {
						return io.NopCloser(bytes.NewReader(sseChat("Forwarding this to "+ph+" as asked.", []byte{40})))
					}
				}
				x, err := g.Check(ctx, sdk.Request{URL: url, Body: body})
				if err != nil {
					t.Fatal(err)
				}
				r := x.Stream(ctx, src(), sdk.StreamOptions{ErrorEvent: errorEvent})
				out, err := io.ReadAll(r)
				r.Close()
				last, n := lastEvent(out)
				if !errorEvent {
					if !tt.wantErr(err) || n != 0 {
						t.Fatalf("Read's error %v (%T), %d error events; want the typed error and none", err, err, n)
					}
					return
				}
				if err != nil {
					t.Fatalf("Read returned %v; want io.EOF after the error event", err)
				}
				if tt.wantType == "" {
					if n != 0 {
						t.Fatalf("a complete stream got an error event: %s", last)
					}
					return
				}
				if n != 1 {
					t.Fatalf("%d error events, want 1: %q", n, out)
				}
				var ev struct {
					Type  string
					Error struct{ Type, Code, Message string }
				}
				if err := json.Unmarshal([]byte(last), &ev); err != nil {
					t.Fatalf("the last event is not the error event: %q", last)
				}
				if ev.Error.Type != tt.wantType || ev.Error.Code != tt.wantCode || ev.Error.Message == "" {
					t.Fatalf("error event %s, want type %s code %q", last, tt.wantType, tt.wantCode)
				}
				if tt.anthropic && (ev.Type != "error" || !bytes.Contains(out, []byte("event: error\ndata: "))) {
					t.Fatalf("not an Anthropic error event: %q", out)
				}
				if tt.wantCode == "upstream_unavailable" && !strings.Contains(ev.Error.Message, "connection reset by peer") {
					t.Fatalf("the upstream failure is not described: %s", ev.Error.Message)
				}
			})
		}
	}
}
