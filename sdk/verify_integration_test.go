package sdk_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/verify"
)

// TestWithVerifier runs the guard with the real inbound verifier
// (sdk/verify) through the Transport and the official OpenAI client: a
// response quoting the user's own data passes, a response carrying another
// exchange's text is refused naming that exchange, and the canary the
// verifier mints reaches the upstream inside the request.
func TestWithVerifier(t *testing.T) {
	ctx := context.Background()
	pol := testPolicyMode(t, "closed")
	pol.Inbound.Canary = true
	key := []byte("test key shared by guard and verifier")
	g := newVerifiedGuard(t, sdk.Options{Policy: pol}, key)
	u := newUpstream(t)
	client := openaiClient(u, g)

	// Exchange A: the user's own data comes back, restored, and passes.
	secretPlan := "The merger of Northwind and Contoso closes on the fourteenth of May; keep the board memo under wraps until then."
	promptA := "Summarise for " + email + ": " + secretPlan
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(promptA)}})
	if err != nil {
		t.Fatalf("clean exchange refused: %v", err)
	}
	if !strings.Contains(resp.Choices[0].Message.Content, email) {
		t.Fatalf("own data not restored: %q", resp.Choices[0].Message.Content)
	}
	// The request had no system message; the guard added the canary as one.
	if sent := u.received()[0]; strings.Count(sent, `"role":"system"`) != 1 {
		t.Fatalf("no canary system text sent: %s", sent)
	}

	// Exchange B: the upstream answers with A's text (the incident).
	u.reply = func(string) string { return "Sure. " + secretPlan }
	for _, streamed := range []bool{false, true} {
		params := openai.ChatCompletionNewParams{Model: "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather like in Lyon today?")}}
		var got strings.Builder
		if streamed {
			s := client.Chat.Completions.NewStreaming(ctx, params)
			for s.Next() {
				if ch := s.Current().Choices; len(ch) > 0 {
					got.WriteString(ch[0].Delta.Content)
				}
			}
			err = s.Err()
		} else {
			_, err = ask(ctx, client, params, false)
		}
		var ce *sdk.ContaminationError
		if !errors.As(err, &ce) {
			t.Fatalf("streamed=%v: err = %v, want *ContaminationError", streamed, err)
		}
		found := false
		for _, s := range ce.Signals {
			found = found || s.ID == policies.SignalCrossExchange
		}
		if !found || len(ce.Sources) == 0 {
			t.Fatalf("streamed=%v: signals %+v sources %v", streamed, ce.Signals, ce.Sources)
		}
		if strings.Contains(got.String(), "board memo") {
			t.Fatalf("streamed text released the foreign fragment: %q", got.String())
		}
	}
}

// TestVerifierWithItsOwnKey: a verifier built without the guard's scanner
// (its own random hash key, as in a quick setup) cannot compare the
// guard's finding hashes; it scans the request itself, so the user's own
// values restored in the answer are not taken for foreign ones (they were
// in about one run of ten of the openai-go example), while another
// exchange's values still are.
func TestVerifierWithItsOwnKey(t *testing.T) {
	ctx := context.Background()
	pol := testPolicyMode(t, "closed")
	v, err := verify.New(verify.Options{Inbound: pol.Inbound}) // no Scanner: a random key
	if err != nil {
		t.Fatal(err)
	}
	g := newGuard(t, sdk.Options{Policy: pol, Key: []byte("the guard's own key"), Verifier: v})
	u := newUpstream(t)
	client := openaiClient(u, g)
	for _, streamed := range []bool{false, true} {
		u.reply = func(last string) string { return "You said: " + last } // its placeholders come back, restored
		params := openai.ChatCompletionNewParams{Model: "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Call me back on +33 6 12 34 56 78 or at " + email + ".")}}
		text, err := ask(ctx, client, params, streamed)
		if err != nil || !strings.Contains(text, email) || !strings.Contains(text, "+33 6 12 34 56 78") {
			t.Fatalf("streamed=%v: own values refused or not restored: %v %q", streamed, err, text)
		}
		u.reply = func(string) string { return "Write to bob.martin@globex-industries.com." }
		if _, err := ask(ctx, client, params, streamed); !errors.As(err, new(*sdk.ContaminationError)) {
			t.Fatalf("streamed=%v: foreign e-mail: err = %v, want *ContaminationError", streamed, err)
		}
	}
}

// ask sends params plain or streamed and returns the answer text.
// The guard's refusals reach openai-go as HTTP errors it turns into its own
// *openai.Error; ask returns the guard's typed error then (sdk.WithRefusal).
func ask(ctx context.Context, client openai.Client, params openai.ChatCompletionNewParams, streamed bool) (string, error) {
	if !streamed {
		ctx, refused := sdk.WithRefusal(ctx)
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			if r := refused(); r != nil {
				return "", r
			}
			return "", err
		}
		return resp.Choices[0].Message.Content, nil
	}
	var b strings.Builder
	s := client.Chat.Completions.NewStreaming(ctx, params)
	for s.Next() {
		if ch := s.Current().Choices; len(ch) > 0 {
			b.WriteString(ch[0].Delta.Content)
		}
	}
	return b.String(), s.Err()
}

// TestTransportPassesNonAPIRequests: a GET without body still goes through
// (audited), and unknown JSON bodies are classified.
func TestTransportGenericBodies(t *testing.T) {
	u := newUpstream(t)
	g := newGuard(t, sdk.Options{})
	hc := &http.Client{Transport: &sdk.Transport{Guard: g}}
	resp, err := hc.Get(u.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = hc.Post(u.URL+"/v1/custom", "application/json", strings.NewReader(`{"note":{"who":"`+email+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if last := u.received()[1]; strings.Contains(last, email) || !placeholderRE.MatchString(last) {
		t.Fatalf("generic body not redacted: %s", last)
	}
}
