package proxy

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aishield/aishield/internal/upstreamtest"
	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	openai "github.com/sashabaranov/go-openai"
)

func completion(text string) []byte {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text}}},
		"usage": map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})
	return b
}

// curlPost posts body to url with an Authorization header through a plain
// http.Client, which follows redirects (as curl -L does, re-sending the
// body of a 307 or 308), and returns the status and the body.
func curlPost(t *testing.T, url string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-caller-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestHardening01RedirectProxy: an upstream's 307 or 308 to another host
// is not passed to the client: go-openai and a redirect-following client
// get a 502 upstream_redirect, and the other host receives nothing (no
// unredacted body, no Authorization).
func TestHardening01RedirectProxy(t *testing.T) {
	elsewhere := upstreamtest.New(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(completion("from elsewhere"))
	})
	for _, status := range []int{307, 308} {
		up := upstreamtest.New(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, status)
		})
		_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 100000, blockNoCanary)})
		_, err := client(hs.URL, "a").CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
			Model: "gpt-4o", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "write to " + hardEmail}}})
		var ae *openai.APIError
		if !errors.As(err, &ae) || ae.HTTPStatusCode != 502 || ae.Code != "upstream_redirect" {
			t.Fatalf("%d: go-openai got %v, want a 502 upstream_redirect", status, err)
		}
		st, body := curlPost(t, hs.URL+"/v1/chat/completions",
			[]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"write to `+hardEmail+`"}]}`))
		if st != 502 || !strings.Contains(string(body), "upstream_redirect") {
			t.Fatalf("%d: curl-like client got %d %s", status, st, body)
		}
		if n := len(elsewhere.Received()); n != 0 {
			t.Fatalf("%d: the redirect's target received %d requests", status, n)
		}
		for _, b := range up.Received() {
			if strings.Contains(string(b.Body), hardEmail) {
				t.Fatalf("%d: upstream received the e-mail in clear", status)
			}
		}
	}
}

// TestHardening07ProxyTypes: through the proxy, a 200 of an unreadable
// type is refused, and a body under "identity, gzip" is decoded, verified
// and delivered decoded.
func TestHardening07ProxyTypes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ct    string
		ce    []string
		body  []byte
		code  string
		wants string
	}{
		{"octet-stream", "application/octet-stream", nil, completion("anything"), "unreadable_response", ""},
		{"gzip after identity", "application/json", []string{"identity", "gzip"}, gzipOf(completion("ok <|im_start|>user\nanother customer's prompt")), "aishield_contamination", ""},
		{"gzip clean", "application/json", []string{"identity, gzip"}, gzipOf(completion("decoded fine")), "", "decoded fine"},
	} {
		up := upstreamtest.New(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", tc.ct)
			w.Header()["Content-Encoding"] = tc.ce
			_, _ = w.Write(tc.body)
		})
		_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 100000, blockNoCanary)})
		resp, err := client(hs.URL, "a").CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
			Model: "gpt-4o", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hello"}}})
		var ae *openai.APIError
		switch {
		case tc.code == "" && (err != nil || resp.Choices[0].Message.Content != tc.wants):
			t.Fatalf("%s: got %+v, %v", tc.name, resp, err)
		case tc.code != "" && (!errors.As(err, &ae) || ae.HTTPStatusCode != 502 || ae.Code != tc.code):
			t.Fatalf("%s: got %v, want a 502 %s", tc.name, err, tc.code)
		}
	}
}

func gzipOf(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// TestHardening08ProxyStreams: through the proxy, go-openai reads nothing
// after [DONE] on the wire, nothing of a data line with leading white
// space, and no text hidden in a field other than the content (here the
// top log-probabilities).
func TestHardening08ProxyStreams(t *testing.T) {
	const foreign = `<|im_start|>user\nanother customer's question`
	first := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
	end := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	for _, tc := range []struct {
		name, body string
		cut        string // the code of the error event that ends the stream ("" for a complete one)
	}{
		{"after [DONE]", first + end + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" another customer\"}}]}\n\n", ""},
		{"leading space", first + "   data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" another customer\"}}]}\n\n" + end, "aishield_guard_error"},
		{"top logprobs", first + "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\".\"},\"logprobs\":{\"content\":[{\"token\":\".\",\"logprob\":-1,\"bytes\":[46],\"top_logprobs\":[{\"token\":\"" + foreign + "\",\"logprob\":-2,\"bytes\":[1]}]}]}}]}\n\n" + end, "aishield_contamination"},
	} {
		up := upstreamtest.New(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, tc.body)
		})
		_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 100000, blockNoCanary)})
		// The wire, as a client that reads everything sees it.
		st, raw := curlPost(t, hs.URL+"/v1/chat/completions", []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hello"}]}`))
		if st != 200 || strings.Contains(string(raw), "another customer") {
			t.Fatalf("%s: %d, delivered %q", tc.name, st, raw)
		}
		if tc.cut == "" && !strings.HasSuffix(string(raw), "data: [DONE]\n\n") || tc.cut != "" && !strings.Contains(string(raw), tc.cut) {
			t.Fatalf("%s: stream ends %q, want cut %q", tc.name, raw, tc.cut)
		}
		// go-openai reads the same.
		s, err := client(hs.URL, "a").CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
			Model: "gpt-4o", Stream: true, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hello"}}})
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for {
			r, err := s.Recv()
			if err != nil {
				break
			}
			for _, c := range r.Choices {
				got.WriteString(c.Delta.Content)
				if c.Logprobs != nil {
					for _, lp := range c.Logprobs.Content {
						for _, top := range lp.TopLogprobs {
							got.WriteString(top.Token)
						}
					}
				}
			}
		}
		s.Close()
		if strings.Contains(got.String(), "another customer") {
			t.Fatalf("%s: go-openai read %q", tc.name, got.String())
		}
	}
}

// TestHardening08ProxyAnthropic: through the proxy, anthropic-sdk-go (which
// keeps accumulating after message_stop) reads nothing after it, and text
// in message_start's content or a tool_use block's input is verified.
func TestHardening08ProxyAnthropic(t *testing.T) {
	const foreign = `<|im_start|>user\nanother customer's question`
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test-1\",\"content\":[],\"usage\":{\"input_tokens\":30,\"output_tokens\":1}}}\n\n"
	text := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Confirmed.\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	end := "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, tc := range []struct {
		name, body string
		cut        bool
	}{
		{"after message_stop", start + text + end + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" another customer\"}}\n\n", false},
		{"message_start content", strings.Replace(start, `"content":[]`, `"content":[{"type":"text","text":"`+foreign+`"}]`, 1) + text + end, true},
		{"tool_use input", start + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"lookup\",\"input\":{\"q\":\"" + foreign + "\"}}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" + end, true},
	} {
		up := upstreamtest.New(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, tc.body)
		})
		_, hs := startProxy(t, Options{Policy: anthropicPolicy(t, up.URL), Upstream: "claude"})
		c := anthropic.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey("sk-ant-k"), option.WithMaxRetries(0))
		st := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-test-1", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("confirm"))}})
		var msg anthropic.Message
		for st.Next() {
			if err := msg.Accumulate(st.Current()); err != nil {
				t.Fatal(err)
			}
		}
		err := st.Err()
		st.Close()
		got, _ := json.Marshal(msg.Content)
		if strings.Contains(string(got), "another customer") || tc.cut != (err != nil) {
			t.Fatalf("%s: accumulated %s, err %v", tc.name, got, err)
		}
		if tc.cut && !strings.Contains(err.Error(), "aishield_contamination") {
			t.Fatalf("%s: err %v, want the contamination event", tc.name, err)
		}
	}
}
