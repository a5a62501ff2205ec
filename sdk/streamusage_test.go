package sdk_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/verify"
)

// tap records the request bodies that reach the upstream and the raw
// bytes the upstream answered.
type tap struct {
	mu     sync.Mutex
	bodies []string
}

func (t *tap) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	t.mu.Lock()
	t.bodies = append(t.bodies, string(b))
	t.mu.Unlock()
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(b))
	return http.DefaultTransport.RoundTrip(out)
}

func (t *tap) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bodies[len(t.bodies)-1]
}

// usageGuard is a guard in front of the paged-cache server at url whose
// only blocking inbound signal is usage_mismatch.
func usageGuard(t *testing.T, url string, noUsage bool) *sdk.Guard {
	t.Helper()
	src := strings.Replace(testPolicy, "%s", "closed", 1)
	src = strings.Replace(src, "usage_mismatch: flag", "usage_mismatch: block\n    foreign_entity: off\n    cross_exchange: off\n    template_fragment: off\n    canary: off", 1)
	src = strings.Replace(src, "destinations:\n", "destinations:\n  - name: shared-llm\n    base_url: "+url+
		"\n    max_level: internal\n    action: redact\n    block_at: restricted\n    max_input_tokens: 100000\n", 1)
	pol, err := policies.Parse([]byte(src), "yaml", "usage.yaml")
	if err != nil {
		t.Fatal(err)
	}
	v, err := verify.New(verify.Options{Inbound: pol.Inbound})
	if err != nil {
		t.Fatal(err)
	}
	return newGuard(t, sdk.Options{Policy: pol, Verifier: v, NoStreamUsage: noUsage})
}

// TestStreamUsageAsked: a streamed chat whose caller did not ask for usage
// goes out asking for it (stream_options.include_usage), and the caller
// receives exactly the stream it asked for: no usage chunk, no usage
// field, with go-openai and openai-go; a caller that asked gets its usage.
func TestStreamUsageAsked(t *testing.T) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192), pagedcache.WithSeed(2))
	up := &tap{}
	g := usageGuard(t, ts.URL, false)
	hc := &http.Client{Transport: &sdk.Transport{Guard: g, Base: up}}
	question := "Please summarise the maintenance schedule of the boiler for the winter months in three lines."

	// Raw stream as the caller sees it.
	body := `{"model":"m","stream":true,"max_tokens":24,"messages":[{"role":"user","content":"` + question + `"}]}`
	resp, err := hc.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if sent := up.last(); !strings.Contains(sent, `"stream_options":{"include_usage":true}`) || !strings.HasSuffix(sent, body[1:]) {
		t.Fatalf("sent %s", sent)
	}
	if bytes.Contains(raw, []byte(`"usage"`)) || !bytes.Contains(raw, []byte("data: [DONE]")) {
		t.Fatalf("caller received usage it did not ask for, or no end:\n%s", raw)
	}
	events := 0
	for sc := bufio.NewScanner(bytes.NewReader(raw)); sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: {") {
			events++
			if strings.Contains(sc.Text(), `"choices":[]`) {
				t.Fatalf("usage-only chunk delivered: %s", sc.Text())
			}
		}
	}
	if events < 3 {
		t.Fatalf("%d events:\n%s", events, raw)
	}

	// go-openai, without and with include_usage.
	cfg := goopenai.DefaultConfig("sk-a")
	cfg.BaseURL = ts.URL + "/v1"
	cfg.HTTPClient = hc
	gc := goopenai.NewClientWithConfig(cfg)
	for _, asked := range []bool{false, true} {
		req := goopenai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 24, Stream: true,
			Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: question}}}
		if asked {
			req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
		}
		st, err := gc.CreateChatCompletionStream(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		usage, emptyChoices := 0, 0
		for {
			ch, err := st.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("asked=%v: %v", asked, err)
			}
			if ch.Usage != nil {
				usage++
			}
			if len(ch.Choices) == 0 {
				emptyChoices++
			}
			for _, c := range ch.Choices {
				text.WriteString(c.Delta.Content)
			}
		}
		st.Close()
		if text.Len() == 0 || (asked && (usage != 1 || emptyChoices != 1)) || (!asked && (usage != 0 || emptyChoices != 0)) {
			t.Fatalf("go-openai asked=%v: text %q, %d usage chunks, %d without choices", asked, text.String(), usage, emptyChoices)
		}
	}

	// openai-go.
	oc := openai.NewClient(option.WithAPIKey("sk-b"), option.WithBaseURL(ts.URL+"/v1/"), option.WithMaxRetries(0), option.WithHTTPClient(hc))
	st := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "m", MaxTokens: openai.Int(24),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)}})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for st.Next() {
		ch := st.Current()
		acc.AddChunk(ch)
		chunks++
		if len(ch.Choices) == 0 || ch.JSON.Usage.Valid() {
			t.Fatalf("openai-go received a usage chunk: %s", ch.RawJSON())
		}
	}
	if err := st.Err(); err != nil || chunks == 0 || acc.Choices[0].Message.Content == "" {
		t.Fatalf("openai-go: err %v, %d chunks, %v", err, chunks, acc.Choices)
	}
}

// TestStreamUsageCatchesDroppedPrompt: the incident's over-long prompt is
// decoded over stale pages and streamed back with prompt_tokens 1. The
// caller did not ask for usage; the guard asked for it, so
// inbound.usage_mismatch cuts the stream. Without the guard asking
// (NoStreamUsage), the same answer would have been delivered.
func TestStreamUsageCatchesDroppedPrompt(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat(" lorem ipsum dolor", 1800)
	for _, noUsage := range []bool{false, true} {
		ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(16384),
			pagedcache.WithFaults(pagedcache.FaultOversizeStalePages), pagedcache.WithSeed(3))
		g := usageGuard(t, ts.URL, noUsage)
		cfg := goopenai.DefaultConfig("sk-a")
		cfg.BaseURL = ts.URL + "/v1"
		c := sdk.NewClient(g, cfg)
		st, err := c.CreateChatCompletionStream(ctx, goopenai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 32, Stream: true,
			Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: long}}})
		if err != nil {
			t.Fatal(err)
		}
		var got error
		for {
			_, err := st.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					got = err
				}
				break
			}
		}
		st.Close()
		var ce *sdk.ContaminationError
		caught := errors.As(got, &ce) && len(ce.Signals) > 0 && ce.Signals[0].ID == policies.SignalUsageMismatch
		if caught == noUsage {
			t.Fatalf("NoStreamUsage=%v: stream error %v", noUsage, got)
		}
	}
}
