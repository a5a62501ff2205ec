package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func segStrings(segs []Segment) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = fmt.Sprintf("%s %s %s %q", s.Path, s.Role, s.Field, s.Text)
		if s.JSON {
			out[i] += " json"
		}
		if s.Channel != "" {
			out[i] += " ch=" + s.Channel
		}
	}
	return out
}

func TestParseRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body string
		kind             Kind
		want             []string
	}{
		{"chat every role", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"temperature":0.2,"user":"u@x.io",
			"messages":[{"role":"system","content":"sys"},{"role":"developer","content":"dev"},
			{"role":"user","content":[{"type":"text","text":"hello"},{"type":"image_url","image_url":{"url":"data:xx"}}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"q\":\"a@b.c\"}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"result"},
			{"role":"assistant","function_call":{"name":"g","arguments":"{}"}},
			{"role":"function","name":"g","content":"legacy"}],
			"tools":[{"type":"function","function":{"name":"f","description":"look up"}}]}`,
			KindChat, []string{
				`/messages/0/content system content "sys"`,
				`/messages/1/content developer content "dev"`,
				`/messages/2/content/0/text user content "hello"`,
				`/messages/3/tool_calls/0/function/arguments assistant arguments "{\"q\":\"a@b.c\"}" json`,
				`/messages/4/content tool content "result"`,
				`/messages/5/function_call/arguments assistant arguments "{}" json`,
				`/messages/6/content function content "legacy"`,
				`/tools/0/function/description  tools "look up"`,
				`/tools/0/function/name  tools "f"`,
				`/tools/0/type  tools "function"`,
				`/user  user "u@x.io"`,
			}},
		{"completion array", "/v1/completions", `{"model":"m","prompt":["a","b"],"suffix":"s"}`, KindCompletion, []string{
			`/prompt/0 user prompt "a"`, `/prompt/1 user prompt "b"`, `/suffix user suffix "s"`}},
		{"completion guessed", "", `{"model":"m","prompt":"p"}`, KindCompletion, []string{`/prompt user prompt "p"`}},
		{"embeddings", "/v1/embeddings", `{"model":"e","input":["x","y"]}`, KindEmbeddings, []string{
			`/input/0 user input "x"`, `/input/1 user input "y"`}},
		{"embeddings tokens", "/v1/embeddings", `{"model":"e","input":[1,2,3]}`, KindEmbeddings, []string{}},
		{"responses string", "/v1/responses", `{"model":"m","input":"hi","instructions":"be nice"}`, KindResponses, []string{
			`/instructions system instructions "be nice"`, `/input user input "hi"`}},
		{"responses items", "/v1/responses", `{"model":"m","input":[
			{"role":"user","content":"q"},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"t"},{"type":"input_image","image_url":"u"}]},
			{"type":"function_call","call_id":"c","name":"f","arguments":"{\"a\":1}"},
			{"type":"function_call_output","call_id":"c","output":"out"}]}`, KindResponses, []string{
			`/input/0/content user content "q"`,
			`/input/1/content/0/text user content "t"`,
			`/input/2/arguments assistant arguments "{\"a\":1}" json`,
			`/input/3/output tool tool_result "out"`}},
		{"anthropic", "/v1/messages", `{"model":"claude","max_tokens":10,"system":[{"type":"text","text":"sys"}],
			"metadata":{"user_id":"u1"},
			"messages":[{"role":"user","content":"plain"},
			{"role":"assistant","content":[{"type":"text","text":"t"},{"type":"tool_use","id":"x","name":"n","input":{"q":"v","n":[1,"w"]}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"r"}]},
			{"type":"tool_result","tool_use_id":"y","content":"r2"},{"type":"image","source":{"type":"base64","data":"AAAA"}},
			{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc"}}]}]}`, KindAnthropic, []string{
			`/system/0/text system content "sys"`,
			`/messages/0/content user content "plain"`,
			`/messages/1/content/0/text assistant content "t"`,
			`/messages/1/content/1/input/n/1 assistant tool_input "w"`,
			`/messages/1/content/1/input/q assistant tool_input "v"`,
			`/messages/2/content/0/content/0/text tool content "r"`,
			`/messages/2/content/1/content tool tool_result "r2"`,
			`/messages/2/content/3/source/data user document "doc"`,
			`/metadata/user_id  metadata "u1"`}},
		{"anthropic guessed by system", "", `{"model":"c","system":"s","messages":[]}`, KindAnthropic, []string{`/system system system "s"`}},
		{"generic", "/v1/unknown", `{"a":["x",{"b":"y"}],"n":1}`, KindGeneric, []string{`/a/0   "x"`, `/a/1/b   "y"`}},
		{"generic array", "", `["x"]`, KindGeneric, []string{`/0   "x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest(tt.path, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind != tt.kind {
				t.Errorf("kind = %s, want %s", r.Kind, tt.kind)
			}
			got := segStrings(r.Segments)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("segments:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestParseRequestErrors(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `{`, `{"a":1} x`, "{\"a\":\"\xff\"}", `[1]x`} {
		if _, err := ParseRequest("/v1/chat/completions", []byte(body)); !errors.Is(err, ErrBody) {
			t.Errorf("%q: err = %v, want ErrBody", body, err)
		}
	}
	if _, err := ParseRequest("/v1/chat/completions", []byte(`["x"]`)); !errors.Is(err, ErrBody) {
		t.Errorf("array chat body: err = %v", err)
	}
}

func TestRewriteKeepsUnknownFields(t *testing.T) {
	t.Parallel()
	body := `{"model":"gpt","x_custom":{"deep":[1.50,true,null]},"big":12345678901234567890,
		"messages":[{"role":"user","content":"mail a@b.c <now>","extra":7}]}`
	r, err := ParseRequest("/v1/chat/completions", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Set(0, "mail [[PII_EMAIL_1]] <now>"); err != nil {
		t.Fatal(err)
	}
	out, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// Only the changed string is rewritten: key order, spacing and
	// numbers stay as they came.
	want := strings.Replace(body, "a@b.c", "[[PII_EMAIL_1]]", 1)
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if err := r.Set(5, "x"); err == nil {
		t.Error("Set out of range accepted")
	}
}

// TestAddCanary places the canary after every cacheable part of the
// request: the bytes up to the last message (system prompt, tools, earlier
// turns) stay as the caller sent them, so providers' prefix caching holds.
func TestAddCanary(t *testing.T) {
	t.Parallel()
	tests := []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"messages":[{"role":"system","content":"long shared prompt"},{"role":"user","content":"u"}]}`,
			`{"messages":[{"role":"system","content":"long shared prompt"},{"role":"user","content":"u"},{"role":"system","content":"C"}]}`},
		{"/v1/chat/completions", `{"model":"m", "messages": [ ] }`, `{"model":"m", "messages": [ {"role":"system","content":"C"}] }`},
		{"/v1/chat/completions", `{"model":"m","messages":null}`, `{"model":"m","messages":[{"role":"system","content":"C"}]}`},
		{"/v1/messages", `{"system":"s","messages":[{"role":"user","content":"u"}]}`,
			`{"system":"s","messages":[{"role":"user","content":"u"},{"role":"user","content":"C"}]}`},
		{"/v1/messages", `{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"u"}]}]}`,
			`{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"u"}]},{"role":"user","content":"C"}]}`},
		{"/v1/responses", `{"instructions":"be brief","input":"i"}`, `{"instructions":"be brief","input":"i\n\nC"}`},
		{"/v1/responses", `{"instructions":"be \u0022brief\"","input":[{"role":"user","content":"i"}]}`,
			`{"instructions":"be \u0022brief\"","input":[{"role":"user","content":"i"},{"role":"developer","content":"C"}]}`},
	}
	for _, tt := range tests {
		r, err := ParseRequest(tt.path, []byte(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		if !r.AddCanary("C") {
			t.Fatalf("%s: not added", tt.body)
		}
		out, _ := r.Encode()
		if string(out) != tt.want {
			t.Errorf("got %s, want %s", out, tt.want)
		}
		found := false
		for _, s := range r.Segments {
			found = found || strings.HasSuffix(s.Text, "C")
		}
		if !found {
			t.Errorf("%s: canary segment missing", tt.body)
		}
	}
	for _, tt := range []struct{ path, body string }{
		{"/v1/embeddings", `{"input":"x"}`},
		{"/v1/completions", `{"prompt":"x"}`},
		{"/v1/messages", `{"messages":[{"role":"user","content":"u"},{"role":"assistant","content":"prefill"}]}`},
		{"/v1/messages", `{"messages":[]}`},
	} {
		r, _ := ParseRequest(tt.path, []byte(tt.body))
		if r.AddCanary("C") {
			t.Errorf("%s %s: canary placed where it has no place", tt.path, tt.body)
		}
	}
}

func TestParseResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind Kind
		body string
		id   string
		fin  string
		use  Usage
		want []string
	}{
		{"chat", KindChat, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"hi [[X]]","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{\"a\":\"b\"}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
			"chatcmpl-1", "stop", Usage{true, 12, 3}, []string{
				`/choices/0/message/content assistant content "hi [[X]]"`,
				`/choices/0/message/tool_calls/0/function/arguments assistant arguments "{\"a\":\"b\"}" json`}},
		{"completion", KindCompletion, `{"id":"c","choices":[{"text":"t","index":0,"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
			"c", "length", Usage{true, 1, 2}, []string{`/choices/0/text assistant text "t"`}},
		{"responses", KindResponses, `{"id":"resp_1","object":"response","status":"completed","model":"m","text":{"format":{"type":"text"}},"output":[{"type":"message","id":"msg","role":"assistant","status":"completed","content":[{"type":"output_text","text":"out","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":1}}`,
			"resp_1", "completed", Usage{true, 5, 1}, []string{`/output/0/content/0/text assistant text "out"`}},
		{"anthropic", KindAnthropic, `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"n","input":{"k":"v"}}],"stop_reason":"end_turn","usage":{"input_tokens":3,"cache_read_input_tokens":4,"output_tokens":2}}`,
			"msg_1", "end_turn", Usage{true, 7, 2}, []string{`/content/0/text assistant text "a"`, `/content/1/input/k assistant k "v"`}},
		{"error", KindChat, `{"error":{"message":"bad","type":"invalid_request_error","code":null}}`, "", "", Usage{}, []string{`/error/message assistant message "bad"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseResponse(tt.kind, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.ID != tt.id || r.FinishReason != tt.fin || r.Usage != tt.use {
				t.Errorf("id %q fin %q usage %+v", r.ID, r.FinishReason, r.Usage)
			}
			if got := segStrings(r.Segments); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("segments:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestParseStreamEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, typ, data string
		check           func(t *testing.T, e *StreamEvent)
		want            []string
	}{
		{"openai content", "", `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"He"},"finish_reason":null}]}`,
			func(t *testing.T, e *StreamEvent) {
				if e.ID != "c1" || e.EndsAll || len(e.Ends) > 0 {
					t.Errorf("%+v", e)
				}
			}, []string{`/choices/0/delta/content assistant content "He" ch=c0`}},
		{"openai tool", "", `{"id":"c1","choices":[{"index":1,"delta":{"tool_calls":[{"index":2,"function":{"arguments":"{\"a"}}]}}]}`,
			nil, []string{`/choices/0/delta/tool_calls/0/function/arguments assistant arguments "{\"a" json ch=c1/t2`}},
		{"openai finish", "", `{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
			func(t *testing.T, e *StreamEvent) {
				if e.FinishReason != "stop" || !reflect.DeepEqual(e.Ends, []string{"c0"}) || e.Usage.PromptTokens != 1 {
					t.Errorf("%+v", e)
				}
			}, nil},
		{"done", "", `[DONE]`, func(t *testing.T, e *StreamEvent) {
			if !e.Done || !e.EndsAll {
				t.Errorf("%+v", e)
			}
			if b, _ := e.Encode(); string(b) != "[DONE]" {
				t.Errorf("encode %s", b)
			}
		}, nil},
		{"anthropic start", "message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"usage":{"input_tokens":25,"output_tokens":1}}}`,
			func(t *testing.T, e *StreamEvent) {
				if e.ID != "msg_1" || e.Model != "claude" || e.Usage.PromptTokens != 25 {
					t.Errorf("%+v", e)
				}
			}, nil},
		{"anthropic text", "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
			nil, []string{`/delta/text assistant text "Hi" ch=b0`}},
		{"anthropic json", "content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"x"}}`,
			nil, []string{`/delta/partial_json assistant partial_json "{\"x" json ch=b1`}},
		{"anthropic stop block", "content_block_stop", `{"type":"content_block_stop","index":1}`,
			func(t *testing.T, e *StreamEvent) {
				if !reflect.DeepEqual(e.Ends, []string{"b1"}) {
					t.Errorf("%+v", e)
				}
			}, nil},
		{"anthropic message_delta", "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`,
			func(t *testing.T, e *StreamEvent) {
				if e.FinishReason != "end_turn" || !e.EndsAll || e.Usage.CompletionTokens != 15 {
					t.Errorf("%+v", e)
				}
			}, nil},
		{"anthropic error", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			func(t *testing.T, e *StreamEvent) {
				if !e.Error {
					t.Errorf("%+v", e)
				}
			}, []string{`/error/message  message "Overloaded"`}},
		{"responses delta", "response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg","output_index":0,"content_index":0,"delta":"Hi","sequence_number":3}`,
			nil, []string{`/delta assistant delta "Hi" ch=o0/0`}},
		{"responses done", "response.output_text.done", `{"type":"response.output_text.done","item_id":"msg","output_index":0,"content_index":0,"text":"Hi there","sequence_number":9}`,
			func(t *testing.T, e *StreamEvent) {
				if !e.EndsAll {
					t.Errorf("%+v", e)
				}
			}, []string{`/text assistant text "Hi there"`}},
		{"responses completed", "response.completed", `{"type":"response.completed","response":{"id":"resp_1","object":"response","model":"m","status":"completed","output":[],"usage":{"input_tokens":9,"output_tokens":2}}}`,
			func(t *testing.T, e *StreamEvent) {
				if !e.Done || e.ID != "resp_1" || e.Usage.PromptTokens != 9 || e.FinishReason != "completed" {
					t.Errorf("%+v", e)
				}
			}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseStreamEvent(tt.typ, []byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
			got := segStrings(e.Segments)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("segments:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestOnly(t *testing.T) {
	t.Parallel()
	e, err := ParseStreamEvent("", []byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Only(0, "held")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"c","choices":[{"index":0,"delta":{"content":"held"},"finish_reason":null}]}`; string(out) != want {
		t.Fatalf("got %s", out)
	}
}

func checkRoundTrip(t *testing.T, segs []Segment, set func(int, string) error, enc func() ([]byte, error), reparse func([]byte) ([]Segment, error)) {
	for i := range segs {
		if err := set(i, "R\"\n<"+fmt.Sprint(i)); err != nil {
			t.Fatalf("set %d: %v", i, err)
		}
	}
	out, err := enc()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) && string(out) != "[DONE]" {
		t.Fatalf("invalid JSON out: %s", out)
	}
	back, err := reparse(out)
	if err != nil {
		t.Fatalf("reparse: %v\n%s", err, out)
	}
	if len(back) != len(segs) {
		t.Fatalf("reparse: %d segments, want %d", len(back), len(segs))
	}
	for i := range back {
		if back[i].Text != "R\"\n<"+fmt.Sprint(i) {
			t.Fatalf("segment %d = %q after round trip", i, back[i].Text)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add("/v1/chat/completions", []byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"user":"x"}`))
	f.Add("/v1/messages", []byte(`{"system":"s","messages":[{"role":"user","content":[{"type":"tool_result","content":"r"}]}]}`))
	f.Add("/v1/responses", []byte(`{"input":[{"type":"function_call","arguments":"{}"}]}`))
	f.Add("/v1/completions", []byte(`{"prompt":["a",["b"]]}`))
	f.Add("", []byte(`["a",{"b":"c"}]`))
	f.Add("/v1/messages", []byte(`{"messages":[{"role":"user","content":[{"type":"document","title":"t","source":{"type":"base64","media_type":"text/plain","data":"aGk="}}]}]}`))
	f.Add("/v1/chat/completions", []byte(`{"messages":[{"role":"user","content":[{"type":"file","file":{"filename":"a.txt","file_data":"data:text/plain,h%69"}}]}],"x":"data:;base64,aGk"}`))
	f.Fuzz(func(t *testing.T, path string, body []byte) {
		r, err := ParseRequest(path, body)
		if err != nil {
			return
		}
		kind := r.Kind
		checkRoundTrip(t, r.Segments, r.Set, r.Encode, func(b []byte) ([]Segment, error) {
			r2, err := ParseRequest(path, b)
			if err != nil {
				return nil, err
			}
			if r2.Kind != kind && path != "" {
				t.Fatalf("kind changed %s -> %s", kind, r2.Kind)
			}
			return r2.Segments, nil
		})
	})
}

func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`{"choices":[{"message":{"content":"a"}}],"usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`{"content":[{"type":"text","text":"a"}],"usage":{"input_tokens":1e3}}`))
	f.Add([]byte(`{"choices":[{"message":{"content":"a","annotations":[{"type":"url_citation","url_citation":{"title":"t","url":"u"}}],"audio":{"data":"AAAA","transcript":"tr"}},"logprobs":{"content":[{"token":"a","bytes":[97],"top_logprobs":[{"token":"b"}]}]}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseResponse(KindChat, body)
		if err != nil {
			return
		}
		checkRoundTrip(t, r.Segments, r.Set, r.Encode, func(b []byte) ([]Segment, error) {
			r2, err := ParseResponse(KindChat, b)
			if err != nil {
				return nil, err
			}
			return r2.Segments, nil
		})
	})
}

func FuzzParseStreamEvent(f *testing.F) {
	f.Add("", []byte(`{"choices":[{"index":0,"delta":{"content":"a","tool_calls":[{"index":0,"function":{"arguments":"x"}}]}}]}`))
	f.Add("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`))
	f.Add("", []byte(`{"type":"response.output_text.delta","delta":"a"}`))
	f.Add("", []byte(`[DONE]`))
	f.Add("", []byte(`{"choices":[{"index":0,"delta":{"audio":{"transcript":"t","data":"AA"},"annotations":[{"url_citation":{"title":"x"}}]},"logprobs":{"content":[{"token":"a","top_logprobs":[{"token":"b"}]}]}}],"obfuscation":"zz"}`))
	f.Add("message_start", []byte(`{"type":"message_start","message":{"id":"m","content":[{"type":"text","text":"a"}]}}`))
	f.Add("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{"q":"v"}}}`))
	f.Add("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"cited_text":"c","document_title":"d"}}}`))
	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		e, err := ParseStreamEvent(typ, data)
		if err != nil {
			return
		}
		checkRoundTrip(t, e.Segments, e.Set, e.Encode, func(b []byte) ([]Segment, error) {
			e2, err := ParseStreamEvent(typ, b)
			if err != nil {
				return nil, err
			}
			return e2.Segments, nil
		})
	})
}

// TestFold folds whole streams into the end summary the verifier gets.
func TestFold(t *testing.T) {
	t.Parallel()
	type ev struct{ typ, data string }
	tests := []struct {
		name   string
		events []ev
		want   Summary
	}{
		{"anthropic: prompt from message_start, completion from message_delta", []ev{
			{"message_start", `{"type":"message_start","message":{"id":"msg_1","model":"claude","content":[],"usage":{"input_tokens":2500,"output_tokens":1}}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":40}}`},
			{"message_stop", `{"type":"message_stop"}`},
		}, Summary{IDs: []string{"msg_1"}, Model: "claude", FinishReason: "end_turn", Usage: Usage{Present: true, PromptTokens: 2500, CompletionTokens: 40}}},
		{"openai: usage in the last chunk; a spliced ID kept in order, once", []ev{
			{"", `{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"He"}}]}`},
			{"", `{"id":"c2","model":"m","choices":[{"index":0,"delta":{"content":"ll"}}]}`},
			{"", `{"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":7}}`},
			{"", `[DONE]`},
		}, Summary{IDs: []string{"c1", "c2"}, Model: "m", FinishReason: "stop", Usage: Usage{Present: true, PromptTokens: 1, CompletionTokens: 7}}},
		{"no usage", []ev{
			{"", `{"id":"c1","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"length"}]}`},
		}, Summary{IDs: []string{"c1"}, FinishReason: "length"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var end Summary
			for _, e := range tc.events {
				se, err := ParseStreamEvent(e.typ, []byte(e.data))
				if err != nil {
					t.Fatal(err)
				}
				se.Fold(&end)
			}
			if !reflect.DeepEqual(end, tc.want) {
				t.Errorf("got %+v\nwant %+v", end, tc.want)
			}
		})
	}
}
