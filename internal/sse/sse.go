// Package sse reads and writes Server-Sent Events streams
// (https://html.spec.whatwg.org/multipage/server-sent-events.html) as the
// OpenAI and Anthropic APIs send them.
//
// The [Reader] is incremental: it returns one event per call, accepts LF, CR
// and CRLF line endings, joins multi-line data fields with "\n", skips
// comments, and refuses lines and events larger than its limits, and field
// lines that start with white space (which the specification ignores but
// clients that trim lines read), with a typed error instead of buffering
// without bound or reading a stream otherwise than a client. Each event also keeps its
// raw bytes so that a proxy can forward it unchanged.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
)

// Default limits of a Reader.
const (
	DefaultMaxLine  = 4 << 20
	DefaultMaxEvent = 8 << 20
)

// Event is one dispatched SSE event.
type Event struct {
	// Event is the event type ("" when the stream did not name it; the
	// spec's default type is "message").
	Event string
	// Data is the data fields joined with "\n".
	Data []byte
	// ID is the last event ID field of this event ("" when none), and
	// HasID reports whether the event carried one.
	ID    string
	HasID bool
	// Retry is the reconnection time in milliseconds, -1 when absent.
	Retry int
	// Raw is the event as it appeared on the wire, comments and the blank
	// line that ended it included.
	Raw []byte
}

// Error reports a malformed or over-sized stream.
type Error struct {
	// Line is the 1-based line number where the problem was found.
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("sse: line %d: %s", e.Line, e.Msg) }

// Reader reads events from a stream. It is not safe for concurrent use.
type Reader struct {
	br       *bufio.Reader
	MaxLine  int // longest accepted line in bytes; 0 means DefaultMaxLine
	MaxEvent int // largest accepted event in bytes; 0 means DefaultMaxEvent
	line     int
	pendCR   bool // last line ended with CR: a following LF belongs to it
	err      error
}

// NewReader returns a Reader with the default limits.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10)}
}

