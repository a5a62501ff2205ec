package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// stdDecode is the reference: encoding/json into the same raw tree, with
// I-JSON's rules on top (no duplicate member names, no lone surrogates),
// checked by a token walk and a scan of the escapes.
func stdDecode(body []byte) (any, error) {
	if !json.Valid(body) {
		return nil, errors.New("invalid JSON")
	}
	if loneSurrogate(body) {
		return nil, errors.New("lone surrogate")
	}
	if duplicateKey(body) {
		return nil, errors.New("duplicate key")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// duplicateKey reports whether an object of the valid JSON body has two
// members of the same (decoded) name.
func duplicateKey(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		obj     bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.obj {
					top.wantKey = true
				}
				stack = append(stack, &frame{obj: t == '{', keys: map[string]bool{}, wantKey: true})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.obj && top.wantKey {
				if top.keys[t] {
					return true
				}
				top.keys[t] = true
				top.wantKey = false
				continue
			}
		}
		if top != nil && top.obj {
			top.wantKey = true
		}
	}
}

// loneSurrogate reports whether a string of the valid JSON body holds a
// \u escape of a surrogate that is not the first of a valid pair or its
// second.
func loneSurrogate(body []byte) bool {
	in := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			in = !in
		case in && c == '\\':
			if body[i+1] != 'u' {
				i++
				continue
			}
			r := hex4(body[i+2:])
			i += 5
			switch {
			case r >= 0xdc00 && r <= 0xdfff:
				return true
			case r >= 0xd800 && r <= 0xdbff:
				if i+6 >= len(body) || body[i+1] != '\\' || body[i+2] != 'u' {
					return true
				}
				r2 := hex4(body[i+3:])
				if r2 < 0xdc00 || r2 > 0xdfff {
					return true
				}
				i += 6
			}
		}
	}
	return false
}

// checkDecode compares decode with encoding/json on valid UTF-8 input.
func checkDecode(t *testing.T, body []byte) {
	t.Helper()
	if !utf8.Valid(body) {
		if _, err := decode(body); !errors.Is(err, ErrBody) {
			t.Fatalf("invalid UTF-8 accepted: %q", body)
		}
		return
	}
	got, err := decode(body)
	want, werr := stdDecode(body)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%q: decode err %v, encoding/json err %v", body, err, werr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decode %#v, encoding/json %#v", body, got, want)
	}
	if err != nil && !errors.Is(err, ErrBody) {
		t.Fatalf("%q: error %v is not ErrBody", body, err)
	}
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`{}`, `[]`, ` {"a" : [1, -2.5e+3, 0, true, false, null, "x"]} `, `"\u00e9\ud83d\ude00\n\t\/\\\""`,
		`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `{"a":1,"a":2}`, `-0`, `0.5E-2`, `1e400`,
		`01`, `1.`, `-`, `.5`, `1e`, `+1`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{1:2}`, `"\x"`, `"\u12"`,
		"\"a\x01\"", `"unterminated`, `tru`, `nul`, `[`, `{"a":`, `{} {}`, `NaN`, "\"\u2028\"", `"` + strings.Repeat("abcdefgh", 9) + `"`,
		`"` + strings.Repeat("abcdefg\\n", 9) + `"`, strings.Repeat("[", 100) + strings.Repeat("]", 100),
	} {
		checkDecode(t, []byte(s))
	}
	if _, err := decode([]byte(strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1))); err == nil {
		t.Error("nesting over the limit accepted")
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,"b\u00e9",null]}`, `"\ud83d\ude00"`, `[1e5,-0.0]`, `{"k\"ey":{"x":[]}}`,
		`{"a":{"b":1},"c":[{"b":2,"b":3}]}`, `{"\u0061":1,"a":2}`, `["\ud800\udc00","\\ud800"]`, `"\udbff\udfff\ud800x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkDecode(t, body) })
}

// TestUnescapeAllocatesOnce: a string with escapes is decoded into one
// buffer that becomes the string, whatever its escapes.
func TestUnescapeAllocatesOnce(t *testing.T) {
	for _, raw := range []string{
		strings.Repeat(`line\n\tindented \"quoted\" `, 100),
		strings.Repeat(`caf\u00e9 \ud83d\ude00 \ud800 `, 50),
		`\/`,
	} {
		b := []byte(raw)
		if n := testing.AllocsPerRun(20, func() { unescape(b) }); n != 1 {
			t.Errorf("%.20q: %v allocations, want 1", raw, n)
		}
	}
}

