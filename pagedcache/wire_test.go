package pagedcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

func TestParseChatRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		wantPrompt string
		wantMax    int
		wantErr    string
	}{
		{"string content", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "user: hi\nassistant:", 0, ""},
		{"parts", `{"messages":[{"role":"system","content":null},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]}],"max_tokens":5}`, "system: \nuser: ab\nassistant:", 5, ""},
		{"max_completion_tokens wins", `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"max_completion_tokens":7}`, "user: x\nassistant:", 7, ""},
		{"no messages", `{"messages":[]}`, "", 0, "non-empty"},
		{"no role", `{"messages":[{"content":"x"}]}`, "", 0, "no role"},
		{"bad max_tokens", `{"messages":[{"role":"user","content":"x"}],"max_tokens":0}`, "", 0, "at least 1"},
		{"n=2", `{"messages":[{"role":"user","content":"x"}],"n":2}`, "", 0, "n=1"},
		{"content number", `{"messages":[{"role":"user","content":5}]}`, "", 0, "parse"},
		{"truncated", `{"messages":[{"role":"user","content":"x"`, "", 0, "end of input"},
		{"trailing", `{"messages":[{"role":"user","content":"x"}]} {}`, "", 0, "trailing"},
		{"not json", "\x00\xff", "", 0, "syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := parseChatRequest([]byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.prompt != tt.wantPrompt || g.maxTokens != tt.wantMax {
				t.Errorf("got %q max %d", g.prompt, g.maxTokens)
			}
		})
	}
}

func TestParseCompletionRequest(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"prompt":"hello"}`:             "hello",
		`{"prompt":["hello"]}`:           "hello",
		`{"prompt":["a","b"]}`:           "error",
		`{"prompt":[1,2]}`:               "error",
		`{"prompt":""}`:                  "error",
		`{}`:                             "error",
		`{"prompt":"x","max_tokens":-1}`: "error",
	} {
		g, err := parseCompletionRequest([]byte(body))
		if (err != nil) != (want == "error") || (err == nil && g.prompt != want) {
			t.Errorf("%s: %q, %v", body, g.prompt, err)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"max_tokens":3}`))
	f.Add([]byte(`{"prompt":["x"],"max_tokens":1}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"\u0000\ud800"}]}`))
	f.Add([]byte("\xff{"))
	f.Fuzz(func(t *testing.T, body []byte) {
		if g, err := parseChatRequest(body); err == nil {
			if !strings.HasSuffix(g.prompt, "assistant:") || g.maxTokens < 0 || !utf8.ValidString(g.prompt) {
				t.Fatalf("bad chat parse %+v", g)
			}
		} else if strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
		if g, err := parseCompletionRequest(body); err == nil && (g.prompt == "" || g.maxTokens < 0) {
			t.Fatalf("bad completion parse %+v", g)
		}
	})
}

func FuzzTokenLowerBound(f *testing.F) {
	s, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{"", "hello world", "it's 12345678 o'clock", "Ünïcödé ١٢٣٤ 漢字かな", "a1b2c3", "  \n\n\t x", "'S'T'RE"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return // the server only tokenizes JSON strings, which are valid UTF-8
		}
		if lb, n := tokenLowerBound(text), len(s.tokenize(text)); lb > n {
			t.Fatalf("lower bound %d > %d real tokens for %q", lb, n, text)
		}
	})
}

// libraryIDs is the library's own encoding of text in cl100k_base.
func libraryIDs(t testing.TB, text string) []uint32 {
	t.Helper()
	codec, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, err := codec.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = uint32(id)
	}
	return out
}

