package sdk_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/inbound"
	"github.com/aishield/aishield/sdk/verify"
)

// recordingVerifier keeps the exchanges the guard begins, and mints a
// canary for each, so that the test sees where the guard puts it.
type recordingVerifier struct{ seen []*inbound.Exchange }

func (r *recordingVerifier) Begin(ctx context.Context, ex *inbound.Exchange) (inbound.Session, error) {
	r.seen = append(r.seen, ex)
	return nopSession{}, nil
}

func (r *recordingVerifier) MintCanary(ctx context.Context, ex *inbound.Exchange) (string, error) {
	return verify.CanaryLine("aishield-canary-abcdefghijklmnop"), nil
}

type nopSession struct{}

func (nopSession) Write(context.Context, inbound.Delta) ([]inbound.Signal, error) { return nil, nil }
func (nopSession) HoldBack() int                                                  { return 0 }
func (nopSession) Close(context.Context, inbound.End) ([]inbound.Signal, error)   { return nil, nil }

// TestGuardNamesRoles: the exchange the guard hands the verifier carries
// the role of each text as the format says it (Roles parallel to Texts:
// chat and responses messages, Anthropic's top-level system, the
// responses API's instructions), the canary it adds none; Replay too.
func TestGuardNamesRoles(t *testing.T) {
	pol, err := policies.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url, body string
		roles     []string
	}{
		{"/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"developer","content":"Cite sources."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":"Help"}]}`,
			[]string{"system", "developer", "user", "assistant", "user"}},
		{"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"system":"Be brief.","messages":[{"role":"user","content":"Hi"}]}`,
			[]string{"system", "user"}},
		{"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Cite sources."}],"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
			[]string{"system", "system", "user"}},
		{"/v1/responses", `{"model":"gpt-4o","instructions":"Be brief.","input":[{"role":"developer","content":"Cite sources."},{"role":"user","content":"Hi"}]}`,
			[]string{"system", "developer", "user"}},
		{"/v1/completions", `{"model":"gpt-3.5-turbo-instruct","prompt":"Say hi"}`, []string{"user"}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			rec := &recordingVerifier{}
			g := newGuard(t, sdk.Options{Policy: pol, Verifier: rec})
			if _, err := g.Check(context.Background(), sdk.Request{URL: tt.url, Body: []byte(tt.body)}); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Replay(context.Background(), sdk.Capture{URL: tt.url, Request: []byte(tt.body), Response: chatResponse("Hi.", "stop")}); err != nil {
				var ge *sdk.GuardError
				if !errors.As(err, &ge) {
					t.Fatal(err)
				}
			}
			if len(rec.seen) != 2 {
				t.Fatalf("%d exchanges begun, want 2 (Check and Replay)", len(rec.seen))
			}
			for i, ex := range rec.seen {
				if !slices.Equal(ex.Roles, tt.roles) || len(ex.Roles) != len(ex.Texts) {
					t.Errorf("exchange %d: roles %q for texts %q, want %q", i, ex.Roles, ex.Texts, tt.roles)
				}
			}
			if ex := rec.seen[0]; ex.Canary != "" && (len(ex.Sent) != len(ex.Texts)+1 || !strings.Contains(ex.Sent[len(ex.Sent)-1], verify.CanaryPrefix)) {
				t.Errorf("the canary: sent %q", ex.Sent)
			}
		})
	}
}

// TestResponseCacheEchoingACanary: a response cache in front of the
// provider serves one caller's answer, which echoed its canary line, to
// another caller asking the same question. The guard delivers it (the
// canary's exchange asked what this one asks: a repeated answer, not
// contamination); the same answer to a different question behind the same
// system prompt is refused, naming the canary. The first caller never
// sees its own canary; the second receives the answer as the cache stored
// it (the other exchange's canary line included: the guard strips only an
// exchange's own canary, before verifying, and a foreign one must reach
// the verifier).
func TestResponseCacheEchoingACanary(t *testing.T) {
	pol, err := policies.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	body := func(q string) []byte {
		return []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are the support assistant of a bicycle shop. Answer in two sentences."},{"role":"user","content":` + quote(q) + `}]}`)
	}
	for _, tt := range []struct {
		name, question string
		refused        bool
	}{
		{"the same question", "How do refunds work?", false},
		{"another question (control)", "Do you ship to Norway?", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, sdk.Options{Policy: pol})
			ctx := context.Background()
			first, err := g.Check(ctx, sdk.Request{URL: "/v1/chat/completions", Body: body("How do refunds work?"), Principal: "team-a"})
			if err != nil {
				t.Fatal(err)
			}
			// The model quotes its prompt, canary line included.
			cached := chatResponse("Refunds go back to your card within five days. "+sentCanary(t, first.Body), "stop")
			out, err := first.Response(ctx, 200, "application/json", cached)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), verify.CanaryPrefix) {
				t.Fatalf("the first caller saw its canary: %s", out)
			}
			second, err := g.Check(ctx, sdk.Request{URL: "/v1/chat/completions", Body: body(tt.question), Principal: "team-b"})
			if err != nil {
				t.Fatal(err)
			}
			out, err = second.Response(ctx, 200, "application/json", cached)
			var ce *sdk.ContaminationError
			if got := errors.As(err, &ce); got != tt.refused {
				t.Fatalf("refused: %v (%v), want %v", got, err, tt.refused)
			}
			if tt.refused {
				if !strings.Contains(ce.Error(), policies.SignalCanary) || !strings.Contains(ce.Error(), first.ID) {
					t.Fatalf("refusal %v, want inbound.canary naming %s", ce, first.ID)
				}
				return
			}
			if got := deliveredText(t, out); !strings.Contains(got, "Refunds go back") || !strings.Contains(got, verify.CanaryPrefix) {
				t.Fatalf("delivered %q, want the cached answer as stored", got)
			}
		})
	}
}
