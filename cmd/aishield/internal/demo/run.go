package demo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aishield/aishield/internal/traffic"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

// Options configures Run. The zero value replays the incident at full size.
type Options struct {
	// Seed makes the traffic and the server's answers reproducible.
	Seed uint64
	// Rounds is how many requests each tenant sends (default 4).
	Rounds int
	// Server configures the paged-cache server; a zero CapacityTokens
	// selects the incident-2026 preset (681,280-token cache, pages of 64,
	// context 1,048,576, LIFO reuse, fault oversize-stale-pages).
	Server pagedcache.Options
	// Faults, when not nil, replaces the server's faults; an empty
	// non-nil slice runs the correct server.
	Faults []pagedcache.Fault
	// OversizeTokens is the size of each over-capacity prompt; 0 puts it a
	// quarter of the way from the capacity to the context length.
	OversizeTokens int
	// Runs selects the runs by name (RunWithout, RunGuarded,
	// RunInboundOnly); empty runs them all.
	Runs []string
	// Progress, when set, receives one line per run as it finishes.
	Progress io.Writer
}

// The runs of a demo.
const (
	// RunWithout sends the traffic straight to the server.
	RunWithout = "without"
	// RunGuarded sends it through aishield with the destination's real KV
	// capacity declared.
	RunGuarded = "guarded"
	// RunInboundOnly sends it through aishield with only the advertised
	// context declared, so over-capacity prompts go out and inbound
	// verification alone must catch what comes back.
	RunInboundOnly = "inbound-only"
)

// demoKey keys the report's own finding hashes (attribution of values to
// tenants). It is not a secret: the demo's values are fictional.
var demoKey = []byte("aishield demo attribution key")

// config is a resolved Options.
type config struct {
	opts     Options
	server   pagedcache.Options
	preset   string
	scenario *traffic.Scenario
	scanner  *classifiers.Scanner
	owners   map[string]string // finding hash -> tenant that wrote the value
	planted  []map[string]int  // per request: findings of the original text by detector
}

func resolve(opts Options) (*config, error) {
	c := &config{opts: opts, server: opts.Server}
	if c.server.CapacityTokens == 0 {
		o, err := pagedcache.Preset("incident-2026")
		if err != nil {
			return nil, err
		}
		o.Seed = opts.Server.Seed
		c.server, c.preset = o, "incident-2026"
	}
	if c.server.Seed == 0 {
		c.server.Seed = opts.Seed
	}
	if c.server.Reuse == "" {
		c.server.Reuse = pagedcache.ReuseLIFO
	}
	if c.server.PageSize == 0 {
		c.server.PageSize = 16
	}
	if c.server.ContextLen == 0 {
		c.server.ContextLen = 2 * c.server.CapacityTokens
	}
	if len(c.server.Faults) == 0 && c.preset == "" {
		c.server.Faults = []pagedcache.Fault{pagedcache.FaultOversizeStalePages}
	}
	if opts.Faults != nil {
		c.server.Faults = opts.Faults
	}
	if c.server.ContextLen <= c.server.CapacityTokens+1024 {
		return nil, fmt.Errorf("demo: the context length (%d) must exceed the KV capacity (%d) by more than 1,024 tokens to replay the incident",
			c.server.ContextLen, c.server.CapacityTokens)
	}
	over := opts.OversizeTokens
	if over == 0 {
		over = c.server.CapacityTokens + (c.server.ContextLen-c.server.CapacityTokens)/4
	}
	if over <= c.server.CapacityTokens || over+1024 >= c.server.ContextLen {
		return nil, fmt.Errorf("demo: over-capacity prompts of %d tokens must lie between the capacity (%d) and the context length (%d) less 1,024",
			over, c.server.CapacityTokens, c.server.ContextLen)
	}
	c.opts.OversizeTokens = over
	c.scenario = traffic.NewScenario(traffic.ScenarioOptions{Seed: opts.Seed, Rounds: opts.Rounds, OversizeTokens: over})
	if slices.Contains(c.server.Faults, pagedcache.FaultAbortReuseRace) {
		// The fault needs a request aborted during its prefill: the
		// clinic's staff close the page while a discharge letter is being
		// read in, and the next request takes its pages.
		for i := range c.scenario.Requests {
			if r := &c.scenario.Requests[i]; r.Tenant == abortingTenant && !r.Oversize {
				r.Abort = true
			}
		}
	}
	keys := map[string]string{}
	for _, t := range c.scenario.Tenants {
		keys[t.APIKey] = t.Name
	}
	c.server.APIKeys = keys
	sc, err := classifiers.New(classifiers.Options{HashKey: demoKey})
	if err != nil {
		return nil, err
	}
	c.scanner = sc
	c.owners = map[string]string{}
	for _, r := range c.scenario.Requests {
		m := map[string]int{}
		if !r.Oversize {
			for _, text := range []string{r.System, r.User} {
				fs, err := sc.ScanString(context.Background(), text)
				if err != nil {
					return nil, err
				}
				for _, f := range fs {
					m[f.Detector]++
					c.owners[f.Hash] = r.Tenant
				}
			}
		}
		c.planted = append(c.planted, m)
	}
	return c, nil
}

