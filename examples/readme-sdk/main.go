// Command readme-sdk is the go-openai example of the repository's README: a
// go-openai client guarded by aishield with nothing but a policy. The part
// between the README markers is the README's snippet, word for word
// (examples/readme_test.go checks it).
//
// With OPENAI_BASE_URL set (and OPENAI_API_KEY), it asks that provider one
// question carrying an e-mail address: the provider sees a placeholder, the
// answer comes back with the address. Without it, it replays the 2026
// incident on a local paged-KV-cache server, scaled down, with no network
// and no account: another customer of the shared service sends a clinical
// note, then this program sends a request larger than the server's KV cache,
// and aishield refuses the answer, which holds the other customer's data:
//
//	go run ./examples/readme-sdk
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

// README:begin

// newClient returns a go-openai client whose requests and answers all go
// through aishield under pol. Build it once and share it: the guard
// remembers recent exchanges, to recognise their text in other answers.
func newClient(ctx context.Context, pol *policies.Policy, cfg openai.ClientConfig) (*sdk.Client, error) {
	g, err := sdk.New(ctx, sdk.Options{Policy: pol}) // the policy's scanner and response verifier
	if err != nil {
		return nil, err
	}
	return sdk.NewClient(g, cfg), nil // go-openai's methods and types
}

// ask sends one question; the provider sees placeholders, the answer has
// the values back.
func ask(ctx context.Context, client *sdk.Client, question string) (string, error) {
	resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4o", MaxCompletionTokens: 48,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: question}}})
	if err != nil {
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}

// explain says why aishield stopped an exchange.
func explain(err error) string {
	var blocked *sdk.BlockedError
	var contaminated *sdk.ContaminationError
	var quarantined *quarantine.Error
	switch {
	case errors.As(err, &blocked): // nothing was sent; the reasons are masked
		return fmt.Sprintf("not sent (over capacity: %t): %v", blocked.OverCapacity, err)
	case errors.As(err, &contaminated): // the answer carried foreign material
		return fmt.Sprintf("answer refused (%d signals): %v", len(contaminated.Signals), err)
	case errors.As(err, &quarantined): // its answers showed a faulty service: nothing was sent
		return fmt.Sprintf("not sent (%s quarantined): %v", quarantined.Destination, err)
	}
	return err.Error() // *sdk.GuardError: the guard itself failed, and failed closed
}

// README:end

func main() {
	ctx := context.Background()
	pol, err := policies.Preset("default")
	if err != nil {
		log.Fatal(err)
	}
	cfg := openai.DefaultConfig(os.Getenv("OPENAI_API_KEY"))
	question := "Reply to quentin.arnaud@sfr.fr: the thermostat schedule changes on Monday."
	if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
		cfg.BaseURL = base
	} else {
		base, stop, err := incident(ctx)
		if err != nil {
			log.Fatal(err)
		}
		defer stop()
		cfg.BaseURL = base
		question = strings.Repeat(" lorem", 5000) // over the 4,096-token cache, under the 16,384 context
		fmt.Println("another customer sent a clinical note; now sending 5,000 tokens to a 4,096-token cache")
	}
	client, err := newClient(ctx, pol, cfg)
	if err != nil {
		log.Fatal(err)
	}
	answer, err := ask(ctx, client, question)
	if err != nil {
		fmt.Println(explain(err))
		return
	}
	fmt.Println("answer:", answer)
}

// clinic is the other customer's request: a discharge letter, sent
// straight to the shared service. Its identifiers are what an answer
// quoting it gives away; an answer quoting only its prose carries no value
// of it (see TestPreset in main_test.go).
const clinic = "Discharge letter for Amélie Fontaine (amelie.fontaine@orange.fr, NHS 9434765919, mobile +33612345678), " +
	"next of kin hugo.fontaine@free.fr. Diagnosis F32.1, sertraline 50 mg; GP cabinet.renaud@medecins-lyon.fr. Draft the referral."

// incidentOptions is the incident's engine scaled down: a 4,096-token KV
// cache in pages of 64 behind a model accepting 16,384 tokens, freed pages
// reused first and never scrubbed, an over-long prompt aborted at prefill
// yet decoded over stale pages with HTTP 200.
var incidentOptions = pagedcache.Options{CapacityTokens: 4096, PageSize: 64, ContextLen: 16384,
	Faults: []pagedcache.Fault{pagedcache.FaultOversizeStalePages}, Seed: 1}

// incident starts the scaled-down incident server on a loopback port, has
// the clinic send its note straight to it (not through aishield), and
// returns the OpenAI base URL and a function that stops the server.
func incident(ctx context.Context) (string, func(), error) {
	srv, err := pagedcache.New(incidentOptions)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	base := "http://" + ln.Addr().String() + "/v1"
	if err := sendDirect(ctx, base, "sk-clinic", clinic); err != nil {
		hs.Close()
		return "", nil, err
	}
	return base, func() { hs.Close() }, nil
}

// sendDirect sends text to the server at base as a tenant of its own, with
// a plain go-openai client: no aishield.
func sendDirect(ctx context.Context, base, key, text string) error {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = base
	_, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 48,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}}})
	return err
}
