package pagedcache

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Request headers understood by the server.
const (
	// HeaderFault enables faults for one request: a comma-separated list of
	// fault names (see Faults). Ignored when Options.IgnoreFaultHeader is set.
	HeaderFault = "X-PagedCache-Fault"
	// HeaderAbort set to "prefill" aborts the request while its first prefill
	// chunk is being written, as a client disconnect would.
	HeaderAbort = "X-PagedCache-Abort"
	// HeaderTenant names the tenant; it wins over the API key.
	HeaderTenant = "X-Tenant-ID"
)

func (s *Server) routes() {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serveGenerate(w, r, "chat") })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.serveGenerate(w, r, "completion") })
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) { s.serveGenerate(w, r, "messages") })
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /healthz", serveHealth)
	mux.HandleFunc("GET /health", serveHealth)
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.HandleFunc("GET /debug/requests/{id}", s.serveDebugRequest)
	mux.HandleFunc("GET /debug/pages", s.serveDebugPages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		endpoint := ""
		if strings.HasPrefix(r.URL.Path, "/v1/messages") || r.Header.Get(HeaderAnthropicVersion) != "" {
			endpoint = "messages"
		}
		writeError(w, endpoint, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found",
			message: "no such endpoint: " + r.Method + " " + r.URL.Path})
	})
	s.mux = mux
}

// serveHealth answers the liveness probe (/healthz, and /health as an
// alias): 200 "ok".
func serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

// ServeHTTP serves the OpenAI-compatible API, Anthropic's Messages API and
// the debug endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.Log == nil || r.Method == http.MethodPost {
		s.mux.ServeHTTP(w, r) // generation requests log their own, richer line
		return
	}
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.mux.ServeHTTP(sw, r)
	s.writeLog(fmt.Sprintf("%s %s %q %d dur=%s\n", time.Now().UTC().Format(time.RFC3339Nano), r.Method,
		r.URL.Path, sw.status, time.Since(start).Round(time.Microsecond)))
}

// statusWriter records the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *Server) writeLog(line string) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, _ = io.WriteString(s.opts.Log, line)
}

// tenantOf names the request's tenant: X-Tenant-ID, else the API key's
// tenant (the Authorization bearer token, or Anthropic's x-api-key), else
// "anonymous".
func (s *Server) tenantOf(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get(HeaderTenant)); t != "" {
		return t
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(key) == "" {
		key = r.Header.Get("X-Api-Key")
	}
	if strings.TrimSpace(key) != "" {
		key = strings.TrimSpace(key)
		if t, ok := s.opts.APIKeys[key]; ok {
			return t
		}
		sum := sha256.Sum256([]byte(key))
		return "key-" + hex.EncodeToString(sum[:6])
	}
	return "anonymous"
}

func (s *Server) faultsOf(r *http.Request) (faultSet, error) {
	var fs faultSet
	for _, f := range s.opts.Faults {
		fs |= faultBit(f)
	}
	if s.opts.IgnoreFaultHeader {
		return fs, nil
	}
	for _, h := range r.Header.Values(HeaderFault) {
		for part := range strings.SplitSeq(h, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			f, err := ParseFault(part)
			if err != nil {
				return 0, err
			}
			fs |= faultBit(f)
		}
	}
	return fs, nil
}

