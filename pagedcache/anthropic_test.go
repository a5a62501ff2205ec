package pagedcache

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// messagesPost sends body to /v1/messages with Anthropic's headers (unless
// headers say otherwise: "Anthropic-Version", "" drops it).
func messagesPost(t testing.TB, url, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-ant-test-key")
	req.Header.Set(HeaderAnthropicVersion, "2023-06-01")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// messageReply is a message or an Anthropic error, as the tests read them.
type messageReply struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Role    string `json:"role"`
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        struct {
		InputTokens          int `json:"input_tokens"`
		CacheReadInputTokens int `json:"cache_read_input_tokens"`
		OutputTokens         int `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeMessage(t testing.TB, resp *http.Response) messageReply {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m messageReply
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decoding %q: %v", raw, err)
	}
	// Every field the API always sends is there, null or not.
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(raw, &keys)
	want := []string{"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}
	if m.Type == "error" {
		want = []string{"type", "error"}
	}
	for _, k := range want {
		if _, ok := keys[k]; !ok {
			t.Errorf("field %q missing from %s", k, raw)
		}
	}
	return m
}

// sseEvent is one event of an Anthropic stream: its name and data.
type sseEvent struct {
	name string
	data map[string]any
	raw  string
}

// messageEvents reads an Anthropic event stream, checking that every event
// is an "event:" line and a "data:" line naming the same type.
func messageEvents(t testing.TB, resp *http.Response) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name == "" || cur.data == nil {
				t.Fatalf("incomplete event %+v", cur)
			}
			if cur.data["type"] != cur.name {
				t.Errorf("event %q carries data of type %v", cur.name, cur.data["type"])
			}
			evs = append(evs, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.raw = strings.TrimPrefix(line, "data: ")
			if err := json.Unmarshal([]byte(cur.raw), &cur.data); err != nil {
				t.Fatalf("data %q: %v", cur.raw, err)
			}
		default:
			t.Errorf("unexpected SSE line %q", line)
		}
	}
	return evs
}

// TestMessagesWireFormat checks the Messages API's JSON answer and its
// event stream field by field: the same request gives the same text both
// ways, with the same usage and stop reason.
func TestMessagesWireFormat(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t, WithSeed(9))
	tests := []struct {
		name, body string
		wantStop   string
	}{
		{"string content", `{"model":"claude-test","max_tokens":200,"messages":[{"role":"user","content":"Über 漢字 naïve café: the Falcon launch moves to May, budget 2.3M, owner Dana Whitfield."}]}`, "end_turn"},
		{"system blocks and content blocks", `{"model":"claude-test","max_tokens":200,"system":[{"type":"text","text":"You are terse."}],"messages":[{"role":"user","content":[{"type":"text","text":"Summarise the quarterly plan for the Falcon launch and its budget."}]}]}`, "end_turn"},
		{"cut by max_tokens", `{"model":"claude-test","max_tokens":5,"messages":[{"role":"user","content":"Summarise the quarterly plan for the Falcon launch and its budget."}]}`, "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := decodeMessage(t, messagesPost(t, ts.URL, tt.body))
			if m.Type != "message" || m.Role != "assistant" || m.Model != "claude-test" || !strings.HasPrefix(m.ID, "msg_") {
				t.Fatalf("message %+v", m)
			}
			if len(m.Content) != 1 || m.Content[0].Type != "text" || m.Content[0].Text == "" {
				t.Fatalf("content %+v", m.Content)
			}
			if m.StopReason == nil || *m.StopReason != tt.wantStop || m.StopSequence != nil {
				t.Errorf("stop_reason %v stop_sequence %v, want %s and null", m.StopReason, m.StopSequence, tt.wantStop)
			}
			rec, ok := ts.Request(m.ID)
			if !ok || rec.Endpoint != "messages" || m.Usage.InputTokens+m.Usage.CacheReadInputTokens != rec.ReportedPromptTokens ||
				m.Usage.OutputTokens != rec.CompletionTokens || m.Usage.OutputTokens == 0 {
				t.Errorf("usage %+v, record %+v", m.Usage, rec)
			}

			streamed := strings.Replace(tt.body, `{"model"`, `{"stream":true,"model"`, 1)
			evs := messageEvents(t, messagesPost(t, ts.URL, streamed))
			var names []string
			var text strings.Builder
			for _, ev := range evs {
				if len(names) == 0 || names[len(names)-1] != ev.name || ev.name != "content_block_delta" {
					names = append(names, ev.name)
				}
				if ev.name == "content_block_delta" {
					d := ev.data["delta"].(map[string]any)
					if d["type"] != "text_delta" || ev.data["index"] != 0.0 {
						t.Errorf("delta %s", ev.raw)
					}
					text.WriteString(d["text"].(string))
				}
			}
			want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
			if strings.Join(names, " ") != strings.Join(want, " ") {
				t.Fatalf("events %v, want %v", names, want)
			}
			if text.String() != m.Content[0].Text {
				t.Errorf("streamed %q, plain %q: same request, same answer", text.String(), m.Content[0].Text)
			}
			start := evs[0].data["message"].(map[string]any)
			usage := start["usage"].(map[string]any)
			if start["type"] != "message" || start["role"] != "assistant" || start["stop_reason"] != nil ||
				!strings.HasPrefix(start["id"].(string), "msg_") || len(start["content"].([]any)) != 0 ||
				int(usage["input_tokens"].(float64)+usage["cache_read_input_tokens"].(float64)) != m.Usage.InputTokens+m.Usage.CacheReadInputTokens {
				t.Errorf("message_start %s", evs[0].raw)
			}
			if cb := evs[1].data["content_block"].(map[string]any); cb["type"] != "text" || cb["text"] != "" {
				t.Errorf("content_block_start %s", evs[1].raw)
			}
			md := evs[len(evs)-2].data
			if d := md["delta"].(map[string]any); d["stop_reason"] != tt.wantStop || d["stop_sequence"] != nil {
				t.Errorf("message_delta %s", evs[len(evs)-2].raw)
			}
			if u := md["usage"].(map[string]any); int(u["output_tokens"].(float64)) != m.Usage.OutputTokens {
				t.Errorf("message_delta usage %s, want output_tokens %d", evs[len(evs)-2].raw, m.Usage.OutputTokens)
			}
		})
	}
}

// TestMessagesErrors: every refusal of the Messages API is an Anthropic
// error body with the status and type Anthropic uses.
func TestMessagesErrors(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t, WithOptions(Options{
		CapacityTokens: 2048, PageSize: 16, ContextLen: 8192, MaxBodyBytes: 64 << 10}))
	long := strings.Repeat(" lorem", 3000)
	tests := []struct {
		name, path, body string
		headers          []string
		status           int
		typ, inMessage   string
	}{
		{"no anthropic-version", "/v1/messages", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`,
			[]string{HeaderAnthropicVersion, ""}, 400, "invalid_request_error", "anthropic-version: header is required"},
		{"no model", "/v1/messages", `{"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "model: Field required"},
		{"no max_tokens", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "max_tokens: Field required"},
		{"max_tokens 0", "/v1/messages", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "greater than or equal to 1"},
		{"no messages", "/v1/messages", `{"model":"m","max_tokens":8}`, nil, 400, "invalid_request_error", "messages: Field required"},
		{"empty messages", "/v1/messages", `{"model":"m","max_tokens":8,"messages":[]}`, nil, 400, "invalid_request_error", "at least one message"},
		{"system role in messages", "/v1/messages", `{"model":"m","max_tokens":8,"messages":[{"role":"system","content":"hi"}]}`, nil, 400, "invalid_request_error", "messages.0.role"},
		{"unknown block type", "/v1/messages", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":[{"type":"txt","text":"hi"}]}]}`, nil, 400, "invalid_request_error", "messages.0.content.0.type"},
		{"text block without text", "/v1/messages", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":[{"type":"text"}]}]}`, nil, 400, "invalid_request_error", "messages.0.content.0.text: Field required"},
		{"content of the wrong type", "/v1/messages", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":42}]}`, nil, 400, "invalid_request_error", "messages.0.content"},
		{"image in the system prompt", "/v1/messages", `{"model":"m","max_tokens":8,"system":[{"type":"image"}],"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "system.0.type"},
		{"blank stop sequence", "/v1/messages", `{"model":"m","max_tokens":8,"stop_sequences":[" "],"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "invalid_request_error", "stop_sequences[0]"},
		{"not JSON", "/v1/messages", `{"model":`, nil, 400, "invalid_request_error", "could not parse the JSON body"},
		{"body too large", "/v1/messages", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"` + strings.Repeat("a", 70<<10) + `"}]}`, nil, 413, "request_too_large", "over 65536 bytes"},
		{"prompt over the scheduler's limit", "/v1/messages", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"` + long + `"}]}`, nil, 400, "invalid_request_error", "prompt is too long: "},
		{"prompt and max_tokens over the context", "/v1/messages", `{"model":"m","max_tokens":8000,"messages":[{"role":"user","content":"` + strings.Repeat(" lorem", 500) + `"}]}`, nil, 400, "invalid_request_error", "> 8192 maximum"},
		{"unknown fault", "/v1/messages", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, []string{HeaderFault, "nope"}, 400, "invalid_request_error", "unknown fault"},
		{"unknown endpoint", "/v1/messages/batches", `{}`, nil, 404, "not_found_error", "no such endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", ts.URL+tt.path, strings.NewReader(tt.body))
			req.Header.Set(HeaderAnthropicVersion, "2023-06-01")
			for i := 0; i+1 < len(tt.headers); i += 2 {
				if tt.headers[i+1] == "" {
					req.Header.Del(tt.headers[i])
				} else {
					req.Header.Set(tt.headers[i], tt.headers[i+1])
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			m := decodeMessage(t, resp)
			if resp.StatusCode != tt.status || m.Type != "error" || m.Error == nil || m.Error.Type != tt.typ ||
				!strings.Contains(m.Error.Message, tt.inMessage) {
				t.Errorf("status %d, %+v %+v; want %d %s with %q", resp.StatusCode, m.Type, m.Error, tt.status, tt.typ, tt.inMessage)
			}
			if strings.Contains(m.Error.Message, "lorem") || strings.Contains(m.Error.Message, "aaaa") {
				t.Errorf("the error echoes the request: %.100q", m.Error.Message)
			}
		})
	}
}

// TestMessagesOverloaded: a request that waits for a slot past the queue
// timeout gets Anthropic's 529 overloaded_error.
func TestMessagesOverloaded(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t, WithOptions(Options{MaxRunning: 1, QueueTimeout: 50 * time.Millisecond, DecodeTokenDelay: 20 * time.Millisecond}))
	body := `{"model":"m","max_tokens":40,"stream":true,"messages":[{"role":"user","content":"a long story about the sea and ships and harbours"}]}`
	first := messagesPost(t, ts.URL, body)
	defer first.Body.Close()
	// The first request holds the only slot while it decodes, slowly.
	br := bufio.NewReader(first.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	resp := messagesPost(t, ts.URL, strings.Replace(body, `"stream":true,`, "", 1))
	m := decodeMessage(t, resp)
	if resp.StatusCode != 529 || m.Error == nil || m.Error.Type != "overloaded_error" {
		t.Errorf("status %d error %+v, want 529 overloaded_error", resp.StatusCode, m.Error)
	}
	_, _ = io.Copy(io.Discard, br)
}

// TestStopSequences: the answer ends before the first stop sequence it
// would hold, in the JSON answer and in the stream (which never sends a
// byte of it), on both APIs; finish_reason "stop", or stop_reason
// "stop_sequence" with the sequence.
func TestStopSequences(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t, WithSeed(4))
	const prompt = "The harbour master logs every ship: Aurora, Borealis, Calypso, Dolores, Evangeline and Fortuna arrive at dawn."
	free := decodeMessage(t, messagesPost(t, ts.URL, `{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"`+prompt+`"}]}`))
	full := free.Content[0].Text
	words := strings.Fields(full)
	if len(words) < 4 {
		t.Fatalf("answer %q too short to pick a stop sequence from", full)
	}
	stop := words[len(words)/2]
	cut := full[:strings.Index(full, stop)]
	stops, _ := json.Marshal([]string{"never-in-the-answer", stop})

	for _, stream := range []bool{false, true} {
		body := `{"model":"m","max_tokens":64,"stop_sequences":` + string(stops) + `,"messages":[{"role":"user","content":"` + prompt + `"}]}`
		var text, reason, seq string
		if !stream {
			m := decodeMessage(t, messagesPost(t, ts.URL, body))
			text, reason = m.Content[0].Text, *m.StopReason
			if m.StopSequence != nil {
				seq = *m.StopSequence
			}
		} else {
			for _, ev := range messageEvents(t, messagesPost(t, ts.URL, strings.Replace(body, "{", `{"stream":true,`, 1))) {
				d, _ := ev.data["delta"].(map[string]any)
				switch ev.name {
				case "content_block_delta":
					text += d["text"].(string)
				case "message_delta":
					reason, _ = d["stop_reason"].(string)
					seq, _ = d["stop_sequence"].(string)
				}
			}
		}
		if text != cut || reason != "stop_sequence" || seq != stop {
			t.Errorf("stream %v: %q, %s %q; want %q, stop_sequence %q", stream, text, reason, seq, cut, stop)
		}
	}

	// OpenAI's stop on the chat endpoint: the same engine, finish "stop".
	code, r := chat(t, ts.Client(), ts.URL, "", prompt, 64)
	if code != 200 || r.Choices[0].FinishReason != "stop" {
		t.Fatalf("chat without stop: %d %+v", code, r)
	}
	chatFull := r.Choices[0].Message.Content
	chatStop := strings.Fields(chatFull)[len(strings.Fields(chatFull))/2]
	body, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 64, "stop": chatStop,
		"messages": []map[string]string{{"role": "user", "content": prompt}}})
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var got chatReply
	_ = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if want := chatFull[:strings.Index(chatFull, chatStop)]; got.Choices[0].Message.Content != want || got.Choices[0].FinishReason != "stop" {
		t.Errorf("chat with stop %q: %q (%s), want %q", chatStop, got.Choices[0].Message.Content, got.Choices[0].FinishReason, want)
	}
}