// TestTokenizeMatchesLibrary checks that the server's prompts, as it builds
// them from chat requests, get the library's token IDs: ASCII prose, code
// and JSON (the fast path) and text off it.
func TestTokenizeMatchesLibrary(t *testing.T) {
	t.Parallel()
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{
		"hello world",
		strings.Repeat("Quarterly review notes: the team shipped the billing migration. It's done, isn't it? ", 50),
		"func main() {\n\tfmt.Println(\"hi\")\n}\n\n\n    indented   words\r\n",
		`{"json": [1, 2, 3], "k": "v"} 1234567 <|endoftext|> http://example.com//a`,
		strings.Repeat("=-", 60) + " " + strings.Repeat("abcdefghij", 12),
		"Ünïcödé façade — naïve café; 日本語; emoji 😀 ok",
		"control \x01\x7f characters",
	} {
		body, err := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}})
		if err != nil {
			t.Fatal(err)
		}
		g, err := parseChatRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.tokenize(g.prompt), libraryIDs(t, g.prompt); !slices.Equal(got, want) {
			t.Errorf("%.30q: tokenize %v, library %v", content, got, want)
		}
	}
}

// FuzzTokenizeMatchesLibrary checks the server's token IDs against the
// library's on any valid UTF-8 text.
func FuzzTokenizeMatchesLibrary(f *testing.F) {
	s, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{"", "hello world", "it's 12345678 o'clock", "Ünïcödé ١٢٣٤ 漢字かな", "  \n\n\t x", "'S'T'RE", "user: hi\nassistant:"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) || len(text) > 4096 {
			return // the server only tokenizes JSON strings, which are valid UTF-8
		}
		if got, want := s.tokenize(text), libraryIDs(t, text); !slices.Equal(got, want) {
			t.Fatalf("%q: tokenize %v, library %v", text, got, want)
		}
	})
}

// decodeRef is decodeStrict through the Decoder alone, the reference of
// its fast path.
func decodeRef(body []byte, v any) error { return decodeStream(body, v) }

// checkDecode fails t unless decodeStrict and decodeRef agree on body, in
// their error and in what they decoded.
func checkDecode(t *testing.T, body []byte) {
	t.Helper()
	var got, want chatRequest
	gerr, werr := decodeStrict(body, &got), decodeRef(body, &want)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("%q: error %v, the Decoder's %v", body, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, the Decoder %+v", body, got, want)
	}
}

func TestDecodeStrictMatchesDecoder(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`,
		` {"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]} ` + "\n",
		``, ` `, `{`, `{"messages":[}`, `{} {}`, `{}x`, `{} ]`, `[]`, `null`, `"s"`,
		`{"max_tokens":"3"}`, `{"messages":"x","max_tokens":1.5}`, `{"messages":[{"role":1}]} trailing`,
		`{"messages":[{"role":"user","content":5}]}`, "{\"a\":\"\xff\"}", `{"n":1e400}`,
	} {
		checkDecode(t, []byte(body))
	}
}

func FuzzDecodeStrict(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"max_tokens":3} {}`))
	f.Add([]byte(`{"max_tokens":"x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecode(t, body)
	})
}

// TestReadBody checks readBody against io.ReadAll whether the announced
// size is right, short, long or unknown, and under the server's limit.
func TestReadBody(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 700)
	for _, tc := range []struct {
		size, limit int64
		wantErr     bool
	}{
		{int64(len(body)), 1 << 20, false},
		{-1, 1 << 20, false},
		{10, 1 << 20, false},
		{int64(len(body)) + 100, 1 << 20, false},
		{0, 1 << 20, false},
		{int64(len(body)), 100, true},
		{-1, 100, true},
		{50, 100, true},
	} {
		rec := httptest.NewRecorder()
		// A reader returning a few bytes at a time, as a connection does.
		r := http.MaxBytesReader(rec, io.NopCloser(iotest.HalfReader(strings.NewReader(body))), tc.limit)
		got, err := readBody(r, tc.size, tc.limit)
		var mbe *http.MaxBytesError
		if tc.wantErr {
			if !errors.As(err, &mbe) {
				t.Errorf("size %d limit %d: error %v, want a MaxBytesError", tc.size, tc.limit, err)
			}
			continue
		}
		if err != nil || string(got) != body {
			t.Errorf("size %d: read %d bytes (%v), want %d", tc.size, len(got), err, len(body))
		}
	}
}
