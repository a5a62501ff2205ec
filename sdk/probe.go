package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/aishield/aishield/internal/wire"
	"github.com/aishield/aishield/policies"
)

// ProbePrincipal is the principal probes are sent as.
const ProbePrincipal = "aishield-probe"

// probeInstruction opens every probe; the words follow.
const probeInstruction = "Repeat the following words exactly, in the same order, and write nothing else:"

// ProbeResult is the outcome of one probe.
type ProbeResult struct {
	// Destination is the destination probed; Exchange the probe's exchange
	// ID in the audit trail.
	Destination, Exchange string
	// Contaminated reports that the answer held material the probe did
	// not send; Reasons say what, without any value (signal IDs, detector
	// IDs, a count of words).
	Contaminated bool
	Reasons      []string
	// Status is the HTTP status of the answer (0 when none came).
	Status int
	// PromptTokens and CompletionTokens are the provider's usage figures.
	PromptTokens, CompletionTokens int
	// Duration is the time from sending to the answer's end.
	Duration time.Duration
}

// Probe sends destination one synthetic request whose whole prompt the
// guard chose (an instruction and random made-up words, plus the request's
// canary) and judges the answer: any signal of the verifier, any value a
// classifier finds, or more words absent from the prompt than the policy's
// probe.max_foreign_words is material from elsewhere, foreign by
// construction. A contaminated probe files the sign "probe" in the
// destination's health, which trips its quarantine when the policy says so.
// This is the one sign that catches faults that leave nothing in the
// victims' own answers (an aborted request's prompt written late into pages
// another request reads).
//
// The request goes to the destination's base_url through client (nil:
// http.DefaultClient) with header added (the provider's API key), as an
// OpenAI chat completion, or an Anthropic message for a destination whose
// provider is anthropic. It is checked and verified like any exchange, and
// recorded in the audit trail with the principal ProbePrincipal. A
// destination without a probe section is probed with the defaults; one
// without a base_url cannot be. An error means no judgement (the request
// could not be sent or its answer read); a quarantined destination that
// refuses the probe returns its *quarantine.Error.
func (g *Guard) Probe(ctx context.Context, destination string, client *http.Client, header http.Header) (ProbeResult, error) {
	res := ProbeResult{Destination: destination}
	d, ok := g.policy.Destination(destination)
	if !ok || d.BaseURL == "" {
		return res, fmt.Errorf("sdk: probe: %q is not a destination of policy %q with a base_url", destination, g.policy.Name)
	}
	pc := g.policy.Quarantine(d).Probe
	if pc == nil {
		pc = &policies.Probe{Words: policies.DefaultProbeWords, MaxTokens: policies.DefaultProbeMaxTokens, MaxForeignWords: policies.DefaultProbeForeignWords}
	}
	var seed [16]byte
	if err := g.random(seed[:]); err != nil {
		return res, err
	}
	words := probeWords(rand.New(rand.NewChaCha8([32]byte(append(seed[:], seed[:]...)))), pc.Words)
	prompt := probeInstruction + " " + strings.Join(words, " ")
	model := pc.Model
	if model == "" {
		model = "aishield-probe"
	}
	// The same body is an OpenAI chat completion and an Anthropic message.
	body, _ := json.Marshal(map[string]any{"model": model, "max_tokens": pc.MaxTokens, "temperature": 0,
		"messages": []map[string]string{{"role": "user", "content": prompt}}})
	anthropic := strings.EqualFold(d.Provider, "anthropic")
	path := "/v1/chat/completions"
	if anthropic {
		path = "/v1/messages"
	}
	url := strings.TrimSuffix(d.BaseURL, "/") + path
	x, err := g.Check(ctx, Request{URL: url, Destination: d.Name, Principal: ProbePrincipal, Body: body})
	if err != nil {
		return res, err
	}
	res.Exchange = x.ID
	if x.URL != "" {
		x.Fail(0) // failed over: the probe is of the destination, not its failover
		return res, fmt.Errorf("sdk: probe: %s is quarantined and fails over; not probed", d.Name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(x.Body))
	if err != nil {
		x.Fail(0)
		return res, err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	if anthropic && req.Header.Get("Anthropic-Version") == "" {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	if client == nil {
		client = http.DefaultClient
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		x.Fail(0)
		return res, fmt.Errorf("sdk: probe of %s: %w", d.Name, err)
	}
	raw, err := readLimited(resp.Body, DefaultMaxBody)
	resp.Body.Close()
	res.Status, res.Duration = resp.StatusCode, time.Since(start)
	if err != nil {
		x.Fail(resp.StatusCode)
		return res, fmt.Errorf("sdk: probe of %s: reading the answer: %w", d.Name, err)
	}
	if resp.StatusCode >= 400 {
		_, _ = x.Response(ctx, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
		return res, fmt.Errorf("sdk: probe of %s: HTTP %d", d.Name, resp.StatusCode)
	}
	out, verr := x.Response(ctx, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	var ce *ContaminationError
	switch {
	case errors.As(verr, &ce):
	case verr != nil:
		return res, verr
	}
	for _, s := range x.Signals() {
		res.Reasons = append(res.Reasons, s.ID)
	}
	if verr == nil {
		wr, perr := wire.ParseResponse(x.kind, out)
		if perr != nil {
			return res, fmt.Errorf("sdk: probe of %s: %w", d.Name, perr)
		}
		sum := wr.Summary()
		res.PromptTokens, res.CompletionTokens = sum.Usage.PromptTokens, sum.Usage.CompletionTokens
		reasons, err := g.probeAnswer(ctx, wr.Text(), prompt, x.info.Canary, pc.MaxForeignWords)
		if err != nil {
			return res, err
		}
		res.Reasons = append(res.Reasons, reasons...)
	}
	res.Contaminated = len(res.Reasons) > 0
	if res.Contaminated {
		// Filed whatever the signals were: the probe's own sign.
		_ = g.monitor.Observe(ctx, d.Name, x.ID, []string{policies.SignProbe})
	}
	return res, nil
}

// probeAnswer returns what in a probe's delivered answer did not come from
// its prompt: values a classifier finds (the prompt holds none), and words
// absent from the prompt beyond maxForeign.
func (g *Guard) probeAnswer(ctx context.Context, answer, prompt, canary string, maxForeign int) ([]string, error) {
	var reasons []string
	fs, err := g.eval.Classifier().ScanString(ctx, answer)
	if err != nil {
		return nil, fmt.Errorf("sdk: probe: classifying the answer: %w", err)
	}
	seen := map[string]bool{}
	for _, f := range fs {
		if !seen[f.Detector] {
			seen[f.Detector] = true
			reasons = append(reasons, "finding:"+f.Detector)
		}
	}
	known := map[string]bool{}
	for _, w := range probeTokens(prompt + " " + canary) {
		known[w] = true
	}
	foreign := 0
	for _, w := range probeTokens(answer) {
		if !known[w] {
			foreign++
		}
	}
	if foreign > maxForeign {
		reasons = append(reasons, fmt.Sprintf("foreign_words:%d", foreign))
	}
	return reasons, nil
}

// probeTokens splits s into lower-case words of letters and digits.
func probeTokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f)
	})
}

// probeWords returns n made-up lower-case words of two or three syllables:
// no dictionary word, no name, nothing a detector finds, and nothing a
// model or another request would write by chance.
func probeWords(r *rand.Rand, n int) []string {
	const consonants = "bdfgklmnprstvz"
	const vowels = "aeiou"
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 2 + r.IntN(2) {
			b.WriteByte(consonants[r.IntN(len(consonants))])
			b.WriteByte(vowels[r.IntN(len(vowels))])
		}
		b.WriteByte(consonants[r.IntN(len(consonants))])
		out[i] = b.String()
	}
	return out
}

