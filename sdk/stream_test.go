package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aishield/aishield/sdk"
)

// sseChat builds an OpenAI chat stream sending text in the given chunk
// sizes (cycled).
func sseChat(text string, sizes []byte) []byte {
	var b bytes.Buffer
	emit := func(v any) {
		d, _ := json.Marshal(v)
		b.WriteString("data: ")
		b.Write(d)
		b.WriteString("\n\n")
	}
	i := 0
	for len(text) > 0 {
		n := 1
		if len(sizes) > 0 {
			n = int(sizes[i%len(sizes)])%16 + 1
		}
		i++
		n = min(n, len(text))
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++ // providers split text on rune boundaries
		}
		emit(map[string]any{"id": "c", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text[:n]}, "finish_reason": nil}}})
		text = text[n:]
	}
	emit(map[string]any{"id": "c", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// chatText collects the delta contents of an OpenAI chat stream.
func chatText(t testing.TB, stream []byte) string {
	var out strings.Builder
	for _, block := range strings.Split(string(stream), "\n\n") {
		data, ok := strings.CutPrefix(block, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("bad event %q: %v", data, err)
		}
		for _, c := range ev.Choices {
			out.WriteString(c.Delta.Content)
		}
	}
	return out.String()
}

func streamThrough(t testing.TB, g *sdk.Guard, upstream []byte) (*sdk.Exchange, string, []byte, error) {
	x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("write to " + email)})
	if err != nil {
		t.Fatal(err)
	}
	holder := placeholderRE.FindString(string(x.Body))
	_ = holder
	r := x.Stream(context.Background(), io.NopCloser(bytes.NewReader(upstream)), sdk.StreamOptions{})
	out, err := io.ReadAll(r)
	r.Close()
	return x, holder, out, err
}

func TestStreamRestoreSplitPlaceholders(t *testing.T) {
	g := newGuard(t, sdk.Options{})
	for _, sizes := range [][]byte{{0}, {1}, {2}, {6, 1, 3}, {15}} {
		x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("write to " + email)})
		if err != nil {
			t.Fatal(err)
		}
		p := placeholderRE.FindString(string(x.Body))
		text := "Dear " + p + ", [not a placeholder] and [[ALSO_NOT]] then " + p + "[" // ends on a '['
		r := x.Stream(context.Background(), io.NopCloser(bytes.NewReader(sseChat(text, sizes))), sdk.StreamOptions{})
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("sizes %v: %v", sizes, err)
		}
		want := strings.ReplaceAll(text, p, email)
		if got := chatText(t, out); got != want {
			t.Fatalf("sizes %v:\n got %q\nwant %q", sizes, got, want)
		}
	}
}

func TestStreamMalformedFailsClosed(t *testing.T) {
	for _, mode := range []string{"closed", "open"} {
		g := newGuard(t, sdk.Options{Policy: testPolicyMode(t, mode)})
		bad := []byte("data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {not json\n\ndata: [DONE]\n\n")
		_, _, out, err := streamThrough(t, g, bad)
		var ge *sdk.GuardError
		if mode == "closed" && !errors.As(err, &ge) {
			t.Fatalf("closed: err = %v", err)
		}
		if mode == "open" && (err != nil || !bytes.Contains(out, []byte("{not json"))) {
			t.Fatalf("open: out %q err %v", out, err)
		}
	}
}

func FuzzStream(f *testing.F) {
	f.Add("hello PLACEHOLDER world", []byte{1, 2, 3})
	f.Add("[[PLACEHOLDER]] [[ [[X_0123abcd]]", []byte{5})
	f.Add("PLACEHOLDERPLACEHOLDER[", []byte{0})
	g := newGuard(f, sdk.Options{Policy: testPolicyMode(f, "closed")})
	f.Fuzz(func(t *testing.T, tmpl string, sizes []byte) {
		x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("write to " + email)})
		if err != nil {
			t.Fatal(err)
		}
		p := placeholderRE.FindString(string(x.Body))
		text := strings.ReplaceAll(strings.ToValidUTF8(tmpl, "?"), "PLACEHOLDER", p)
		r := x.Stream(context.Background(), io.NopCloser(bytes.NewReader(sseChat(text, sizes))), sdk.StreamOptions{})
		out, err := io.ReadAll(r)
		if err != nil {
			var ce *sdk.ContaminationError
			var ge *sdk.GuardError
			if !errors.As(err, &ce) && !errors.As(err, &ge) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if got, want := chatText(t, out), strings.ReplaceAll(text, p, email); got != want {
			t.Fatalf("got %q want %q", got, want)
		}
	})
}

