package sdk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/sdk"
)

// TestCallerAbortMakesSuspectSource: a caller that gives up on a streamed
// answer (closes it after the first piece) leaves an exchange whose prompt
// a paged cache may still write late into another request's pages. The
// guard marks it, so a later answer sharing 52 bytes of that prompt (under
// the 62 any other source needs) is refused, naming it; the same answer
// after a completed exchange is delivered.
func TestCallerAbortMakesSuspectSource(t *testing.T) {
	const (
		doc  = "Discharge letter for the general practitioner. Dr Quentin Imbert, pulmonology, treated the community-acquired pneumonia with amoxicillin for seven days under supervision; HbA1c 7.9 percent at admission."
		frag = "community-acquired pneumonia with amoxicillin for se"
	)
	for _, giveUp := range []bool{true, false} {
		u := newUpstream(t)
		u.reply = func(last string) string {
			if strings.Contains(last, "Bakery") {
				return "Here are some ideas: Pão Dourado, " + frag + " and Forno da Ribeira."
			}
			// Longer than the guard's hold-back, so that the caller can
			// leave before the end.
			return strings.Repeat("Summary: the patient recovered well; follow-up in six weeks. ", 40)
		}
		g := newVerifiedGuard(t, sdk.Options{Policy: testPolicyMode(t, "closed")}, []byte("k"))
		cfg := goopenai.DefaultConfig("test-key")
		cfg.BaseURL = u.URL + "/v1"
		c := sdk.NewClient(g, cfg)
		ctx := context.Background()

		st, err := c.CreateChatCompletionStream(ctx, goopenai.ChatCompletionRequest{Model: "gpt-4o", Stream: true,
			Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "Summarise: " + doc}}})
		if err != nil {
			t.Fatal(err)
		}
		if giveUp {
			if _, err := st.Recv(); err != nil {
				t.Fatal(err)
			}
		} else {
			for {
				if _, err := st.Recv(); err != nil {
					break
				}
			}
		}
		st.Close()

		_, err = c.CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{Model: "gpt-4o",
			Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "Bakery names for Porto?"}}})
		var ce *sdk.ContaminationError
		refused := errors.As(err, &ce) && strings.Contains(err.Error(), "inbound.cross_exchange") &&
			strings.Contains(err.Error(), "ended without a complete answer")
		if refused != giveUp {
			t.Errorf("caller gave up on the first answer: %v; second answer error: %v", giveUp, err)
		}
		if !giveUp && err != nil {
			t.Errorf("52 bytes shared with a completed exchange refused: %v", err)
		}
	}
}