// abortingTenant is the tenant whose requests are aborted under the
// abort-reuse-race fault: the one with the most personal data.
const abortingTenant = "northwind-clinic"

// abortHeader adds pagedcache.HeaderAbort to every request.
type abortHeader struct{ base http.RoundTripper }

func (a abortHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(pagedcache.HeaderAbort, "prefill")
	return a.base.RoundTrip(r)
}

// wrapFunc puts a door of aishield (or nothing) in front of the transport
// that reaches the server.
type wrapFunc func(base http.RoundTripper) http.RoundTripper

// pass is one run of the whole traffic against a fresh server.
type pass struct {
	name, title, policy string
	wrap                wrapFunc
	// classify maps a request error to an outcome ("" when unknown).
	classify func(err error, o *Outcome)
}

// recorder sits between the door and the server: it sees exactly what
// left, and whether the request reached the server at all.
type recorder struct {
	base    http.RoundTripper
	reached bool
	body    []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.reached, r.body = true, body
	return r.base.RoundTrip(out)
}

// server is a paged-cache server on a loopback port.
type server struct {
	pc  *pagedcache.Server
	url string
	hs  *http.Server
	ln  net.Listener
}

func startServer(opts pagedcache.Options) (*server, error) {
	pc, err := pagedcache.New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: listen on loopback: %w", err)
	}
	s := &server{pc: pc, url: "http://" + ln.Addr().String(), ln: ln,
		hs: &http.Server{Handler: pc, ReadHeaderTimeout: 10 * time.Second}}
	go s.hs.Serve(ln)
	return s, nil
}

func (s *server) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.hs.Shutdown(ctx)
}

