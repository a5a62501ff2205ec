package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// StreamEvent is one parsed event of an OpenAI or Anthropic SSE stream. It is
// not safe for concurrent use.
type StreamEvent struct {
	// Type is the event's type: the SSE event name, else the JSON "type" or
	// "object" field.
	Type         string
	ID           string
	Model        string
	FinishReason string
	Usage        Usage
	// Done reports the end of the stream ([DONE], message_stop,
	// response.completed and its failure variants).
	Done bool
	// Error reports an error event.
	Error bool
	// EndsAll reports that no delta may follow for any channel open so far
	// (held-back text must be flushed before this event); Ends lists the
	// channels this event closes.
	EndsAll bool
	Ends    []string
	// Segments are the event's texts: deltas carry a Channel, other texts
	// (full texts repeated by ".done" events, error messages) do not.
	Segments []Segment
	doc
	doneMark bool
}

// Summary is what the events of a stream say about the response as a
// whole, folded event by event with [StreamEvent.Fold].
type Summary struct {
	// IDs are the distinct response IDs, in order of appearance.
	IDs []string
	// Model and FinishReason are the last ones reported.
	Model        string
	FinishReason string
	// Usage holds the last non-zero counts (Anthropic reports the prompt in
	// message_start and the completion in message_delta).
	Usage Usage
}

// Fold adds e's metadata to sum: a response ID not seen before, the last
// model and finish reason, and the last non-zero usage counts. Every reader
// of a stream folds it with Fold, so that all judge it the same.
func (e *StreamEvent) Fold(sum *Summary) {
	if e.ID != "" && !slices.Contains(sum.IDs, e.ID) {
		sum.IDs = append(sum.IDs, e.ID)
	}
	if e.Model != "" {
		sum.Model = e.Model
	}
	if e.FinishReason != "" {
		sum.FinishReason = e.FinishReason
	}
	if e.Usage.Present {
		sum.Usage.Present = true
		if e.Usage.PromptTokens > 0 {
			sum.Usage.PromptTokens = e.Usage.PromptTokens
		}
		if e.Usage.CompletionTokens > 0 {
			sum.Usage.CompletionTokens = e.Usage.CompletionTokens
		}
	}
}

// ParseStreamEvent parses the data of one SSE event; eventType is the SSE
// event name ("" when the stream does not name events).
func ParseStreamEvent(eventType string, data []byte) (*StreamEvent, error) {
	e := &StreamEvent{Type: eventType}
	if strings.TrimSpace(string(data)) == "[DONE]" {
		e.Done, e.EndsAll, e.doneMark = true, true, true
		return e, nil
	}
	root, err := decode(data)
	if err != nil {
		return nil, err
	}
	e.doc = doc{body: data, root: root}
	m, ok := root.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: stream event is not a JSON object", ErrBody)
	}
	typ, _ := m["type"].(string)
	if e.Type == "" {
		e.Type = typ
		if e.Type == "" {
			e.Type, _ = m["object"].(string)
		}
	}
	x := &extractor{}
	switch {
	case typ == "error" || e.Type == "error" || m["error"] != nil:
		e.Error, e.EndsAll = true, true
		x.respWalk(m, "", "error")
	case strings.HasPrefix(typ, "response."):
		e.responses(x, m, typ)
	case strings.HasPrefix(typ, "message_") || strings.HasPrefix(typ, "content_block_") || typ == "ping":
		e.anthropic(x, m, typ)
	default:
		e.openai(x, m)
	}
	e.Segments = x.segs
	return e, nil
}

func index(v any) int {
	switch t := v.(type) {
	case json.Number:
		i, err := strconv.Atoi(string(t))
		if err == nil && i >= 0 {
			return i
		}
	case float64:
		return int(t)
	}
	return 0
}

func (x *extractor) delta(m map[string]any, k, channel string, isJSON bool) {
	if s, ok := m[k].(string); ok {
		x.push(k)
		x.segs = append(x.segs, Segment{Path: x.cur(), Role: "assistant", Field: k, Text: s, JSON: isJSON, Channel: channel})
		x.pop()
	}
}

