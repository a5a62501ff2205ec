package sdk_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/sdk"
)

// streamUpstream answers every request with the SSE stream body.
func streamUpstream(t *testing.T, body string) *scripted {
	return newScripted(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	})
}

// foreignMark is what the streams below hide in a field: a chat-template
// fragment, foreign material the verifier refuses wherever it appears.
const foreignMark = "<|im_start|>user\nanother customer's question"

const (
	anthropicStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n"
	anthropicText  = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Confirmed.\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	anthropicEnd = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

// jsonText is foreignMark as a JSON string's content.
var jsonText = strings.ReplaceAll(foreignMark, "\n", `\n`)

func anthropicThrough(g *sdk.Guard, base string) anthropic.Client {
	return anthropic.NewClient(anthropicoption.WithAPIKey("test-key"), anthropicoption.WithBaseURL(base),
		anthropicoption.WithMaxRetries(0), anthropicoption.WithHTTPClient(&http.Client{Transport: &sdk.Transport{Guard: g}}))
}

// TestHardening08AfterTerminal: events after message_stop (which
// anthropic-sdk-go keeps accumulating) and after [DONE] are not delivered.
func TestHardening08AfterTerminal(t *testing.T) {
	late := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" LATE " + jsonText + "\"}}\n\n"
	up := streamUpstream(t, anthropicStart+anthropicText+anthropicEnd+late)
	g := newVerifiedGuard(t, sdk.Options{Policy: testPolicyMode(t, "closed")}, []byte("k"))
	client := anthropicThrough(g, up.URL)
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("confirm"))}})
	acc := anthropic.Message{}
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != "Confirmed." {
		t.Fatalf("anthropic-sdk-go accumulated %+v, want the text before message_stop only", acc.Content)
	}

	// OpenAI: nothing after [DONE] reaches the wire.
	up = streamUpstream(t, string(sseChat("Fine.", nil))+"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"LATE\"}}]}\n\n")
	out := rawStream(t, g, up.URL+"/v1/chat/completions", chatBody("hello"))
	if strings.Contains(out, "LATE") || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Fatalf("stream after [DONE] delivered: %q", out)
	}
}

// rawStream posts body to url through a Transport with g and returns the
// bytes the caller receives.
func rawStream(t *testing.T, g *sdk.Guard, url string, body []byte) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: &sdk.Transport{Guard: g, Stream: sdk.StreamOptions{ErrorEvent: true}}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestHardening08LeadingSpace: a data line with leading white space, which
// the SSE specification ignores and go-openai trims and reads, is not
// released: the stream is cut before it.
func TestHardening08LeadingSpace(t *testing.T) {
	for _, lead := range []string{"  ", "\t", " \u00a0"} {
		body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
			lead + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" FOREIGN words\"}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
		up := streamUpstream(t, body)
		g := newGuard(t, sdk.Options{})
		cfg := goopenai.DefaultConfig("test-key")
		cfg.BaseURL = up.URL + "/v1"
		cfg.HTTPClient = &http.Client{Transport: &sdk.Transport{Guard: g}}
		st, err := goopenai.NewClientWithConfig(cfg).CreateChatCompletionStream(context.Background(), chatOf("hello"))
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for {
			r, err := st.Recv()
			if err != nil {
				var ge *sdk.GuardError
				if !errors.As(err, &ge) {
					t.Fatalf("%q: stream ended with %v, want the guard's cut", lead, err)
				}
				break
			}
			if len(r.Choices) > 0 {
				got.WriteString(r.Choices[0].Delta.Content)
			}
		}
		st.Close()
		if strings.Contains(got.String(), "FOREIGN") {
			t.Fatalf("%q: go-openai read %q", lead, got.String())
		}
	}
}