// runPass sends the scenario's traffic through p against a fresh server.
func (c *config) runPass(ctx context.Context, p pass) (*RunReport, error) {
	start := time.Now()
	srv, err := startServer(c.server)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	base := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4, DisableCompression: true}
	defer base.CloseIdleConnections()

	run := &RunReport{Name: p.name, Title: p.title, Policy: p.policy}
	seq := 0
	bySeq := map[uint32]traffic.Request{} // server sequence -> scenario request
	for _, r := range c.scenario.Requests {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ten, _ := c.scenario.Tenant(r.Tenant)
		rec := &recorder{base: base}
		var rt http.RoundTripper = rec
		if p.wrap != nil {
			rt = p.wrap(rec)
		}
		if r.Abort {
			rt = abortHeader{rt}
		}
		cfg := openai.DefaultConfig(ten.APIKey)
		cfg.BaseURL = srv.url + "/v1"
		cfg.HTTPClient = &http.Client{Transport: rt, Timeout: 2 * time.Minute}
		client := openai.NewClientWithConfig(cfg)
		// The guard answers its refusals as HTTP errors (so that no client
		// retries them); the typed error is filed in the request's context.
		rctx, refused := sdk.WithRefusal(ctx)
		text, err := send(rctx, client, r)
		if rf := refused(); rf != nil {
			err = rf
		}

		o := Outcome{N: r.N, Tenant: r.Tenant, Label: r.Label, Oversize: r.Oversize, Stream: r.Stream, Abort: r.Abort}
		if rec.reached {
			seq++
			o.Sent = true
			gt, ok := groundTruth(ctx, srv.pc, seq)
			if !ok || gt.Tenant != r.Tenant {
				return nil, fmt.Errorf("demo: no ground truth for request %d (server sequence %d; %v %+v)", r.N, seq, ok, gt)
			}
			bySeq[gt.Seq] = r
			o.ServerID, o.Status = gt.ID, gt.Status
			o.PromptTokens, o.ReportedPromptTokens = gt.PromptTokens, gt.ReportedPromptTokens
			o.Truncated = gt.Outcome == "truncated" || gt.Outcome == "decoded-after-abort"
			o.Aborted = gt.Outcome == "aborted"
			for _, rd := range gt.ForeignReads() {
				if o.ForeignTokens == nil {
					o.ForeignTokens = map[string]int{}
				}
				o.ForeignTokens[rd.Tenant] += rd.Tokens
				src, ok := bySeq[rd.Request]
				if !ok {
					continue
				}
				if i := slices.IndexFunc(o.Sources, func(s Source) bool { return s.N == src.N }); i >= 0 {
					o.Sources[i].Tokens += rd.Tokens
				} else {
					o.Sources = append(o.Sources, Source{N: src.N, Tenant: src.Tenant, Label: src.Label, Tokens: rd.Tokens})
				}
			}
			slices.SortFunc(o.Sources, func(a, b Source) int { return a.N - b.N })
			if !r.Oversize {
				sent, err := c.sentValues(ctx, rec.body)
				if err != nil {
					return nil, fmt.Errorf("demo: request %d: %w", r.N, err)
				}
				o.SentValues = sent
				o.Redacted = max(0, total(c.planted[r.N-1])-total(sent))
			}
		}
		if text != "" {
			if err := c.foreignValues(ctx, &o, text); err != nil {
				return nil, err
			}
		}
		switch {
		case o.Aborted:
			o.Result = ResultAborted
		case err == nil && len(o.ForeignTokens) > 0:
			o.Result = ResultLeaked
		case err == nil && o.Truncated:
			o.Result = ResultTruncated
		case err == nil:
			o.Result = ResultAnswered
		default:
			var ae *openai.APIError
			if o.Sent && o.Status >= 400 && errors.As(err, &ae) && ae.HTTPStatusCode == o.Status {
				o.Result = ResultRejected
				break
			}
			if p.classify != nil {
				p.classify(err, &o)
			}
			if o.Result == "" {
				o.Result, o.Error = ResultError, err.Error()
			}
		}
		run.Requests = append(run.Requests, o)
	}
	run.Totals = totals(run.Requests)
	run.Seconds = time.Since(start).Seconds()
	run.afterSign(p.wrap != nil)
	return run, nil
}

