package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// truncGuard is a guard for the paged-cache server at url, declaring only
// its advertised context (so over-long prompts are sent) and, when
// tokenizer is set, its tokenizer.
func truncGuard(t *testing.T, url, tokenizer string) *sdk.Guard {
	t.Helper()
	src := strings.Replace(testPolicy, "%s", "closed", 1)
	src = strings.Replace(src, "usage_mismatch: flag", "usage_mismatch: block\n  canary: true", 1)
	dest := "  - name: shared-llm\n    base_url: " + url + "\n    max_level: internal\n    action: redact\n    block_at: restricted\n    max_input_tokens: 16384\n"
	if tokenizer != "" {
		dest += "    tokenizer: " + tokenizer + "\n"
	}
	src = strings.Replace(src, "destinations:\n", "destinations:\n"+dest, 1)
	pol, err := policies.Parse([]byte(src), "yaml", "trunc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return newVerifiedGuard(t, sdk.Options{Policy: pol}, []byte("k"))
}

// chatThrough sends one chat (streamed or not) and returns the answer and
// the error.
func chatThrough(ctx context.Context, c *sdk.Client, text string, stream bool) (string, error) {
	req := goopenai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 32,
		Messages: []goopenai.ChatCompletionMessage{{Role: "system", Content: "You answer in French."}, {Role: "user", Content: text}}}
	if !stream {
		resp, err := c.CreateChatCompletion(ctx, req)
		if err != nil {
			return "", err
		}
		return resp.Choices[0].Message.Content, nil
	}
	req.Stream = true
	st, err := c.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b strings.Builder
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		for _, c := range ch.Choices {
			b.WriteString(c.Delta.Content)
		}
	}
}

// TestTokenizerCatchesTruncation: the paged-cache server's auto-truncate
// fault keeps the last 4,095 tokens of a longer prompt and answers 200
// with prompt_tokens 4,095, above the verifier's loose ratio. With the
// destination's tokenizer (cl100k_base) declared, the guard compares with
// the exact count and refuses the answer, plain and streamed; without it,
// the truncated answer goes through (why the declaration matters). Clean
// exchanges of every size, with placeholders and a canary, are never
// refused with the tight check.
func TestTokenizerCatchesTruncation(t *testing.T) {
	ctx := context.Background()
	long := "Contact " + email + " about the audit. " + strings.Repeat("The quarterly audit of the northern depot found minor issues. ", 420)
	for _, tokenizer := range []string{"cl100k_base", ""} {
		ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(16384),
			pagedcache.WithFaults(pagedcache.FaultAutoTruncate), pagedcache.WithSeed(5))
		cfg := goopenai.DefaultConfig("sk-a")
		cfg.BaseURL = ts.URL + "/v1"
		c := sdk.NewClient(truncGuard(t, ts.URL, tokenizer), cfg)
		for seq, stream := range []bool{false, true} {
			_, err := chatThrough(ctx, c, long, stream)
			var rec pagedcache.RequestRecord
			ok := false
			for wait := time.Millisecond; !ok && wait < time.Second; wait *= 2 {
				if rec, ok = ts.Request(fmt.Sprint(seq + 1)); !ok {
					time.Sleep(wait)
				}
			}
			if !ok || rec.Outcome != "truncated" || rec.ReportedPromptTokens != 4095 {
				t.Fatalf("server record %+v", rec)
			}
			var ce *sdk.ContaminationError
			caught := errors.As(err, &ce) && ce.Signals[0].ID == policies.SignalUsageMismatch
			if caught != (tokenizer != "") {
				t.Fatalf("tokenizer %q stream %v: err %v", tokenizer, stream, err)
			}
			if caught && !strings.Contains(err.Error(), "4095 prompt tokens") {
				t.Errorf("message: %v", err)
			}
		}
	}

	// No false alarm: clean exchanges under the capacity, sizes from a few
	// tokens to near the capacity.
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(16384), pagedcache.WithSeed(6))
	cfg := goopenai.DefaultConfig("sk-b")
	cfg.BaseURL = ts.URL + "/v1"
	c := sdk.NewClient(truncGuard(t, ts.URL, "cl100k_base"), cfg)
	for i, n := range []int{0, 1, 3, 20, 120, 200} {
		var b strings.Builder
		fmt.Fprintf(&b, "Question %d for %s, phone %s: ", i, email, phone)
		for j := range n {
			fmt.Fprintf(&b, "Line %d.%d: why does pump %d hum at %d:%02d?\n", i, j, j*7+i, j%24, (j*13+i)%60)
		}
		text := b.String()
		for _, stream := range []bool{false, true} {
			if _, err := chatThrough(ctx, c, text, stream); err != nil {
				t.Errorf("clean exchange of %d lines (stream %v) refused: %v", n, stream, err)
			}
		}
	}
}

// TestPromptCountedAhead: with the destination's tokenizer declared, the
// prompt's exact count starts in the background when the request leaves
// and gives the inline count; without it, nothing is counted.
func TestPromptCountedAhead(t *testing.T) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(16384))
	for _, tc := range []struct {
		tokenizer, text string
		started         bool
	}{
		{"cl100k_base", strings.Repeat("The quarterly audit of the northern depot found minor issues. ", 40), true},
		{"cl100k_base", "Ünïcödé façade — naïve café; 日本語", true},
		{"", "The quarterly audit of the northern depot found minor issues.", false},
	} {
		g := truncGuard(t, ts.URL, tc.tokenizer)
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":"You answer in French."},{"role":"user","content":%q}]}`, tc.text)
		x, err := g.Check(ctx, sdk.Request{URL: ts.URL + "/v1/chat/completions", Body: []byte(body), ContentType: "application/json"})
		if err != nil {
			t.Fatal(err)
		}
		ahead, inline, started, err := sdk.PromptCounts(x)
		if err != nil || started != tc.started || ahead != inline || tc.started && inline < len(tc.text)/8 {
			t.Errorf("tokenizer %q: ahead %d, inline %d, started %v (want %v), err %v", tc.tokenizer, ahead, inline, started, tc.started, err)
		}
	}
}
