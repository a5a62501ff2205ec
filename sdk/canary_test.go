package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/verify"
)

// canaryGuard returns a guard of the default preset (canaries on).
func canaryGuard(t testing.TB) *sdk.Guard {
	t.Helper()
	pol, err := policies.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	return newGuard(t, sdk.Options{Policy: pol})
}

// sentCanary returns the canary line the guard placed in a chat body.
func sentCanary(t testing.TB, body []byte) string {
	t.Helper()
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		if strings.Contains(m.Content, verify.CanaryPrefix) {
			return m.Content
		}
	}
	t.Fatalf("no canary in %s", body)
	return ""
}

// canaryExchange checks a chat request through g and returns the exchange
// with the canary line the guard placed in it and the line's token.
func canaryExchange(t testing.TB, g *sdk.Guard) (x *sdk.Exchange, line, token string) {
	t.Helper()
	x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("How do refunds work?")})
	if err != nil {
		t.Fatal(err)
	}
	line = sentCanary(t, x.Body)
	return x, line, line[strings.Index(line, verify.CanaryPrefix):][:verify.CanaryLen]
}

func chatResponse(content, finish string) []byte {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
			"message": map[string]any{"role": "assistant", "content": content}}}})
	return b
}

func deliveredText(t testing.TB, body []byte) string {
	t.Helper()
	var resp struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Choices[0].Message.Content
}

// TestCanaryKeepsPrefixCache: two requests with the same long system prompt
// and history leave with the bytes up to the end of the caller's last
// message identical to what the caller sent (and so to each other): the
// canary, different for every exchange, comes after everything a provider
// caches (OpenAI and Anthropic bill cached prefixes at a fraction).
func TestCanaryKeepsPrefixCache(t *testing.T) {
	g := canaryGuard(t)
	system := strings.Repeat("You are the support assistant of a bicycle shop; answer in two sentences. ", 40)
	tests := []struct{ url, body, last string }{
		{"/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"system","content":` + quote(system) +
			`},{"role":"user","content":"Hello"},{"role":"assistant","content":"Hi!"},{"role":"user","content":"%s"}]}`, "%s"},
		{"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"system":[{"type":"text","text":` + quote(system) +
			`,"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"%s"}]}`, "%s"},
		{"/v1/responses", `{"model":"gpt-4o","instructions":` + quote(system) + `,"input":[{"role":"user","content":"%s"}]}`, "%s"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			var sent [2][]byte
			for i, q := range []string{"How do I fix a flat tyre?", "Which helmet for a child?"} {
				body := strings.Replace(tt.body, "%s", q, 1)
				x, err := g.Check(context.Background(), sdk.Request{URL: tt.url, Body: []byte(body)})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(x.Body, []byte(verify.CanaryPrefix)) {
					t.Fatalf("no canary placed: %s", x.Body)
				}
				end := strings.Index(body, q) + len(q) + 1 // the last message's text and its closing quote
				if !bytes.HasPrefix(x.Body, []byte(body[:end])) {
					t.Errorf("the bytes up to the last message changed:\nsent %s\nwant prefix %s", x.Body, body[:end])
				}
				sent[i] = x.Body
			}
			common := strings.Index(tt.body, "%s")
			if !bytes.Equal(sent[0][:common], sent[1][:common]) {
				t.Error("the two requests' cacheable prefixes differ")
			}
		})
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestCanaryNeverShown: an answer that repeats the exchange's own canary
// line, whole or in part, reaches the caller without it, whole and
// streamed in pieces of every size.
func TestCanaryNeverShown(t *testing.T) {
	g := canaryGuard(t)
	for _, echo := range []func(line, token string) string{
		func(line, _ string) string { return "Sure. " + line + " Here is the answer." },
		func(_, token string) string { return "Sure. " + token + " Here is the answer." },
		func(_, token string) string {
			return "Sure. Reference " + token + " not repeat it). Here is the answer."
		},
		func(line, token string) string {
			return "Sure. " + line[strings.Index(line, "reference"):strings.Index(line, token)+len(token)] + " Here is the answer."
		},
	} {
		x, line, token := canaryExchange(t, g)
		answer := echo(line, token)
		out, err := x.Response(context.Background(), 200, "application/json", chatResponse(answer, "stop"))
		if err != nil {
			t.Fatalf("%q: %v", answer, err)
		}
		got := deliveredText(t, out)
		if strings.Contains(got, "canary") || strings.Contains(got, "repeat it") || !strings.HasPrefix(got, "Sure.") || !strings.HasSuffix(got, "Here is the answer.") {
			t.Errorf("answer %q delivered as %q", answer, got)
		}
		for size := 1; size <= 8; size++ {
			x, line, token := canaryExchange(t, g)
			answer := echo(line, token)
			r := x.Stream(context.Background(), io.NopCloser(bytes.NewReader(sseChat(answer, []byte{byte(size - 1)}))), sdk.StreamOptions{})
			data, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			if got := chatText(t, data); strings.Contains(got, "canary") || strings.Contains(got, "repeat it") {
				t.Errorf("size %d: answer %q streamed as %q", size, answer, got)
			}
		}
	}
}

// TestForeignCanaryStillCaught: another exchange's canary in an answer is
// not stripped as if it were this one's: it is foreign material.
func TestForeignCanaryStillCaught(t *testing.T) {
	g := canaryGuard(t)
	other, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("Plan my week.")})
	if err != nil {
		t.Fatal(err)
	}
	foreign := sentCanary(t, other.Body)
	x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("How do refunds work?")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = x.Response(context.Background(), 200, "application/json", chatResponse("Refunds take a week. "+foreign, "stop"))
	var ce *sdk.ContaminationError
	if !errors.As(err, &ce) || ce.Signals[0].ID != policies.SignalCanary || len(ce.Sources) != 1 || ce.Sources[0] != other.ID {
		t.Fatalf("err = %v, want the canary of exchange %s", err, other.ID)
	}
}

// TestCutPlaceholder: an answer cut by max_tokens inside a placeholder
// never delivers half of it, whole or streamed.
func TestCutPlaceholder(t *testing.T) {
	g := newGuard(t, sdk.Options{})
	x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("write to " + email)})
	if err != nil {
		t.Fatal(err)
	}
	ph := placeholderRE.FindString(string(x.Body))
	for cut := 3; cut < len(ph); cut++ {
		y, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("write to " + email)})
		if err != nil {
			t.Fatal(err)
		}
		answer := "I will write to " + placeholderRE.FindString(string(y.Body))[:cut]
		out, err := y.Response(context.Background(), 200, "application/json", chatResponse(answer, "length"))
		if err != nil {
			t.Fatal(err)
		}
		if got := deliveredText(t, out); got != "I will write to " {
			t.Errorf("cut at %d: delivered %q", cut, got)
		}
		z, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("write to " + email)})
		if err != nil {
			t.Fatal(err)
		}
		answer = "I will write to " + placeholderRE.FindString(string(z.Body))[:cut]
		r := z.Stream(context.Background(), io.NopCloser(bytes.NewReader(sseChat(answer, []byte{2}))), sdk.StreamOptions{})
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := chatText(t, data); got != "I will write to " {
			t.Errorf("cut at %d: streamed %q", cut, got)
		}
	}
}