// afterSign finds the run's first sign and sums what each tenant sent after
// it. guarded says the run went through aishield: its sign is an answer
// stopped for a sign of a faulty service; without aishield it is the first
// contaminated answer delivered (the first a caller could have seen).
func (run *RunReport) afterSign(guarded bool) {
	for _, o := range run.Requests {
		if run.FirstSign != 0 {
			if !o.Sent || o.Aborted {
				continue
			}
			if run.AfterSign == nil {
				run.AfterSign = map[string]Exposure{}
			}
			e := run.AfterSign[o.Tenant]
			e.Requests++
			e.Tokens += o.PromptTokens
			e.InClear += total(o.SentValues)
			e.Redacted += o.Redacted
			run.AfterSign[o.Tenant] = e
			continue
		}
		switch {
		case !guarded && (o.Result == ResultLeaked || o.Result == ResultTruncated):
			run.FirstSign = o.N
		case guarded && (o.Result == ResultCaught || o.Result == ResultFalseAlarm) && slices.ContainsFunc(o.Signals, isSign):
			run.FirstSign = o.N
		}
	}
}

// isSign reports whether an inbound signal ID is a sign of a faulty
// service (every signal but a foreign entity, which a model can write of
// its own).
func isSign(id string) bool { return id != policies.SignalForeignEntity }

// groundTruth returns the server's record of its seq-th request. The server
// files a record once its handler returns, which may be a moment after the
// client read the last byte of a stream.
func groundTruth(ctx context.Context, pc *pagedcache.Server, seq int) (pagedcache.RequestRecord, bool) {
	for wait := time.Millisecond; ; wait *= 2 {
		if gt, ok := pc.Request(strconv.Itoa(seq)); ok {
			return gt, true
		}
		if wait > time.Second || ctx.Err() != nil {
			return pagedcache.RequestRecord{}, false
		}
		time.Sleep(wait)
	}
}

// send sends r with the go-openai client and returns the answer text the
// caller received (for a stream cut midway, what arrived before the cut).
func send(ctx context.Context, client *openai.Client, r traffic.Request) (string, error) {
	return traffic.Complete(ctx, client, openai.ChatCompletionRequest{
		Model: "pagedcache-1",
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: r.System},
			{Role: openai.ChatMessageRoleUser, Content: r.User},
		},
		MaxCompletionTokens: r.MaxTokens,
		Stream:              r.Stream,
	})
}