func (e *StreamEvent) openai(x *extractor, m map[string]any) {
	e.ID, _ = m["id"].(string)
	e.Model, _ = m["model"].(string)
	e.Usage = parseUsage(m["usage"])
	choices, _ := m["choices"].([]any)
	x.push("choices")
	for i, cv := range choices {
		c, ok := cv.(map[string]any)
		if !ok {
			continue
		}
		ci := "c" + strconv.Itoa(index(c["index"]))
		x.push(i)
		if d, ok := c["delta"].(map[string]any); ok {
			x.push("delta")
			x.delta(d, "content", ci, false)
			x.delta(d, "refusal", ci+"/r", false)
			x.delta(d, "reasoning_content", ci+"/k", false)
			if a, ok := d["audio"].(map[string]any); ok {
				x.push("audio")
				x.delta(a, "transcript", ci+"/a", false)
				x.pop()
			}
			// Every other text of the delta (annotations, fields this
			// parser does not name) is verified too, whole.
			x.respMap(d, "assistant", func(k string) bool {
				switch k {
				case "content", "refusal", "reasoning_content", "audio", "tool_calls", "function_call":
					return true
				}
				return false
			})
			if calls, ok := d["tool_calls"].([]any); ok {
				x.push("tool_calls")
				for j, tv := range calls {
					tc, _ := tv.(map[string]any)
					if fn, ok := tc["function"].(map[string]any); ok {
						x.push(j)
						x.push("function")
						x.delta(fn, "arguments", ci+"/t"+strconv.Itoa(index(tc["index"])), true)
						x.pop()
						x.pop()
					}
				}
				x.pop()
			}
			if fc, ok := d["function_call"].(map[string]any); ok {
				x.push("function_call")
				x.delta(fc, "arguments", ci+"/f", true)
				x.pop()
			}
			x.pop()
		}
		x.delta(c, "text", ci, false) // legacy completions chunks
		// The choice's other texts: log-probabilities' tokens, fields this
		// parser does not name.
		x.respMap(c, "assistant", func(k string) bool { return k == "delta" || k == "text" })
		if fr, ok := c["finish_reason"].(string); ok && fr != "" {
			e.FinishReason = fr
			e.Ends = append(e.Ends, ci)
		}
		x.pop()
	}
	x.pop()
	x.respMap(m, "assistant", func(k string) bool { return k == "choices" })
}

func (e *StreamEvent) anthropic(x *extractor, m map[string]any, typ string) {
	switch typ {
	case "message_start":
		msg, _ := m["message"].(map[string]any)
		e.ID, _ = msg["id"].(string)
		e.Model, _ = msg["model"].(string)
		e.Usage = parseUsage(msg["usage"])
		x.push("message")
		x.respWalk(msg, "assistant", "")
		x.pop()
	case "content_block_start":
		x.push("content_block")
		x.respWalk(m["content_block"], "assistant", "")
		x.pop()
	case "content_block_delta":
		bi := "b" + strconv.Itoa(index(m["index"]))
		if d, ok := m["delta"].(map[string]any); ok {
			x.push("delta")
			switch d["type"] {
			case "text_delta":
				x.delta(d, "text", bi, false)
			case "input_json_delta":
				x.delta(d, "partial_json", bi, true)
			case "thinking_delta":
				x.delta(d, "thinking", bi, false)
			case "signature_delta":
			default: // citations_delta (cited text, titles), others
				x.respWalk(d, "assistant", "delta")
			}
			x.pop()
		}
	case "content_block_stop":
		e.Ends = append(e.Ends, "b"+strconv.Itoa(index(m["index"])))
	case "message_delta":
		e.EndsAll = true
		if d, ok := m["delta"].(map[string]any); ok {
			e.FinishReason, _ = d["stop_reason"].(string)
			x.push("delta")
			x.respMap(d, "assistant", nil)
			x.pop()
		}
		e.Usage = parseUsage(m["usage"])
	case "message_stop":
		e.EndsAll, e.Done = true, true
	}
}

