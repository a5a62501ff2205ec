package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Request is a parsed request body. It is not safe for concurrent use.
type Request struct {
	Kind Kind
	// Model is the model the body names ("" when none).
	Model string
	// Stream reports whether the body asks for a streamed response.
	Stream bool
	// Segments are the texts of the body in document order.
	Segments []Segment
	doc
}

// KindOf guesses the kind of a request from the URL path, then from the
// shape of the body when the path does not tell.
func KindOf(urlPath string, root any) Kind {
	p := strings.TrimRight(urlPath, "/")
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return KindChat
	case strings.HasSuffix(p, "/completions"):
		return KindCompletion
	case strings.HasSuffix(p, "/responses"):
		return KindResponses
	case strings.HasSuffix(p, "/embeddings"):
		return KindEmbeddings
	case strings.HasSuffix(p, "/messages") && !strings.Contains(p, "/threads/"):
		return KindAnthropic
	}
	m, ok := root.(map[string]any)
	if !ok {
		return KindGeneric
	}
	if msgs, ok := m["messages"].([]any); ok {
		if _, sys := m["system"]; sys {
			return KindAnthropic
		}
		if _, mt := m["max_tokens"]; mt && anthropicShaped(msgs) {
			return KindAnthropic
		}
		return KindChat
	}
	if _, ok := m["prompt"]; ok {
		return KindCompletion
	}
	return KindGeneric
}

// anthropicShaped reports whether messages use Anthropic-only block types.
func anthropicShaped(msgs []any) bool {
	for _, mv := range msgs {
		m, _ := mv.(map[string]any)
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			switch bm["type"] {
			case "tool_use", "tool_result", "image", "document", "thinking":
				return true
			}
		}
	}
	return false
}

// ParseRequest parses a request body sent to urlPath (the path of the URL,
// used to tell the kind; "" to guess from the body alone).
func ParseRequest(urlPath string, body []byte) (*Request, error) {
	root, err := decode(body)
	if err != nil {
		return nil, err
	}
	r := &Request{Kind: KindOf(urlPath, root), doc: doc{body: body, root: root}}
	m, isObj := root.(map[string]any)
	if !isObj && r.Kind != KindGeneric {
		return nil, fmt.Errorf("%w: %s body is not a JSON object", ErrBody, r.Kind)
	}
	if isObj {
		r.Model, _ = m["model"].(string)
		r.Stream, _ = m["stream"].(bool)
	}
	x := &extractor{}
	switch r.Kind {
	case KindChat:
		x.chat(m)
	case KindCompletion:
		x.completion(m)
	case KindResponses:
		x.responses(m)
	case KindEmbeddings:
		x.embeddings(m)
	case KindAnthropic:
		x.anthropic(m)
	default:
		x.generic(root, "", "")
	}
	r.Segments = x.segs
	return r, nil
}

// Set replaces the text of segment i; the body is re-encoded by Encode.
func (r *Request) Set(i int, text string) error { return r.setSegment(r.Segments, i, text) }

// Encode returns the body with the changes made so far: the original bytes
// (the same slice) when there are none; otherwise the original bytes with
// only the changed values rewritten, so key order, spacing, numbers and
// unknown fields are kept byte for byte.
func (r *Request) Encode() ([]byte, error) { return r.encode() }

// AddCanary places a canary text in the request after everything a
// provider can cache, so that the request's cacheable prefix (system
// prompt, tools, earlier messages) stays byte for byte what the caller
// sent and providers' prefix caching keeps working: a system message after
// the last message for chat, a user turn after the last user turn for
// Anthropic (consecutive user turns are merged by the API), the end of the
// input for the responses API. It returns false where there is no such
// place (completions, embeddings, an Anthropic request ending with an
// assistant prefill, unexpected shapes).
func (r *Request) AddCanary(text string) bool {
	m, ok := r.root.(map[string]any)
	if !ok {
		return false
	}
	switch r.Kind {
	case KindChat:
		return r.appendMessage(m, "system", text)
	case KindAnthropic:
		msgs, ok := m["messages"].([]any)
		if !ok || len(msgs) == 0 {
			return false
		}
		if last, ok := msgs[len(msgs)-1].(map[string]any); !ok || last["role"] != "user" {
			return false
		}
		return r.appendMessage(m, "user", text)
	case KindResponses:
		switch in := m["input"].(type) {
		case string:
			r.appendToString(m, "input", text)
		case []any:
			msg := map[string]any{"role": "developer", "content": text}
			raw := appendString([]byte(`{"role":"developer","content":`), text)
			m["input"] = append(in, msg)
			r.add(edit{op: opAppend, path: Path{"input"}, raw: append(raw, '}')})
			r.Segments = append(r.Segments, Segment{Path: Path{"input", len(in), "content"}, Role: "developer", Field: "content", Text: text})
		default:
			return false
		}
		return true
	}
	return false
}