func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "q\"b\\s", "\n\r\t\x00\x1f", "<&>", "é😀", "\u2028\u2029", "bad\xffutf8", strings.Repeat("x", 100)} {
		got := appendString(nil, s)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if want := strings.TrimSuffix(buf.String(), "\n"); string(got) != want {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestSplice applies edits of every kind and checks the bytes around them
// are untouched and the result decodes to the edited tree.
func TestSplice(t *testing.T) {
	t.Parallel()
	body := `{ "b" : 1, "a":{"x":"old","y":[ ]} ,"z":[1,"s",{"k":null}], "n":null }`
	tests := []struct {
		name  string
		edits []edit
		want  string
	}{
		{"replace string", []edit{{op: opReplace, path: Path{"a", "x"}, raw: []byte(`"new"`)}},
			`{ "b" : 1, "a":{"x":"new","y":[ ]} ,"z":[1,"s",{"k":null}], "n":null }`},
		{"replace in array", []edit{{op: opReplace, path: Path{"z", 1}, raw: []byte(`"S"`)}},
			`{ "b" : 1, "a":{"x":"old","y":[ ]} ,"z":[1,"S",{"k":null}], "n":null }`},
		{"append to empty and full arrays", []edit{
			{op: opAppend, path: Path{"a", "y"}, raw: []byte(`7`)},
			{op: opAppend, path: Path{"z"}, raw: []byte(`8`)}},
			`{ "b" : 1, "a":{"x":"old","y":[ 7]} ,"z":[1,"s",{"k":null},8], "n":null }`},
		{"add member", []edit{{op: opAdd, path: Path{}, key: "new", raw: []byte(`{"q":true}`)}},
			`{"new":{"q":true}, "b" : 1, "a":{"x":"old","y":[ ]} ,"z":[1,"s",{"k":null}], "n":null }`},
		{"delete first member", []edit{{op: opDelete, path: Path{"b"}}},
			`{ "a":{"x":"old","y":[ ]} ,"z":[1,"s",{"k":null}], "n":null }`},
		{"delete last member", []edit{{op: opDelete, path: Path{"n"}}},
			`{ "b" : 1, "a":{"x":"old","y":[ ]} ,"z":[1,"s",{"k":null}] }`},
		{"delete only member", []edit{{op: opDelete, path: Path{"z", 2, "k"}}},
			`{ "b" : 1, "a":{"x":"old","y":[ ]} ,"z":[1,"s",{}], "n":null }`},
		{"several", []edit{
			{op: opDelete, path: Path{"n"}},
			{op: opReplace, path: Path{"a", "x"}, raw: []byte(`"X"`)},
			{op: opAdd, path: Path{"a"}, key: "w", raw: []byte(`0`)}},
			`{ "b" : 1, "a":{"w":0,"x":"X","y":[ ]} ,"z":[1,"s",{"k":null}] }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := splice([]byte(body), tt.edits)
			if !ok || string(out) != tt.want {
				t.Fatalf("splice = %s, %v\nwant     %s", out, ok, tt.want)
			}
			if !json.Valid(out) {
				t.Fatal("invalid JSON")
			}
		})
	}
	for _, bad := range [][]edit{
		{{op: opReplace, path: Path{"missing"}, raw: []byte(`1`)}},
		{{op: opReplace, path: Path{"z", 9}, raw: []byte(`1`)}},
		{{op: opAppend, path: Path{"b"}, raw: []byte(`1`)}},
		{{op: opReplace, path: Path{"a"}, raw: []byte(`1`)}, {op: opReplace, path: Path{"a", "x"}, raw: []byte(`2`)}},
	} {
		if out, ok := splice([]byte(body), bad); ok {
			t.Errorf("splice(%v) = %s, want refusal", bad, out)
		}
	}
}

func TestStreamUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body, want string
		changed                bool
	}{
		{"chat without options", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`,
			`{"stream_options":{"include_usage":true},"model":"m","stream":true,"messages":[]}`, true},
		{"chat with empty options", "/v1/chat/completions", `{"stream":true,"stream_options":{},"messages":[]}`,
			`{"stream":true,"stream_options":{"include_usage":true},"messages":[]}`, true},
		{"chat with usage off", "/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":false},"messages":[]}`,
			`{"stream":true,"stream_options":{"include_usage":true},"messages":[]}`, true},
		{"chat with null options", "/v1/chat/completions", `{"stream":true,"stream_options":null,"messages":[]}`,
			`{"stream":true,"stream_options":{"include_usage":true},"messages":[]}`, true},
		{"chat asking already", "/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":true},"messages":[]}`,
			`{"stream":true,"stream_options":{"include_usage":true},"messages":[]}`, false},
		{"completions", "/v1/completions", `{"stream":true,"prompt":"p"}`,
			`{"stream_options":{"include_usage":true},"stream":true,"prompt":"p"}`, true},
		{"not streamed", "/v1/chat/completions", `{"messages":[]}`, `{"messages":[]}`, false},
		{"anthropic", "/v1/messages", `{"stream":true,"messages":[]}`, `{"stream":true,"messages":[]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRequest(tt.path, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.AskStreamUsage(); got != tt.changed {
				t.Fatalf("AskStreamUsage = %v", got)
			}
			out, _ := r.Encode()
			if string(out) != tt.want {
				t.Fatalf("got  %s\nwant %s", out, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		data            string
		usageOnly, drop bool
		after           string
	}{
		{`{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, true, false, ""},
		{`{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}],"usage":null}`, false, true, `{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}`},
		{`{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}`, false, false, ""},
		{`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5}}`, false, false, ""},
	} {
		e, err := ParseStreamEvent("", []byte(tt.data))
		if err != nil {
			t.Fatal(err)
		}
		if e.UsageOnly() != tt.usageOnly {
			t.Errorf("%s: UsageOnly = %v", tt.data, !tt.usageOnly)
		}
		if e.DropNullUsage() != tt.drop {
			t.Errorf("%s: DropNullUsage = %v", tt.data, !tt.drop)
		}
		if tt.drop {
			if out, _ := e.Encode(); string(out) != tt.after {
				t.Errorf("after drop: %s", out)
			}
		}
	}
}

// FuzzSplice sets every text of a parsed body and checks that the spliced
// bytes decode to exactly the edited tree.
func FuzzSplice(f *testing.F) {
	f.Add("/v1/chat/completions", []byte(`{"messages":[{"role":"user","content":"a"},{"role":"user","content":"a"}],"stream":true}`), "x")
	f.Add("/v1/messages", []byte(`{"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"t"}]}]}`), "\"\n")
	f.Add("/v1/responses", []byte(`{"input":"i","a":{"a":"b","a":"c"}}`), "é")
	f.Fuzz(func(t *testing.T, path string, body []byte, text string) {
		r, err := ParseRequest(path, body)
		if err != nil || !utf8.ValidString(text) {
			return
		}
		for i := range r.Segments {
			if err := r.Set(i, text+r.Segments[i].Text); err != nil {
				t.Fatal(err)
			}
		}
		r.AddCanary(text)
		r.AskStreamUsage()
		out, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := decode(out)
		if err != nil {
			t.Fatalf("spliced body does not decode: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, r.root) {
			t.Fatalf("spliced body %s\ndecodes to %#v\nwant %#v", out, back, r.root)
		}
	})
}

// BenchmarkDecode4MB decodes a 4 MB chat body (one long message).
func BenchmarkDecode4MB(b *testing.B) {
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{
		map[string]any{"role": "user", "content": strings.Repeat("Quarterly notes, \"quoted\"; contact a@b.c.\n", 4<<20/44)}}})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRequest("/v1/chat/completions", body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplice4MB rewrites one string of a 4 MB body.
func BenchmarkSplice4MB(b *testing.B) {
	long := strings.Repeat("Quarterly notes; contact a@b.c.\n", 4<<20/32)
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{
		map[string]any{"role": "system", "content": "s"}, map[string]any{"role": "user", "content": long}}})
	r, err := ParseRequest("/v1/chat/completions", body)
	if err != nil {
		b.Fatal(err)
	}
	redacted := strings.ReplaceAll(long, "a@b.c", "[[PII_EMAIL_3f9a1c2b]]")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r.edits = r.edits[:0]
		if err := r.Set(1, redacted); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}
