package pagedcache

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"
)

const clientPrompt = "Summarise: the Falcon launch moves to May; budget 2.3M; owner Dana Whitfield."

func TestGoOpenAIClient(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t, WithSeed(5))
	cfg := goopenai.DefaultConfig("sk-test-alpha")
	cfg.BaseURL = ts.URL + "/v1"
	c := goopenai.NewClientWithConfig(cfg)
	ctx := context.Background()
	req := goopenai.ChatCompletionRequest{
		Model:    "gpt-4o",
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: clientPrompt}},
		// The server must honour the legacy max_tokens that OpenAI-compatible
		// clients still send (TestOpenAIGoClient covers max_completion_tokens).
		//lint:ignore SA1019 this test is about the deprecated max_tokens field.
		MaxTokens: 40,
	}
	resp, err := c.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	plain := resp.Choices[0].Message.Content
	if plain == "" || resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 || resp.Model != "gpt-4o" {
		t.Fatalf("response %+v", resp)
	}
	if resp.Usage.CompletionTokens != 40 || resp.Choices[0].FinishReason != goopenai.FinishReasonLength {
		t.Errorf("%d completion tokens, finish %q: want the answer cut at max_tokens 40", resp.Usage.CompletionTokens, resp.Choices[0].FinishReason)
	}
	rec, ok := ts.Request(resp.ID)
	if !ok || !strings.HasPrefix(rec.Tenant, "key-") || strings.Contains(rec.Tenant, "alpha") {
		t.Errorf("tenant from API key = %q (must be a hash, never the key)", rec.Tenant)
	}

	req.Stream = true
	req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	stream, err := c.CreateChatCompletionStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var sb strings.Builder
	var usage *goopenai.Usage
	var finish goopenai.FinishReason
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			sb.WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	if sb.String() != plain {
		t.Errorf("streamed %q, plain %q: same prompt and seed must give the same answer", sb.String(), plain)
	}
	if usage == nil || usage.CompletionTokens != resp.Usage.CompletionTokens || usage.PromptTokensDetails == nil || usage.PromptTokensDetails.CachedTokens == 0 {
		t.Errorf("stream usage %+v", usage)
	}
	if finish != goopenai.FinishReason(resp.Choices[0].FinishReason) {
		t.Errorf("finish %q vs %q", finish, resp.Choices[0].FinishReason)
	}

	// Legacy completions.
	cresp, err := c.CreateCompletion(ctx, goopenai.CompletionRequest{Model: "gpt-3.5-turbo-instruct", Prompt: clientPrompt, MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	if cresp.Choices[0].Text == "" || cresp.Usage.CompletionTokens == 0 || cresp.Usage.CompletionTokens > 10 {
		t.Errorf("completion %+v", cresp)
	}

	// Errors come back typed.
	_, err = c.CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{Model: "m",
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: strings.Repeat(" lorem", 70000)}}})
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || apiErr.Code != "context_length_exceeded" {
		t.Errorf("over-long prompt: %v", err)
	}
}

func TestOpenAIGoClient(t *testing.T) {
	t.Parallel()
	ts := NewTestServer(t, WithSeed(5))
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("sk-test-beta"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:               "pagedcache-1",
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage(clientPrompt)},
		MaxCompletionTokens: openai.Int(40),
	}
	resp, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	plain := resp.Choices[0].Message.Content
	if plain == "" || resp.Usage.PromptTokens == 0 {
		t.Fatalf("response %+v", resp)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != plain {
		t.Errorf("streamed %q, plain %q", got, plain)
	}
	if acc.Usage.CompletionTokens != resp.Usage.CompletionTokens || acc.Usage.PromptTokensDetails.CachedTokens == 0 {
		t.Errorf("stream usage %+v", acc.Usage)
	}

	// The incident, seen through the official client: HTTP 200, no error.
	inc := NewTestServer(t, WithCapacity(2048, 16), WithContextLen(8192), WithFaults(FaultOversizeStalePages))
	ic := openai.NewClient(option.WithBaseURL(inc.URL+"/v1/"), option.WithAPIKey("sk-victim"), option.WithMaxRetries(0))
	if _, err := ic.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(victimText(0))}}); err != nil {
		t.Fatal(err)
	}
	ac := openai.NewClient(option.WithBaseURL(inc.URL+"/v1/"), option.WithAPIKey("sk-other"), option.WithMaxRetries(0))
	leak, err := ac.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat(" lorem", 3000))},
		MaxTokens: openai.Int(48)})
	if err != nil {
		t.Fatalf("the incident answers 200, got %v", err)
	}
	// The victim's full prompt pages stay in its prefix cache; the free
	// list hands out its prompt's last page and its answer's pages, which
	// hold "... 98,000 EUR under contract A." but no whole "ZEPHYR-4471".
	rec, _ := inc.Request(leak.ID)
	if leak.Usage.PromptTokens != 1 || !strings.Contains(leak.Choices[0].Message.Content, "EUR under contract") || len(rec.ForeignTenants()) != 1 {
		t.Errorf("incident through openai-go: prompt_tokens %d, %q, foreign tenants %v", leak.Usage.PromptTokens, leak.Choices[0].Message.Content, rec.ForeignTenants())
	}

	var apiErr *openai.Error
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat(" lorem", 70000))}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" {
		t.Errorf("over-long prompt: %v", err)
	}
}
