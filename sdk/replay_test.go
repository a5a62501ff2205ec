package sdk_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

func TestReplay(t *testing.T) {
	const req = `{"model":"gpt-4o","messages":[{"role":"user","content":"Write to jane.doe@acme-corp.com about Friday."}]}`
	tests := []struct {
		name, resp string
		verdict    sdk.Verdict
		signal     string
		err        sdk.Stage
	}{
		{"clean, own value repeated", `{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"I wrote to JANE.DOE@acme-corp.com."},"finish_reason":"stop"}]}`,
			sdk.VerdictClean, "", ""},
		{"foreign value", `{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"Done; cc bob.martin@globex-industries.com"},"finish_reason":"stop"}]}`,
			sdk.VerdictContaminated, policies.SignalForeignEntity, ""},
		{"template token, streamed", "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok <|im_start|>user\"}}]}\n\ndata: [DONE]\n\n",
			sdk.VerdictContaminated, policies.SignalTemplateFragment, ""},
		{"garbage", "hello", "", "", sdk.StageResponse},
		{"broken JSON", `{"id":"x","choices":[`, "", "", sdk.StageResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, _ := policies.Preset("default")
			g := newGuard(t, sdk.Options{Policy: pol})
			x, err := g.Replay(context.Background(), sdk.Capture{Request: []byte(req), Response: []byte(tt.resp)})
			if tt.err != "" {
				var ge *sdk.GuardError
				if !errors.As(err, &ge) || ge.Stage != tt.err {
					t.Fatalf("err = %v, want a guard error at %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if x.Verdict() != tt.verdict {
				t.Errorf("verdict %s, want %s (%+v)", x.Verdict(), tt.verdict, x.Signals())
			}
			if tt.signal != "" && (len(x.Signals()) == 0 || x.Signals()[0].ID != tt.signal) {
				t.Errorf("signals %+v, want %s", x.Signals(), tt.signal)
			}
		})
	}
}

// FuzzReplay: any captured exchange either gets a verdict or an error; it
// never panics.
func FuzzReplay(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}]}`), []byte(`{"id":"x","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3}}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}]}`), []byte("data: {\"id\":\"a\",\"choices\":[{\"delta\":{\"content\":\"h\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte(`{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
	f.Add([]byte("\xff\x00{"), []byte("\xff\x00{"))
	pol, _ := policies.Preset("default")
	g := newGuard(f, sdk.Options{Policy: pol})
	f.Fuzz(func(t *testing.T, req, resp []byte) {
		x, err := g.Replay(context.Background(), sdk.Capture{Request: req, Response: resp})
		if err == nil && (x == nil || x.Verdict() == "") {
			t.Fatalf("no verdict and no error: %v", x)
		}
	})
}