// appendMessage appends a message {"role": role, "content": text} to the
// messages array (creating it when absent or null).
func (r *Request) appendMessage(m map[string]any, role, text string) bool {
	msg := map[string]any{"role": role, "content": text}
	raw := appendString([]byte(`{"role":`+strconv.Quote(role)+`,"content":`), text)
	raw = append(raw, '}')
	switch msgs := m["messages"].(type) {
	case []any:
		m["messages"] = append(msgs, msg)
		r.add(edit{op: opAppend, path: Path{"messages"}, raw: raw})
		r.Segments = append(r.Segments, Segment{Path: Path{"messages", len(msgs), "content"}, Role: role, Field: "content", Text: text})
	case nil:
		_, had := m["messages"]
		m["messages"] = []any{msg}
		r.setMember(had, "messages", append(append([]byte{'['}, raw...), ']'))
		r.Segments = append(r.Segments, Segment{Path: Path{"messages", 0, "content"}, Role: role, Field: "content", Text: text})
	default:
		return false
	}
	return true
}

// appendToString appends text to the top-level string member key (which
// must be a string, null or absent), separated by a blank line, and keeps
// the segments in step: the member's existing segment, if any, now covers
// both texts; a new member gets a new system segment.
func (r *Request) appendToString(m map[string]any, key, text string) {
	prev, isString := m[key].(string)
	if !isString {
		_, had := m[key]
		m[key] = text
		r.setMember(had, key, appendString(nil, text))
		r.Segments = append(r.Segments, Segment{Path: Path{key}, Role: "system", Field: key, Text: text})
		return
	}
	joined := prev + "\n\n" + text
	m[key] = joined
	r.replace(Path{key}, joined)
	for i := range r.Segments {
		if len(r.Segments[i].Path) == 1 && r.Segments[i].Path[0] == key {
			r.Segments[i].Text = joined
		}
	}
}

// setMember records that the top-level member key is now raw: a
// replacement when the body had the key (holding null), an addition
// otherwise.
func (r *Request) setMember(had bool, key string, raw []byte) {
	if had {
		r.replace(Path{key}, json.RawMessage(raw))
		return
	}
	r.add(edit{op: opAdd, path: Path{}, key: key, raw: raw})
}

// AskStreamUsage makes a streamed OpenAI chat or completions request ask
// for usage (stream_options.include_usage: true), so that the final chunk
// reports the prompt tokens the provider counted. It returns true when it
// changed the request: the caller did not ask for usage, and the usage-only
// chunk must not reach it (see StreamEvent.UsageOnly). It does nothing to
// other kinds, to requests that are not streamed, or to a stream_options
// that is not an object.
func (r *Request) AskStreamUsage() bool {
	m, ok := r.root.(map[string]any)
	if !ok || !r.Stream || (r.Kind != KindChat && r.Kind != KindCompletion) {
		return false
	}
	switch so := m["stream_options"].(type) {
	case nil:
		_, had := m["stream_options"]
		m["stream_options"] = map[string]any{"include_usage": true}
		r.setMember(had, "stream_options", []byte(`{"include_usage":true}`))
	case map[string]any:
		iu, has := so["include_usage"]
		if iu == true {
			return false
		}
		so["include_usage"] = true
		if has {
			r.replace(Path{"stream_options", "include_usage"}, json.RawMessage("true"))
		} else {
			r.add(edit{op: opAdd, path: Path{"stream_options"}, key: "include_usage", raw: []byte("true")})
		}
	default:
		return false
	}
	return true
}

// Keys known to carry no text, per kind. Everything else that is not
// handled specifically is extracted generically.
func chatSkip(k string) bool {
	switch k {
	case "messages", "model", "stream", "stream_options", "temperature", "top_p", "n",
		"max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty",
		"logit_bias", "logprobs", "top_logprobs", "seed", "response_format", "tool_choice",
		"parallel_tool_calls", "service_tier", "store", "reasoning_effort", "modalities",
		"function_call", "verbosity", "audio":
		return true
	}
	return false
}

