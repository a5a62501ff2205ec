package wire

import (
	"errors"
	"strings"
	"testing"
)

// TestHardening02DuplicateKeys: a body with two members of the same name is
// refused (I-JSON), at any depth and however the name is spelled, and the
// error names the member only when it is a plain field name, never a value.
func TestHardening02DuplicateKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, shows, hides string
	}{
		{"top level", `{"model":"m","messages":[{"role":"user","content":"jean.dupont@acme-corp.fr"}],"messages":[{"role":"user","content":"hello"}]}`,
			`duplicate object key "messages"`, "jean.dupont"},
		{"nested", `{"messages":[{"role":"user","content":"secret value","content":"hello"}]}`, `"content"`, "secret value"},
		{"escaped spelling", `{"messages":[],"\u006dessages":[{"role":"user","content":"x"}]}`, `"messages"`, ""},
		{"data key not shown", `{"metadata":{"jean.dupont@acme-corp.fr":1,"jean.dupont@acme-corp.fr":2}}`, "duplicate object key at offset", "jean.dupont"},
		{"mixed-case key not shown", `{"logit_bias":{"Sk12AbC":1,"Sk12AbC":2}}`, "duplicate object key at offset", "Sk12AbC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRequest("/v1/chat/completions", []byte(tc.body))
			if !errors.Is(err, ErrBody) {
				t.Fatalf("accepted, or not ErrBody: %v", err)
			}
			if !strings.Contains(err.Error(), tc.shows) {
				t.Errorf("error %q does not say %q", err, tc.shows)
			}
			if tc.hides != "" && strings.Contains(err.Error(), tc.hides) {
				t.Errorf("error %q shows a value", err)
			}
		})
	}
	// The same member names in different objects are not duplicates.
	if _, err := ParseRequest("/v1/chat/completions", []byte(`{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`)); err != nil {
		t.Fatal(err)
	}
}

// TestHardening02LoneSurrogate: a lone surrogate escape (which
// encoding/json reads as U+FFFD and others keep) is refused; a valid pair is
// read.
func TestHardening02LoneSurrogate(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"input":"a\ud800b"}`, `{"input":"\udc00"}`, `{"input":"\ud800\u0041"}`, `{"in\ud800put":"x"}`} {
		if _, err := ParseRequest("/v1/embeddings", []byte(body)); !errors.Is(err, ErrBody) || !strings.Contains(err.Error(), "lone surrogate") {
			t.Errorf("%s: %v", body, err)
		}
	}
	r, err := ParseRequest("/v1/embeddings", []byte(`{"input":"\ud83d\ude00"}`))
	if err != nil || len(r.Segments) != 1 || r.Segments[0].Text != "😀" {
		t.Fatalf("%v %+v", err, r)
	}
}

// TestHardening02SpliceDuplicate: the splice locates members in the bytes
// the tree was decoded from; a body holding the edited key twice is never
// spliced (there is no telling which member the tree holds).
func TestHardening02SpliceDuplicate(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a":"x","a":"y"}`)
	if _, ok := splice(body, []edit{{op: opReplace, path: Path{"a"}, raw: []byte(`"z"`)}}); ok {
		t.Fatal("a body with the edited key twice was spliced")
	}
	if out, ok := splice([]byte(`{"a":"x","b":"y"}`), []edit{{op: opReplace, path: Path{"a"}, raw: []byte(`"z"`)}}); !ok || string(out) != `{"a":"z","b":"y"}` {
		t.Fatalf("%s %v", out, ok)
	}
}
