// Command openai-go puts sdk.Transport under the official OpenAI Go client
// (github.com/openai/openai-go): any client that takes an *http.Client is
// guarded the same way. It talks to a paged-cache server started in
// process:
//
//	go run ./examples/openai-go
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

func main() {
	ctx := context.Background()
	srv, err := pagedcache.New(pagedcache.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, srv)

	pol, err := policies.Preset("default")
	if err != nil {
		log.Fatal(err)
	}
	g, err := sdk.New(ctx, sdk.Options{Policy: pol, Destination: "openai"})
	if err != nil {
		log.Fatal(err)
	}
	client := openai.NewClient(
		option.WithBaseURL("http://"+ln.Addr().String()+"/v1/"),
		option.WithAPIKey("sk-local"),
		option.WithHTTPClient(&http.Client{Transport: &sdk.Transport{Guard: g}}),
	)
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:     "pagedcache-1",
		MaxTokens: openai.Int(32),
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Summarise: call +33 6 12 34 56 78 before Friday about the thermostat schedule.")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("answered through sdk.Transport: %d completion tokens, finish reason %s\n", resp.Usage.CompletionTokens, resp.Choices[0].FinishReason)
}
