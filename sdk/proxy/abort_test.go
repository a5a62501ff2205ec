package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/traffic"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/sdk/verify"
)

// tap sits under the proxy's guard and records, per upstream request, the
// body as sent (redacted, with its canary) and the raw response body, so a
// test can tell what the upstream answered even when the guard refuses it.
type tap struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	sent []string
	got  []*bytes.Buffer
}

func (t *tap) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := t.rt.RoundTrip(r)
	buf := &bytes.Buffer{}
	t.mu.Lock()
	t.sent = append(t.sent, string(body))
	t.got = append(t.got, buf)
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &lockedWriter{mu: &t.mu, w: buf}), resp.Body}
	return resp, nil
}

// exchange returns the i-th upstream request's body and raw response.
func (t *tap) exchange(i int) (sent, got string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent[i], t.got[i].String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// headerRT adds headers to every request.
type headerRT map[string]string

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// answerText is the answer text of a raw chat completion, JSON or SSE.
func answerText(raw string) string {
	var whole struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if json.Unmarshal([]byte(raw), &whole) == nil && len(whole.Choices) > 0 {
		return whole.Choices[0].Message.Content
	}
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(raw))
	for sc.Scan() {
		var ev struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil {
			for _, c := range ev.Choices {
				b.WriteString(c.Delta.Content)
			}
		}
	}
	return b.String()
}

// debugRecord fetches the server's ground truth of request n over HTTP
// (GET /debug/requests/{n}), waiting for the server to finish it (a stream
// the proxy cut may still be winding down).
func debugRecord(t testing.TB, base string, n int) pagedcache.RequestRecord {
	t.Helper()
	status := 0
	for wait := time.Millisecond; wait < 2*time.Second; wait *= 2 {
		resp, err := http.Get(fmt.Sprintf("%s/debug/requests/%d", base, n))
		if err != nil {
			t.Fatal(err)
		}
		var rec pagedcache.RequestRecord
		err = json.NewDecoder(resp.Body).Decode(&rec)
		resp.Body.Close()
		if status = resp.StatusCode; status == http.StatusOK && err == nil {
			return rec
		}
		time.Sleep(wait)
	}
	t.Fatalf("GET /debug/requests/%d: status %d", n, status)
	return pagedcache.RequestRecord{}
}

