package sdk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aishield/aishield/internal/sse"
	"github.com/aishield/aishield/internal/wire"
	"github.com/aishield/aishield/sdk/inbound"
)

// StreamOptions tunes Exchange.Stream.
type StreamOptions struct {
	// ErrorEvent, when true, ends every stream that does not end normally
	// with one SSE error event in the provider's format, for a remote
	// client (a proxy's): a stream cut for contamination
	// (aishield_contamination) or a failure of the guard
	// (aishield_guard_error), one whose upstream failed mid-way
	// (upstream_error, code upstream_timeout or upstream_unavailable), and
	// one that ended without its terminal event (upstream_error, code
	// stream_truncated). Read then returns io.EOF, so that the response
	// carrying the stream ends cleanly and the client reads the event. A
	// stream the guard let through unchecked (failure_mode: open) is not
	// judged truncated: the guard did not parse it to its end.
	//
	// In-process callers leave it false: Read then returns the typed error
	// (*ContaminationError, *GuardError) or the upstream's read error, so
	// that their client library surfaces it itself, and a stream without
	// its terminal event ends with io.EOF (the verifier is told it was
	// truncated).
	ErrorEvent bool
}

// Stream filters an SSE response body: it restores this exchange's
// placeholders (also when one is split across events), feeds the text to
// the verifier and releases each event only once the verifier vouches for
// its text. On a blocking signal the stream is cut: Read returns
// *ContaminationError and nothing unverified is released. The returned
// reader closes body when closed or done.
func (x *Exchange) Stream(ctx context.Context, body io.ReadCloser, opts StreamOptions) io.ReadCloser {
	x.Streamed = true
	if x.info != nil {
		x.info.Streamed = true
	}
	f := &streamFilter{x: x, ctx: ctx, src: body, r: sse.NewReader(body), opts: opts,
		pending: map[string]string{}, tmpl: map[string]template{}, chanSum: map[string]hash.Hash{}, fed: map[[sha256.Size]byte]bool{}}
	f.w = sse.NewWriter(&f.out)
	return f
}

type template struct {
	typ  string
	data []byte
	seg  int
}

type item struct {
	ev      *sse.Event // original event (nil for a synthesized one)
	typ     string
	data    []byte // new data when modified or synthesized
	text    string // the verified text the item carries (not released yet)
	textEnd int    // offset in the verified text at the end of this item
}

type streamFilter struct {
	x    *Exchange
	ctx  context.Context
	src  io.ReadCloser
	r    *sse.Reader
	opts StreamOptions

	out bytes.Buffer
	w   *sse.Writer

	pending map[string]string   // held-back raw text per channel
	tmpl    map[string]template // last delta event per channel
	queue   []item
	written int // bytes of text fed to the verifier
	closed  bool
	sawDone bool
	sum     wire.Summary // the stream's metadata, folded
	// prompt is the provider's prompt token count reported before the
	// end (Anthropic's message_start), waiting to be given to the
	// verifier; promptSeen says the first such count was checked.
	prompt     int
	promptSeen bool
	err        error // sticky: returned once out is drained
	open       bool  // failed open: pass events unchecked from now on
	// chanSum hashes the verified text of each channel so far, and fed
	// the texts outside channels fed to the verifier already: a text an
	// event repeats (a ".done" event's full text, a response object
	// echoed by several events) is verified once.
	chanSum map[string]hash.Hash
	fed     map[[sha256.Size]byte]bool
}

func (f *streamFilter) Close() error {
	if f.err == nil {
		f.err = errors.New("sdk: stream closed")
		if !f.closed {
			f.x.Fail(f.x.status)
		}
	}
	return f.src.Close()
}

func (f *streamFilter) Read(p []byte) (int, error) {
	for f.out.Len() == 0 && f.err == nil {
		f.step()
	}
	if f.out.Len() > 0 {
		return f.out.Read(p)
	}
	return 0, f.err
}

