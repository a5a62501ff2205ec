package sdk_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// upstream is an httptest server speaking the OpenAI (chat completions,
// completions, responses, embeddings) and Anthropic (messages) APIs, plain
// and streamed, the way the real services frame them. Its answer is
// produced by reply from the last user text; streams are sent in chunks of
// chunk bytes, so placeholders straddle events.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	reply  func(last string) string
	chunk  int
	usage  int // prompt_tokens reported; 0 means a plausible count
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{chunk: 3, reply: func(last string) string { return "You said: " + last }}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.bodies...)
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.ContentLength >= 0 && int64(len(body)) != r.ContentLength {
		http.Error(w, "content length mismatch", 400)
		return
	}
	u.mu.Lock()
	u.bodies = append(u.bodies, string(body))
	u.mu.Unlock()
	var req map[string]any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`)
			return
		}
	}
	last := lastUserText(req)
	text := u.reply(last)
	model, _ := req["model"].(string)
	stream, _ := req["stream"].(bool)
	prompt := u.usage
	if prompt == 0 {
		prompt = len(body) / 4
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		if stream {
			u.sse(w, func(emit func(string, any)) {
				emit("", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
					"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}}})
				for _, c := range chunks(text, u.chunk) {
					emit("", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
						"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": c}, "finish_reason": nil}}})
				}
				emit("", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
					"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
				emit("", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
					"choices": []any{}, "usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": len(text) / 4, "total_tokens": prompt + len(text)/4}})
				emit("", "[DONE]")
			})
			return
		}
		writeJSON(w, map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text, "refusal": nil}, "finish_reason": "stop", "logprobs": nil}},
			"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": len(text) / 4, "total_tokens": prompt + len(text)/4}})
	case strings.HasSuffix(r.URL.Path, "/completions"):
		writeJSON(w, map[string]any{"id": "cmpl-1", "object": "text_completion", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "text": text, "finish_reason": "stop", "logprobs": nil}},
			"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": 1, "total_tokens": prompt + 1}})
	case strings.HasSuffix(r.URL.Path, "/responses") && stream:
		full := func(status string, txt string) map[string]any {
			return map[string]any{"id": "resp_1", "object": "response", "created_at": 1, "status": status, "model": model,
				"output": []any{map[string]any{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
					"content": []any{map[string]any{"type": "output_text", "text": txt, "annotations": []any{}}}}},
				"usage": map[string]any{"input_tokens": prompt, "output_tokens": 1, "total_tokens": prompt + 1,
					"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}
		}
		u.sse(w, func(emit func(string, any)) {
			seq := 0
			ev := func(typ string, v map[string]any) {
				v["type"], v["sequence_number"] = typ, seq
				seq++
				emit(typ, v)
			}
			ev("response.created", map[string]any{"response": full("in_progress", "")})
			for _, c := range chunks(text, u.chunk) {
				ev("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": c, "logprobs": []any{}})
			}
			ev("response.output_text.done", map[string]any{"item_id": "msg_1", "output_index": 0, "content_index": 0, "text": text, "logprobs": []any{}})
			ev("response.completed", map[string]any{"response": full("completed", text)})
		})
	case strings.HasSuffix(r.URL.Path, "/responses"):
		writeJSON(w, map[string]any{"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": model,
			"output": []any{map[string]any{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}},
			"usage": map[string]any{"input_tokens": prompt, "output_tokens": 1, "total_tokens": prompt + 1,
				"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}})
	case strings.HasSuffix(r.URL.Path, "/embeddings"):
		writeJSON(w, map[string]any{"object": "list", "model": model,
			"data":  []any{map[string]any{"object": "embedding", "index": 0, "embedding": []float64{0.1, 0.2}}},
			"usage": map[string]any{"prompt_tokens": prompt, "total_tokens": prompt}})
	case strings.HasSuffix(r.URL.Path, "/messages"):
		if stream {
			u.sse(w, func(emit func(string, any)) {
				emit("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
					"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": prompt, "output_tokens": 1}}})
				emit("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
				emit("ping", map[string]any{"type": "ping"})
				for _, c := range chunks(text, u.chunk) {
					emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": c}})
				}
				emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
				emit("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": len(text) / 4}})
				emit("message_stop", map[string]any{"type": "message_stop"})
			})
			return
		}
		writeJSON(w, map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": prompt, "output_tokens": len(text) / 4}})
	default:
		writeJSON(w, map[string]any{"echo": text})
	}
}

func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (u *upstream) sse(w http.ResponseWriter, f func(emit func(string, any))) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	f(func(event string, v any) {
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		if s, ok := v.(string); ok {
			fmt.Fprintf(w, "data: %s\n\n", s)
		} else {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		if fl != nil {
			fl.Flush()
		}
	})
}

// lastUserText finds the last user text of any of the request kinds.
func lastUserText(req map[string]any) string {
	text := func(c any) string {
		switch t := c.(type) {
		case string:
			return t
		case []any:
			var parts []string
			for _, p := range t {
				if m, ok := p.(map[string]any); ok {
					if s, ok := m["text"].(string); ok {
						parts = append(parts, s)
					}
				}
			}
			return strings.Join(parts, " ")
		}
		return ""
	}
	if msgs, ok := req["messages"].([]any); ok {
		for i := len(msgs) - 1; i >= 0; i-- {
			if m, ok := msgs[i].(map[string]any); ok && m["role"] == "user" {
				return text(m["content"])
			}
		}
	}
	for _, k := range []string{"input", "prompt"} {
		switch v := req[k].(type) {
		case string:
			return v
		case []any:
			if len(v) > 0 {
				if s, ok := v[len(v)-1].(string); ok {
					return s
				}
				if m, ok := v[len(v)-1].(map[string]any); ok {
					return text(m["content"])
				}
			}
		}
	}
	return ""
}