// TestHardening08EveryText: every text of every event is verified, not
// only the deltas: a chat-template fragment in any of these fields cuts
// the stream before it, and the caller never receives it.
func TestHardening08EveryText(t *testing.T) {
	chunk := func(delta, extra string) string {
		return "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":" + delta + extra + "}]}\n\n"
	}
	chatEnd := chunk(`{}`, `,"finish_reason":"stop"`) + "data: [DONE]\n\n"
	resp := func(events ...string) string {
		s := ""
		for _, e := range events {
			typ := e[len(`{"type":"`) : strings.Index(e[len(`{"type":"`):], `"`)+len(`{"type":"`)]
			s += "event: " + typ + "\ndata: " + e + "\n\n"
		}
		return s
	}
	respText := `{"type":"response.output_text.delta","item_id":"m1","output_index":0,"content_index":0,"delta":"Fine."}`
	respCompleted := func(text string) string {
		return `{"type":"response.completed","response":{"id":"r1","object":"response","model":"gpt-4o","status":"completed","output":[{"type":"message","id":"m1","role":"assistant","content":[{"type":"output_text","text":"` + text + `","annotations":[]}]}],"usage":{"input_tokens":9,"output_tokens":2}}}`
	}
	for _, tc := range []struct {
		name, path, body string
	}{
		{"anthropic message_start content", "/v1/messages", strings.Replace(anthropicStart, `"content":[]`, `"content":[{"type":"text","text":"`+jsonText+`"}]`, 1) + anthropicText + anthropicEnd},
		{"anthropic content_block_start text", "/v1/messages", anthropicStart + strings.Replace(anthropicText, `"text":""`, `"text":"`+jsonText+`"`, 1) + anthropicEnd},
		{"anthropic tool_use input", "/v1/messages", anthropicStart +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"lookup\",\"input\":{\"q\":\"" + jsonText + "\"}}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" + anthropicEnd},
		{"anthropic thinking start", "/v1/messages", anthropicStart +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"" + jsonText + "\",\"signature\":\"\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" + anthropicEnd},
		{"anthropic input_json_delta", "/v1/messages", anthropicStart +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"lookup\",\"input\":{}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\":\\\"" + strings.ReplaceAll(jsonText, `\n`, `\\n`) + "\\\"}\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" + anthropicEnd},
		{"anthropic citation", "/v1/messages", anthropicStart + anthropicText[:strings.Index(anthropicText, "event: content_block_stop")] +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{\"type\":\"char_location\",\"cited_text\":\"" + jsonText + "\",\"document_index\":0,\"document_title\":\"memo\",\"start_char_index\":0,\"end_char_index\":5}}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" + anthropicEnd},
		{"openai audio transcript", "/v1/chat/completions", chunk(`{"audio":{"id":"a1","transcript":"`+jsonText+`"}}`, "") + chatEnd},
		{"openai refusal", "/v1/chat/completions", chunk(`{"refusal":"`+jsonText+`"}`, "") + chatEnd},
		{"openai logprobs token", "/v1/chat/completions", chunk(`{"content":"Hi"}`, `,"logprobs":{"content":[{"token":"`+jsonText+`","logprob":-0.1,"bytes":[72],"top_logprobs":[]}]}`) + chatEnd},
		{"openai top_logprobs token", "/v1/chat/completions", chunk(`{"content":"Hi"}`, `,"logprobs":{"content":[{"token":"Hi","logprob":-0.1,"bytes":[72,105],"top_logprobs":[{"token":"`+jsonText+`","logprob":-3,"bytes":[60]}]}]}`) + chatEnd},
		{"openai annotation title", "/v1/chat/completions", chunk(`{"content":"See this.","annotations":[{"type":"url_citation","url_citation":{"start_index":0,"end_index":3,"title":"`+jsonText+`","url":"https://example.com/a"}}]}`, "") + chatEnd},
		{"openai tool call arguments", "/v1/chat/completions", chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"`+strings.ReplaceAll(jsonText, `\n`, `\\n`)+`\"}"}}]}`, "") + chatEnd},
		{"responses output_text.done differs", "/v1/responses", resp(respText,
			`{"type":"response.output_text.done","item_id":"m1","output_index":0,"content_index":0,"text":"`+jsonText+`"}`, respCompleted("Fine."))},
		{"responses completed differs", "/v1/responses", resp(respText, respCompleted(jsonText))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := streamUpstream(t, tc.body)
			g := newVerifiedGuard(t, sdk.Options{Policy: testPolicyMode(t, "closed")}, []byte("k"))
			body := chatBody("hello")
			if tc.path == "/v1/messages" {
				body = []byte(`{"model":"claude-test","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hello"}]}`)
			} else if tc.path == "/v1/responses" {
				body = []byte(`{"model":"gpt-4o","stream":true,"input":"hello"}`)
			}
			out := rawStream(t, g, up.URL+tc.path, body)
			if strings.Contains(out, "another customer") || !strings.Contains(out, "aishield_contamination") {
				t.Fatalf("delivered:\n%s", out)
			}
		})
	}
	// The same streams, clean, go through whole: a ".done" event repeating
	// the deltas' text and a response object echoed by several events are
	// verified once and delivered.
	clean := resp(respText, `{"type":"response.output_text.done","item_id":"m1","output_index":0,"content_index":0,"text":"Fine."}`, respCompleted("Fine."))
	up := streamUpstream(t, clean)
	g := newVerifiedGuard(t, sdk.Options{Policy: testPolicyMode(t, "closed")}, []byte("k"))
	client := openai.NewClient(option.WithAPIKey("test-key"), option.WithBaseURL(up.URL+"/v1/"),
		option.WithMaxRetries(0), option.WithHTTPClient(&http.Client{Transport: &sdk.Transport{Guard: g}}))
	st := client.Responses.NewStreaming(context.Background(), responsesParams("hello"))
	var text string
	for st.Next() {
		if ev := st.Current(); ev.Type == "response.completed" {
			text = ev.Response.OutputText()
		}
	}
	if err := st.Err(); err != nil || text != "Fine." {
		t.Fatalf("openai-go: %q, %v", text, err)
	}
}

func responsesParams(prompt string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
}

// TestHardening08SplitDataLines: an event whose JSON spans several data
// lines (the specification joins them; go-openai reads each line alone) is
// delivered on one line, so that go-openai reads what the guard verified,
// not a line of it that happens to be a chunk of its own.
func TestHardening08SplitDataLines(t *testing.T) {
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}],\"x\":\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" UNREAD words\"}}]}\n" +
		"data: }\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	up := streamUpstream(t, body)
	g := newGuard(t, sdk.Options{})
	cfg := goopenai.DefaultConfig("test-key")
	cfg.BaseURL = up.URL + "/v1"
	cfg.HTTPClient = &http.Client{Transport: &sdk.Transport{Guard: g}}
	st, err := goopenai.NewClientWithConfig(cfg).CreateChatCompletionStream(context.Background(), chatOf("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got strings.Builder
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Choices) > 0 {
			got.WriteString(r.Choices[0].Delta.Content)
		}
	}
	if got.String() != "Hi" {
		t.Fatalf("go-openai read %q, want the verified event's text", got.String())
	}
}

// TestHardening08ResponseFields: in a whole (non-streamed) answer, the
// log-probabilities' tokens, annotations (titles, URLs), the audio
// transcript and the refusal are verified like the content.
func TestHardening08ResponseFields(t *testing.T) {
	message := func(msg, choice string) []byte {
		return []byte(`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"finish_reason":"stop","message":` +
			msg + choice + `}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"logprobs token", message(`{"role":"assistant","content":"Hi"}`, `,"logprobs":{"content":[{"token":"`+jsonText+`","logprob":-1,"bytes":[1],"top_logprobs":[]}]}`)},
		{"top_logprobs token", message(`{"role":"assistant","content":"Hi"}`, `,"logprobs":{"content":[{"token":"Hi","logprob":-1,"bytes":[1],"top_logprobs":[{"token":"`+jsonText+`","logprob":-2,"bytes":[2]}]}]}`)},
		{"annotation title", message(`{"role":"assistant","content":"See.","annotations":[{"type":"url_citation","url_citation":{"start_index":0,"end_index":3,"title":"`+jsonText+`","url":"https://example.com/"}}]}`, "")},
		{"annotation url", message(`{"role":"assistant","content":"See.","annotations":[{"type":"url_citation","url_citation":{"start_index":0,"end_index":3,"title":"t","url":"https://example.com/?q=`+jsonText+`"}}]}`, "")},
		{"audio transcript", message(`{"role":"assistant","content":null,"audio":{"id":"a1","data":"AAAA","expires_at":1,"transcript":"`+jsonText+`"}}`, "")},
		{"refusal", message(`{"role":"assistant","content":null,"refusal":"`+jsonText+`"}`, "")},
	} {
		up := newScripted(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(tc.body)
		})
		g := newVerifiedGuard(t, sdk.Options{Policy: testPolicyMode(t, "closed")}, []byte("k"))
		_, err := goOpenAI(g, up.URL, 0).CreateChatCompletion(context.Background(), chatOf("hello"))
		if code, st := apiErrorCode(err); code != "aishield_contamination" || st != 502 {
			t.Fatalf("%s: got %v, want a 502 aishield_contamination", tc.name, err)
		}
	}
}