// step reads and handles one upstream event.
//
// What goes out is written from what the guard parsed (event type, ID and
// data; data on one line), never the upstream's raw bytes: comments,
// unknown fields, retry fields and events without data (which no client
// dispatches) are dropped. Nothing after the terminal event ([DONE],
// message_stop, response.completed) is read or delivered: the stream ends
// there.
func (f *streamFilter) step() {
	if f.sawDone {
		_ = f.src.Close()
		f.finish(io.EOF)
		return
	}
	ev, err := f.r.Next()
	if err != nil {
		f.finish(err)
		return
	}
	if len(ev.Data) == 0 {
		return
	}
	if f.open || f.closed {
		f.enqueueRaw(ev)
		f.release(true)
		return
	}
	if !eventName(ev.Event) {
		if f.failOpen(StageStream) {
			f.release(true)
			f.enqueueRaw(ev)
			f.release(true)
			return
		}
		f.cutGuard(StageStream, errors.New("an SSE event type that is not a name"))
		return
	}
	se, perr := wire.ParseStreamEvent(ev.Event, ev.Data)
	if perr != nil {
		if f.failOpen(StageStream) {
			f.release(true)
			f.enqueueRaw(ev)
			f.release(true)
			return
		}
		f.cutGuard(StageStream, perr)
		return
	}
	se.Fold(&f.sum) // the metadata the verifier gets at the end
	modified := false
	if f.x.stripUsage {
		if se.UsageOnly() {
			// Asked for by the guard, not by the caller: verified
			// (folded into the end above) but not delivered.
			f.release(false)
			return
		}
		modified = se.DropNullUsage()
	}
	var early []inbound.Signal
	if se.Usage.PromptTokens > 0 && !f.promptSeen {
		// A prompt count before the text (Anthropic's message_start) is
		// checked at once: a prompt the provider did not process is
		// refused before any of its answer goes out.
		// The exact check (a destination with a declared tokenizer)
		// first; else the verifier's, given the count with the next text.
		f.promptSeen = true
		tight, err := f.x.tightUsage(inbound.End{HasUsage: true, PromptTokens: se.Usage.PromptTokens}, nil)
		if err != nil && !f.failOpen(StageVerify) {
			f.cutGuard(StageVerify, err)
			return
		}
		if len(tight) > 0 {
			f.x.usageFlagged = true
			early = tight
		} else {
			f.prompt = se.Usage.PromptTokens
		}
	}
	ended := func(ch string) bool {
		if se.EndsAll {
			return true
		}
		for _, e := range se.Ends {
			if ch == e || strings.HasPrefix(ch, e+"/") {
				return true
			}
		}
		return false
	}
	// Held-back text of channels this event closes (and does not carry)
	// goes out first, in events of its own.
	inEvent := map[string]bool{}
	for _, s := range se.Segments {
		if s.Channel != "" {
			inEvent[s.Channel] = true
		}
	}
	for _, ch := range sortedChannels(f.pending) {
		if ended(ch) && !inEvent[ch] {
			if !f.flush(ch) {
				return
			}
		}
	}
	sigs := early
	var text, whole strings.Builder
	for i, seg := range se.Segments {
		src := seg.Text
		if seg.Channel != "" {
			src = f.pending[seg.Channel] + seg.Text
			if ended(seg.Channel) {
				src = f.x.vault.trimCut(src)
				f.pending[seg.Channel] = ""
			} else {
				hold := f.x.vault.holdBack(src)
				f.pending[seg.Channel] = src[len(src)-hold:]
				src = src[:len(src)-hold]
			}
			f.tmpl[seg.Channel] = template{typ: ev.Event, data: bytes.Clone(ev.Data), seg: i}
		}
		res := f.x.vault.restore(src, seg.JSON)
		if seg.Channel != "" {
			sigs = append(sigs, foreignSignals(res.foreign, f.written+text.Len())...)
			text.WriteString(res.text)
			f.sumChannel(seg.Channel, res.text)
		} else {
			sigs = append(sigs, foreignSignals(res.foreign, f.written)...)
			if f.unverified(res.text) {
				whole.WriteByte('\n')
				whole.WriteString(res.text)
				whole.WriteByte('\n')
			}
		}
		if res.text != seg.Text {
			if err := se.Set(i, res.text); err != nil {
				f.cutGuard(StageStream, err)
				return
			}
			modified = true
		}
	}
	it := item{ev: ev, typ: ev.Event, data: ev.Data}
	if modified || se.Done {
		data, err := se.Encode()
		if err != nil {
			f.cutGuard(StageStream, err)
			return
		}
		it.data = data
	}
	// Texts outside channels (whole texts: a content block's start, a
	// message or response object, an error message, log-probabilities'
	// tokens, annotations) are verified after the event's deltas.
	text.WriteString(whole.String())
	if !f.enqueue(it, text.String(), se.ID, se.Model, sigs) {
		return
	}
	if se.Done {
		f.sawDone = true
		f.closeSession()
		return
	}
	f.release(false)
}

