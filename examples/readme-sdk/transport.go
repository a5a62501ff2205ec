package main

import (
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
		option.WithHTTPClient(&http.Client{Transport: &sdk.Transport{Guard: g}}), // Base nil: http.DefaultTransport
		option.WithMaxRetries(0), // else openai-go sends a prompt again when aishield refuses its answer
	)...)
}

// README:end
