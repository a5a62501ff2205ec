package main

import (
	"context"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/aishield/aishield/sdk"
)

// README:begin

// newOpenAIClient returns the official openai-go client guarded by g; any
// client that takes an *http.Client is guarded the same way.
func newOpenAIClient(g *sdk.Guard, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append(opts,
		option.WithHTTPClient(&http.Client{Transport: &sdk.Transport{Guard: g}}))...) // Base nil: http.DefaultTransport
}

// README:end

// askOpenAI sends one question. A refusal reaches openai-go as an HTTP error
// (403 blocked, 502 contaminated…) marked not to be retried, so the prompt
// is never sent again to a service that leaked; sdk.WithRefusal recovers
// the guard's typed error.
func askOpenAI(ctx context.Context, client openai.Client, question string) (string, error) {
	ctx, refused := sdk.WithRefusal(ctx)
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o", MaxCompletionTokens: openai.Int(48),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)}})
	if err != nil {
		if r := refused(); r != nil {
			return "", r // *sdk.BlockedError, *sdk.ContaminationError or *sdk.GuardError
		}
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}
