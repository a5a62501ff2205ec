// Package wire understands the request, response and stream bodies of the
// OpenAI and Anthropic APIs well enough to find every text in them and to
// rewrite those texts without losing anything else.
//
// Bodies are decoded in one pass into a raw JSON tree (map[string]any,
// []any, string, json.Number, bool, nil). Texts are returned as [Segment]s
// addressed by a [Path] into that tree. A rewrite changes only the bytes of
// the values it touches in the original body (see Request.Encode): an
// unchanged body is returned as it came, and a changed one keeps its key
// order, spacing and unknown fields. Known body
// kinds extract their text fields by role; every string under a field the
// kind does not know is still extracted (field-generic), and a body of an
// unknown kind has all its strings extracted, so no text slips through.
package wire

import (
	"errors"
	"strconv"
	"strings"
)

// Kind identifies a body format.
type Kind string

// The body kinds.
const (
	KindChat       Kind = "openai.chat"
	KindCompletion Kind = "openai.completion"
	KindResponses  Kind = "openai.responses"
	KindEmbeddings Kind = "openai.embeddings"
	KindAnthropic  Kind = "anthropic.messages"
	KindGeneric    Kind = "generic"
)

// Provider returns "openai", "anthropic" or "" for the generic kind.
func (k Kind) Provider() string {
	switch k {
	case KindChat, KindCompletion, KindResponses, KindEmbeddings:
		return "openai"
	case KindAnthropic:
		return "anthropic"
	}
	return ""
}

// Path addresses a value in a JSON tree: each element is a string (object
// key) or an int (array index).
type Path []any

// String renders p as a JSON-pointer-like string ("/messages/0/content").
func (p Path) String() string {
	var b strings.Builder
	for _, e := range p {
		b.WriteByte('/')
		switch v := e.(type) {
		case string:
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(v))
		case int:
			b.WriteString(strconv.Itoa(v))
		}
	}
	return b.String()
}

// Segment is one text of a body.
type Segment struct {
	// Path locates the string in the body's tree.
	Path Path
	// Role is the speaker of the text when the format says it ("system",
	// "developer", "user", "assistant", "tool", "function"), else "".
	Role string
	// Field names what the text is ("content", "arguments", "prompt",
	// "input", "instructions", "tool_result", "delta", or the key of an
	// unknown field).
	Field string
	// Text is the decoded string.
	Text string
	// JSON reports that Text is itself JSON (tool call arguments): a value
	// put into it must be JSON-string escaped.
	JSON bool
	// Channel identifies, in a stream event, the sequence the delta text
	// belongs to ("c0" content of choice 0, "c0/t1" arguments of tool call
	// 1, "b2" content block 2, "o0/1" responses output 0 part 1); "" for
	// texts that are not deltas.
	Channel string
}

// ErrBody is wrapped by every error about a malformed body.
var ErrBody = errors.New("malformed body")

// set replaces the string at p in root. It returns false when p does not
// address a string.
func set(root *any, p Path, s string) bool {
	if len(p) == 0 {
		if _, ok := (*root).(string); !ok {
			return false
		}
		*root = s
		return true
	}
	cur := *root
	for i, e := range p {
		last := i == len(p)-1
		switch k := e.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if last {
				if _, ok := m[k].(string); !ok {
					return false
				}
				m[k] = s
				return true
			}
			cur = m[k]
		case int:
			a, ok := cur.([]any)
			if !ok || k < 0 || k >= len(a) {
				return false
			}
			if last {
				if _, ok := a[k].(string); !ok {
					return false
				}
				a[k] = s
				return true
			}
			cur = a[k]
		default:
			return false
		}
	}
	return false
}

// extractor collects segments, and in requests (attach set) the inline
// documents; err is the first document that could not be decoded.
type extractor struct {
	segs   []Segment
	path   Path
	attach bool
	atts   []Attachment
	err    error
}

func (x *extractor) push(e any) { x.path = append(x.path, e) }
func (x *extractor) pop()       { x.path = x.path[:len(x.path)-1] }
func (x *extractor) cur() Path  { return append(Path(nil), x.path...) }
func (x *extractor) add(role, field, s string, isJSON bool) {
	x.segs = append(x.segs, Segment{Path: x.cur(), Role: role, Field: field, Text: s, JSON: isJSON})
}

// text adds v at key k of m when it is a string.
func (x *extractor) text(m map[string]any, k, role, field string) {
	if s, ok := m[k].(string); ok {
		x.push(k)
		x.add(role, field, s, false)
		x.pop()
	}
}

// generic adds every string under v (object keys are not texts); in a
// request, a data: URL of a document is an attachment (see dataURL).
func (x *extractor) generic(v any, role, field string) {
	switch t := v.(type) {
	case string:
		if x.attach && x.dataURL(t, role, "", false) {
			return
		}
		x.add(role, field, t, false)
	case map[string]any:
		for _, k := range sortedKeys(t) {
			x.push(k)
			x.generic(t[k], role, field)
			x.pop()
		}
	case []any:
		for i, e := range t {
			x.push(i)
			x.generic(e, role, field)
			x.pop()
		}
	}
}

// rest visits generically every key of m for which skip is false (keys
// handled specifically, and keys known to hold no text).
func (x *extractor) rest(m map[string]any, skip func(string) bool, role string) {
	for _, k := range sortedKeys(m) {
		if skip(k) {
			continue
		}
		x.push(k)
		x.generic(m[k], role, k)
		x.pop()
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Small maps: insertion sort keeps this allocation-light.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