func TestStopper(t *testing.T) {
	tests := []struct {
		name   string
		seqs   []string
		pieces []string
		at     int
		seq    string
	}{
		{"inside one piece", []string{"END"}, []string{"abc", "xxENDyy"}, 5, "END"},
		{"across pieces", []string{"END"}, []string{"abE", "N", "Dzz"}, 2, "END"},
		{"earliest of two", []string{"cd", "bcde"}, []string{"ab", "cdef"}, 1, "bcde"},
		{"none", []string{"zz"}, []string{"abc", "z", "y"}, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &stopper{seqs: tt.seqs}
			at, seq := -1, ""
			for _, p := range tt.pieces {
				if a, q, ok := st.add([]byte(p)); ok {
					at, seq = a, q
					break
				}
			}
			if at != tt.at || seq != tt.seq {
				t.Errorf("stopped at %d by %q, want %d by %q", at, seq, tt.at, tt.seq)
			}
		})
	}
}

// TestMessagesAnthropicSDK drives the server with the official Anthropic Go
// client: a message and a stream (accumulated by the SDK) with the same
// text, usage and stop reason; the tenant comes from x-api-key, as a hash;
// refusals are *anthropic.Error with Anthropic's status and type.
func TestMessagesAnthropicSDK(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t, WithCapacity(2048, 16), WithContextLen(8192), WithSeed(2))
	c := anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("sk-ant-api03-tenant-alpha"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model("claude-test-1"),
		MaxTokens: 48,
		System:    []anthropic.TextBlockParam{{Text: "You answer the front desk of a clinic."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(clientPrompt))},
	}
	msg, err := c.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text == "" || msg.Model != "claude-test-1" || msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
		t.Fatalf("message %s", msg.RawJSON())
	}
	rec, ok := ts.Request(msg.ID)
	if !ok || !strings.HasPrefix(rec.Tenant, "key-") || strings.Contains(rec.Tenant, "alpha") {
		t.Errorf("tenant from x-api-key = %q (must be a hash, never the key)", rec.Tenant)
	}

	st := c.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if len(acc.Content) != 1 || acc.Content[0].Text != msg.Content[0].Text || acc.StopReason != msg.StopReason ||
		acc.Usage.OutputTokens != msg.Usage.OutputTokens || acc.Usage.InputTokens+acc.Usage.CacheReadInputTokens != msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens {
		t.Errorf("stream accumulated %s\nmessage %s", acc.RawJSON(), msg.RawJSON())
	}

	params.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat(" lorem", 3000)))}
	_, err = c.Messages.New(ctx, params)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Type() != "invalid_request_error" || !strings.Contains(ae.RawJSON(), "prompt is too long") {
		t.Errorf("over-long prompt: %v", err)
	}
	st = c.Messages.NewStreaming(ctx, params)
	for st.Next() {
		t.Errorf("event from a refused stream: %v", st.Current().Type)
	}
	if !errors.As(st.Err(), &ae) || ae.StatusCode != 400 {
		t.Errorf("over-long prompt, streamed: %v", st.Err())
	}
	st.Close()
}

