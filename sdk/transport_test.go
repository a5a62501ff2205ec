package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/inbound"
)

func openaiClient(u *upstream, g *sdk.Guard) openai.Client {
	return openai.NewClient(option.WithAPIKey("test-key"), option.WithBaseURL(u.URL+"/v1/"),
		option.WithMaxRetries(0), option.WithHTTPClient(&http.Client{Transport: &sdk.Transport{Guard: g}}))
}

func anthropicClient(u *upstream, g *sdk.Guard) anthropic.Client {
	return anthropic.NewClient(anthropicoption.WithAPIKey("test-key"), anthropicoption.WithBaseURL(u.URL),
		anthropicoption.WithMaxRetries(0), anthropicoption.WithHTTPClient(&http.Client{Transport: &sdk.Transport{Guard: g}}))
}

// assertRedactedUpstream checks that the upstream saw placeholders, never
// the raw value.
func assertRedactedUpstream(t *testing.T, u *upstream) {
	t.Helper()
	bodies := u.received()
	if len(bodies) == 0 {
		t.Fatal("upstream received nothing")
	}
	for _, b := range bodies {
		if strings.Contains(b, email) {
			t.Fatalf("upstream received the raw value: %s", b)
		}
		if !placeholderRE.MatchString(b) {
			t.Fatalf("upstream body has no placeholder: %s", b)
		}
	}
}

func TestOpenAIGoRedactAndRestore(t *testing.T) {
	ctx := context.Background()
	u := newUpstream(t)
	g := newGuard(t, sdk.Options{})
	client := openaiClient(u, g)
	prompt := "Please write to " + email + " today"

	t.Run("chat", func(t *testing.T) {
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != "You said: "+prompt {
			t.Fatalf("content = %q", got)
		}
	})
	t.Run("chat stream", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
		var b strings.Builder
		n := 0
		for stream.Next() {
			if ch := stream.Current().Choices; len(ch) > 0 {
				b.WriteString(ch[0].Delta.Content)
			}
			n++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if b.String() != "You said: "+prompt || n < 10 {
			t.Fatalf("streamed %d chunks: %q", n, b.String())
		}
	})
	t.Run("responses", func(t *testing.T) {
		resp, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.OutputText(); got != "You said: "+prompt {
			t.Fatalf("output = %q", got)
		}
	})
	t.Run("responses stream", func(t *testing.T) {
		stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "gpt-4o",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}})
		var deltas, done, completed string
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "response.output_text.delta":
				deltas += ev.Delta
			case "response.output_text.done":
				done = ev.Text
			case "response.completed":
				completed = ev.Response.OutputText()
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := "You said: " + prompt
		if deltas != want || done != want || completed != want {
			t.Fatalf("deltas %q done %q completed %q", deltas, done, completed)
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		_, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "text-embedding-3-small",
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{prompt}}})
		if err != nil {
			t.Fatal(err)
		}
	})
	assertRedactedUpstream(t, u)
}

func TestAnthropicRedactAndRestore(t *testing.T) {
	ctx := context.Background()
	u := newUpstream(t)
	g := newGuard(t, sdk.Options{})
	client := anthropicClient(u, g)
	prompt := "Forward this to " + email + ", thanks"
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}

	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Content[0].Text; got != "You said: "+prompt {
		t.Fatalf("content = %q", got)
	}
	stream := client.Messages.NewStreaming(ctx, params)
	acc := anthropic.Message{}
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Content[0].Text; got != "You said: "+prompt {
		t.Fatalf("streamed content = %q", got)
	}
	assertRedactedUpstream(t, u)
}

func TestGoOpenAIClient(t *testing.T) {
	ctx := context.Background()
	u := newUpstream(t)
	var audit bytes.Buffer
	g := newGuard(t, sdk.Options{Audit: &audit})
	cfg := goopenai.DefaultConfig("test-key")
	cfg.BaseURL = u.URL + "/v1"
	c := sdk.NewClient(g, cfg)
	prompt := "Call me at " + phone + " or mail " + email
	req := goopenai.ChatCompletionRequest{Model: "gpt-4o", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: prompt}}}

	resp, err := c.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "You said: "+prompt {
		t.Fatalf("content = %q", resp.Choices[0].Message.Content)
	}
	stream, err := c.CreateChatCompletionStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Choices) > 0 {
			b.WriteString(r.Choices[0].Delta.Content)
		}
	}
	stream.Close()
	if b.String() != "You said: "+prompt {
		t.Fatalf("streamed = %q", b.String())
	}
	cresp, err := c.CreateCompletion(ctx, goopenai.CompletionRequest{Model: "gpt-3.5-turbo-instruct", Prompt: prompt})
	if err != nil || cresp.Choices[0].Text != "You said: "+prompt {
		t.Fatalf("completion = %+v, %v", cresp, err)
	}
	if _, err := c.CreateEmbeddings(ctx, goopenai.EmbeddingRequestStrings{Input: []string{prompt}, Model: goopenai.SmallEmbedding3}); err != nil {
		t.Fatal(err)
	}
	assertRedactedUpstream(t, u)

	// Blocked: nothing reaches the upstream, errors.As finds the reason.
	before := len(u.received())
	_, err = c.CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{Model: "gpt-4o",
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "use " + secret}}})
	var be *sdk.BlockedError
	if !errors.As(err, &be) || be.Reasons[0].Detector != "secret.gitlab_token" {
		t.Fatalf("err = %v, want *BlockedError for secret.gitlab_token", err)
	}
	if len(u.received()) != before {
		t.Fatal("a blocked request reached the upstream")
	}
	n, _, err := sdk.ReadAudit(&audit, false, nil)
	if err != nil || n != 5 {
		t.Fatalf("audit lines %d, err %v", n, err)
	}
}

