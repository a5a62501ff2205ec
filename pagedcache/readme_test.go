package pagedcache_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aishield/aishield/pagedcache"
	openai "github.com/sashabaranov/go-openai"
)

// TestReadmeSnippet is the Go snippet of docs/pagedcache.md ("In Go tests"),
// word for word: TestReadmeSnippetShown checks it.
func TestReadmeSnippet(t *testing.T) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t,
		pagedcache.WithCapacity(4096, 64), pagedcache.WithContextLen(16384), // the incident, scaled down
		pagedcache.WithFaults(pagedcache.FaultOversizeStalePages), pagedcache.WithSeed(1))
	client := func(key string) *openai.Client {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = ts.URL + "/v1"
		return openai.NewClientWithConfig(cfg)
	}
	ask := func(c *openai.Client, content string) openai.ChatCompletionResponse {
		resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", MaxTokens: 48,
			Messages: []openai.ChatCompletionMessage{{Role: "user", Content: content}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ask(client("sk-clinic"), "Patient Jane Roe, NHS 943 476 5919, diagnosis F32.1. Draft the referral.")
	resp := ask(client("sk-other"), strings.Repeat(" lorem", 5000)) // over 4,095, under 16,384
	rec, _ := ts.Request(resp.ID)                                   // ground truth
	if resp.Usage.PromptTokens != 1 || len(rec.ForeignTenants()) == 0 {
		t.Fatalf("no leak: %+v", rec)
	}
	// Your guard, put between client and server, must refuse or flag this response.
}

// TestReadmeSnippetShown checks that docs/pagedcache.md shows
// TestReadmeSnippet as it is in this file, so the snippet readers copy is
// the one the tests run.
func TestReadmeSnippetShown(t *testing.T) {
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile("(?ms)^func TestReadmeSnippet\\(.*?^}\n").Find(src)
	if fn == nil {
		t.Fatal("no TestReadmeSnippet in readme_test.go")
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "pagedcache.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## In Go tests\n")
	if !ok {
		t.Fatal(`docs/pagedcache.md has no "In Go tests" section`)
	}
	block := regexp.MustCompile("(?s)```go\n(.*?)```").FindStringSubmatch(section)
	if block == nil {
		t.Fatal(`docs/pagedcache.md's "In Go tests" section shows no go block`)
	}
	if block[1] != string(fn) {
		t.Errorf("docs/pagedcache.md shows:\n%s\nreadme_test.go has:\n%s", block[1], fn)
	}
}