func sortedChannels(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if v != "" {
			out = append(out, k)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// flush releases the held-back text of channel ch as an event synthesized
// from the channel's last event.
func (f *streamFilter) flush(ch string) bool {
	held := f.x.vault.trimCut(f.pending[ch])
	delete(f.pending, ch)
	if held == "" {
		return true
	}
	t := f.tmpl[ch]
	se, err := wire.ParseStreamEvent(t.typ, t.data)
	if err != nil {
		f.cutGuard(StageStream, err)
		return false
	}
	res := f.x.vault.restore(held, se.Segments[t.seg].JSON)
	f.sumChannel(ch, res.text)
	data, err := se.Only(t.seg, res.text)
	if err != nil {
		f.cutGuard(StageStream, err)
		return false
	}
	return f.enqueue(item{typ: t.typ, data: data}, res.text, "", "", foreignSignals(res.foreign, f.written))
}

// enqueue queues an item whose verified text is text, feeding text to the
// verifier and filing signals. It returns false when the stream was cut.
func (f *streamFilter) enqueue(it item, text, id, model string, sigs []inbound.Signal) bool {
	if f.x.session != nil && !f.closed && (text != "" || id != "" || f.prompt > 0) {
		d := inbound.Delta{Text: text, ID: id, Model: model, PromptTokens: f.prompt}
		f.prompt = 0
		s, err := safeCall(func() ([]inbound.Signal, error) { return f.x.session.Write(f.ctx, d) })
		if err != nil {
			if f.failOpen(StageVerify) {
				f.closed = true
			} else {
				f.cutGuard(StageVerify, err)
				return false
			}
		}
		sigs = append(sigs, s...)
	}
	f.written += len(text)
	it.text, it.textEnd = text, f.written
	f.queue = append(f.queue, it)
	if blocking := f.x.apply(sigs); len(blocking) > 0 {
		if f.x.replay {
			f.x.blocked = append(f.x.blocked, blocking...) // judged whole: see Guard.Replay
			return true
		}
		f.cut(f.x.contamination(blocking))
		return false
	}
	return true
}

func (f *streamFilter) enqueueRaw(ev *sse.Event) {
	f.queue = append(f.queue, item{ev: ev, typ: ev.Event, textEnd: f.written})
}

// release writes out the queued items the verifier vouches for (all of
// them when all is true). The text the verifier vouches for goes out at
// once: of an item it vouches for in part, the vouched start goes out in
// an event of its own (see splitItem) and the rest waits.
func (f *streamFilter) release(all bool) {
	vouched := f.written
	if !all && !f.closed && f.x.session != nil {
		hb := 0
		if v, err := safeCall(func() (int, error) { return f.x.session.HoldBack(), nil }); err == nil {
			hb = v
		}
		vouched -= max(hb, 0)
	}
	n := 0
	for ; n < len(f.queue); n++ {
		it := &f.queue[n]
		if !all && it.textEnd > vouched {
			if cut := vouched - (it.textEnd - len(it.text)); cut > 0 {
				if head, rest, k, ok := splitItem(it, cut); ok {
					if !f.writeItem(&item{typ: it.typ, data: head}) {
						return
					}
					it.data, it.text = rest, it.text[k:]
				}
			}
			break
		}
		if !f.writeItem(it) {
			return
		}
	}
	f.queue = f.queue[n:]
}

// splitItem splits it, whose text is vouched for up to cut bytes, into the
// data of an event carrying that start (the event reduced to that delta:
// no finish reason, no usage, no SSE ID) and the data of it carrying the
// rest; k is where the text was split (cut, back to a rune boundary). Only
// an event whose one text is a delta of plain text is split: not tool-call
// JSON, and not one with log-probabilities, which would then go out twice.
// ok is false for the others, which wait whole.
func splitItem(it *item, cut int) (head, rest []byte, k int, ok bool) {
	for cut > 0 && !utf8.RuneStart(it.text[cut]) {
		cut--
	}
	payload := it.data
	if payload == nil && it.ev != nil {
		payload = it.ev.Data
	}
	if cut <= 0 || payload == nil || hasLogprobs(payload) {
		return nil, nil, 0, false
	}
	se, err := wire.ParseStreamEvent(it.typ, payload)
	if err != nil {
		return nil, nil, 0, false
	}
	seg := -1
	for i, sg := range se.Segments {
		if sg.Text == "" {
			continue
		}
		if seg >= 0 || sg.Channel == "" || sg.JSON || sg.Text != it.text {
			return nil, nil, 0, false
		}
		seg = i
	}
	if seg < 0 {
		return nil, nil, 0, false
	}
	if head, err = se.Only(seg, it.text[:cut]); err != nil {
		return nil, nil, 0, false
	}
	if se, err = wire.ParseStreamEvent(it.typ, payload); err != nil || se.Set(seg, it.text[cut:]) != nil {
		return nil, nil, 0, false
	}
	if rest, err = se.Encode(); err != nil {
		return nil, nil, 0, false
	}
	return head, rest, cut, true
}

// hasLogprobs reports whether an event's JSON data has a "logprobs" member
// that is not null.
func hasLogprobs(data []byte) bool {
	for rest := data; ; {
		i := bytes.Index(rest, []byte(`"logprobs"`))
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len(`"logprobs"`):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' && !bytes.HasPrefix(bytes.TrimLeft(rest[1:], " \t\r\n"), []byte("null")) {
			return true
		}
	}
}

// writeItem writes it to the output; false when that failed (f.err set).
// The event is encoded afresh: its type, its ID when it is a name, and its
// data, on one line when it is JSON (a JSON text's line breaks are white
// space), so that clients that read each data line alone (go-openai) and
// those that join them (the SSE specification) read the same.
func (f *streamFilter) writeItem(it *item) bool {
	data := it.data
	if data == nil && it.ev != nil {
		data = it.ev.Data
	}
	ev := &sse.Event{Event: it.typ, Data: data, Retry: -1}
	if !f.open {
		ev.Data = oneLine(data)
	}
	if it.ev != nil && eventName(it.ev.ID) {
		ev.ID, ev.HasID = it.ev.ID, it.ev.HasID
	}
	if err := f.w.Write(ev); err != nil {
		f.err = err
		return false
	}
	return true
}

// oneLine returns JSON data with its line breaks (white space between
// tokens: a JSON string cannot hold a raw one) turned into spaces.
func oneLine(data []byte) []byte {
	if !bytes.ContainsAny(data, "\r\n") {
		return data
	}
	out := bytes.Clone(data)
	for i, c := range out {
		if c == '\r' || c == '\n' {
			out[i] = ' '
		}
	}
	return out
}

// eventName reports whether s is empty or a name as the APIs use for SSE
// event types and IDs: at most 256 letters, digits and "._-:".
func eventName(s string) bool {
	if len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == ':') {
			return false
		}
	}
	return true
}