// anthropicIncident is incidentScenario on the Messages API: a victim
// tenant's requests, then a second tenant's prompt over the scheduler's
// limit, sent with the official client (streamed or not).
func anthropicIncident(t *testing.T, stream bool, faults ...Fault) (string, anthropic.Message, RequestRecord, error) {
	t.Helper()
	ts := NewTestServer(t, WithCapacity(2048, 16), WithContextLen(8192), WithSeed(7), WithFaults(faults...))
	ctx := context.Background()
	victim := anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("sk-ant-victim"), option.WithMaxRetries(0))
	for i := range 3 {
		if _, err := victim.Messages.New(ctx, anthropic.MessageNewParams{Model: "m", MaxTokens: 32,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(victimText(i)))}}); err != nil {
			t.Fatalf("victim request %d: %v", i, err)
		}
	}
	mallory := anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("sk-ant-mallory"), option.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: "m", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat(" lorem", 3000)))}}
	var msg anthropic.Message
	var err error
	if !stream {
		var m *anthropic.Message
		m, err = mallory.Messages.New(ctx, params)
		if m != nil {
			msg = *m
		}
	} else {
		st := mallory.Messages.NewStreaming(ctx, params)
		for st.Next() {
			if aerr := msg.Accumulate(st.Current()); aerr != nil {
				t.Fatal(aerr)
			}
		}
		err = st.Err()
		st.Close()
	}
	rec, _ := ts.Request(msg.ID)
	text := ""
	for _, b := range msg.Content {
		text += b.Text
	}
	return text, msg, rec, err
}

