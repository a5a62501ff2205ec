// Command go-openai shows the go-openai wrapper: sdk.NewClient guards every
// request and response of a go-openai client. It talks to a paged-cache
// server started in process, so it runs with no network and no account:
//
//	go run ./examples/go-openai
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

func main() {
	ctx := context.Background()
	// A local OpenAI-compatible server (the bundled paged-cache server).
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
	// Treat the local server as the "openai" destination of the policy.
	g, err := sdk.New(ctx, sdk.Options{Policy: pol, Destination: "openai"})
	if err != nil {
		log.Fatal(err)
	}
	cfg := openai.DefaultConfig("sk-local")
	cfg.BaseURL = "http://" + ln.Addr().String() + "/v1"
	client := sdk.NewClient(g, cfg)

	ask := func(text string) {
		resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
			Model:               "pagedcache-1",
			MaxCompletionTokens: 32,
			Messages:            []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}},
		})
		var blocked *sdk.BlockedError
		switch {
		case errors.As(err, &blocked):
			fmt.Println("blocked before sending:", blocked.Reasons[0].Detector)
		case err != nil:
			fmt.Println("error:", err)
		default:
			fmt.Printf("answered (%d tokens); the policy sent the e-mail address as a placeholder\n", resp.Usage.CompletionTokens)
		}
	}
	ask("Reply to quentin.arnaud@sfr.fr about the weekly thermostat schedule.")
	ask("Why does the deploy fail? GITHUB_TOKEN=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")
}
