package wire

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
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
	// Attachments are the documents the body carries inline, decoded; see
	// Attachment.
	Attachments []Attachment
	doc
}

// Attachment is a document a request body carries inline, base64 or
// percent encoded: an Anthropic document block with a base64 source, an
// OpenAI chat file part's file_data, a responses input_file's file_data, a
// data: URL of a type other than image, audio or video (in an image_url or
// any other string). Its text is not a Segment: it cannot be rewritten in
// place, and images, audio and video are not attachments (the guard reads
// no text in them).
type Attachment struct {
	// Path locates the string that holds the document.
	Path Path
	// Role is the speaker of the message that carries it.
	Role string
	// MediaType is the declared media type, lower case and without
	// parameters ("application/pdf"); "" when none is declared.
	MediaType string
	// Name is the file name given beside it, "" when none.
	Name string
	// Data is the decoded document.
	Data []byte
}

// ErrAttachment is wrapped by the errors of inline documents that cannot
// be decoded (invalid base64 or percent encoding).
var ErrAttachment = errors.New("inline document that cannot be decoded")

// skippedMedia reports media types the guard reads no text in: images,
// audio and video stay in the body as they are, as image parts do.
func skippedMedia(mt string) bool {
	return strings.HasPrefix(mt, "image/") || strings.HasPrefix(mt, "audio/") || strings.HasPrefix(mt, "video/")
}

// dataURL handles s when it is a data: URL (RFC 2397) in a request: a
// document (any type but image, audio, video) is decoded as an attachment
// (name is its file name, if known); an image, audio or video is left
// alone when skipMedia is set (an image part), and is a text otherwise. It
// returns false when s is not a data: URL with a plain header (a media
// type, a charset, base64: nothing else that could hold text), which is
// then a text.
func (x *extractor) dataURL(s, role, name string, skipMedia bool) bool {
	if len(s) < 5 || !strings.EqualFold(s[:5], "data:") {
		return false
	}
	meta, payload, ok := strings.Cut(s[5:], ",")
	if !ok {
		return false
	}
	params := strings.Split(meta, ";")
	mt := strings.ToLower(params[0])
	if mt == "" {
		mt = "text/plain" // RFC 2397's default
	} else if !mediaTypeName(mt) {
		return false
	}
	isBase64 := false
	for i, p := range params[1:] {
		k, v, _ := strings.Cut(strings.ToLower(p), "=")
		switch {
		case k == "base64" && v == "" && i == len(params)-2:
			isBase64 = true
		case k == "charset" && v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789-_.") == "":
		default:
			return false
		}
	}
	if skippedMedia(mt) {
		return skipMedia
	}
	var data []byte
	var err error
	if isBase64 {
		data, err = decodeBase64(payload)
	} else {
		var t string
		t, err = percentDecode(payload)
		data = []byte(t)
	}
	if err != nil {
		x.fail(err)
		return true
	}
	x.atts = append(x.atts, Attachment{Path: x.cur(), Role: role, MediaType: mt, Name: name, Data: data})
	return true
}

// mediaTypeName reports whether s (lower case) is a type/subtype of
// RFC 6838 restricted-name characters.
func mediaTypeName(s string) bool {
	typ, sub, ok := strings.Cut(s, "/")
	valid := func(n string) bool {
		if n == "" || len(n) > 127 {
			return false
		}
		for i := 0; i < len(n); i++ {
			c := n[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&-^_.+", c) >= 0) {
				return false
			}
		}
		return true
	}
	return ok && valid(typ) && valid(sub)
}

// fileData handles a file_data string: a data: URL, or bare base64 whose
// type the caller tells by its name.
func (x *extractor) fileData(s, role, name string) {
	if x.dataURL(s, role, name, true) {
		return
	}
	data, err := decodeBase64(s)
	if err != nil {
		x.fail(err)
		return
	}
	mt := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		mt, _, _ = mime.ParseMediaType(mime.TypeByExtension(name[i:]))
	}
	if skippedMedia(mt) {
		return
	}
	x.atts = append(x.atts, Attachment{Path: x.cur(), Role: role, MediaType: mt, Name: name, Data: data})
}