// TestMessagesIncident: the incident on the Messages API. With the fault,
// an over-long prompt is answered 200 with the victim's text, stop_reason
// max_tokens and input_tokens 1; without it, a 400 "prompt is too long".
func TestMessagesIncident(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		text, msg, rec, err := anthropicIncident(t, stream, FaultOversizeStalePages)
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		if msg.StopReason != anthropic.StopReasonMaxTokens || msg.Usage.InputTokens != 1 || msg.Usage.OutputTokens != 64 {
			t.Errorf("stream %v: stop_reason %q input_tokens %d output_tokens %d; want max_tokens, 1, 64",
				stream, msg.StopReason, msg.Usage.InputTokens, msg.Usage.OutputTokens)
		}
		if !strings.Contains(text, "ZEPHYR") {
			t.Errorf("stream %v: answer %q does not carry the victim's data", stream, text)
		}
		if got := rec.ForeignTenants(); len(got) != 1 || !strings.HasPrefix(got[0], "key-") || rec.Outcome != "decoded-after-abort" {
			t.Errorf("stream %v: ground truth %+v", stream, rec)
		}
	}
	_, _, _, err := anthropicIncident(t, false)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), "prompt is too long") {
		t.Errorf("correct mode: %v, want a 400 prompt is too long", err)
	}
}

