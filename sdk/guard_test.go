package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/inbound"
	"github.com/aishield/aishield/sdk/verify"
)

const testPolicy = `
name: test
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*"]
    level: restricted
default_level: restricted
destinations:
  - name: openai-test
    provider: openai
    max_level: internal
    action: redact
    block_at: restricted
    max_input_tokens: 5000
  - name: anthropic-test
    provider: anthropic
    max_level: internal
    action: redact
    block_at: restricted
default:
  max_level: internal
  action: redact
  block_at: restricted
failure_mode: %s
inbound:
  signals:
    usage_mismatch: flag
redaction:
  style: placeholder
# These tests judge answers one by one: a contaminated answer must not
# quarantine the destination for the next case (quarantine_test.go tests
# quarantines).
quarantine:
  enabled: false
`

const (
	email  = "jean.dupont@acme-corp.fr"
	phone  = "+33 6 12 34 56 78"
	secret = "GITLAB=glpat-x9Kd7Lm2Qw8Rt4Vb6Yn1"
)

func testPolicyMode(t testing.TB, mode string) *policies.Policy {
	t.Helper()
	p, err := policies.Parse([]byte(strings.Replace(testPolicy, "%s", mode, 1)), "yaml", "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newGuard(t testing.TB, opts sdk.Options) *sdk.Guard {
	t.Helper()
	if opts.Policy == nil {
		opts.Policy = testPolicyMode(t, "closed")
	}
	g, err := sdk.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// newVerifiedGuard returns a guard wired as an application wires one: opts
// with opts.Policy's scanner (keyed with key) as its classifier and a
// verifier with the policy's inbound section sharing that scanner.
func newVerifiedGuard(t testing.TB, opts sdk.Options, key []byte) *sdk.Guard {
	t.Helper()
	scanner, err := opts.Policy.NewScanner(key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.New(verify.Options{Inbound: opts.Policy.Inbound, Scanner: scanner})
	if err != nil {
		t.Fatal(err)
	}
	opts.Classifier, opts.Verifier = scanner, v
	return newGuard(t, opts)
}

func chatBody(user string) []byte {
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []any{
		map[string]any{"role": "system", "content": "You are terse."},
		map[string]any{"role": "user", "content": user}}})
	return b
}

var placeholderRE = regexp.MustCompile(`\[\[[A-Z][A-Z0-9_]*_[0-9a-f]{8}\]\]`)

func TestCheckDecisions(t *testing.T) {
	var audit bytes.Buffer
	g := newGuard(t, sdk.Options{Audit: &audit})
	tests := []struct {
		name       string
		url, body  string
		action     policies.Action
		blocked    bool
		overCap    bool
		wantHolder int // placeholders expected in the sent body
	}{
		{"clean allowed", "https://api.openai.com/v1/chat/completions", string(chatBody("What is the capital of France?")), policies.ActionAllow, false, false, 0},
		{"email redacted", "https://api.openai.com/v1/chat/completions", string(chatBody("Write to " + email + " and " + email + ", or call " + phone)), policies.ActionRedact, false, false, 2},
		{"secret blocked", "https://api.openai.com/v1/chat/completions", string(chatBody("deploy with " + secret)), policies.ActionBlock, true, false, 0},
		{"over capacity blocked", "https://api.openai.com/v1/chat/completions", string(chatBody(strings.Repeat("word ", 6000))), policies.ActionBlock, true, true, 0},
		{"tool arguments redacted", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"send","arguments":"{\"to\":\"` + email + `\"}"}}]},{"role":"tool","tool_call_id":"c","content":"sent to ` + email + `"}]}`, policies.ActionRedact, false, false, 1},
		{"anthropic tool_use input redacted", "/v1/messages", `{"model":"claude","max_tokens":5,"system":"Reach ` + email + `","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"to":"` + email + `"}}]}]}`, policies.ActionRedact, false, false, 1},
		{"embeddings redacted", "/v1/embeddings", `{"model":"e","input":["` + email + `","hello"]}`, policies.ActionRedact, false, false, 1},
		{"unknown body strings classified", "/v2/whatever", `{"deep":{"list":["x","` + email + `"]}}`, policies.ActionRedact, false, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := g.Check(context.Background(), sdk.Request{URL: tt.url, Body: []byte(tt.body)})
			var be *sdk.BlockedError
			if tt.blocked {
				if !errors.As(err, &be) {
					t.Fatalf("err = %v, want *BlockedError", err)
				}
				if be.OverCapacity != tt.overCap {
					t.Errorf("OverCapacity = %v", be.OverCapacity)
				}
				if strings.Contains(err.Error(), "glpat-x9Kd7Lm2Qw8Rt4Vb6Yn1") {
					t.Errorf("error leaks the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if x.Decision.Action != tt.action {
				t.Errorf("action = %s, want %s", x.Decision.Action, tt.action)
			}
			sent := string(x.Body)
			if strings.Contains(sent, email) || strings.Contains(sent, phone) {
				t.Errorf("sent body carries a raw value: %s", sent)
			}
			holders := map[string]bool{}
			for _, h := range placeholderRE.FindAllString(sent, -1) {
				holders[h] = true
			}
			if tt.wantHolder > 0 && len(holders) < tt.wantHolder {
				t.Errorf("distinct placeholders = %d, want >= %d in %s", len(holders), tt.wantHolder, sent)
			}
			if tt.action == policies.ActionAllow && sent != tt.body {
				t.Errorf("allowed body changed: %s", sent)
			}
			if !json.Valid(x.Body) {
				t.Errorf("sent body is not JSON: %s", sent)
			}
		})
	}
	if strings.Contains(audit.String(), email) || strings.Contains(audit.String(), "glpat-") {
		t.Fatalf("audit trail leaks a raw value:\n%s", audit.String())
	}
	// Sent exchanges are recorded when their response is done; the two
	// blocked ones are recorded at once.
	if n, _, err := sdk.ReadAudit(&audit, false, nil); err != nil || n != 2 {
		t.Fatalf("audit: %d lines, err %v", n, err)
	}
}

