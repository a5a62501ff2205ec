package pagedcache

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// chatReply is the subset of a chat completion the tests read.
type chatReply struct {
	ID      string `json:"id"`
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// chat posts one user message as tenant and decodes the answer.
func chat(t testing.TB, client *http.Client, url, tenant, content string, maxTokens int, headers ...string) (int, chatReply) {
	t.Helper()
	body := map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": content}}}
	if maxTokens > 0 {
		body["max_tokens"] = maxTokens
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tenant != "" {
		req.Header.Set(HeaderTenant, tenant)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r chatReply
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("decoding %q: %v", raw, err)
	}
	if r.ID == "" {
		r.ID = resp.Header.Get("X-Request-Id")
	}
	return resp.StatusCode, r
}
