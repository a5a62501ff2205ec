package wire

import (
	"errors"
	"fmt"
	"strconv"
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

// TestHardening04Attachments: the documents a request carries inline are
// decoded as attachments (not texts), their names are texts, images stay
// unread, and an undecodable one refuses the body.
func TestHardening04Attachments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path, body string
		want             []Attachment
		texts            []string
	}{
		{"anthropic base64 document", "/v1/messages",
			`{"messages":[{"role":"user","content":[{"type":"document","title":"Memo","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}]}]}`,
			[]Attachment{{Path: Path{"messages", 0, "content", 0, "source", "data"}, Role: "user", MediaType: "application/pdf", Data: []byte("%PDF-")}}, []string{"Memo"}},
		{"anthropic content source", "/v1/messages",
			`{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"content","content":[{"type":"text","text":"inside"}]}}]}]}`,
			nil, []string{"inside"}},
		{"chat file part", "/v1/chat/completions",
			`{"messages":[{"role":"user","content":[{"type":"file","file":{"filename":"n.txt","file_data":"data:text/plain;base64,aGVsbG8="}}]}]}`,
			[]Attachment{{Path: Path{"messages", 0, "content", 0, "file", "file_data"}, Role: "user", MediaType: "text/plain", Name: "n.txt", Data: []byte("hello")}}, []string{"n.txt"}},
		{"bare base64 file_data", "/v1/chat/completions",
			`{"messages":[{"role":"user","content":[{"type":"file","file":{"filename":"n.txt","file_data":"aGVsbG8"}}]}]}`,
			[]Attachment{{Path: Path{"messages", 0, "content", 0, "file", "file_data"}, Role: "user", MediaType: "text/plain", Name: "n.txt", Data: []byte("hello")}}, []string{"n.txt"}},
		{"responses input_file", "/v1/responses",
			`{"input":[{"role":"user","content":[{"type":"input_file","filename":"n.txt","file_data":"data:text/plain,h%69"}]}]}`,
			[]Attachment{{Path: Path{"input", 0, "content", 0, "file_data"}, Role: "user", MediaType: "text/plain", Name: "n.txt", Data: []byte("hi")}}, []string{"n.txt"}},
		{"image stays unread", "/v1/chat/completions",
			`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`, nil, nil},
		{"document in image_url", "/v1/chat/completions",
			`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:application/json;base64,e30="}}]}]}`,
			[]Attachment{{Path: Path{"messages", 0, "content", 0, "image_url", "url"}, Role: "user", MediaType: "application/json", Data: []byte("{}")}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRequest(tc.path, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(r.Attachments) != fmt.Sprint(tc.want) {
				t.Errorf("attachments %+v, want %+v", r.Attachments, tc.want)
			}
			var texts []string
			for _, s := range r.Segments {
				texts = append(texts, s.Text)
			}
			if fmt.Sprint(texts) != fmt.Sprint(tc.texts) {
				t.Errorf("texts %q, want %q", texts, tc.texts)
			}
		})
	}
	for _, body := range []string{
		`{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"%%%"}}]}]}`,
		`{"model":"m","metadata":{"x":"data:text/plain,%zz"}}`,
	} {
		if _, err := ParseRequest("/v1/messages", []byte(body)); !errors.Is(err, ErrAttachment) || !errors.Is(err, ErrBody) {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// TestHardening04DataURLHeader: a string is taken for a data: URL only when
// its header is a media type, a charset and base64; anything else in the
// header (a value hidden where a media type goes) keeps the whole string a
// text.
func TestHardening04DataURLHeader(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"data:jean.dupont@acme-corp.fr,x", "data:text/plain;name=jean.dupont@acme-corp.fr;base64,aGk=", "data: 1,2,3",
		"data:text/plain;base64;charset=utf-8,aGk=", "data:image/png;base64,aGk=",
	} {
		body := `{"model":"m","metadata":{"note":` + strconv.Quote(s) + `}}`
		r, err := ParseRequest("/v1/chat/completions", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Attachments) != 0 || len(r.Segments) != 1 || r.Segments[0].Text != s {
			t.Errorf("%q: attachments %+v, segments %+v", s, r.Attachments, r.Segments)
		}
	}
	r, err := ParseRequest("/v1/chat/completions", []byte(`{"model":"m","metadata":{"note":"data:text/plain;charset=UTF-8;base64,aGk="}}`))
	if err != nil || len(r.Attachments) != 1 || string(r.Attachments[0].Data) != "hi" || len(r.Segments) != 0 {
		t.Fatalf("%v %+v", err, r)
	}
}