// sentValues counts the sensitive values in the messages of a request body
// as it left: what the shared service received in clear.
func (c *config) sentValues(ctx context.Context, body []byte) (map[string]int, error) {
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("the body that left is not a chat request: %w", err)
	}
	m := map[string]int{}
	for _, msg := range req.Messages {
		fs, err := c.scanner.ScanString(ctx, msg.Content)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			m[f.Detector]++
		}
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// foreignValues counts the sensitive values in an answer that another
// tenant wrote.
func (c *config) foreignValues(ctx context.Context, o *Outcome, text string) error {
	fs, err := c.scanner.ScanString(ctx, text)
	if err != nil {
		return err
	}
	for _, f := range fs {
		owner, ok := c.owners[f.Hash]
		if !ok || owner == o.Tenant {
			continue
		}
		if o.ForeignValues == nil {
			o.ForeignValues = map[string]int{}
		}
		o.ForeignValues[f.Detector]++
		if !contains(o.ValuesFrom, owner) {
			o.ValuesFrom = append(o.ValuesFrom, owner)
		}
	}
	sort.Strings(o.ValuesFrom)
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Run replays the scenario once per selected run, each against a fresh
// paged-cache server on a loopback port, and returns the report. Runs are
// independent and go in parallel; the report does not depend on timing.
func Run(ctx context.Context, opts Options) (*Report, error) {
	c, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	passes, err := c.passes(ctx)
	if err != nil {
		return nil, err
	}
	rep := c.newReport()
	rep.Runs = make([]*RunReport, len(passes))
	errs := make([]error, len(passes))
	var wg sync.WaitGroup
	var progressMu sync.Mutex
	for i, p := range passes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Runs[i], errs[i] = c.runPass(ctx, p)
			if errs[i] == nil && opts.Progress != nil {
				progressMu.Lock()
				fmt.Fprintf(opts.Progress, "demo: run %q done in %.1fs\n", p.name, rep.Runs[i].Seconds)
				progressMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rep, nil
}

// passes builds the selected runs.
func (c *config) passes(ctx context.Context) ([]pass, error) {
	all := []string{RunWithout, RunGuarded, RunInboundOnly}
	want := c.opts.Runs
	if len(want) == 0 {
		want = all
	}
	var out []pass
	for _, name := range want {
		switch name {
		case RunWithout:
			out = append(out, pass{name: RunWithout, title: "without aishield"})
		case RunGuarded:
			p, err := c.guardedPass(ctx, RunGuarded, "with aishield", c.server.CapacityTokens,
				fmt.Sprintf("policy demo: max_input_tokens %s, the real KV capacity", num(c.server.CapacityTokens)))
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		case RunInboundOnly:
			p, err := c.guardedPass(ctx, RunInboundOnly, "aishield, capacity undeclared", c.server.ContextLen,
				fmt.Sprintf("policy demo: max_input_tokens %s, the advertised context; inbound verification alone", num(c.server.ContextLen)))
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		default:
			return nil, fmt.Errorf("demo: unknown run %q (known: %s)", name, strings.Join(all, ", "))
		}
	}
	return out, nil
}

//go:embed policy.yaml
var policyTemplate string

// Policy returns the demo's policy with the shared service's
// max_input_tokens set to maxInput.
func Policy(maxInput int) (*policies.Policy, error) {
	text := strings.ReplaceAll(policyTemplate, "MAX_INPUT_TOKENS", strconv.Itoa(maxInput))
	return policies.Parse([]byte(text), "yaml", "demo.yaml")
}

// guardedPass builds a run through aishield: one Guard (and one verifier
// with its in-memory fingerprint store) for the whole run, as one process
// would have; every request goes through an sdk.Transport.
func (c *config) guardedPass(ctx context.Context, name, title string, maxInput int, desc string) (pass, error) {
	pol, err := Policy(maxInput)
	if err != nil {
		return pass{}, err
	}
	// Exchange IDs, placeholder secrets and canaries drawn from the seed:
	// they are part of every prompt, so they decide where the server's
	// pages fall and what an over-long prompt's answer reads. Drawn at
	// random, a run could differ from the next one with the same seed.
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], c.opts.Seed)
	g, err := sdk.New(ctx, sdk.Options{Policy: pol, Destination: "shared-inference",
		CanaryKey: append([]byte("aishield demo canaries "), seed[:8]...),
		Rand:      rand.NewChaCha8(seed)})
	if err != nil {
		return pass{}, err
	}
	return pass{name: name, title: title, policy: desc,
		wrap:     func(base http.RoundTripper) http.RoundTripper { return &sdk.Transport{Guard: g, Base: base} },
		classify: classifyGuardError,
	}, nil
}

// classifyGuardError maps what the guard returned to the request's result.
func classifyGuardError(err error, o *Outcome) {
	var be *sdk.BlockedError
	var ce *sdk.ContaminationError
	var qe *quarantine.Error
	switch {
	case errors.As(err, &be):
		o.Result = ResultBlocked
		if be.OverCapacity {
			o.Result = ResultRefused
		}
		for _, r := range be.Reasons {
			what := r.Detector
			if what == "" {
				what = r.Rule
			}
			if r.Count > 1 {
				what = fmt.Sprintf("%d %s", r.Count, what)
			}
			if !contains(o.Reasons, what) {
				o.Reasons = append(o.Reasons, what)
			}
		}
	case errors.As(err, &qe):
		o.Result = ResultQuarantined
	case errors.As(err, &ce):
		o.Result = ResultCaught
		if len(o.ForeignTokens) == 0 && !o.Truncated {
			o.Result, o.Error = ResultFalseAlarm, err.Error()
		}
		for _, s := range ce.Signals {
			if !contains(o.Signals, s.ID) {
				o.Signals = append(o.Signals, s.ID)
			}
		}
		sort.Strings(o.Signals)
	}
}