func (e *StreamEvent) responses(x *extractor, m map[string]any, typ string) {
	oi := "o" + strconv.Itoa(index(m["output_index"]))
	switch typ {
	case "response.output_text.delta":
		x.delta(m, "delta", oi+"/"+strconv.Itoa(index(m["content_index"])), false)
		x.respMap(m, "assistant", func(k string) bool { return k == "delta" }) // log-probabilities
	case "response.refusal.delta":
		x.delta(m, "delta", oi+"/r"+strconv.Itoa(index(m["content_index"])), false)
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
		x.delta(m, "delta", oi+"/a", true)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		x.delta(m, "delta", oi+"/s"+strconv.Itoa(index(m["summary_index"]))+"."+strconv.Itoa(index(m["content_index"])), false)
	default:
		if resp, ok := m["response"].(map[string]any); ok {
			e.ID, _ = resp["id"].(string)
			e.Model, _ = resp["model"].(string)
			e.Usage = parseUsage(resp["usage"])
			e.FinishReason = finishReason(resp)
		}
		switch typ {
		case "response.completed", "response.incomplete":
			e.Done = true
		case "response.failed":
			e.Done, e.Error = true, true
		}
		if strings.HasSuffix(typ, ".done") || e.Done {
			e.EndsAll = true
		}
		x.respWalk(m, "assistant", "")
	}
}

// Set replaces the text of segment i.
func (e *StreamEvent) Set(i int, text string) error {
	if i < 0 || i >= len(e.Segments) {
		return fmt.Errorf("wire: segment %d out of range", i)
	}
	if !set(&e.root, e.Segments[i].Path, text) {
		return fmt.Errorf("wire: segment %d at %s is not a string", i, e.Segments[i].Path)
	}
	e.replace(e.Segments[i].Path, text)
	e.Segments[i].Text = text
	return nil
}

// Encode returns the event's data with the changes made so far, rewriting
// only the changed values of the original bytes.
func (e *StreamEvent) Encode() ([]byte, error) {
	if e.doneMark {
		return []byte("[DONE]"), nil
	}
	return e.encode()
}

// Only turns the event into a pure delta of segment i carrying text: every
// other delta is emptied, and finish reasons and usage are removed. It is
// used to synthesize an event that releases held-back text of a channel,
// from the last event seen on that channel.
func (e *StreamEvent) Only(i int, text string) ([]byte, error) {
	for j, s := range e.Segments {
		t := ""
		if j == i {
			t = text
		} else if s.Channel == "" {
			continue
		}
		if err := e.Set(j, t); err != nil {
			return nil, err
		}
	}
	if m, ok := e.root.(map[string]any); ok {
		if _, has := m["usage"]; has {
			delete(m, "usage")
			e.add(edit{op: opDelete, path: Path{"usage"}})
		}
		if ch, ok := m["choices"].([]any); ok {
			for ci, cv := range ch {
				if c, ok := cv.(map[string]any); ok {
					if fr, has := c["finish_reason"]; has && fr != nil {
						c["finish_reason"] = nil
						e.replace(Path{"choices", ci, "finish_reason"}, json.RawMessage("null"))
					}
				}
			}
		}
	}
	return e.Encode()
}

// UsageOnly reports an OpenAI chunk that carries only usage (an empty
// choices array and a usage object): the last chunk of a stream asked with
// stream_options.include_usage.
func (e *StreamEvent) UsageOnly() bool {
	m, ok := e.root.(map[string]any)
	if !ok {
		return false
	}
	ch, ok := m["choices"].([]any)
	u, _ := m["usage"].(map[string]any)
	return ok && len(ch) == 0 && u != nil
}

// DropNullUsage removes a "usage": null member (which OpenAI puts in every
// chunk of a stream asked with include_usage, and in no chunk otherwise)
// and reports whether it did.
func (e *StreamEvent) DropNullUsage() bool {
	m, ok := e.root.(map[string]any)
	if !ok {
		return false
	}
	if u, has := m["usage"]; !has || u != nil {
		return false
	}
	delete(m, "usage")
	e.add(edit{op: opDelete, path: Path{"usage"}})
	return true
}