// TestForeignPlaceholderNeverRestored shows that a placeholder minted for
// one request, returned in the response to another request (as a shared
// engine leaking another tenant's context would), is not restored: the
// response is refused as contaminated, plain and streamed.
func TestForeignPlaceholderNeverRestored(t *testing.T) {
	ctx := context.Background()
	u := newUpstream(t)
	g := newGuard(t, sdk.Options{})
	client := openaiClient(u, g)

	// Request A carries the e-mail; the upstream sees only its placeholder.
	if _, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("my address is " + email)}}); err != nil {
		t.Fatal(err)
	}
	leaked := placeholderRE.FindString(u.received()[0])
	if leaked == "" {
		t.Fatal("no placeholder sent")
	}
	// Request B (another user, no e-mail) gets A's placeholder back.
	u.reply = func(string) string { return "Earlier someone wrote " + leaked + " here." }
	_, err := ask(ctx, client, openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}, false)
	var ce *sdk.ContaminationError
	if !errors.As(err, &ce) || ce.Signals[0].ID != policies.SignalForeignPlaceholder {
		t.Fatalf("err = %v, want *ContaminationError with %s", err, policies.SignalForeignPlaceholder)
	}
	if strings.Contains(err.Error(), email) {
		t.Fatal("the other request's value leaked into the error")
	}
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	var got strings.Builder
	for stream.Next() {
		if ch := stream.Current().Choices; len(ch) > 0 {
			got.WriteString(ch[0].Delta.Content)
		}
	}
	if !errors.As(stream.Err(), &ce) {
		t.Fatalf("stream err = %v, want *ContaminationError", stream.Err())
	}
	if strings.Contains(got.String(), email) || strings.Contains(got.String(), "[[") {
		t.Fatalf("stream released %q", got.String())
	}
}

// markerVerifier is a small real verifier for the tests: it flags the word
// FOREIGN with a hold-back of its length.
type markerVerifier struct{}

type markerSession struct{ text strings.Builder }

func (markerVerifier) Begin(ctx context.Context, ex *inbound.Exchange) (inbound.Session, error) {
	return &markerSession{}, nil
}
func (s *markerSession) Write(ctx context.Context, d inbound.Delta) ([]inbound.Signal, error) {
	before := strings.Contains(s.text.String(), "FOREIGN")
	s.text.WriteString(d.Text)
	if !before {
		if i := strings.Index(s.text.String(), "FOREIGN"); i >= 0 {
			return []inbound.Signal{{ID: policies.SignalCrossExchange, Start: i, End: i + 7, Sources: []string{"abc123"}, Preview: "F*****N"}}, nil
		}
	}
	return nil, nil
}
func (s *markerSession) HoldBack() int { return len("FOREIGN") - 1 }
func (s *markerSession) Close(ctx context.Context, end inbound.End) ([]inbound.Signal, error) {
	return nil, nil
}

func TestStreamCutBeforeContamination(t *testing.T) {
	ctx := context.Background()
	u := newUpstream(t)
	u.chunk = 2
	u.reply = func(string) string { return "safe prefix text, then FOREIGN material" }
	g := newGuard(t, sdk.Options{Verifier: markerVerifier{}})
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			var got strings.Builder
			var err error
			if provider == "openai" {
				client := openaiClient(u, g)
				stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
				for stream.Next() {
					if ch := stream.Current().Choices; len(ch) > 0 {
						got.WriteString(ch[0].Delta.Content)
					}
				}
				err = stream.Err()
			} else {
				client := anthropicClient(u, g)
				stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 10,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
				for stream.Next() {
					if d, ok := stream.Current().AsAny().(anthropic.ContentBlockDeltaEvent); ok {
						got.WriteString(d.Delta.Text)
					}
				}
				err = stream.Err()
			}
			var ce *sdk.ContaminationError
			if !errors.As(err, &ce) || ce.Sources[0] != "abc123" {
				t.Fatalf("err = %v, want *ContaminationError from abc123", err)
			}
			if strings.Contains(got.String(), "FOR") || !strings.HasPrefix(got.String(), "safe prefix") {
				t.Fatalf("released %q: want the verified prefix only", got.String())
			}
		})
	}
}