// sumChannel adds text to the verified text of channel ch.
func (f *streamFilter) sumChannel(ch, text string) {
	h := f.chanSum[ch]
	if h == nil {
		h = sha256.New()
		f.chanSum[ch] = h
	}
	h.Write([]byte(text))
}

// unverified reports whether text, outside channels, is still to be
// verified: not empty, not fed before, not the whole verified text of a
// channel (as ".done" events repeat it). It marks it fed.
func (f *streamFilter) unverified(text string) bool {
	if text == "" {
		return false
	}
	sum := sha256.Sum256([]byte(text))
	if f.fed[sum] {
		return false
	}
	for _, h := range f.chanSum {
		if bytes.Equal(h.Sum(nil), sum[:]) {
			return false
		}
	}
	f.fed[sum] = true
	return true
}

// closeSession ends verification and releases the rest.
func (f *streamFilter) closeSession() {
	for _, ch := range sortedChannels(f.pending) {
		if !f.flush(ch) {
			return
		}
	}
	if f.closed {
		f.release(true)
		return
	}
	f.closed = true
	sigs, err := f.x.closeSession(f.ctx, endOf(f.sum, !f.sawDone), nil)
	if err != nil && !f.failOpen(StageVerify) {
		f.cutGuard(StageVerify, err)
		return
	}
	if blocking := append(f.x.blocked, f.x.apply(sigs)...); len(blocking) > 0 {
		f.cut(f.x.contamination(blocking))
		return
	}
	f.release(true)
	f.x.settle(false)
	f.x.g.record(f.x)
}