func (x *extractor) chat(m map[string]any) {
	msgs, _ := m["messages"].([]any)
	x.push("messages")
	for i, mv := range msgs {
		x.push(i)
		if msg, ok := mv.(map[string]any); ok {
			x.chatMessage(msg)
		} else {
			x.generic(mv, "", "messages")
		}
		x.pop()
	}
	x.pop()
	x.rest(m, chatSkip, "")
}

// content extracts obj["content"]: a string, added as one segment of
// field, or a list of parts, each handed to part with its index pushed.
func (x *extractor) content(obj map[string]any, role, field string, part func(v any, role string)) {
	x.push("content")
	switch c := obj["content"].(type) {
	case string:
		x.add(role, field, c, false)
	case []any:
		for j, v := range c {
			x.push(j)
			part(v, role)
			x.pop()
		}
	}
	x.pop()
}

func (x *extractor) chatMessage(msg map[string]any) {
	role, _ := msg["role"].(string)
	x.content(msg, role, "content", x.contentPart)
	if calls, ok := msg["tool_calls"].([]any); ok {
		x.push("tool_calls")
		for j, cv := range calls {
			x.push(j)
			if call, ok := cv.(map[string]any); ok {
				x.toolCall(call, role)
			} else {
				x.generic(cv, role, "tool_calls")
			}
			x.pop()
		}
		x.pop()
	}
	if fc, ok := msg["function_call"].(map[string]any); ok {
		x.push("function_call")
		x.functionCall(fc, role)
		x.pop()
	}
	x.rest(msg, func(k string) bool {
		switch k {
		case "role", "content", "tool_calls", "function_call", "name", "tool_call_id", "id", "type":
			return true
		}
		return false
	}, role)
}

// contentPart handles one part of a multi-part content array (OpenAI chat
// and responses input parts).
func (x *extractor) contentPart(pv any, role string) {
	part, ok := pv.(map[string]any)
	if !ok {
		x.generic(pv, role, "content")
		return
	}
	switch part["type"] {
	case "text", "input_text", "output_text", "refusal":
		for _, k := range []string{"text", "refusal"} {
			x.text(part, k, role, "content")
		}
	case "image_url", "input_image", "input_audio", "input_file", "file", "image":
		// Binary or URL payloads: no text to classify.
	default:
		x.rest(part, func(k string) bool { return k == "type" }, role)
	}
}

func (x *extractor) toolCall(call map[string]any, role string) {
	if fn, ok := call["function"].(map[string]any); ok {
		x.push("function")
		x.functionCall(fn, role)
		x.pop()
	}
	x.rest(call, func(k string) bool { return k == "function" || k == "id" || k == "type" || k == "index" }, role)
}

func (x *extractor) functionCall(fn map[string]any, role string) {
	if s, ok := fn["arguments"].(string); ok {
		x.push("arguments")
		x.add(role, "arguments", s, true)
		x.pop()
	}
	x.rest(fn, func(k string) bool { return k == "arguments" || k == "name" }, role)
}

func completionSkip(k string) bool {
	switch k {
	case "prompt", "suffix", "model", "stream", "stream_options", "temperature", "top_p", "n",
		"max_tokens", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs",
		"seed", "best_of", "echo":
		return true
	}
	return false
}

func (x *extractor) completion(m map[string]any) {
	x.push("prompt")
	x.generic(m["prompt"], "user", "prompt")
	x.pop()
	x.text(m, "suffix", "user", "suffix")
	x.rest(m, completionSkip, "")
}

func embeddingsSkip(k string) bool {
	switch k {
	case "input", "model", "encoding_format", "dimensions":
		return true
	}
	return false
}

func (x *extractor) embeddings(m map[string]any) {
	x.push("input")
	x.generic(m["input"], "user", "input")
	x.pop()
	x.rest(m, embeddingsSkip, "")
}

func responsesSkip(k string) bool {
	switch k {
	case "input", "instructions", "model", "stream", "stream_options", "temperature", "top_p",
		"max_output_tokens", "max_tool_calls", "parallel_tool_calls", "previous_response_id",
		"reasoning", "service_tier", "store", "text", "tool_choice", "truncation", "include",
		"background", "top_logprobs", "conversation", "prompt_cache_key", "safety_identifier":
		return true
	}
	return false
}

