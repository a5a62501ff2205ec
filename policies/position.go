package policies

import (
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Position is a place in a policy file: 1-based line and column (in
// bytes for YAML and JSON, as the YAML parser counts them).
type Position struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// fieldPositions maps the field paths of one policy file (as diagnostics
// name them: "destinations[1].max_level", "classify[0].detectors[2]") to
// where they are written. Keys are compared in lower case, as the loader
// reads them.
type fieldPositions map[string]Position

// positionsOf reads the positions of data's fields. YAML and JSON (which
// the YAML parser reads as YAML) map every field; a file the YAML parser
// cannot read, and TOML, map none, and every field is then at line 1,
// column 1. It never fails.
func positionsOf(data []byte, format string) (ps fieldPositions) {
	ps = fieldPositions{}
	if format != "yaml" && format != "json" {
		return ps
	}
	defer func() {
		if recover() != nil { // a parser panic on hostile input: no positions
			ps = fieldPositions{}
		}
	}()
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return ps
	}
	ps.walk("", doc.Content[0], 0)
	return ps
}

// maxDepth bounds the nesting walked; no policy field is deeper.
const maxDepth = 16

func (ps fieldPositions) walk(prefix string, n *yaml.Node, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := strings.ToLower(k.Value)
			if prefix != "" {
				path = prefix + "." + path
			}
			if _, dup := ps[path]; !dup {
				ps[path] = Position{Line: k.Line, Column: k.Column}
			}
			ps.walk(path, v, depth+1)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			path := prefix + "[" + strconv.Itoa(i) + "]"
			ps[path] = Position{Line: v.Line, Column: v.Column}
			ps.walk(path, v, depth+1)
		}
	case yaml.AliasNode:
		// An alias stands where it is written; what it names is not
		// walked again (alias bombs).
	}
}

// lookup returns the position of field, or of its nearest enclosing field
// written in the file, or line 1, column 1.
func (ps fieldPositions) lookup(field string) Position {
	f := strings.ToLower(field)
	for f != "" {
		if p, ok := ps[f]; ok {
			return p
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return Position{Line: 1, Column: 1}
}

// syntaxLine finds the line a parser's syntax error names ("line 3").
var syntaxLine = regexp.MustCompile(`\bline (\d{1,9})\b`)

// errorPosition is the position a whole-file problem's message names:
// the line of a syntax error, column 1; line 1 when it names none.
func errorPosition(msg string) Position {
	if m := syntaxLine.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return Position{Line: n, Column: 1}
		}
	}
	return Position{Line: 1, Column: 1}
}
