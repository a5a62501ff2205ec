package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/aishield/aishield/sdk"
)

// FuzzStreamFilter: whatever the upstream sends, what the stream filter
// writes is what it parsed: lines "event: ", "id: " or "data: " and blank
// lines only, each data line a whole JSON value or [DONE], and nothing
// after [DONE] or message_stop.
func FuzzStreamFilter(f *testing.F) {
	f.Add([]byte(string(sseChat("Hello there.", []byte{3}))), false)
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n  data: {\"x\":1}\n\ndata: [DONE]\n\ndata: {}\n\n"), false)
	f.Add([]byte("data: {\"a\":\ndata: 1}\n\n: comment\nretry: 5\nid: 7\nfoo: bar\n\ndata: [DONE]\n\n"), false)
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\nevent: x\ndata: {}\n\n"), true)
	g := newGuard(f, sdk.Options{})
	f.Fuzz(func(t *testing.T, in []byte, anthropic bool) {
		url, body := "/v1/chat/completions", chatBody("hello")
		if anthropic {
			url, body = "/v1/messages", []byte(`{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"hello"}]}`)
		}
		x, err := g.Check(context.Background(), sdk.Request{URL: url, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		r := x.Stream(context.Background(), io.NopCloser(bytes.NewReader(in)), sdk.StreamOptions{ErrorEvent: true})
		out, _ := io.ReadAll(r)
		r.Close()
		ended := false
		for line := range strings.SplitSeq(string(out), "\n") {
			if line == "" {
				continue
			}
			if ended {
				t.Fatalf("line after the terminal event: %q\n%s", line, out)
			}
			switch {
			case strings.HasPrefix(line, "event: "), strings.HasPrefix(line, "id: "):
			case strings.HasPrefix(line, "data: "):
				data := strings.TrimPrefix(line, "data: ")
				switch {
				case data == "[DONE]":
					ended = true
				case !json.Valid([]byte(data)):
					t.Fatalf("data line is not a JSON value: %q\n%s", line, out)
				case strings.Contains(data, `"type":"message_stop"`) && anthropic:
					ended = true
				}
			default:
				t.Fatalf("line the filter did not write from what it parsed: %q\n%s", line, out)
			}
		}
	})
}