// sharedValues returns the detectors of the sensitive values of doc (all
// built-in detectors, reserved examples included) found in answer.
func sharedValues(t testing.TB, doc, answer string) []string {
	t.Helper()
	s, err := classifiers.New(classifiers.Options{HashKey: []byte("abort-test"), IncludeReserved: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mine, err := s.ScanString(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, f := range mine {
		held[f.Hash] = true
	}
	got, err := s.ScanString(ctx, answer)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range got {
		if held[f.Hash] {
			out = append(out, f.Detector)
		}
	}
	return out
}

var placeholderRE = regexp.MustCompile(`\[\[[A-Z0-9_]+_[0-9a-f]{6,}\]\]`)

// TestProxyAbortReuseRace really sends an aborted request: tenant A's
// document (personal data, redacted by the guard) goes through the proxy
// with X-PagedCache-Abort: prefill, to a server with the abort-reuse-race
// fault, so its in-flight prefill chunk lands late in the pages the next
// request takes; then tenant B asks a clean question through the proxy.
// The server's ground truth (GET /debug/requests/{n}) must confirm that
// A's request was aborted and that its late write landed in B's pages,
// which B's answer read.
//
// B's answer then quotes A's text (unless it happens to read none of the
// overwritten slots: then it is clean and must be delivered), and nothing in B's own exchange is off
// (its usage counts its prompt, its finish reason is "stop"), so only
// content signals can catch it. The test holds them to what they promise:
// an answer quoting one of A's placeholders must be refused as
// inbound.foreign_placeholder, one quoting A's canary as inbound.canary,
// one sharing a run of 64 bytes or more with A's request as
// inbound.cross_exchange; every refusal names one of them. (A ended with
// finish reason "abort", so the verifier holds its text as a suspect
// source and 46 bytes of its rare wording are enough; the test, which
// does not know which wording is rare, holds it to 64.) What they cannot
// catch is an answer made only of shorter quotes (the model quotes 3 to
// 12 tokens at a time) of A's prose, with no value, placeholder or canary
// in them: shorter shared phrases are common between unrelated texts, so
// they are not evidence, by design. Those are counted and logged, not
// hidden; and each must hold none of A's sensitive values (every
// built-in detector, names included): those left A's exchange as
// placeholders, so only A's ordinary prose can come back. In the correct server mode, the same traffic gives B a clean
// answer, delivered.
func TestProxyAbortReuseRace(t *testing.T) {
	var caught, missed, contaminated int
	bySignal := map[string]int{}
	for _, seed := range []uint64{1, 2, 3} {
		sc := traffic.NewScenario(traffic.ScenarioOptions{Seed: seed, Rounds: 1})
		for _, a := range sc.Requests {
			if a.Tenant != "northwind-clinic" && a.Tenant != "globex-bank" {
				continue
			}
			for _, b := range sc.Requests {
				if b.Tenant != "acme-support" && b.Tenant != "hooli-research" {
					continue
				}
				for _, fault := range []bool{true, false} {
					name := fmt.Sprintf("seed%d/%s-then-%s/fault=%v", seed, a.Tenant, b.Tenant, fault)
					sig, leaked := abortRun(t, name, seed, sc, a, b, fault)
					if !fault {
						continue
					}
					if sig != "" || leaked {
						contaminated++
					}
					switch {
					case sig != "":
						caught++
						bySignal[sig]++
					case leaked:
						missed++
					}
				}
			}
		}
	}
	if caught == 0 {
		t.Errorf("none of %d contaminated answers caught", contaminated)
	}
	t.Logf("12 aborted requests, each followed by another tenant's request that received the late write; %d answers read it: %d refused %v, %d delivered made only of short quotes of A's prose (no value, placeholder, canary or 46-byte run of rare wording)",
		contaminated, caught, bySignal, missed)
}

// abortRun sends a (aborted, redacted) then b through a fresh proxy and
// server and checks the outcome against the ground truth. It returns the
// signal that refused b's answer ("" when delivered) and whether a
// delivered answer quoted A's text.
func abortRun(t *testing.T, name string, seed uint64, sc *traffic.Scenario, a, b traffic.Request, fault bool) (string, bool) {
	keys := map[string]string{}
	for _, tn := range sc.Tenants {
		keys[tn.APIKey] = tn.Name
	}
	opts := []pagedcache.Option{pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192), pagedcache.WithSeed(seed),
		func(o *pagedcache.Options) error { o.APIKeys = keys; return nil }}
	if fault {
		opts = append(opts, pagedcache.WithFaults(pagedcache.FaultAbortReuseRace))
	}
	ts := pagedcache.NewTestServer(t, opts...)
	up := &tap{rt: http.DefaultTransport}
	_, hs := startProxy(t, Options{Policy: testPolicy(t, ts.URL, 8192), Transport: up})
	ctx := context.Background()

	ta, _ := sc.Tenant(a.Tenant)
	cfg := openai.DefaultConfig(ta.APIKey)
	cfg.BaseURL = hs.URL + "/v1"
	cfg.HTTPClient = &http.Client{Transport: headerRT{pagedcache.HeaderAbort: "prefill"}}
	if _, err := ask(ctx, openai.NewClientWithConfig(cfg), a.System+"\n\n"+a.User, a.MaxTokens, false); err != nil {
		t.Fatalf("%s: A's aborted request: %v", name, err)
	}
	if rec := debugRecord(t, ts.URL, 1); rec.Outcome != "aborted" {
		t.Fatalf("%s: A's request: outcome %q, want aborted", name, rec.Outcome)
	}
	tb, _ := sc.Tenant(b.Tenant)
	cfg = openai.DefaultConfig(tb.APIKey)
	cfg.BaseURL = hs.URL + "/v1"
	text, err := ask(ctx, openai.NewClientWithConfig(cfg), b.System+"\n\n"+b.User, b.MaxTokens, b.Stream)
	rec := debugRecord(t, ts.URL, 2)

	if !fault {
		if rec.LateWritesLanded != 0 || len(rec.ForeignReads()) != 0 || err != nil {
			t.Errorf("%s: correct server: late writes %d, foreign reads %d, error %v", name, rec.LateWritesLanded, len(rec.ForeignReads()), err)
		}
		return "", false
	}
	if rec.LateWritesLanded == 0 {
		t.Fatalf("%s: ground truth: no late write of A's landed in B's pages", name)
	}
	if len(rec.ForeignReads()) == 0 {
		// The answer happened not to quote the overwritten slots (where it
		// reads depends on the prompt, whose canary differs every run):
		// it is clean and must be delivered.
		if err != nil {
			t.Errorf("%s: clean answer (no foreign read) refused: %v", name, err)
		}
		return "", false
	}
	if !slices.Contains(rec.ForeignTenants(), a.Tenant) {
		t.Fatalf("%s: ground truth: B's answer read %v, want A's late write", name, rec.ForeignTenants())
	}
	sentA, _ := up.exchange(0)
	_, rawB := up.exchange(1)
	raw := answerText(rawB)
	var must []string
	for _, ph := range placeholderRE.FindAllString(sentA, -1) {
		if strings.Contains(raw, ph) {
			must = append(must, "inbound.foreign_placeholder")
			break
		}
	}
	if i := strings.Index(sentA, verify.CanaryPrefix); i >= 0 && strings.Contains(raw, sentA[i:i+verify.CanaryLen]) {
		must = append(must, "inbound.canary")
	}
	run := longestShared(raw, sentA)
	if run >= 64 {
		must = append(must, "inbound.cross_exchange")
	}
	if err == nil {
		if len(must) > 0 {
			t.Errorf("%s: B's answer quoting A's request (%v) was delivered: %.160q", name, must, text)
		}
		// What is delivered holds none of A's sensitive values: they left
		// A's exchange as placeholders (names included), and a quoted
		// placeholder or canary is refused above.
		docA := a.System + "\n\n" + a.User
		if len(sharedValues(t, docA, docA)) == 0 {
			t.Fatalf("%s: A's document holds no sensitive value to look for", name)
		}
		if leaked := sharedValues(t, docA, raw); len(leaked) > 0 {
			t.Errorf("%s: B's delivered answer carries %d of A's sensitive values (%v)", name, len(leaked), leaked)
		}
		t.Logf("%s: delivered, %d late-written slots read; longest run shared with A's request %d bytes: %.120q",
			name, rec.LateWritesLanded, run, raw)
		return "", true
	}
	// A plain answer is judged whole, so every predicted signal must be
	// named; a stream is cut at the first blocking signal, which may come
	// before the text another prediction is about, so one must be named,
	// or the stream was cut earlier by a shorter run of A's text (the only
	// exchange that ended without a complete answer).
	named := 0
	if strings.Contains(err.Error(), "inbound.cross_exchange") && strings.Contains(err.Error(), "ended without a complete answer") {
		named++
	}
	for _, s := range must {
		if strings.Contains(err.Error(), s) {
			named++
		} else if !b.Stream {
			t.Errorf("%s: refused without naming %s: %v", name, s, err)
		}
	}
	if b.Stream && len(must) > 0 && named == 0 {
		t.Errorf("%s: streamed answer refused without naming any of %v: %v", name, must, err)
	}
	for _, s := range []string{"inbound.foreign_placeholder", "inbound.canary", "inbound.cross_exchange", "inbound.foreign_entity"} {
		if strings.Contains(err.Error(), s) {
			return s, false
		}
	}
	t.Errorf("%s: refused for another reason: %v", name, err)
	return "other", false
}