// finish handles the end of the upstream body (err is io.EOF or the read
// error). With StreamOptions.ErrorEvent a stream that broke or stopped
// short ends with an error event, and Read with io.EOF.
func (f *streamFilter) finish(err error) {
	var se *sse.Error
	if errors.As(err, &se) {
		if !f.failOpen(StageStream) {
			f.cutGuard(StageStream, err)
			return
		}
		f.release(true)
		f.x.g.record(f.x)
	} else if !f.closed {
		f.closeSession()
		if f.err != nil {
			return
		}
	}
	f.release(true)
	f.err = err // io.EOF without the terminal event: the verifier was told it was truncated
	if !f.opts.ErrorEvent {
		return
	}
	switch {
	case f.sawDone:
		// Complete: whatever broke after the terminal event took nothing.
	case !errors.Is(err, io.EOF):
		f.writeErrorEvent(upstreamFailure(f.x.Destination, err))
	case !f.x.FailedOpen:
		f.writeErrorEvent("upstream_error", "stream_truncated", fmt.Sprintf(
			"aishield: the stream of upstream %s ended before its terminal event (truncated); the answer is incomplete", f.x.Destination))
	}
	f.err = io.EOF
}

// upstreamFailure describes, for an error event, an upstream that failed
// mid-stream: a timeout (an error with Timeout() true, or a deadline), or
// any other read failure, named without the URL it may carry.
func upstreamFailure(dest string, err error) (typ, code, msg string) {
	var te interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &te) && te.Timeout()) {
		return "upstream_error", "upstream_timeout", fmt.Sprintf("aishield: upstream %s timed out mid-stream; the answer is incomplete", dest)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := err.Error()
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return "upstream_error", "upstream_unavailable", fmt.Sprintf("aishield: upstream %s failed mid-stream (%s); the answer is incomplete", dest, s)
}

func (f *streamFilter) failOpen(stage Stage) bool {
	if !f.x.g.policy.FailOpen {
		return false
	}
	f.x.FailedOpen, f.x.failNote = true, stage
	f.open = true
	return true
}

// cut ends the stream with err: nothing queued is released.
func (f *streamFilter) cut(err error) {
	f.queue = nil
	f.pending = map[string]string{}
	if f.x.session != nil && !f.closed {
		f.closed = true
		_, _ = safeCall(func() ([]inbound.Signal, error) {
			return f.x.session.Close(f.ctx, inbound.End{Refused: true})
		})
	}
	f.closed = true
	var ce *ContaminationError
	if errors.As(err, &ce) {
		f.x.settle(true)
	} else {
		f.x.verdict = VerdictError
	}
	f.x.g.record(f.x)
	f.err = err
	if f.opts.ErrorEvent {
		f.writeErrorEvent(cutEvent(err))
		f.err = io.EOF
	}
	_ = f.src.Close()
}

func (f *streamFilter) cutGuard(stage Stage, err error) {
	f.x.failNote = stage
	f.cut(&GuardError{Stage: stage, Exchange: f.x.ID, Err: err})
}

// cutEvent describes a cut for an error event.
func cutEvent(err error) (typ, code, msg string) {
	typ = "aishield_guard_error"
	var ce *ContaminationError
	if errors.As(err, &ce) {
		typ = "aishield_contamination"
	}
	return typ, typ, err.Error()
}

// writeErrorEvent writes an SSE error event in the provider's format:
// Anthropic's event: error with {"type":"error","error":{type,message}},
// or OpenAI's data: {"error":{type,code,message}}.
func (f *streamFilter) writeErrorEvent(typ, code, msg string) {
	if f.x.kind == wire.KindAnthropic {
		data, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
		_ = f.w.Write(&sse.Event{Event: "error", Data: data, Retry: -1})
		return
	}
	data, _ := json.Marshal(map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg}})
	_ = f.w.Write(&sse.Event{Data: data, Retry: -1})
}
