package sdk_test

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// TestEarlyUsageReportedOnce: an Anthropic stream whose message_start
// counts 3 input tokens for a prompt of thousands is a usage mismatch,
// found on that event by the exact count (the destination declares its
// tokenizer). Under a policy that only flags it, the stream goes on to its
// end, where the verifier's loose check would find the same count too low:
// the exchange carries one usage_mismatch signal, not two.
func TestEarlyUsageReportedOnce(t *testing.T) {
	src := strings.Replace(testPolicy, "%s", "closed", 1)
	src = strings.Replace(src, "    provider: anthropic\n", "    provider: anthropic\n    tokenizer: cl100k_base\n", 1)
	pol, err := policies.Parse([]byte(src), "yaml", "early.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := newVerifiedGuard(t, sdk.Options{Policy: pol, Destination: "anthropic-test"}, []byte("k"))
	long := strings.Repeat("The quarterly audit of the northern depot found minor issues. ", 300)
	body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": long}}})
	ctx := context.Background()
	for _, inputTokens := range []int{3, 4000} {
		x, err := g.Check(ctx, sdk.Request{URL: "/v1/messages", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"usage\":{\"input_tokens\":" +
			strconv.Itoa(inputTokens) + ",\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"The audit found minor issues.\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		r := x.Stream(ctx, io.NopCloser(strings.NewReader(stream)), sdk.StreamOptions{})
		out, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("input_tokens %d: %v (a flagged signal does not cut the stream)", inputTokens, err)
		}
		if !strings.Contains(string(out), "minor issues") {
			t.Fatalf("input_tokens %d: answer not delivered: %s", inputTokens, out)
		}
		n := 0
		for _, s := range x.Signals() {
			if s.ID == policies.SignalUsageMismatch {
				n++
			}
		}
		want := 0
		if inputTokens == 3 {
			want = 1
		}
		if n != want {
			t.Errorf("input_tokens %d: %d usage_mismatch signals, want %d: %+v", inputTokens, n, want, x.Signals())
		}
	}
}
