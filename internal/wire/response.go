package wire

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Usage is the token usage a provider reported.
type Usage struct {
	// Present reports whether the body carried usage at all.
	Present bool
	// PromptTokens counts every input token, cached ones included
	// (Anthropic's input_tokens + cache_read_input_tokens +
	// cache_creation_input_tokens).
	PromptTokens     int
	CompletionTokens int
}

// Response is a parsed, non-streamed response body. It is not safe for
// concurrent use.
type Response struct {
	Kind         Kind
	ID           string
	Model        string
	FinishReason string
	Usage        Usage
	// Error reports an error body ({"error": ...} or Anthropic's
	// {"type":"error"}).
	Error bool
	// Segments are the texts of the response (generated text, tool
	// arguments, error messages, and any other string outside the known
	// metadata fields).
	Segments []Segment
	doc
}

// ParseResponse parses a response body of a request of kind k.
func ParseResponse(k Kind, body []byte) (*Response, error) {
	root, err := decode(body)
	if err != nil {
		return nil, err
	}
	r := &Response{Kind: k, doc: doc{body: body, root: root}}
	m, ok := root.(map[string]any)
	if !ok {
		x := &extractor{}
		x.generic(root, "assistant", "")
		r.Segments = x.segs
		return r, nil
	}
	r.ID, _ = m["id"].(string)
	r.Model, _ = m["model"].(string)
	_, r.Error = m["error"]
	if m["type"] == "error" {
		r.Error = true
	}
	r.Usage = parseUsage(m["usage"])
	x := &extractor{}
	x.respWalk(m, "assistant", "")
	r.Segments = x.segs
	r.FinishReason = finishReason(m)
	return r, nil
}

// responseMeta is true for response fields that never carry generated text.
func responseMeta(k string) bool {
	switch k {
	case "id", "object", "created", "created_at", "model", "usage", "system_fingerprint",
		"service_tier", "type", "role", "stop_reason", "stop_sequence", "status", "index",
		"finish_reason", "call_id", "item_id", "output_index", "content_index",
		"sequence_number", "tool_call_id", "name", "signature", "parallel_tool_calls",
		"tool_choice", "temperature", "top_p", "max_output_tokens", "previous_response_id",
		"reasoning", "store", "truncation", "incomplete_details", "obfuscation",
		"embedding", "encrypted_content", "cache_control", "container":
		return true
	}
	return false
}

// respWalk extracts every string of a response tree except those under
// metadata keys (at any depth). "text" is metadata only when it holds an
// object (the responses API's output format settings); of an "audio"
// object only the transcript is text (its data is the encoded audio).
// Log-probabilities (their tokens) and annotations (titles, URLs, quoted
// text) are texts the caller receives, so they are extracted too.
func (x *extractor) respWalk(v any, role, field string) {
	switch t := v.(type) {
	case string:
		x.add(role, field, t, field == "arguments" || field == "partial_json")
	case map[string]any:
		x.respMap(t, role, nil)
	case []any:
		for i, e := range t {
			x.push(i)
			x.respWalk(e, role, field)
			x.pop()
		}
	}
}

// respMap is respWalk of the members of m, less those skip names.
func (x *extractor) respMap(m map[string]any, role string, skip func(string) bool) {
	for _, k := range sortedKeys(m) {
		if responseMeta(k) || skip != nil && skip(k) {
			continue
		}
		v := m[k]
		if obj, isObj := v.(map[string]any); isObj {
			switch k {
			case "text":
				continue
			case "audio":
				x.push(k)
				x.text(obj, "transcript", role, "transcript")
				x.pop()
				continue
			}
		}
		x.push(k)
		x.respWalk(v, role, k)
		x.pop()
	}
}

func finishReason(m map[string]any) string {
	if s, ok := m["stop_reason"].(string); ok {
		return s
	}
	if ch, ok := m["choices"].([]any); ok {
		for _, c := range ch {
			cm, _ := c.(map[string]any)
			if s, ok := cm["finish_reason"].(string); ok {
				return s
			}
		}
	}
	if s, ok := m["status"].(string); ok && m["object"] == "response" {
		if s == "incomplete" {
			if d, ok := m["incomplete_details"].(map[string]any); ok {
				if r, ok := d["reason"].(string); ok {
					return "incomplete:" + r
				}
			}
		}
		return s
	}
	return ""
}

func parseUsage(v any) Usage {
	u, ok := v.(map[string]any)
	if !ok {
		return Usage{}
	}
	n := func(k string) (int, bool) {
		switch t := u[k].(type) {
		case json.Number:
			i, err := strconv.ParseInt(string(t), 10, 64)
			if err != nil {
				f, ferr := t.Float64()
				if ferr != nil {
					return 0, false
				}
				i = int64(f)
			}
			return int(i), true
		case float64:
			return int(t), true
		}
		return 0, false
	}
	out := Usage{}
	if p, ok := n("prompt_tokens"); ok {
		out.Present, out.PromptTokens = true, p
	}
	if c, ok := n("completion_tokens"); ok {
		out.Present, out.CompletionTokens = true, c
	}
	if p, ok := n("input_tokens"); ok {
		out.Present = true
		out.PromptTokens = p
		if c, ok := n("cache_read_input_tokens"); ok {
			out.PromptTokens += c
		}
		if c, ok := n("cache_creation_input_tokens"); ok {
			out.PromptTokens += c
		}
	}
	if c, ok := n("output_tokens"); ok {
		out.Present, out.CompletionTokens = true, c
	}
	return out
}

// Set replaces the text of segment i.
func (r *Response) Set(i int, text string) error { return r.setSegment(r.Segments, i, text) }

// Encode returns the body with the texts set so far, rewriting only the
// changed strings of the original bytes.
func (r *Response) Encode() ([]byte, error) { return r.encode() }

// Text returns the response's texts joined with newlines.
func (r *Response) Text() string {
	var b strings.Builder
	for i, s := range r.Segments {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s.Text)
	}
	return b.String()
}

// Summary returns what the body says about the response as a whole, in the
// form a stream folds to.
func (r *Response) Summary() Summary {
	sum := Summary{Model: r.Model, FinishReason: r.FinishReason, Usage: r.Usage}
	if r.ID != "" {
		sum.IDs = []string{r.ID}
	}
	return sum
}