// TestMessagesAbortReuseRace: an aborted Messages request (an api_error the
// client is told not to retry) whose late write lands in the next tenant's
// pages, which the next answer quotes.
func TestMessagesAbortReuseRace(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t, WithCapacity(4096, 16), WithContextLen(8192), WithSeed(3))
	body := func(text string) string {
		b, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 64, "messages": []map[string]string{{"role": "user", "content": text}}})
		return string(b)
	}
	resp := messagesPost(t, ts.URL, body(strings.Repeat("alice-diagnosis HIV-positive patient 5521. ", 30)),
		HeaderTenant, "alice", HeaderAbort, "prefill", HeaderFault, string(FaultAbortReuseRace))
	m := decodeMessage(t, resp)
	if resp.StatusCode != 500 || m.Error == nil || m.Error.Type != "api_error" || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("aborted request: %d %+v", resp.StatusCode, m.Error)
	}
	m = decodeMessage(t, messagesPost(t, ts.URL, body(strings.Repeat("bob weather report sunny. ", 60)), HeaderTenant, "bob"))
	rec, _ := ts.Request(m.ID)
	if rec.LateWritesLanded == 0 || len(rec.ForeignTenants()) != 1 || !strings.Contains(m.Content[0].Text, "alice") {
		t.Errorf("bob's answer %q, record %+v", m.Content[0].Text, rec)
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t)
	for _, path := range []string{"/healthz", "/health"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "ok\n" {
			t.Errorf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
	resp, err := http.Post(ts.URL+"/healthz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Errorf("POST /healthz answered 200")
	}
}

// TestMessagesConcurrent sends plain and streamed messages from several
// goroutines (run with -race): each answer is its own request's.
func TestMessagesConcurrent(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := ""
			if i%2 == 1 {
				stream = `"stream":true,`
			}
			resp := messagesPost(t, ts.URL, `{`+stream+`"model":"m","max_tokens":24,"messages":[{"role":"user","content":"question number `+strings.Repeat("x", i+1)+` about harbours"}]}`)
			if i%2 == 1 {
				if evs := messageEvents(t, resp); evs[len(evs)-1].name != "message_stop" {
					t.Errorf("stream %d ended with %s", i, evs[len(evs)-1].name)
				}
				return
			}
			if m := decodeMessage(t, resp); m.Type != "message" {
				t.Errorf("request %d: %+v", i, m)
			}
		}()
	}
	wg.Wait()
}

// FuzzParseMessagesRequest: the Messages API parser never panics, refuses
// what is not JSON, and what it accepts has a model, a positive max_tokens
// and a prompt ending where the answer starts.
func FuzzParseMessagesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":8,"system":"be brief","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","data":"AA"}}]},{"role":"assistant","content":"The answer is"}]}`,
		`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"42"}]},{"type":"document","source":{"type":"text","data":"doc"}}]}],"stop_sequences":["\n\nHuman:"]}`,
		`{"model":"m","max_tokens":8,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]}]}`,
		`{"model":"m","max_tokens":-1,"messages":null}`,
		`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"\u0000\xff"}]}`,
		`[1,2]`, `{"model":"m"} trailing`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		g, err := parseMessagesRequest(body)
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) || re.msg == "" {
				t.Fatalf("error %v is not a requestError", err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if g.model == "" || g.maxTokens < 1 || g.prompt == "" {
			t.Fatalf("accepted %q as %+v", body, g)
		}
		if !strings.HasSuffix(g.prompt, "\nassistant:") && !strings.Contains(g.prompt, "assistant: ") {
			t.Fatalf("prompt %q does not end where the answer starts", g.prompt)
		}
	})
}