func FuzzStreamRaw(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"[[PII\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.output_text.delta\",\"delta\":\"[\"}\r\n\r\n"))
	g := newGuard(f, sdk.Options{Policy: testPolicyMode(f, "closed")})
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _, _, _ = streamThrough(t, g, raw) // must not panic or hang
	})
}

// chatEvent is one OpenAI chat chunk carrying content (extra members
// merged into its choice's delta).
func chatEvent(content string, extra map[string]any) string {
	delta := map[string]any{"content": content}
	choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
	for k, v := range extra {
		if k == "logprobs" {
			choice[k] = v
			continue
		}
		delta[k] = v
	}
	d, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "choices": []any{choice}})
	return "data: " + string(d) + "\n\n"
}

const chatEnd = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"

// TestStreamReleasesVouchedText: the guard releases text as soon as the
// verifier vouches for it, splitting an event when needed, so that an
// answer streamed in a few large events (a server that sends its tokens
// in batches) is not delivered in one piece at the end: each event's text
// is read, all but what the verifier still holds back, before the next
// event is written.
func TestStreamReleasesVouchedText(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, sdk.Options{})
	x, err := g.Check(ctx, sdk.Request{URL: "/v1/chat/completions", Body: chatBody("Summarise the plan for the migration.")})
	if err != nil {
		t.Fatal(err)
	}
	pieces := []string{
		"The committee reviewed the quarterly figures on Monday and agreed to ",
		"move the warehouse migration to the second week of March, after the audit ",
		"of the supplier contracts. Everyone will receive the revised schedule soon.",
	}
	pr, pw := io.Pipe()
	r := x.Stream(ctx, pr, sdk.StreamOptions{})
	defer r.Close()
	got := make(chan []byte, 64)
	go func() {
		defer close(got)
		for {
			buf := make([]byte, 4096)
			n, err := r.Read(buf)
			if n > 0 {
				got <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	var out []byte
	delivered := func() string { // the content of the complete events read so far
		return chatText(t, out[:bytes.LastIndex(out, []byte("\n\n"))+1])
	}
	sent := 0
	for i, p := range pieces {
		go func() { _, _ = io.WriteString(pw, chatEvent(p, nil)) }()
		sent += len(p)
		// Everything but a fingerprint window or so goes out now.
		deadline := time.After(5 * time.Second)
		for len(delivered()) < sent-64 {
			select {
			case b, ok := <-got:
				if !ok {
					t.Fatalf("stream ended after piece %d", i)
				}
				out = append(out, b...)
			case <-deadline:
				t.Fatalf("piece %d: %d of %d bytes delivered before the next piece", i, len(delivered()), sent)
			}
		}
		t.Logf("piece %d: %d of %d bytes delivered before the next piece", i, len(delivered()), sent)
	}
	go func() { _, _ = io.WriteString(pw, chatEnd); pw.Close() }()
	for b := range got {
		out = append(out, b...)
	}
	if text := chatText(t, out); text != strings.Join(pieces, "") {
		t.Fatalf("delivered %q", text)
	}
	if n := bytes.Count(out, []byte(`"content":"`)); n < len(pieces) {
		t.Fatalf("%d content events for %d upstream events", n, len(pieces))
	}
}

// TestStreamSplitsPlainTextOnly: an event is split only when its one text
// is a delta of plain text; one with log-probabilities (which would go
// out twice) or tool-call arguments waits whole.
func TestStreamSplitsPlainTextOnly(t *testing.T) {
	long := "The committee reviewed the quarterly figures on Monday and agreed on the plan. "
	logprobs := map[string]any{"logprobs": map[string]any{"content": []any{map[string]any{"token": "The", "logprob": -0.1}}}}
	call := map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"q":"` + long + `"}`}}}}
	for _, tc := range []struct {
		name   string
		events string
		split  bool
	}{
		{"plain", chatEvent(long, nil) + chatEvent(long, nil), true},
		{"logprobs", chatEvent(long, logprobs) + chatEvent(long, logprobs), false},
		{"tool call", chatEvent("", call) + chatEvent("", call), false},
	} {
		_, _, out, err := streamThrough(t, newGuard(t, sdk.Options{}), []byte(tc.events+chatEnd))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		events := bytes.Count(out, []byte("data: {"))
		if split := events > 3; split != tc.split {
			t.Errorf("%s: %d events out of 3 in, split %v, want %v\n%s", tc.name, events, split, tc.split, out)
		}
		if n := bytes.Count(out, []byte(`"logprob":`)); tc.name == "logprobs" && n != 2 {
			t.Errorf("logprobs: %d log-probabilities out of 2 in", n)
		}
	}
}
