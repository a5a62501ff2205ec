package main

import (
	"testing"

	"github.com/aishield/aishield/internal/wire"
)

// FuzzParseCapturedResponse: any captured response either parses or gives
// an error; it never panics.
func FuzzParseCapturedResponse(f *testing.F) {
	f.Add([]byte(`{"id":"x","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3}}`))
	f.Add([]byte("data: {\"id\":\"a\",\"choices\":[{\"delta\":{\"content\":\"h\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
	f.Add([]byte("\xff\x00{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, k := range []wire.Kind{wire.KindChat, wire.KindAnthropic} {
			r, err := parseCapturedResponse(k, data)
			if err == nil && r == nil {
				t.Fatal("nil response without error")
			}
		}
	})
}
