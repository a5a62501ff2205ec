package sdk_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aishield/aishield/sdk"
)

// prose is business text with one e-mail address per ~400 bytes.
func prose(n int) string {
	const para = "Quarterly review notes: the team shipped the billing migration, reduced p99 latency by a third, and agreed next steps with the vendor. Contact jean.dupont@acme-corp.fr for the contract annex. Remaining risks are the data retention schedule and the on-call rotation for the holidays, which the managers will settle on Friday. "
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(para)
	}
	return b.String()[:n]
}

func benchBody(n int, model string) []byte {
	b, _ := json.Marshal(map[string]any{"model": model, "messages": []any{
		map[string]any{"role": "system", "content": "You are a helpful assistant for the finance team."},
		map[string]any{"role": "user", "content": prose(n)}}})
	return b
}

// benchCheck measures Check and Response of body; verify says whether the
// standard verifier checks the response (the default) or only the
// placeholders (NoVerify: the outbound side and the restore).
func benchCheck(b *testing.B, url string, body []byte, wantBlocked, verify bool) {
	g := newGuard(b, sdk.Options{Destination: "anthropic-test", NoVerify: !verify}) // no capacity limit
	ctx := context.Background()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		x, err := g.Check(ctx, sdk.Request{URL: url, Body: body})
		if (err != nil) != wantBlocked {
			b.Fatal(err)
		}
		if x != nil {
			resp := `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Noted. I will write to [[PII_EMAIL_00000000]] later."},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":12}}`
			if _, err := x.Response(ctx, 200, "application/json", []byte(resp)); err == nil {
				b.Fatal("foreign placeholder not caught")
			}
		}
	}
}

// BenchmarkGuard4KB is the guard's outbound overhead for a 4 KB chat
// request (classify, decide, redact, re-encode) and its response (parse,
// restore, check placeholders), without the verifier.
func BenchmarkGuard4KB(b *testing.B) {
	benchCheck(b, "/v1/chat/completions", benchBody(4<<10, "gpt-4o"), false, false)
}

// BenchmarkGuard4KBVerified is the same with the standard verifier, as
// sdk.New builds the guard by default: the whole cost of one exchange.
func BenchmarkGuard4KBVerified(b *testing.B) {
	benchCheck(b, "/v1/chat/completions", benchBody(4<<10, "gpt-4o"), false, true)
}

// BenchmarkGuard4MB is the same for a 4 MB (about a million tokens)
// request to a destination without a capacity limit.
func BenchmarkGuard4MB(b *testing.B) {
	benchCheck(b, "/v1/chat/completions", benchBody(4<<20, "gpt-4o"), false, false)
}

// BenchmarkGuard4MBVerified is the same with the standard verifier.
func BenchmarkGuard4MBVerified(b *testing.B) {
	benchCheck(b, "/v1/chat/completions", benchBody(4<<20, "gpt-4o"), false, true)
}

// BenchmarkGuard4MBOverCapacity refuses a 4 MB request to a destination
// with max_input_tokens 5000, decided by the fast token bounds.
func BenchmarkGuard4MBOverCapacity(b *testing.B) {
	g := newGuard(b, sdk.Options{Destination: "openai-test"})
	body := benchBody(4<<20, "gpt-4o")
	ctx := context.Background()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Check(ctx, sdk.Request{URL: "/v1/chat/completions", Body: body}); err == nil {
			b.Fatal("not blocked")
		}
	}
}
