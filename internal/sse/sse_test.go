package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

type got struct {
	event, data, id string
}

func readAll(t testing.TB, r *Reader) ([]got, error) {
	t.Helper()
	var out []got
	for {
		ev, err := r.Next()
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		out = append(out, got{ev.Event, string(ev.Data), ev.ID})
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []got
		wantErr error
	}{
		{"openai", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []got{{"", `{"a":1}`, ""}, {"", "[DONE]", ""}}, nil},
		{"crlf", "event: ping\r\ndata: x\r\n\r\n", []got{{"ping", "x", ""}}, nil},
		{"cr only", "data: x\rdata: y\r\r", []got{{"", "x\ny", ""}}, nil},
		{"multi-line data", "data: a\ndata:b\ndata:  c\n\n", []got{{"", "a\nb\n c", ""}}, nil},
		{"comments skipped", ": ping\n\n: another\ndata: x\n\n", []got{{"", "x", ""}}, nil},
		{"anthropic", "event: message_start\ndata: {}\n\nevent: content_block_delta\ndata: {\"d\":1}\n\n", []got{{"message_start", "{}", ""}, {"content_block_delta", `{"d":1}`, ""}}, nil},
		{"id and unknown field", "id: 7\nfoo: bar\ndata: x\n\n", []got{{"", "x", "7"}}, nil},
		{"field without colon", "data\n\n", []got{{"", "", ""}}, nil},
		{"leading blank lines", "\n\n\ndata: x\n\n", []got{{"", "x", ""}}, nil},
		{"truncated event", "data: x\n\ndata: y\n", []got{{"", "x", ""}}, io.ErrUnexpectedEOF},
		{"truncated line", "data: x", nil, io.ErrUnexpectedEOF},
		{"empty", "", nil, nil},
		{"invalid utf8 and NUL kept", "data: \xff\x00z\n\n", []got{{"", "\xff\x00z", ""}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, chunk := range []int{0, 1, 3} {
				var src io.Reader = strings.NewReader(tt.in)
				if chunk > 0 {
					src = &slowReader{s: tt.in, n: chunk}
				}
				out, err := readAll(t, NewReader(src))
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("chunk %d: err = %v, want %v", chunk, err, tt.wantErr)
				}
				if len(out) != len(tt.want) {
					t.Fatalf("chunk %d: got %q, want %q", chunk, out, tt.want)
				}
				for i := range out {
					if out[i] != tt.want[i] {
						t.Errorf("chunk %d: event %d = %q, want %q", chunk, i, out[i], tt.want[i])
					}
				}
			}
		})
	}
}

type slowReader struct {
	s string
	n int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := min(r.n, len(p), len(r.s))
	copy(p, r.s[:n])
	r.s = r.s[n:]
	return n, nil
}

func TestReaderLimits(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("data: " + strings.Repeat("x", 100) + "\n\n"))
	r.MaxLine = 50
	_, err := r.Next()
	var se *Error
	if !errors.As(err, &se) || se.Line != 1 {
		t.Fatalf("long line: err = %v", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("error not sticky: %v", err2)
	}
	r = NewReader(strings.NewReader(strings.Repeat("data: xxxxxxxxxx\n", 20) + "\n"))
	r.MaxEvent = 100
	if _, err := r.Next(); !errors.As(err, &se) {
		t.Fatalf("big event: err = %v", err)
	}
}

func TestRawPreserved(t *testing.T) {
	t.Parallel()
	in := ": c\r\nevent: e\r\ndata: x\r\n\r\n"
	ev, err := NewReader(strings.NewReader(in)).Next()
	if err != nil {
		t.Fatal(err)
	}
	if string(ev.Raw) != in {
		t.Fatalf("raw = %q, want %q", ev.Raw, in)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	evs := []*Event{
		{Event: "message_start", Data: []byte(`{"x":1}`)},
		{Data: []byte("line1\nline2\r\nline3")},
		{ID: "42", Data: []byte("[DONE]")},
	}
	for _, ev := range evs {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	out, err := readAll(t, NewReader(&buf))
	if err != nil {
		t.Fatal(err)
	}
	want := []got{{"message_start", `{"x":1}`, ""}, {"", "line1\nline2\nline3", ""}, {"", "[DONE]", "42"}}
	for i := range want {
		if out[i] != want[i] {
			t.Errorf("event %d = %q, want %q", i, out[i], want[i])
		}
	}
	if err := w.Write(&Event{Event: "a\nb"}); err == nil {
		t.Error("event type with newline accepted")
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: x\r\ndata: a\r\ndata: b\r\n\r\n: c\n"))
	f.Add([]byte("data: x\rid: 1\rretry: 10\r\r"))
	f.Add([]byte("data: a\n\n  data: {\"b\":1}\n\n"))
	f.Add([]byte("\tdata: x\n\n \xc2\xa0data: y\n\n"))
	f.Add([]byte("   \n\ndata: z\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		r.MaxLine, r.MaxEvent = 1<<10, 4<<10
		var evs []*Event
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if len(ev.Raw) > 4<<10+1<<10+2 {
				t.Fatalf("event raw %d bytes beyond limit", len(ev.Raw))
			}
			evs = append(evs, ev)
		}
		// Round trip: what the Writer writes reads back the same.
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, ev := range evs {
			if bytes.ContainsAny([]byte(ev.Event), "\r\n") {
				t.Fatalf("event type with line break: %q", ev.Event)
			}
			if err := w.Write(&Event{Event: ev.Event, Data: ev.Data}); err != nil {
				t.Fatal(err)
			}
		}
		back, err := readAll(t, NewReader(&buf))
		if err != nil {
			t.Fatal(err)
		}
		if len(back) != len(evs) {
			t.Fatalf("round trip: %d events, want %d", len(back), len(evs))
		}
		for i := range evs {
			if back[i].event != evs[i].Event || back[i].data != string(evs[i].Data) {
				t.Fatalf("round trip event %d: %q vs %q/%q", i, back[i], evs[i].Event, evs[i].Data)
			}
		}
	})
}

// TestHardening08ReaderLeadingSpace: a field line that starts with white
// space is ignored by the specification but read by clients that trim
// lines (go-openai): the Reader refuses it rather than ignore it. A line
// of white space only is an unknown field, ignored by both.
func TestHardening08ReaderLeadingSpace(t *testing.T) {
	for _, in := range []string{"  data: {}\n\n", "\tdata: {}\n\n", "\u00a0data: {}\n\n", "data: a\n data: b\n\n", "  event: x\n\n"} {
		_, err := NewReader(strings.NewReader(in)).Next()
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("%q: %v, want *Error", in, err)
		}
	}
	ev, err := NewReader(strings.NewReader("   \ndata: ok\n\n")).Next()
	if err != nil || string(ev.Data) != "ok" {
		t.Errorf("white-space-only line: %v %v", ev, err)
	}
}
