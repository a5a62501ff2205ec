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
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.HandleFunc("GET /debug/requests/{id}", s.serveDebugRequest)
	mux.HandleFunc("GET /debug/pages", s.serveDebugPages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found",
			message: "no such endpoint: " + r.Method + " " + r.URL.Path})
	})
	s.mux = mux
}

// ServeHTTP serves the OpenAI-compatible API and the debug endpoints.
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
// tenant, else "anonymous".
func (s *Server) tenantOf(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get(HeaderTenant)); t != "" {
		return t
	}
	auth := r.Header.Get("Authorization")
	if key, ok := strings.CutPrefix(auth, "Bearer "); ok && strings.TrimSpace(key) != "" {
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
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
	if endpoint == "chat" {
		gen, err = parseChatRequest(body)
	} else {
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
		if aerr == nil {
			s.writeJSONAnswer(w, j, out)
		}
	}
	if aerr != nil {
		w.Header().Set("X-Request-Id", j.id)
		writeError(w, aerr)
	}
	s.logRequest(r, j, out, aerr, time.Since(start))
}

// tokenize turns text into cl100k_base token IDs.
func (s *Server) tokenize(text string) []uint32 {
	ids, _, err := s.codec.Encode(text)
	if err != nil {
		// Encode only fails in strict UTF-8 mode, which is not used; fall
		// back to one token per byte rather than lose the input.
		ids = make([]uint, len(text))
		for i := range text {
			ids[i] = uint(text[i])
		}
	}
	out := make([]uint32, len(ids))
	for i, id := range ids {
		out[i] = uint32(id)
	}
	return out
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
	text := strings.ToValidUTF8(string(s.detok(out.tokens)), "\uFFFD")
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

// serveStream answers with server-sent events. Errors found before the
// first event are returned for a JSON error answer.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, j *job) (*outcome, *apiError) {
	flusher, _ := w.(http.Flusher)
	bw := bufio.NewWriter(w)
	started := false
	var pending []byte // bytes of an incomplete UTF-8 sequence
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
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
		w.WriteHeader(http.StatusOK)
		if j.endpoint == "chat" {
			empty := ""
			return send(chunk(&empty, "assistant", nil))
		}
		return nil
	}
	emit := func(toks []uint32) error {
		if err := begin(); err != nil {
			return err
		}
		b := append(pending, s.detok(toks)...)
		cut := validPrefix(b)
		pending = append([]byte(nil), b[cut:]...)
		if cut == 0 {
			return nil
		}
		text := strings.ToValidUTF8(string(b[:cut]), "\uFFFD")
		return send(chunk(&text, "", nil))
	}
	out, aerr := s.process(r.Context(), j, emit)
	if aerr != nil {
		if !started {
			return nil, aerr
		}
		return out, nil // cannot happen after the first event; never write an error into a stream
	}
	if err := begin(); err != nil {
		return out, nil
	}
	if len(pending) > 0 {
		text := strings.ToValidUTF8(string(pending), "\uFFFD")
		if send(chunk(&text, "", nil)) != nil {
			return out, nil
		}
	}
	finish := out.finish
	if send(chunk(nil, "", &finish)) != nil {
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
		if send(v) != nil {
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

func writeError(w http.ResponseWriter, e *apiError) {
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
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "not_found",
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