func TestPlaceholdersPerRequest(t *testing.T) {
	g := newGuard(t, sdk.Options{})
	body := chatBody("mail " + email + " then " + email)
	x1, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	x2, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	h1 := placeholderRE.FindAllString(string(x1.Body), -1)
	h2 := placeholderRE.FindAllString(string(x2.Body), -1)
	if len(h1) != 2 || h1[0] != h1[1] {
		t.Fatalf("same value in one request must share one placeholder: %v", h1)
	}
	if !strings.HasPrefix(h1[0], "[[PII_EMAIL_") {
		t.Errorf("placeholder %q does not name its detector", h1[0])
	}
	if len(h2) != 2 || h2[0] == h1[0] {
		t.Fatalf("two requests must not share placeholders: %v %v", h1, h2)
	}
	// Each exchange restores only its own placeholders; the other's is
	// foreign material, reported and left in place.
	got, sigs := x1.Restore("to " + h1[0])
	if got != "to "+email || len(sigs) != 0 {
		t.Fatalf("own restore = %q %v", got, sigs)
	}
	got, sigs = x1.Restore("to " + h2[0])
	if got != "to "+h2[0] || len(sigs) != 1 || sigs[0].ID != policies.SignalForeignPlaceholder {
		t.Fatalf("foreign restore = %q %v", got, sigs)
	}
	if strings.Contains(sigs[0].Preview+sigs[0].Message, email) {
		t.Fatal("signal leaks the value")
	}
}

// panicky is a classifier that panics, as a buggy detector would.
type panicky struct{}

func (panicky) ScanString(ctx context.Context, s string) ([]classifiers.Finding, error) {
	panic("detector bug with input " + s)
}

// slow is a classifier that takes longer than the guard's budget.
type slow struct{}

func (slow) ScanString(ctx context.Context, s string) ([]classifiers.Finding, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(5 * time.Second):
		return nil, nil
	}
}

// badSpan is a classifier returning a span outside the text.
type badSpan struct{}

func (badSpan) ScanString(ctx context.Context, s string) ([]classifiers.Finding, error) {
	return []classifiers.Finding{{Detector: "pii.email", Start: 0, End: len(s) + 10}}, nil
}

// failingVerifier fails to begin.
type failingVerifier struct{ panics bool }

func (f failingVerifier) Begin(ctx context.Context, ex *inbound.Exchange) (inbound.Session, error) {
	if f.panics {
		panic("verifier bug")
	}
	return nil, errors.New("store unreachable")
}

func TestGuardFailures(t *testing.T) {
	tests := []struct {
		name  string
		opts  sdk.Options
		body  string
		stage sdk.Stage
	}{
		{"detector panic", sdk.Options{Classifier: panicky{}}, string(chatBody("hello " + email)), "classify"},
		{"timeout", sdk.Options{Classifier: slow{}, Timeout: 20 * time.Millisecond}, string(chatBody("hello")), "classify"},
		{"span outside text", sdk.Options{Classifier: badSpan{}}, string(chatBody("hello")), "classify"},
		{"unparsable body", sdk.Options{}, `{"messages": [`, "parse"},
		{"invalid utf-8", sdk.Options{}, "{\"messages\":\"\xff\"}", "parse"},
		{"verifier error", sdk.Options{Verifier: failingVerifier{}}, string(chatBody("hello")), "verify"},
		{"verifier panic", sdk.Options{Verifier: failingVerifier{panics: true}}, string(chatBody("hello")), "verify"},
	}
	for _, tt := range tests {
		for _, mode := range []string{"closed", "open"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				opts := tt.opts
				opts.Policy = testPolicyMode(t, mode)
				var audit bytes.Buffer
				opts.Audit = &audit
				g := newGuard(t, opts)
				x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: []byte(tt.body)})
				// A body the guard cannot read is refused in either mode:
				// failing open would send bytes it did not interpret.
				if mode == "closed" || tt.stage == sdk.StageParse {
					var ge *sdk.GuardError
					if !errors.As(err, &ge) || ge.Stage != tt.stage {
						t.Fatalf("err = %v, want *GuardError at %s", err, tt.stage)
					}
					if x != nil {
						t.Fatal("an exchange was returned: the request could be sent")
					}
					if strings.Contains(err.Error(), email) {
						t.Fatalf("error leaks input: %v", err)
					}
					if !strings.Contains(audit.String(), `"failure":"`+string(tt.stage)+`"`) {
						t.Fatalf("audit does not record the failure: %s", audit.String())
					}
					return
				}
				if err != nil || !x.FailedOpen || string(x.Body) != tt.body {
					t.Fatalf("fail open: x=%+v err=%v", x, err)
				}
				if _, err := x.Response(context.Background(), 200, "application/json", []byte(`{"choices":[]}`)); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(audit.String(), `"failed_open":"`+string(tt.stage)+`"`) {
					t.Fatalf("audit does not record the open failure: %s", audit.String())
				}
			})
		}
	}
}