// readLine returns the next line without its terminator, and the raw bytes
// including the terminator. eof reports a final line without terminator.
func (r *Reader) readLine(raw *[]byte) (line []byte, err error) {
	maxLine := r.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	start := len(*raw)
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			if err == io.EOF && len(*raw) > start {
				r.line++
				return (*raw)[start:], io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if r.pendCR {
			r.pendCR = false
			if b == '\n' {
				*raw = append(*raw, b)
				start++
				continue
			}
		}
		switch b {
		case '\n':
			*raw = append(*raw, b)
			r.line++
			return (*raw)[start : len(*raw)-1], nil
		case '\r':
			*raw = append(*raw, b)
			r.line++
			end := len(*raw) - 1
			// Take the LF of a CRLF now when it has already arrived, so
			// that Raw ends where the event ends; otherwise skip it later.
			if r.br.Buffered() > 0 {
				if nb, _ := r.br.Peek(1); nb[0] == '\n' {
					_, _ = r.br.Discard(1)
					*raw = append(*raw, '\n')
				}
			} else {
				r.pendCR = true
			}
			return (*raw)[start:end], nil
		}
		*raw = append(*raw, b)
		if len(*raw)-start > maxLine {
			return nil, &Error{Line: r.line + 1, Msg: fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		// Fast path: copy the rest of a long line from the buffer in one go.
		if buf, _ := r.br.Peek(r.br.Buffered()); len(buf) > 0 {
			i := bytes.IndexAny(buf, "\r\n")
			if i < 0 {
				i = len(buf)
			}
			if len(*raw)-start+i > maxLine {
				i = maxLine - (len(*raw) - start) + 1
				if i < 0 {
					i = 0
				}
			}
			*raw = append(*raw, buf[:i]...)
			_, _ = r.br.Discard(i)
			if len(*raw)-start > maxLine {
				return nil, &Error{Line: r.line + 1, Msg: fmt.Sprintf("line longer than %d bytes", maxLine)}
			}
		}
	}
}

// Next returns the next event. At the end of the stream it returns io.EOF; a
// stream that ends inside an event dispatches nothing for it (as the spec
// says) and returns io.ErrUnexpectedEOF so that a truncated stream is
// visible. Limits and malformed fields give an *Error; after any error Next
// keeps returning it.
func (r *Reader) Next() (*Event, error) {
	if r.err != nil {
		return nil, r.err
	}
	ev, err := r.next()
	if err != nil {
		r.err = err
	}
	return ev, err
}

func (r *Reader) next() (*Event, error) {
	maxEvent := r.MaxEvent
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	ev := &Event{Retry: -1}
	var raw []byte
	hasData := false
	sawField := false
	for {
		line, err := r.readLine(&raw)
		if err == io.EOF {
			if sawField {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			// A final unterminated line: the event is incomplete.
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		if len(raw) > maxEvent {
			return nil, &Error{Line: r.line, Msg: fmt.Sprintf("event larger than %d bytes", maxEvent)}
		}
		if len(line) == 0 {
			if !hasData && ev.Event == "" && !ev.HasID && ev.Retry < 0 {
				// Blank lines between events, or comment-only blocks:
				// nothing to dispatch.
				if !sawField {
					raw = raw[:0]
				}
				sawField = false
				continue
			}
			ev.Raw = raw
			if !hasData {
				ev.Data = nil
			}
			return ev, nil
		}
		if line[0] == ':' {
			sawField = true
			continue
		}
		if rest := bytes.TrimLeftFunc(line, unicode.IsSpace); len(rest) < len(line) && len(bytes.TrimSpace(rest)) > 0 {
			// The specification ignores such a line (its field name is
			// not "data"), but clients that trim lines (go-openai) read
			// it: a reader that ignored it would let through what it did
			// not read.
			return nil, &Error{Line: r.line, Msg: "a field line that starts with white space"}
		}
		sawField = true
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "data":
			if hasData {
				ev.Data = append(ev.Data, '\n')
			}
			ev.Data = append(ev.Data, value...)
			hasData = true
		case "event":
			ev.Event = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID, ev.HasID = string(value), true
			}
		case "retry":
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 {
				ev.Retry = n
			}
		default:
			// Unknown fields are ignored, as the spec says.
		}
	}
}

// ErrClosedWriter is returned by a Writer used after a write error.
var ErrClosedWriter = errors.New("sse: writer failed earlier")

// Writer writes events. It is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	buf []byte
	err error
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes ev (its Event, ID, Retry and Data fields; Raw is ignored),
// splitting Data on newlines into several data lines, and ends it with a
// blank line. Event and ID must not contain line breaks.
func (w *Writer) Write(ev *Event) error {
	if w.err != nil {
		return ErrClosedWriter
	}
	if bytes.ContainsAny([]byte(ev.Event), "\r\n") || bytes.ContainsAny([]byte(ev.ID), "\r\n\x00") {
		return errors.New("sse: event type or id contains a line break")
	}
	b := w.buf[:0]
	if ev.Event != "" {
		b = append(b, "event: "...)
		b = append(b, ev.Event...)
		b = append(b, '\n')
	}
	if ev.HasID || ev.ID != "" {
		b = append(b, "id: "...)
		b = append(b, ev.ID...)
		b = append(b, '\n')
	}
	if ev.Retry >= 0 && ev.Retry != 0 {
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, int64(ev.Retry), 10)
		b = append(b, '\n')
	}
	data := ev.Data
	for {
		i := bytes.IndexAny(data, "\r\n")
		b = append(b, "data: "...)
		if i < 0 {
			b = append(b, data...)
			b = append(b, '\n')
			break
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	b = append(b, '\n')
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		w.err = err
		return err
	}
	return nil
}

// WriteRaw writes already-encoded event bytes unchanged.
func (w *Writer) WriteRaw(raw []byte) error {
	if w.err != nil {
		return ErrClosedWriter
	}
	if _, err := w.w.Write(raw); err != nil {
		w.err = err
		return err
	}
	return nil
}