func (x *extractor) responses(m map[string]any) {
	x.text(m, "instructions", "system", "instructions")
	x.push("input")
	switch in := m["input"].(type) {
	case string:
		x.add("user", "input", in, false)
	case []any:
		for i, iv := range in {
			x.push(i)
			x.responsesItem(iv)
			x.pop()
		}
	}
	x.pop()
	x.rest(m, responsesSkip, "")
}

func (x *extractor) responsesItem(iv any) {
	item, ok := iv.(map[string]any)
	if !ok {
		x.generic(iv, "", "input")
		return
	}
	role, _ := item["role"].(string)
	typ, _ := item["type"].(string)
	switch {
	case typ == "function_call" || typ == "custom_tool_call":
		if s, ok := item["arguments"].(string); ok {
			x.push("arguments")
			x.add("assistant", "arguments", s, true)
			x.pop()
		}
		x.text(item, "input", "assistant", "arguments")
		x.rest(item, func(k string) bool {
			switch k {
			case "arguments", "input", "type", "id", "call_id", "name", "status":
				return true
			}
			return false
		}, "assistant")
	case typ == "function_call_output" || typ == "custom_tool_call_output":
		x.push("output")
		switch o := item["output"].(type) {
		case []any:
			for j, pv := range o {
				x.push(j)
				x.contentPart(pv, "tool")
				x.pop()
			}
		default:
			x.generic(o, "tool", "tool_result")
		}
		x.pop()
		x.rest(item, func(k string) bool {
			switch k {
			case "output", "type", "id", "call_id", "status":
				return true
			}
			return false
		}, "tool")
	default: // "message" items, and easy input messages without a type
		x.content(item, role, "content", x.contentPart)
		x.rest(item, func(k string) bool {
			switch k {
			case "content", "role", "type", "id", "status":
				return true
			}
			return false
		}, role)
	}
}

func anthropicSkip(k string) bool {
	switch k {
	case "messages", "system", "model", "max_tokens", "stream", "temperature", "top_k", "top_p",
		"stop_sequences", "tool_choice", "thinking", "anthropic_version", "service_tier",
		"container", "mcp_servers":
		return true
	}
	return false
}

func (x *extractor) anthropic(m map[string]any) {
	x.push("system")
	switch s := m["system"].(type) {
	case string:
		x.add("system", "system", s, false)
	case []any:
		for i, bv := range s {
			x.push(i)
			x.anthropicBlock(bv, "system")
			x.pop()
		}
	}
	x.pop()
	msgs, _ := m["messages"].([]any)
	x.push("messages")
	for i, mv := range msgs {
		x.push(i)
		msg, ok := mv.(map[string]any)
		if !ok {
			x.generic(mv, "", "messages")
			x.pop()
			continue
		}
		role, _ := msg["role"].(string)
		x.content(msg, role, "content", x.anthropicBlock)
		x.rest(msg, func(k string) bool { return k == "role" || k == "content" }, role)
		x.pop()
	}
	x.pop()
	x.rest(m, anthropicSkip, "")
}

func (x *extractor) anthropicBlock(bv any, role string) {
	b, ok := bv.(map[string]any)
	if !ok {
		x.generic(bv, role, "content")
		return
	}
	skipMeta := func(extra ...string) func(string) bool {
		return func(k string) bool {
			switch k {
			case "type", "id", "tool_use_id", "cache_control", "name", "signature", "is_error", "citations":
				return true
			}
			for _, e := range extra {
				if k == e {
					return true
				}
			}
			return false
		}
	}
	switch b["type"] {
	case "text":
		x.text(b, "text", role, "content")
		x.rest(b, skipMeta("text"), role)
	case "thinking":
		x.text(b, "thinking", role, "thinking")
		x.rest(b, skipMeta("thinking"), role)
	case "redacted_thinking":
		// Encrypted by the provider.
	case "tool_use", "server_tool_use":
		x.push("input")
		x.generic(b["input"], role, "tool_input")
		x.pop()
		x.rest(b, skipMeta("input"), role)
	case "tool_result":
		x.content(b, "tool", "tool_result", x.anthropicBlock)
		x.rest(b, skipMeta("content"), "tool")
	case "image":
		// Base64 or URL image source: no text.
	case "document":
		if src, ok := b["source"].(map[string]any); ok && src["type"] == "text" {
			x.push("source")
			x.text(src, "data", role, "document")
			x.pop()
		}
		x.rest(b, skipMeta("source"), role)
	default:
		x.rest(b, skipMeta(), role)
	}
}