func TestResponseUnparsableFailsClosed(t *testing.T) {
	for _, mode := range []string{"closed", "open"} {
		g := newGuard(t, sdk.Options{Policy: testPolicyMode(t, mode)})
		x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("hi")})
		if err != nil {
			t.Fatal(err)
		}
		out, err := x.Response(context.Background(), 200, "application/json", []byte(`{"choices": [`))
		var ge *sdk.GuardError
		if mode == "closed" && (!errors.As(err, &ge) || out != nil) {
			t.Fatalf("closed: out=%q err=%v", out, err)
		}
		if mode == "open" && (err != nil || string(out) != `{"choices": [`) {
			t.Fatalf("open: out=%q err=%v", out, err)
		}
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := sdk.New(context.Background(), sdk.Options{}); err == nil {
		t.Error("nil policy accepted")
	}
	if _, err := sdk.New(context.Background(), sdk.Options{Policy: testPolicyMode(t, "closed"), Destination: "nope"}); err == nil {
		t.Error("unknown destination accepted")
	}
}

// TestMangledPlaceholders: a placeholder of this exchange whose label the
// model mangled (prefix duplicated or cut) is still ours and restored; one
// whose tag the model spliced from two of ours is ours too and left in
// place; a tag this exchange never minted stays foreign.
func TestMangledPlaceholders(t *testing.T) {
	g := newGuard(t, sdk.Options{})
	x, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions",
		Body: chatBody("mail " + email + ", call " + phone)})
	if err != nil {
		t.Fatal(err)
	}
	other, err := g.Check(context.Background(), sdk.Request{URL: "/v1/chat/completions", Body: chatBody("mail " + email)})
	if err != nil {
		t.Fatal(err)
	}
	hs := placeholderRE.FindAllString(string(x.Body), -1)
	if len(hs) != 2 {
		t.Fatalf("placeholders %v", hs)
	}
	var mail, tel string
	for _, h := range hs {
		if strings.HasPrefix(h, "[[PII_EMAIL_") {
			mail = h
		} else {
			tel = h
		}
	}
	if mail == "" || tel == "" {
		t.Fatalf("placeholders %v", hs)
	}
	tag := func(p string) string { return p[len(p)-10 : len(p)-2] }
	foreign := placeholderRE.FindString(string(other.Body))
	tests := []struct {
		name, in, want string
		foreign        int
	}{
		{"whole", "to " + mail, "to " + email, 0},
		{"label prefix duplicated", "to [[PIPII_EMAIL_" + tag(mail) + "]]", "to " + email, 0},
		{"label cut", "to [[II_EMAIL_" + tag(mail) + "]]", "to " + email, 0},
		{"label of the other value", "to [[PII_PHONE_NUMBER_" + tag(mail) + "]]", "to " + email, 0},
		{"tag spliced from two of ours", "to [[PII_EMAIL_" + tag(mail)[:3] + tag(tel)[3:] + "]]",
			"to [[PII_EMAIL_" + tag(mail)[:3] + tag(tel)[3:] + "]]", 0},
		{"half a placeholder", "to [[PII_EMAIL_" + tag(mail)[:5], "to [[PII_EMAIL_" + tag(mail)[:5], 0},
		{"another exchange's", "to " + foreign, "to " + foreign, 1},
		{"another exchange's, mangled", "to [[PIPII_EMAIL_" + tag(foreign) + "]]", "to [[PIPII_EMAIL_" + tag(foreign) + "]]", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, sigs := x.Restore(tt.in)
			if got != tt.want || len(sigs) != tt.foreign {
				t.Fatalf("Restore(%q) = %q, %d signals %v; want %q, %d", tt.in, got, len(sigs), sigs, tt.want, tt.foreign)
			}
			for _, s := range sigs {
				if s.ID != policies.SignalForeignPlaceholder {
					t.Errorf("signal %s", s.ID)
				}
			}
		})
	}
}
