package traffic

import (
	"context"
	"errors"
	"io"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Complete sends req with client, streamed (asking for the usage chunk)
// when req.Stream is set, and returns the answer text the caller received:
// for a stream cut midway, what arrived before the cut, with the error.
func Complete(ctx context.Context, client *openai.Client, req openai.ChatCompletionRequest) (string, error) {
	if !req.Stream {
		resp, err := client.CreateChatCompletion(ctx, req)
		if err != nil {
			return "", err
		}
		if len(resp.Choices) == 0 {
			return "", errors.New("the answer has no choices")
		}
		return resp.Choices[0].Message.Content, nil
	}
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	st, err := client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return "", err
	}
	defer st.Close()
	var b strings.Builder
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		for _, ch := range chunk.Choices {
			b.WriteString(ch.Delta.Content)
		}
	}
}
