package pagedcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic's Messages API (POST /v1/messages), served by the same engine as
// the OpenAI endpoints: a request is reduced to a generation (the rendered
// prompt, max_tokens, stop sequences), and the outcome is written as a
// message or as Anthropic's server-sent events.

// HeaderAnthropicVersion is the API version header every Messages API
// request must carry, as Anthropic's API requires.
const HeaderAnthropicVersion = "Anthropic-Version"

type messagesRequest struct {
	Model         *string            `json:"model"`
	MaxTokens     *int               `json:"max_tokens"`
	System        json.RawMessage    `json:"system"`
	Messages      []anthropicMessage `json:"messages"`
	Stream        bool               `json:"stream"`
	StopSequences []string           `json:"stop_sequences"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlockIn is a request content block, as far as the model reads
// it.
type anthropicBlockIn struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	Thinking *string         `json:"thinking"`
	Input    json.RawMessage `json:"input"`
	Content  json.RawMessage `json:"content"`
	Source   *struct {
		Type string `json:"type"`
		Data string `json:"data"`
	} `json:"source"`
}

// anthropicBlockTypes are the content block types the API accepts; the
// model reads the text of text, thinking, tool_use (its input as JSON),
// tool_result and plain-text document blocks.
var anthropicBlockTypes = map[string]bool{
	"text": true, "image": true, "document": true, "tool_use": true, "tool_result": true,
	"thinking": true, "redacted_thinking": true, "search_result": true,
	"server_tool_use": true, "web_search_tool_result": true, "container_upload": true,
}

// parseMessagesRequest decodes and validates a /v1/messages body and renders
// it into the prompt text the model sees: "system: ..." when there is a
// system prompt, one "role: content" line per message, then "assistant:"
// (or, when the last message is the assistant's, its text, which the answer
// continues).
func parseMessagesRequest(body []byte) (generation, error) {
	var r messagesRequest
	if err := decodeStrict(body, &r); err != nil {
		return generation{}, err
	}
	switch {
	case r.Model == nil || *r.Model == "":
		return generation{}, &requestError{param: "model", msg: "model: Field required"}
	case r.MaxTokens == nil:
		return generation{}, &requestError{param: "max_tokens", msg: "max_tokens: Field required"}
	case *r.MaxTokens < 1:
		return generation{}, &requestError{param: "max_tokens", msg: fmt.Sprintf("max_tokens: Input should be greater than or equal to 1, got %d", *r.MaxTokens)}
	case r.Messages == nil:
		return generation{}, &requestError{param: "messages", msg: "messages: Field required"}
	case len(r.Messages) == 0:
		return generation{}, &requestError{param: "messages", msg: "messages: at least one message is required"}
	}
	if err := checkStops("stop_sequences", r.StopSequences); err != nil {
		return generation{}, err
	}
	var sb strings.Builder
	system, err := anthropicText("system", r.System, true)
	if err != nil {
		return generation{}, err
	}
	if system != "" {
		sb.WriteString("system: ")
		sb.WriteString(system)
		sb.WriteByte('\n')
	}
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return generation{}, &requestError{param: fmt.Sprintf("messages.%d.role", i),
				msg: fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)}
		}
		text, err := anthropicText(fmt.Sprintf("messages.%d.content", i), m.Content, false)
		if err != nil {
			return generation{}, err
		}
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(m.Role)
		sb.WriteString(": ")
		sb.WriteString(text)
	}
	if r.Messages[len(r.Messages)-1].Role != "assistant" {
		sb.WriteString("\nassistant:")
	}
	return generation{model: *r.Model, prompt: sb.String(), maxTokens: *r.MaxTokens, stream: r.Stream,
		stop: r.StopSequences}, nil
}

// anthropicText returns the text of a system prompt or a message's content:
// a string or an array of content blocks (for system, text blocks only).
// Null or absent is allowed for the system prompt only.
func anthropicText(param string, raw json.RawMessage, system bool) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		if system {
			return "", nil
		}
		return "", &requestError{param: param, msg: param + ": Field required"}
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", &requestError{param: param, msg: param + ": " + jsonErrorText(err)}
		}
		return s, nil
	case raw[0] != '[':
		return "", &requestError{param: param, msg: param + ": Input should be a valid string or a list of content blocks"}
	}
	var blocks []anthropicBlockIn
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", &requestError{param: param, msg: param + ": " + jsonErrorText(err)}
	}
	var sb strings.Builder
	for i, b := range blocks {
		at := fmt.Sprintf("%s.%d", param, i)
		if !anthropicBlockTypes[b.Type] || (system && b.Type != "text") {
			return "", &requestError{param: at + ".type", msg: fmt.Sprintf("%s.type: Input tag %q does not match any of the expected tags", at, b.Type)}
		}
		var text string
		switch b.Type {
		case "text":
			if b.Text == nil {
				return "", &requestError{param: at + ".text", msg: at + ".text: Field required"}
			}
			text = *b.Text
		case "thinking":
			if b.Thinking != nil {
				text = *b.Thinking
			}
		case "tool_use":
			text = string(bytes.TrimSpace(b.Input))
		case "tool_result":
			c := bytes.TrimSpace(b.Content)
			if len(c) > 0 && c[0] == '[' {
				// Nested blocks: text (and images) only, one level deep.
				var inner []anthropicBlockIn
				if err := json.Unmarshal(c, &inner); err != nil {
					return "", &requestError{param: at + ".content", msg: at + ".content: " + jsonErrorText(err)}
				}
				for _, ib := range inner {
					if ib.Type == "text" && ib.Text != nil {
						text += *ib.Text
					}
				}
			} else if len(c) > 0 && string(c) != "null" {
				if err := json.Unmarshal(c, &text); err != nil {
					return "", &requestError{param: at + ".content", msg: at + ".content: Input should be a valid string or a list of content blocks"}
				}
			}
		case "document":
			if b.Source != nil && b.Source.Type == "text" {
				text = b.Source.Data
			}
		}
		if text != "" && sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(text)
	}
	return sb.String(), nil
}

// The Messages API's response types.

type anthropicResponse struct {
	ID           string              `json:"id"`
	Type         string              `json:"type"`
	Role         string              `json:"role"`
	Model        string              `json:"model"`
	Content      []anthropicBlockOut `json:"content"`
	StopReason   *string             `json:"stop_reason"`
	StopSequence *string             `json:"stop_sequence"`
	Usage        anthropicUsage      `json:"usage"`
}

type anthropicBlockOut struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// anthropicUsageOf reports the prompt as Anthropic does: input_tokens are
// the tokens not read from the (prefix) cache, cache_read_input_tokens those
// that were.
func anthropicUsageOf(out *outcome, outputTokens int) anthropicUsage {
	return anthropicUsage{InputTokens: out.reportedPrompt - out.cached, CacheReadInputTokens: out.cached, OutputTokens: outputTokens}
}

// stopReasonOf maps the engine's finish reason to Anthropic's stop_reason
// and stop_sequence.
func stopReasonOf(out *outcome) (reason string, seq *string) {
	switch {
	case out.stopSequence != "":
		q := out.stopSequence
		return "stop_sequence", &q
	case out.finish == "length":
		return "max_tokens", nil
	}
	return "end_turn", nil
}

// abortedError answers a request aborted during prefill (X-PagedCache-Abort):
// the Messages API has no stop reason for it.
func abortedError() *apiError {
	return &apiError{status: http.StatusInternalServerError, typ: "api_error", code: "aborted",
		message: "the request was aborted during prefill (" + HeaderAbort + ")"}
}

func (s *Server) writeMessage(w http.ResponseWriter, j *job, out *outcome) {
	reason, seq := stopReasonOf(out)
	v := anthropicResponse{
		ID: j.id, Type: "message", Role: "assistant", Model: j.gen.model,
		Content:    []anthropicBlockOut{{Type: "text", Text: s.answerText(out)}},
		StopReason: &reason, StopSequence: seq,
		Usage: anthropicUsageOf(out, len(out.tokens)),
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", j.id)
	w.Header().Set("X-Request-Id", j.id)
	_ = json.NewEncoder(w).Encode(v)
}

// anthropicErrorType is the Messages API's error type for a status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	return "api_error"
}

// writeAnthropicError answers e as {"type":"error","error":{"type":...,
// "message":...}}. An overloaded server answers 529, as Anthropic's does; a
// prompt over the context reads "prompt is too long: N tokens > M maximum",
// the words clients look for before compacting a conversation.
func writeAnthropicError(w http.ResponseWriter, e *apiError) {
	status, msg := e.status, e.message
	if status == http.StatusServiceUnavailable {
		status = 529
	}
	if e.code == "context_length_exceeded" && e.limit > 0 {
		msg = fmt.Sprintf("prompt is too long: %d tokens > %d maximum. %s", e.tokens, e.limit, e.message)
	}
	if e.code == "aborted" {
		w.Header().Set("X-Should-Retry", "false")
	}
	body := struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}{Type: "error"}
	body.Error.Type, body.Error.Message = anthropicErrorType(e.status), msg
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// anthropicEvent is one server-sent event of a streamed message; the
// event's name is its type.
type anthropicEvent struct {
	Type         string               `json:"type"`
	Message      *anthropicResponse   `json:"message,omitempty"`
	Index        *int                 `json:"index,omitempty"`
	ContentBlock *anthropicBlockOut   `json:"content_block,omitempty"`
	Delta        *anthropicDelta      `json:"delta,omitempty"`
	Usage        *anthropicDeltaUsage `json:"usage,omitempty"`
}

// anthropicDelta is a content_block_delta's text_delta, or a message_delta's
// stop fields (stopFields set: both written, null included).
type anthropicDelta struct {
	Type         string
	Text         *string
	StopReason   *string
	StopSequence *string
	stopFields   bool
}

func (d *anthropicDelta) MarshalJSON() ([]byte, error) {
	if d.stopFields {
		return json.Marshal(struct {
			StopReason   *string `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		}{d.StopReason, d.StopSequence})
	}
	return json.Marshal(struct {
		Type string  `json:"type"`
		Text *string `json:"text,omitempty"`
	}{d.Type, d.Text})
}

type anthropicDeltaUsage struct {
	OutputTokens int `json:"output_tokens"`
}
