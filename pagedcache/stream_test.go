package pagedcache

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// sse posts body to path and returns the data lines of the event stream.
func sse(t *testing.T, url, path, body string) []string {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		} else if sc.Text() != "" {
			t.Errorf("unexpected SSE line %q", sc.Text())
		}
	}
	return data
}

func TestStreamingWireFormat(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t)
	tests := []struct {
		name, path, body string
		wantUsage        bool
	}{
		{"chat with usage", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Über 漢字 naïve café — 5521 tokens"}],"max_tokens":30,"stream":true,"stream_options":{"include_usage":true}}`, true},
		{"chat without usage", "/v1/chat/completions", `{"messages":[{"role":"user","content":"plain ascii text here"}],"stream":true}`, false},
		{"completions with usage", "/v1/completions", `{"prompt":"Once upon a time in a land far away","max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := sse(t, ts.URL, tt.path, tt.body)
			if len(data) < 3 || data[len(data)-1] != "[DONE]" {
				t.Fatalf("stream %q does not end with [DONE]", data)
			}
			var ids = map[string]bool{}
			var text strings.Builder
			var gotUsage bool
			var finish string
			for _, d := range data[:len(data)-1] {
				var c struct {
					ID      string `json:"id"`
					Choices []struct {
						Text  string `json:"text"`
						Delta struct {
							Content string `json:"content"`
						} `json:"delta"`
						FinishReason *string `json:"finish_reason"`
					} `json:"choices"`
					Usage *usage `json:"usage"`
				}
				if err := json.Unmarshal([]byte(d), &c); err != nil {
					t.Fatalf("chunk %q: %v", d, err)
				}
				ids[c.ID] = true
				for _, ch := range c.Choices {
					text.WriteString(ch.Delta.Content + ch.Text)
					if ch.FinishReason != nil {
						finish = *ch.FinishReason
					}
				}
				if c.Usage != nil {
					gotUsage = true
					if len(c.Choices) != 0 || c.Usage.CompletionTokens == 0 {
						t.Errorf("usage chunk %q", d)
					}
				}
			}
			if len(ids) != 1 || gotUsage != tt.wantUsage || finish == "" || text.Len() == 0 {
				t.Errorf("ids %v usage %v finish %q text %q", ids, gotUsage, finish, text.String())
			}
			if !utf8Valid(text.String()) {
				t.Errorf("stream split a UTF-8 sequence: %q", text.String())
			}
		})
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }
