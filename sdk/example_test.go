package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// echoServer answers chat completions with the user's last message, as a
// provider would quote it back.
func echoServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := "" // the user's last message
		for _, m := range req.Messages {
			if m.Role == "user" {
				last = m.Content
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "Noted: " + last}}},
			"usage": map[string]any{"prompt_tokens": 20, "completion_tokens": 5}})
	}))
}

func ExampleGuard_Check() {
	pol, _ := policies.Preset("default")
	g, err := sdk.New(context.Background(), sdk.Options{Policy: pol})
	if err != nil {
		panic(err)
	}
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Reply to jean.dupont@acme-corp.fr"}]}`)
	x, err := g.Check(context.Background(), sdk.Request{URL: "https://api.openai.com/v1/chat/completions", Body: body})
	if err != nil {
		panic(err)
	}
	fmt.Println(x.Destination, x.Decision.Action, x.Redacted)
	fmt.Println(strings.Contains(string(x.Body), "jean.dupont"), strings.Contains(string(x.Body), "[[PII_EMAIL_"))
	// Output:
	// openai redact 1
	// false true
}

func ExampleTransport() {
	srv := echoServer()
	defer srv.Close()
	pol, _ := policies.Preset("default")
	g, _ := sdk.New(context.Background(), sdk.Options{Policy: pol})
	client := &http.Client{Transport: &sdk.Transport{Guard: g}}

	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"Call +33 6 12 34 56 78"}]}`
	resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	// The provider saw a placeholder; the caller gets the number back.
	fmt.Println(out.Choices[0].Message.Content)
	// Output: Noted: Call +33 6 12 34 56 78
}

func ExampleNewClient() {
	srv := echoServer()
	defer srv.Close()
	pol, _ := policies.Preset("default")
	g, _ := sdk.New(context.Background(), sdk.Options{Policy: pol})
	cfg := goopenai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL + "/v1"
	client := sdk.NewClient(g, cfg)

	_, err := client.CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{
		Model:    "gpt-4o",
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "deploy with GITLAB=glpat-x9Kd7Lm2Qw8Rt4Vb6Yn1"}},
	})
	var blocked *sdk.BlockedError
	if errors.As(err, &blocked) {
		r := blocked.Reasons[0]
		fmt.Println("blocked:", r.Detector, r.Level, r.Count)
	}
	// Output: blocked: secret.gitlab_token restricted 1
}

func ExampleReadAudit() {
	var trail bytes.Buffer
	pol, _ := policies.Preset("default")
	g, _ := sdk.New(context.Background(), sdk.Options{Policy: pol, Audit: &trail})
	for _, text := range []string{"hello", "mail jean.dupont@acme-corp.fr"} {
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": text}}})
		x, _ := g.Check(context.Background(), sdk.Request{URL: "https://api.openai.com/v1/chat/completions", Body: body})
		_, _ = x.Response(context.Background(), 200, "application/json", []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))
	}
	n, _, err := sdk.ReadAudit(&trail, false, func(line int, r *sdk.AuditRecord) error {
		fmt.Println(line, r.Destination, r.Decision, r.Detectors, r.Verdict)
		return nil
	})
	fmt.Println(n, err)
	// Output:
	// 1 openai allow map[] clean
	// 2 openai redact map[pii.email:1] clean
	// 2 <nil>
}