func (s *Server) serveGenerate(w http.ResponseWriter, r *http.Request, endpoint string) {
	start := time.Now()
	writeError := func(w http.ResponseWriter, e *apiError) { writeError(w, endpoint, e) }
	if endpoint == "messages" && strings.TrimSpace(r.Header.Get(HeaderAnthropicVersion)) == "" {
		writeError(w, &apiError{status: 400, typ: "invalid_request_error", param: "anthropic-version", code: "invalid_request",
			message: "anthropic-version: header is required"})
		return
	}
	tenant := s.tenantOf(r)
	if len(tenant) > 256 || !utf8.ValidString(tenant) {
		writeError(w, &apiError{status: 400, typ: "invalid_request_error", param: HeaderTenant, code: "invalid_tenant",
			message: HeaderTenant + " must be valid UTF-8 of at most 256 bytes"})
		return
	}
	faults, err := s.faultsOf(r)
	if err != nil {
		writeError(w, &apiError{status: 400, typ: "invalid_request_error", param: HeaderFault, code: "invalid_fault", message: err.Error()})
		return
	}
	abort := false
	switch v := r.Header.Get(HeaderAbort); v {
	case "":
	case "prefill":
		abort = true
	default:
		writeError(w, &apiError{status: 400, typ: "invalid_request_error", param: HeaderAbort, code: "invalid_abort",
			message: HeaderAbort + ` must be "prefill"`})
		return
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes), r.ContentLength, s.opts.MaxBodyBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
				message: fmt.Sprintf("the request body is over %d bytes", s.opts.MaxBodyBytes)})
			return
		}
		writeError(w, &apiError{status: 400, typ: "invalid_request_error", code: "invalid_body", message: "could not read the request body"})
		return
	}
	var gen generation
	switch endpoint {
	case "chat":
		gen, err = parseChatRequest(body)
	case "messages":
		gen, err = parseMessagesRequest(body)
	default:
		gen, err = parseCompletionRequest(body)
	}
	body = nil
	if err != nil {
		var re *requestError
		ae := &apiError{status: 400, typ: "invalid_request_error", code: "invalid_request", message: err.Error()}
		if errors.As(err, &re) {
			ae.param = re.param
		}
		writeError(w, ae)
		return
	}
	if gen.model == "" {
		gen.model = s.opts.ModelName
	}
	j := s.newJob(endpoint, tenant, faults)
	j.gen = gen
	j.abortPrefill = abort
	// Refuse a prompt that is surely too long without tokenizing it (a
	// million-token prompt takes over a second to tokenize on one core).
	if lb := tokenLowerBound(gen.prompt); lb > s.maxReqInput && !faults.has(FaultAutoTruncate) &&
		(lb >= s.opts.ContextLen || !faults.has(FaultOversizeStalePages)) {
		j.atLeast = lb
	} else {
		j.prompt = s.tokenize(gen.prompt)
	}
	gen.prompt = ""
	j.gen.prompt = ""

	var out *outcome
	var aerr *apiError
	if gen.stream {
		out, aerr = s.serveStream(w, r, j)
	} else {
		out, aerr = s.process(r.Context(), j, nil)
		switch {
		case aerr != nil:
		case endpoint != "messages":
			s.writeJSONAnswer(w, j, out)
		case out.finish == "abort":
			aerr = abortedError()
		default:
			s.writeMessage(w, j, out)
		}
	}
	if aerr != nil {
		w.Header().Set("X-Request-Id", j.id)
		writeError(w, aerr)
	}
	s.logRequest(r, j, out, aerr, time.Since(start))
}

