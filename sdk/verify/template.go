package verify

import (
	"bytes"
	"sort"
)

// templateToken is one chat-template control token or role header.
type templateToken struct {
	text   string
	family string
}

// templateTokens are the control tokens and role headers of the common
// chat-model families. A model's own output never contains them (its
// tokenizer maps them to special IDs that detokenize to nothing or are
// stripped); seeing them in a response means the engine decoded over
// someone's formatted prompt.
var templateTokens = []templateToken{
	{"<|im_start|>", "ChatML/Qwen"},
	{"<|im_end|>", "ChatML/Qwen"},
	{"<|im_sep|>", "ChatML/Phi-4"},
	{"<|endoftext|>", "GPT/Qwen"},
	{"[INST]", "Llama 2/Mistral"},
	{"[/INST]", "Llama 2/Mistral"},
	{"<<SYS>>", "Llama 2"},
	{"<</SYS>>", "Llama 2"},
	{"<|begin_of_text|>", "Llama 3"},
	{"<|end_of_text|>", "Llama 3/Granite"},
	{"<|start_header_id|>", "Llama 3"},
	{"<|end_header_id|>", "Llama 3"},
	{"<|eot_id|>", "Llama 3"},
	{"<|eom_id|>", "Llama 3"},
	{"<|python_tag|>", "Llama 3"},
	{"[SYSTEM_PROMPT]", "Mistral"},
	{"[/SYSTEM_PROMPT]", "Mistral"},
	{"[AVAILABLE_TOOLS]", "Mistral"},
	{"[/AVAILABLE_TOOLS]", "Mistral"},
	{"[TOOL_CALLS]", "Mistral"},
	{"[TOOL_RESULTS]", "Mistral"},
	{"[/TOOL_RESULTS]", "Mistral"},
	{"[gMASK]", "GLM"},
	{"<sop>", "GLM"},
	{"<eop>", "GLM"},
	{"<|system|>", "GLM/Phi"},
	{"<|user|>", "GLM/Phi"},
	{"<|assistant|>", "GLM/Phi"},
	{"<|observation|>", "GLM"},
	{"<|end|>", "Phi"},
	{"<｜begin▁of▁sentence｜>", "DeepSeek"},
	{"<｜end▁of▁sentence｜>", "DeepSeek"},
	{"<｜User｜>", "DeepSeek"},
	{"<｜Assistant｜>", "DeepSeek"},
	{"<｜tool▁calls▁begin｜>", "DeepSeek"},
	{"<start_of_turn>", "Gemma"},
	{"<end_of_turn>", "Gemma"},
	{"<|START_OF_TURN_TOKEN|>", "Command R"},
	{"<|END_OF_TURN_TOKEN|>", "Command R"},
	{"<|CHATBOT_TOKEN|>", "Command R"},
	{"<|USER_TOKEN|>", "Command R"},
	{"<|SYSTEM_TOKEN|>", "Command R"},
	{"<|start_of_role|>", "Granite"},
	{"<|end_of_role|>", "Granite"},
}

// TemplateTokens returns the chat-template tokens the verifier looks for, in
// a fixed order.
func TemplateTokens() []string {
	out := make([]string, len(templateTokens))
	for i, t := range templateTokens {
		out[i] = t.text
	}
	return out
}

// maxTemplateLen is the byte length of the longest template token.
func maxTemplateLen() int {
	n := 0
	for _, t := range templateTokens {
		n = max(n, len(t.text))
	}
	return n
}

// templateMatcher finds template tokens by their first byte ('<' or '[').
type templateMatcher struct {
	byFirst [256][]int // token indices by first byte, longest first
	maxLen  int        // the longest token's length
}

func newTemplateMatcher() *templateMatcher {
	m := &templateMatcher{maxLen: maxTemplateLen()}
	for i, t := range templateTokens {
		m.byFirst[t.text[0]] = append(m.byFirst[t.text[0]], i)
	}
	for _, idx := range m.byFirst {
		sort.SliceStable(idx, func(a, b int) bool { return len(templateTokens[idx[a]].text) > len(templateTokens[idx[b]].text) })
	}
	return m
}

type templateHit struct {
	token      int
	start, end int
}

// find calls hit for every token occurrence in text (offsets relative to
// text).
func (m *templateMatcher) find(text []byte, hit func(templateHit)) {
	// The next '<' and the next '[' at or after i are looked for apart
	// (bytes.IndexByte is vectorised, bytes.IndexAny is not), each again
	// only once passed.
	lt, br := -1, -1
	for i := 0; i < len(text); {
		if lt < i {
			lt = indexFrom(text, i, '<')
		}
		if br < i {
			br = indexFrom(text, i, '[')
		}
		if i = min(lt, br); i == len(text) {
			return
		}
		matched := 0
		for _, ti := range m.byFirst[text[i]] {
			tok := templateTokens[ti].text
			if bytes.HasPrefix(text[i:], []byte(tok)) {
				hit(templateHit{token: ti, start: i, end: i + len(tok)})
				matched = len(tok)
				break
			}
		}
		if matched > 0 {
			i += matched
		} else {
			i++
		}
	}
}

// indexFrom returns the index of the first c in text at or after i,
// len(text) when there is none.
func indexFrom(text []byte, i int, c byte) int {
	if j := bytes.IndexByte(text[i:], c); j >= 0 {
		return i + j
	}
	return len(text)
}