func (x *extractor) fail(err error) {
	if x.err == nil {
		x.err = fmt.Errorf("%w: %w: %v", ErrBody, ErrAttachment, err)
	}
}

// decodeBase64 decodes standard base64, padded or not, ignoring the line
// breaks MIME puts in it.
func decodeBase64(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n \t") {
		s = strings.NewReplacer("\r", "", "\n", "", " ", "", "\t", "").Replace(s)
	}
	s = strings.TrimRight(s, "=")
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("invalid base64")
	}
	return b, nil
}

// percentDecode decodes the %XX escapes of a data: URL's payload.
func percentDecode(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return "", errors.New("invalid percent escape")
		}
		b = append(b, byte(unhex(s[i+1])<<4|unhex(s[i+2])))
		i += 2
	}
	return string(b), nil
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
	x := &extractor{attach: true}
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
	if x.err != nil {
		return nil, x.err
	}
	r.Segments, r.Attachments = x.segs, x.atts
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
	case "file", "input_file":
		// A file by ID, URL or inline data (an attachment), and its name,
		// which is a text.
		f, nested := part, false
		if inner, ok := part["file"].(map[string]any); ok {
			f, nested = inner, true
			x.push("file")
		}
		name, _ := f["filename"].(string)
		x.text(f, "filename", role, "filename")
		if s, ok := f["file_data"].(string); ok {
			x.push("file_data")
			x.fileData(s, role, name)
			x.pop()
		}
		if nested {
			x.pop()
		}
	case "image_url", "input_image":
		// An image by URL or data: URL (no text), or a data: URL of a
		// document, which is an attachment.
		x.dataURLs(part, role)
	case "input_audio", "image":
		// Binary payloads: no text to classify.
	default:
		x.rest(part, func(k string) bool { return k == "type" }, role)
	}
}

// dataURLs finds the data: URLs of documents under v (see dataURL); its
// other strings (URLs, IDs, options) are no texts.
func (x *extractor) dataURLs(v any, role string) {
	switch t := v.(type) {
	case string:
		x.dataURL(t, role, "", true)
	case map[string]any:
		for _, k := range sortedKeys(t) {
			x.push(k)
			x.dataURLs(t[k], role)
			x.pop()
		}
	case []any:
		for i, e := range t {
			x.push(i)
			x.dataURLs(e, role)
			x.pop()
		}
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

// documentSource extracts an Anthropic document block's source: its text,
// its base64 data (an attachment), its content blocks; a URL or file
// reference holds no text.
func (x *extractor) documentSource(src map[string]any, role string) {
	mt, _ := src["media_type"].(string)
	switch src["type"] {
	case "text":
		x.text(src, "data", role, "document")
	case "base64":
		if s, ok := src["data"].(string); ok {
			x.push("data")
			data, err := decodeBase64(s)
			if err != nil {
				x.fail(err)
			} else {
				mt, _, _ = mime.ParseMediaType(mt)
				x.atts = append(x.atts, Attachment{Path: x.cur(), Role: role, MediaType: mt, Data: data})
			}
			x.pop()
		}
	case "content":
		x.content(src, role, "document", x.anthropicBlock)
	case "url", "file":
		return
	default:
		x.rest(src, func(k string) bool { return k == "type" || k == "media_type" }, role)
		return
	}
	x.rest(src, func(k string) bool {
		switch k {
		case "type", "media_type", "data", "content":
			return true
		}
		return false
	}, role)
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
		if src, ok := b["source"].(map[string]any); ok {
			x.push("source")
			x.documentSource(src, role)
			x.pop()
		}
		x.rest(b, skipMeta("source"), role)
	default:
		x.rest(b, skipMeta(), role)
	}
}