// readBody reads r to its end, as io.ReadAll does, into a buffer sized for
// a body of size bytes (the request's Content-Length, -1 when unknown) up
// to limit.
func readBody(r io.Reader, size, limit int64) ([]byte, error) {
	if size < 0 || size > limit {
		return io.ReadAll(r)
	}
	// One byte more than announced, so that the read seeing the end does
	// not grow the buffer.
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// tokenize turns text into cl100k_base token IDs: the library's, without
// its split regex for ASCII text (internal/tokens).
func (s *Server) tokenize(text string) []uint32 {
	// English prose averages about four bytes a token.
	ids, err := s.tok.Encode(make([]uint32, 0, len(text)/4+8), text)
	if err != nil {
		// Encode only fails in strict UTF-8 mode, which is not used; fall
		// back to one token per byte rather than lose the input.
		ids = make([]uint32, len(text))
		for i := range text {
			ids[i] = uint32(text[i])
		}
	}
	return ids
}

// detok decodes token IDs to bytes (possibly ending inside a UTF-8 sequence).
func (s *Server) detok(toks []uint32) []byte {
	ids := make([]uint, len(toks))
	for i, t := range toks {
		ids[i] = uint(t)
	}
	text, err := s.codec.Decode(ids)
	if err != nil {
		return nil
	}
	return []byte(text)
}

func usageOf(out *outcome) *usage {
	return &usage{
		PromptTokens:        out.reportedPrompt,
		CompletionTokens:    len(out.tokens),
		TotalTokens:         out.reportedPrompt + len(out.tokens),
		PromptTokensDetails: promptTokensDetails{CachedTokens: out.cached},
	}
}

func (s *Server) writeJSONAnswer(w http.ResponseWriter, j *job, out *outcome) {
	text := s.answerText(out)
	finish := out.finish
	var v any
	if j.endpoint == "chat" {
		v = chatResponse{
			ID: j.id, Object: "chat.completion", Created: s.created, Model: j.gen.model,
			Choices: []chatChoice{{Message: &outMessage{Role: "assistant", Content: &text}, FinishReason: &finish}},
			Usage:   usageOf(out),
		}
	} else {
		v = completionResponse{
			ID: j.id, Object: "text_completion", Created: s.created, Model: j.gen.model,
			Choices: []completionChoice{{Text: text, FinishReason: &finish}},
			Usage:   usageOf(out),
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", j.id)
	_ = json.NewEncoder(w).Encode(v)
}

// serveStream answers with server-sent events: OpenAI's chunks ending with
// "data: [DONE]", or Anthropic's named events for /v1/messages. Errors found
// before the first event are returned for a JSON error answer.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, j *job) (*outcome, *apiError) {
	flusher, _ := w.(http.Flusher)
	bw := bufio.NewWriter(w)
	messages := j.endpoint == "messages"
	started := false
	feed := &answerFeed{s: s}
	for _, q := range j.gen.stop {
		feed.hold = max(feed.hold, len(q)-1)
	}
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if event != "" {
			bw.WriteString("event: ")
			bw.WriteString(event)
			bw.WriteByte('\n')
		}
		bw.WriteString("data: ")
		bw.Write(b)
		bw.WriteString("\n\n")
		if err := bw.Flush(); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	chunk := func(text *string, role string, finish *string) any {
		if j.endpoint == "chat" {
			var d outMessage
			d.Role, d.Content = role, text
			return chatResponse{ID: j.id, Object: "chat.completion.chunk", Created: s.created, Model: j.gen.model,
				Choices: []chatChoice{{Delta: &d, FinishReason: finish}}}
		}
		t := ""
		if text != nil {
			t = *text
		}
		return completionResponse{ID: j.id, Object: "text_completion", Created: s.created, Model: j.gen.model,
			Choices: []completionChoice{{Text: t, FinishReason: finish}}}
	}
	begin := func() error {
		if started {
			return nil
		}
		started = true
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Request-Id", j.id)
		if messages {
			w.Header().Set("Request-Id", j.id)
		}
		w.WriteHeader(http.StatusOK)
		switch j.endpoint {
		case "chat":
			empty := ""
			return send("", chunk(&empty, "assistant", nil))
		case "messages":
			v := anthropicEvent{Type: "message_start", Message: &anthropicResponse{
				ID: j.id, Type: "message", Role: "assistant", Model: j.gen.model, Content: []anthropicBlockOut{},
				Usage: anthropicUsageOf(j.prefilled, 0)}}
			if err := send(v.Type, v); err != nil {
				return err
			}
			zero := 0
			v = anthropicEvent{Type: "content_block_start", Index: &zero, ContentBlock: &anthropicBlockOut{Type: "text"}}
			if err := send(v.Type, v); err != nil {
				return err
			}
			return send("ping", anthropicEvent{Type: "ping"})
		}
		return nil
	}
	delta := func(text string) error {
		if text == "" {
			return nil
		}
		if messages {
			zero := 0
			v := anthropicEvent{Type: "content_block_delta", Index: &zero, Delta: &anthropicDelta{Type: "text_delta", Text: &text}}
			return send(v.Type, v)
		}
		return send("", chunk(&text, "", nil))
	}
	emit := func(toks []uint32) error {
		if err := begin(); err != nil {
			return err
		}
		return delta(feed.add(toks))
	}
	out, aerr := s.process(r.Context(), j, emit)
	if aerr == nil && messages && out.finish == "abort" && !started {
		aerr = abortedError()
	}
	if aerr != nil {
		if !started {
			return nil, aerr
		}
		return out, nil // cannot happen after the first event; never write an error into a stream
	}
	if err := begin(); err != nil {
		return out, nil
	}
	if delta(feed.rest(out)) != nil {
		return out, nil
	}
	if messages {
		zero := 0
		reason, seq := stopReasonOf(out)
		for _, v := range []anthropicEvent{
			{Type: "content_block_stop", Index: &zero},
			{Type: "message_delta", Delta: &anthropicDelta{StopReason: &reason, StopSequence: seq, stopFields: true},
				Usage: &anthropicDeltaUsage{OutputTokens: len(out.tokens)}},
			{Type: "message_stop"},
		} {
			if send(v.Type, v) != nil {
				return out, nil
			}
		}
		return out, nil
	}
	finish := out.finish
	if send("", chunk(nil, "", &finish)) != nil {
		return out, nil
	}
	if j.gen.includeUsage {
		var v any
		if j.endpoint == "chat" {
			v = chatResponse{ID: j.id, Object: "chat.completion.chunk", Created: s.created, Model: j.gen.model,
				Choices: []chatChoice{}, Usage: usageOf(out)}
		} else {
			v = completionResponse{ID: j.id, Object: "text_completion", Created: s.created, Model: j.gen.model,
				Choices: []completionChoice{}, Usage: usageOf(out)}
		}
		if send("", v) != nil {
			return out, nil
		}
	}
	bw.WriteString("data: [DONE]\n\n")
	bw.Flush()
	if flusher != nil {
		flusher.Flush()
	}
	return out, nil
}

// answerFeed turns the tokens a stream generates into the text of its
// events: whole UTF-8 characters only, and, when the request has stop
// sequences, never the last hold bytes (the longest stop sequence but one)
// until the answer is known, so that a stop sequence is never streamed.
type answerFeed struct {
	s    *Server
	hold int
	buf  []byte // the answer's bytes so far
	sent int    // bytes of buf already sent
}

// add appends toks and returns the text that can be sent now.
func (f *answerFeed) add(toks []uint32) string {
	f.buf = append(f.buf, f.s.detok(toks)...)
	end := len(f.buf) - f.hold
	if end <= f.sent {
		return ""
	}
	end = f.sent + validPrefix(f.buf[f.sent:end])
	text := strings.ToValidUTF8(string(f.buf[f.sent:end]), "\uFFFD")
	f.sent = end
	return text
}

// rest returns the text not sent yet of the finished answer out.
func (f *answerFeed) rest(out *outcome) string {
	end := len(f.buf)
	if out.stopSequence != "" {
		end = min(end, out.stopAt)
	}
	if end <= f.sent {
		return ""
	}
	text := strings.ToValidUTF8(string(f.buf[f.sent:end]), "\uFFFD")
	f.sent = end
	return text
}

// answerText is the text of a finished answer, cut before its stop
// sequence.
func (s *Server) answerText(out *outcome) string {
	b := s.detok(out.tokens)
	if out.stopSequence != "" {
		b = b[:min(len(b), out.stopAt)]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// validPrefix returns the length of b without a trailing incomplete UTF-8
// sequence (invalid bytes elsewhere are left for ToValidUTF8).
func validPrefix(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// writeError answers e in the format of endpoint: Anthropic's for
// "messages", OpenAI's for the others.
func writeError(w http.ResponseWriter, endpoint string, e *apiError) {
	if endpoint == "messages" {
		writeAnthropicError(w, e)
		return
	}
	body := errorBody{Error: apiErrorJSON{Message: e.message, Type: e.typ}}
	if e.param != "" {
		body.Error.Param = &e.param
	}
	if e.code != "" {
		body.Error.Code = &e.code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) serveModels(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
		MaxModelLen int    `json:"max_model_len"`
	}
	v := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{s.opts.ModelName, "model", s.created, "pagedcache", s.opts.ContextLen}}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serveDebugRequest(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.Request(r.PathValue("id"))
	if !ok {
		writeError(w, "", &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found",
			message: "no record of that request (unknown ID or dropped from history)"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rec)
}

func (s *Server) serveDebugPages(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s.Pages())
}

// logRequest writes one line per request; never prompt or answer text.
func (s *Server) logRequest(r *http.Request, j *job, out *outcome, aerr *apiError, d time.Duration) {
	if s.opts.Log == nil {
		return
	}
	status, prompt, completion, cached, finish := 200, 0, 0, 0, ""
	if out != nil {
		prompt, completion, cached, finish = out.reportedPrompt, len(out.tokens), out.cached, out.finish
	}
	if aerr != nil {
		status, finish = aerr.status, aerr.code
	}
	faults := "none"
	if fs := j.faults.list(); len(fs) > 0 {
		faults = joinFaults(fs)
	}
	line := fmt.Sprintf("%s %s %s %d id=%s tenant=%q tokens=%d reported_prompt=%d cached=%d completion=%d finish=%s faults=%q dur=%s\n",
		time.Now().UTC().Format(time.RFC3339Nano), r.Method, r.URL.Path, status, j.id, j.tenant,
		len(j.prompt), prompt, cached, completion, finish, faults, d.Round(time.Microsecond))
	s.writeLog(line)
}
