// Command anthropic puts sdk.Transport under the official Anthropic Go
// client (github.com/anthropics/anthropic-sdk-go). It calls the real API,
// so it needs ANTHROPIC_API_KEY (and network); the personal data in the
// prompt leaves as placeholders and comes back restored:
//
//	ANTHROPIC_API_KEY=... go run ./examples/anthropic
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

func main() {
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		fmt.Println("set ANTHROPIC_API_KEY to run this example against the Anthropic API")
		return
	}
	ctx := context.Background()
	pol, err := policies.Preset("default")
	if err != nil {
		log.Fatal(err)
	}
	// No forced destination: the request URL (https://api.anthropic.com)
	// matches the preset's "anthropic" destination.
	g, err := sdk.New(ctx, sdk.Options{Policy: pol})
	if err != nil {
		log.Fatal(err)
	}
	client := anthropic.NewClient(option.WithHTTPClient(&http.Client{Transport: &sdk.Transport{Guard: g}}))
	msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeSonnet5_5,
		MaxTokens: 200,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(
			"Draft a two-line reply to quentin.arnaud@sfr.fr confirming Friday's appointment."))},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, b := range msg.Content {
		fmt.Println(b.Text)
	}
}