// Prober probes, each at its policy's probe.every, the destinations whose
// quarantine section declares a probe and that have a base_url. Processes
// sharing a quarantine store share the schedule: one probe per interval
// and destination among them all (quarantine.Store.ClaimProbe). A
// destination already quarantined is not probed.
type Prober struct {
	// Guard sends and judges the probes. Required.
	Guard *Guard
	// Client sends them; nil means http.DefaultClient.
	Client *http.Client
	// Header returns the headers of a destination's probes (its API key);
	// nil sends none.
	Header func(destination string) http.Header
	// OnProbe, when set, is called after every probe this process sent.
	OnProbe func(ProbeResult, error)
}

// Destinations returns the names of the destinations Run probes.
func (p *Prober) Destinations() []string {
	var out []string
	pol := p.Guard.policy
	for _, d := range pol.Destinations {
		if q := pol.Quarantine(d); d.BaseURL != "" && !q.Off && q.Probe != nil {
			out = append(out, d.Name)
		}
	}
	return out
}

// Run probes until ctx is done, and returns nil then.
func (p *Prober) Run(ctx context.Context) error {
	pol := p.Guard.policy
	done := make(chan struct{})
	n := 0
	for _, name := range p.Destinations() {
		d, _ := pol.Destination(name)
		n++
		go func() {
			defer func() { done <- struct{}{} }()
			p.loop(ctx, name, pol.Quarantine(d).Probe.Every)
		}()
	}
	for range n {
		<-done
	}
	return nil
}

func (p *Prober) loop(ctx context.Context, name string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		p.once(ctx, name, every)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Prober) once(ctx context.Context, name string, every time.Duration) {
	mon := p.Guard.monitor
	if st, err := mon.Check(ctx, name); err != nil || st.Quarantined {
		return
	}
	if ok, err := mon.Store().ClaimProbe(ctx, name, every); err != nil || !ok {
		return
	}
	var h http.Header
	if p.Header != nil {
		h = p.Header(name)
	}
	res, err := p.Guard.Probe(ctx, name, p.Client, h)
	if p.OnProbe != nil {
		p.OnProbe(res, err)
	}
}
