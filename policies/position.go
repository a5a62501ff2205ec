package policies

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

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
// the YAML parser reads as YAML) map every field; TOML maps its tables,
// array tables and keys (tomlPositions); a file the YAML parser cannot
// read maps none, and every field is then at line 1, column 1. It never
// fails.
func positionsOf(data []byte, format string) (ps fieldPositions) {
	ps = fieldPositions{}
	if format == "toml" {
		return tomlPositions(string(data))
	}
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

// syntaxLine finds the line a parser's syntax error names ("line 3"); it
// is compiled on first use, not at every start of a program that links
// this package.
var syntaxLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bline (\d{1,9})\b`) })

// errorPosition is the position a whole-file problem's message names:
// the line of a syntax error, column 1; line 1 when it names none.
func errorPosition(msg string) Position {
	if m := syntaxLine().FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return Position{Line: n, Column: 1}
		}
	}
	return Position{Line: 1, Column: 1}
}

// tomlPositions maps the fields of a TOML file line by line: a [table] or
// [[array table]] header starts a path (the n-th [[x]] is x[n-1], and a
// table under it, [x.y], is x[n-1].y), and a key = value line names a
// field under it. Values are not walked: an element of an array, or a
// field of an inline table, is placed at its key. Lines inside a
// multi-line string or array are skipped.
func tomlPositions(data string) fieldPositions {
	ps := fieldPositions{}
	arrays := map[string]int{} // elements of each array table, by its path without indices
	prefix := ""
	skipUntil := "" // the end of a multi-line string being skipped
	depth := 0      // brackets open in a multi-line array
	set := func(path string, line, col int) {
		if _, dup := ps[path]; !dup && path != "" {
			ps[path] = Position{Line: line, Column: col}
		}
	}
	// resolve indexes each part of a header path that is an array table.
	resolve := func(keys []string) string {
		path, plain := "", ""
		for _, k := range keys {
			if plain != "" {
				plain += "."
				path += "."
			}
			plain += k
			path += k
			if n := arrays[plain]; n > 0 {
				path += "[" + strconv.Itoa(n-1) + "]"
			}
		}
		return path
	}
	for i, line := range strings.Split(data, "\n") {
		ln := i + 1
		t := strings.TrimLeft(line, " \t")
		col := len(line) - len(t) + 1
		switch {
		case skipUntil != "":
			if strings.Contains(t, skipUntil) {
				skipUntil = ""
			}
			continue
		case depth > 0:
			depth += strings.Count(t, "[") - strings.Count(t, "]")
			continue
		case t == "" || t[0] == '#':
			continue
		case strings.HasPrefix(t, "[["):
			end := strings.Index(t, "]]")
			if end < 0 {
				continue
			}
			keys := tomlKeys(t[2:end])
			plain := strings.Join(keys, ".")
			path := keys[len(keys)-1] // the parents are indexed, not the array itself
			if len(keys) > 1 {
				path = resolve(keys[:len(keys)-1]) + "." + path
			}
			n := arrays[plain]
			arrays[plain] = n + 1
			set(path, ln, col)
			prefix = path + "[" + strconv.Itoa(n) + "]"
			set(prefix, ln, col)
			continue
		case t[0] == '[':
			end := strings.IndexByte(t, ']')
			if end < 0 {
				continue
			}
			prefix = resolve(tomlKeys(t[1:end]))
			set(prefix, ln, col)
			continue
		}
		eq := strings.IndexByte(t, '=')
		if eq < 0 {
			continue
		}
		path := strings.Join(tomlKeys(t[:eq]), ".")
		if prefix != "" {
			path = prefix + "." + path
		}
		set(path, ln, col)
		rest := strings.TrimSpace(t[eq+1:])
		for _, q := range []string{`"""`, "'''"} {
			if strings.HasPrefix(rest, q) && strings.Count(rest, q) == 1 {
				skipUntil = q
			}
		}
		if strings.HasPrefix(rest, "[") {
			depth = strings.Count(rest, "[") - strings.Count(rest, "]")
		}
	}
	return ps
}

// tomlKeys splits a TOML key ("a.b", "a . 'b'") into its parts, unquoted
// and in lower case.
func tomlKeys(s string) []string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.ToLower(strings.Trim(strings.TrimSpace(p), `"'`))
	}
	return parts
}
