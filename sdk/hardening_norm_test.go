package sdk_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"golang.org/x/text/unicode/norm"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// Issue 18, case 5, through the guard with the default (embedded) policy:
// an address written in fullwidth forms, with a zero-width space or a soft
// hyphen inside, percent- or base64-encoded, or after mailto:, leaves as a
// placeholder, with no fragment of it in the body sent upstream.

const addr18 = "jean.dupont@acme-corp.fr"

func defaultGuard(t *testing.T) *sdk.Guard {
	t.Helper()
	p, err := policies.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	g, err := sdk.New(context.Background(), sdk.Options{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func fullwidth18(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7F {
			r += 0xFF01 - '!'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// encodedAddresses are the address as the red team wrote it.
func encodedAddresses() map[string]string {
	return map[string]string{
		"fullwidth at":      "jean.dupont＠acme-corp.fr",
		"fullwidth":         fullwidth18(addr18),
		"zero-width space":  "jean.du\u200bpont@acme-corp.fr",
		"word joiner":       "jean.dupont\u2060@acme-corp.fr",
		"soft hyphen":       "jean.du\u00adpont@acme\u00ad-corp.fr",
		"percent":           "jean.dupont%40acme-corp.fr",
		"mailto":            "mailto:" + addr18,
		"smtp":              "smtp://" + addr18,
		"base64 secret":     "data:\n  email: " + base64.StdEncoding.EncodeToString([]byte(addr18)),
		"basic credentials": "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(addr18+":hunter2-but-longer")),
	}
}

// blockedEncodings are the encodings whose text holds a secret besides the
// address: the password of HTTP Basic credentials (secret.basic_auth,
// restricted), so the request is blocked and nothing is sent at all.
var blockedEncodings = map[string]bool{"basic credentials": true}

// assertNoFragment checks that body (a JSON request as sent) carries a
// placeholder and no six bytes of the address, read as the normaliser
// reads it: NFKC, invisible characters removed, percent and base64 runs
// decoded.
func assertNoFragment(t *testing.T, body string) {
	t.Helper()
	if !placeholderRE.MatchString(body) {
		t.Fatalf("no placeholder in the body sent: %s", body)
	}
	var texts []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			texts = append(texts, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	var doc any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("body sent is not JSON: %v", err)
	}
	walk(doc)
	for _, s := range append(texts, body) {
		forms := []string{s, norm.NFKC.String(strings.NewReplacer("\u200b", "", "\u2060", "", "\u00ad", "").Replace(s)),
			strings.ReplaceAll(s, "%40", "@")}
		for _, f := range strings.Fields(s) {
			if d, err := base64.StdEncoding.DecodeString(f); err == nil {
				forms = append(forms, string(d))
			}
		}
		for _, f := range forms {
			for i := 0; i+6 <= len(addr18); i++ {
				if strings.Contains(f, addr18[i:i+6]) {
					t.Fatalf("%q of the address in the body sent: %s", addr18[i:i+6], body)
				}
			}
		}
	}
}

func TestHardening05GuardCheck(t *testing.T) {
	g := defaultGuard(t)
	for name, v := range encodedAddresses() {
		t.Run(name, func(t *testing.T) {
			body := chatBody("Please write to " + v + " about the invoice.")
			x, err := g.Check(context.Background(), sdk.Request{URL: "https://api.openai.com/v1/chat/completions", Body: body})
			var be *sdk.BlockedError
			if blockedEncodings[name] {
				if !errors.As(err, &be) || !strings.Contains(err.Error(), "secret.basic_auth") {
					t.Fatalf("err %v, want blocked for secret.basic_auth", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if x.Decision.Action != policies.ActionRedact {
				t.Fatalf("action %s, want redact", x.Decision.Action)
			}
			assertNoFragment(t, string(x.Body))
		})
	}
}

// TestHardening05Transport sends the same requests with go-openai through
// sdk.Transport to a real HTTP server: the server receives placeholders
// only, and the client gets the answer with the value restored as the
// caller wrote it.
func TestHardening05Transport(t *testing.T) {
	g := defaultGuard(t)
	u := newUpstream(t)
	cfg := goopenai.DefaultConfig("test-key")
	cfg.BaseURL = u.URL + "/v1"
	cfg.HTTPClient = &http.Client{Transport: &sdk.Transport{Guard: g}}
	client := goopenai.NewClientWithConfig(cfg)
	for name, v := range encodedAddresses() {
		t.Run(name, func(t *testing.T) {
			n := len(u.received())
			resp, err := client.CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{
				Model:    "gpt-4o",
				Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "Please write to " + v + " about the invoice."}},
			})
			if blockedEncodings[name] {
				var ae *goopenai.APIError
				if !errors.As(err, &ae) || ae.HTTPStatusCode != http.StatusForbidden || len(u.received()) != n {
					t.Fatalf("err %v, %d sent: want 403 and nothing sent", err, len(u.received())-n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := u.received()
			if len(got) != n+1 {
				t.Fatalf("upstream received %d requests, want 1", len(got)-n)
			}
			assertNoFragment(t, got[n])
			if answer := resp.Choices[0].Message.Content; !strings.Contains(answer, v) {
				t.Fatalf("answer %q does not restore %q", answer, v)
			}
		})
	}
}