// TestTransportContract checks the http.RoundTripper rules: the caller's
// request is left alone, the clone carries body, ContentLength and GetBody
// (GetBody replays the redacted body), nil Base is the default transport.
func TestTransportContract(t *testing.T) {
	u := newUpstream(t)
	g := newGuard(t, sdk.Options{})
	body := chatBody("hello " + email)
	req, _ := http.NewRequest("POST", u.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	origHeader := req.Header.Clone()
	origLen := req.ContentLength
	var replayed []byte
	base := roundTripFunc(func(out *http.Request) (*http.Response, error) {
		if out.GetBody == nil {
			return nil, errors.New("clone without GetBody")
		}
		rc, err := out.GetBody()
		if err != nil {
			return nil, err
		}
		replayed, _ = io.ReadAll(rc)
		if int64(len(replayed)) != out.ContentLength {
			return nil, fmt.Errorf("GetBody gives %d bytes, ContentLength %d", len(replayed), out.ContentLength)
		}
		return http.DefaultTransport.RoundTrip(out)
	})
	client := &http.Client{Transport: &sdk.Transport{Guard: g, Base: base}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(out), email) {
		t.Fatalf("response not restored: %s", out)
	}
	if bytes.Contains(replayed, []byte(email)) || !bytes.Contains(replayed, []byte("hello")) {
		t.Fatalf("GetBody replays %q, want the redacted body", replayed)
	}
	if req.ContentLength != origLen || len(req.Header) != len(origHeader) || req.Header.Get("Accept-Encoding") != "gzip" {
		t.Fatal("caller's request was modified")
	}
	assertRedactedUpstream(t, u)

	// No Guard: fail closed with a 500 the client does not retry, and the
	// body is still closed.
	cb := &closeTracker{Reader: bytes.NewReader(body)}
	ctx2, refused := sdk.WithRefusal(context.Background())
	req2, _ := http.NewRequestWithContext(ctx2, "POST", u.URL+"/v1/chat/completions", cb)
	resp, err = (&sdk.Transport{}).RoundTrip(req2)
	var ge *sdk.GuardError
	if err != nil || resp.StatusCode != 500 || resp.Header.Get("X-Should-Retry") != "false" || !errors.As(refused(), &ge) || !cb.closed {
		t.Fatalf("zero Transport: resp=%v err=%v refusal=%v closed=%v", resp, err, refused(), cb.closed)
	}
	// A blocked request closes the body, sends nothing and is answered
	// with a 403 in the API's format that says not to retry.
	sent := len(u.received())
	cb = &closeTracker{Reader: bytes.NewReader(chatBody(secret))}
	ctx3, refused := sdk.WithRefusal(context.Background())
	req3, _ := http.NewRequestWithContext(ctx3, "POST", u.URL+"/v1/chat/completions", cb)
	resp, err = (&sdk.Transport{Guard: g}).RoundTrip(req3)
	var be *sdk.BlockedError
	if err != nil || resp.StatusCode != 403 || resp.Header.Get("X-Should-Retry") != "false" || !errors.As(refused(), &be) ||
		!cb.closed || len(u.received()) != sent {
		t.Fatalf("blocked: resp=%v err=%v refusal=%v closed=%v", resp, err, refused(), cb.closed)
	}
	var apiErr struct {
		Error struct{ Code, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&apiErr); err != nil || apiErr.Error.Code != "aishield_blocked" || strings.Contains(apiErr.Error.Message, "glpat-") {
		t.Fatalf("blocked body: %+v, %v", apiErr, err)
	}
}

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

// TestConcurrentExchangesIsolated runs many guarded requests at once
// through one Transport: each gets its own value back, never another's.
func TestConcurrentExchangesIsolated(t *testing.T) {
	ctx := context.Background()
	u := newUpstream(t)
	g := newGuard(t, sdk.Options{})
	client := openaiClient(u, g)
	const n = 24
	errs := make(chan error, n)
	for i := range n {
		go func() {
			addr := "agent" + strconv.Itoa(i) + "@acme-corp.fr"
			stream := i%2 == 0
			params := openai.ChatCompletionNewParams{Model: "gpt-4o",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("mail " + addr)}}
			var got string
			if stream {
				s := client.Chat.Completions.NewStreaming(ctx, params)
				for s.Next() {
					if ch := s.Current().Choices; len(ch) > 0 {
						got += ch[0].Delta.Content
					}
				}
				if err := s.Err(); err != nil {
					errs <- err
					return
				}
			} else {
				resp, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					errs <- err
					return
				}
				got = resp.Choices[0].Message.Content
			}
			if got != "You said: mail "+addr {
				errs <- fmt.Errorf("request %d got %q", i, got)
				return
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// roundTripFunc turns a function into an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
