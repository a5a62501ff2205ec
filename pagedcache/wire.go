package pagedcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The OpenAI wire types this server reads and writes. They are private:
// clients use their own (go-openai, openai-go, plain JSON).

type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string         `json:"role"`
	Content messageContent `json:"content"`
}

// messageContent is a message's text: a JSON string, null, or an array of
// content parts whose "text" parts are concatenated.
type messageContent struct{ text string }

func (c *messageContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		c.text = ""
		return nil
	case b[0] == '"':
		return json.Unmarshal(b, &c.text)
	case b[0] == '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var sb strings.Builder
		for _, p := range parts {
			if p.Type == "text" && p.Text != nil {
				sb.WriteString(*p.Text)
			}
		}
		c.text = sb.String()
		return nil
	}
	return errors.New("content must be a string, null or an array of parts")
}

type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	N             *int            `json:"n"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	Seed          *int64          `json:"seed"`
	Stop          json.RawMessage `json:"stop"`
}

// generation is what both endpoints reduce a request to.
type generation struct {
	model        string
	prompt       string
	maxTokens    int // 0 = server default
	stream       bool
	includeUsage bool
	// seed is the request's seed (OpenAI's seed parameter): the same prompt
	// answered with another seed is another sample, as a regenerate gets.
	seed int64
	// stop are the stop sequences: the answer ends before the first one it
	// would contain (OpenAI's stop, Anthropic's stop_sequences).
	stop []string
}

// Bounds on stop sequences, which keep the engine's search cheap.
const (
	maxStopSequences   = 64
	maxStopSequenceLen = 1024
)

// checkStops validates stop sequences named param.
func checkStops(param string, stops []string) error {
	if len(stops) > maxStopSequences {
		return &requestError{param: param, msg: fmt.Sprintf("%s: at most %d stop sequences are supported, got %d", param, maxStopSequences, len(stops))}
	}
	for i, q := range stops {
		if strings.TrimSpace(q) == "" || len(q) > maxStopSequenceLen {
			return &requestError{param: param, msg: fmt.Sprintf("%s[%d]: each stop sequence must hold a non-whitespace character and at most %d bytes", param, i, maxStopSequenceLen)}
		}
	}
	return nil
}

// parseOpenAIStop decodes OpenAI's stop: null, a string or an array of
// strings (at most 4, as OpenAI allows).
func parseOpenAIStop(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	var stops []string
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, nil
	case raw[0] == '"':
		var q string
		if err := json.Unmarshal(raw, &q); err != nil {
			return nil, &requestError{param: "stop", msg: "stop: " + jsonErrorText(err)}
		}
		stops = []string{q}
	default:
		if err := json.Unmarshal(raw, &stops); err != nil {
			return nil, &requestError{param: "stop", msg: "stop must be a string, an array of strings or null"}
		}
	}
	if len(stops) > 4 {
		return nil, &requestError{param: "stop", msg: fmt.Sprintf("stop: at most 4 sequences are supported, got %d", len(stops))}
	}
	return stops, checkStops("stop", stops)
}

// requestError is a 400 on the request body.
type requestError struct {
	param string
	msg   string
}

func (e *requestError) Error() string { return e.msg }

// decodeStrict decodes body, one JSON value, into v. A body that is one
// valid value (the usual case) is decoded in place, as the Decoder would
// decode it; any other goes through the Decoder, for its errors.
func decodeStrict(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		// A syntax error is found before anything is stored in v.
		if err != nil {
			return &requestError{msg: "could not parse the JSON body: " + jsonErrorText(err)}
		}
		return nil
	}
	return decodeStream(body, v)
}

// decodeStream decodes body into v with a json.Decoder, which reports a
// value's errors as the API does, and refuses data after the value.
func decodeStream(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return &requestError{msg: "could not parse the JSON body: " + jsonErrorText(err)}
	}
	if dec.More() {
		return &requestError{msg: "could not parse the JSON body: trailing data after the object"}
	}
	return nil
}

// jsonErrorText describes a decoding error without echoing input values.
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q has the wrong type (%s)", te.Field, te.Value)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	return "invalid request body"
}

func checkCommon(maxTokens, n *int) (int, error) {
	if n != nil && *n != 1 {
		return 0, &requestError{param: "n", msg: "only n=1 is supported"}
	}
	if maxTokens == nil {
		return 0, nil
	}
	if *maxTokens < 1 {
		return 0, &requestError{param: "max_tokens", msg: fmt.Sprintf("max_tokens must be at least 1, got %d", *maxTokens)}
	}
	return *maxTokens, nil
}

// parseChatRequest decodes and validates a /v1/chat/completions body and
// renders its messages into the prompt text the model sees: one
// "role: content" line per message, then "assistant:".
func parseChatRequest(body []byte) (generation, error) {
	var r chatRequest
	if err := decodeStrict(body, &r); err != nil {
		return generation{}, err
	}
	if len(r.Messages) == 0 {
		return generation{}, &requestError{param: "messages", msg: "messages must be a non-empty array"}
	}
	mt := r.MaxCompletionTokens
	if mt == nil {
		mt = r.MaxTokens
	}
	maxTokens, err := checkCommon(mt, r.N)
	if err != nil {
		return generation{}, err
	}
	var sb strings.Builder
	for i, m := range r.Messages {
		if m.Role == "" {
			return generation{}, &requestError{param: fmt.Sprintf("messages[%d].role", i), msg: fmt.Sprintf("messages[%d] has no role", i)}
		}
		sb.WriteString(m.Role)
		sb.WriteString(": ")
		sb.WriteString(m.Content.text)
		sb.WriteByte('\n')
	}
	sb.WriteString("assistant:")
	stops, err := parseOpenAIStop(r.Stop)
	if err != nil {
		return generation{}, err
	}
	g := generation{model: r.Model, prompt: sb.String(), maxTokens: maxTokens, stream: r.Stream, stop: stops}
	if r.Seed != nil {
		g.seed = *r.Seed
	}
	g.includeUsage = r.StreamOptions != nil && r.StreamOptions.IncludeUsage
	return g, nil
}

// parseCompletionRequest decodes and validates a /v1/completions body; the
// prompt is a string or an array holding one string.
func parseCompletionRequest(body []byte) (generation, error) {
	var r completionRequest
	if err := decodeStrict(body, &r); err != nil {
		return generation{}, err
	}
	maxTokens, err := checkCommon(r.MaxTokens, r.N)
	if err != nil {
		return generation{}, err
	}
	var prompt string
	p := bytes.TrimSpace(r.Prompt)
	switch {
	case len(p) == 0 || string(p) == "null":
		return generation{}, &requestError{param: "prompt", msg: "prompt is required"}
	case p[0] == '"':
		if err := json.Unmarshal(p, &prompt); err != nil {
			return generation{}, &requestError{param: "prompt", msg: "prompt: " + jsonErrorText(err)}
		}
	case p[0] == '[':
		var ps []string
		if err := json.Unmarshal(p, &ps); err != nil || len(ps) != 1 {
			return generation{}, &requestError{param: "prompt", msg: "prompt must be a string or an array of exactly one string"}
		}
		prompt = ps[0]
	default:
		return generation{}, &requestError{param: "prompt", msg: "prompt must be a string or an array of exactly one string"}
	}
	if prompt == "" {
		return generation{}, &requestError{param: "prompt", msg: "prompt must not be empty"}
	}
	stops, err := parseOpenAIStop(r.Stop)
	if err != nil {
		return generation{}, err
	}
	g := generation{model: r.Model, prompt: prompt, maxTokens: maxTokens, stream: r.Stream, stop: stops}
	if r.Seed != nil {
		g.seed = *r.Seed
	}
	g.includeUsage = r.StreamOptions != nil && r.StreamOptions.IncludeUsage
	return g, nil
}

// Responses.

type usage struct {
	PromptTokens        int                 `json:"prompt_tokens"`
	CompletionTokens    int                 `json:"completion_tokens"`
	TotalTokens         int                 `json:"total_tokens"`
	PromptTokensDetails promptTokensDetails `json:"prompt_tokens_details"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      *outMessage `json:"message,omitempty"`
	Delta        *outMessage `json:"delta,omitempty"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason *string     `json:"finish_reason"`
}

type outMessage struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

type completionChoice struct {
	Index        int       `json:"index"`
	Text         string    `json:"text"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type errorBody struct {
	Error apiErrorJSON `json:"error"`
}

type apiErrorJSON struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
