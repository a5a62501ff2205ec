package sdk

import (
	"context"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// Client wraps a go-openai client (github.com/sashabaranov/go-openai) so
// that every request it makes goes through the guard: the methods below
// have go-openai's names and types; any other go-openai method is available
// on the client returned by OpenAI, whose requests pass through the same
// Transport (their text fields are classified too, as generic JSON).
//
// A blocked request returns an error wrapping *BlockedError, a response
// with foreign material one wrapping *ContaminationError (errors.As finds
// both). A Client is safe for concurrent use.
type Client struct {
	client *openai.Client
}

// NewClient returns a go-openai client guarded by g. The config's
// HTTPClient (http.DefaultClient when nil) keeps its settings; its transport
// becomes the inner transport of a [Transport].
func NewClient(g *Guard, config openai.ClientConfig) *Client {
	var base http.RoundTripper
	switch hc := config.HTTPClient.(type) {
	case *http.Client:
		cp := *hc
		base = hc.Transport
		cp.Transport = &Transport{Guard: g, Base: base, Provider: "openai"}
		config.HTTPClient = &cp
	case nil:
		config.HTTPClient = &http.Client{Transport: &Transport{Guard: g, Provider: "openai"}}
	default:
		config.HTTPClient = &http.Client{Transport: &Transport{Guard: g, Provider: "openai", Base: doerTransport{hc}}}
	}
	return &Client{client: openai.NewClientWithConfig(config)}
}

// doerTransport adapts a go-openai HTTPDoer to an http.RoundTripper.
type doerTransport struct{ d openai.HTTPDoer }

func (t doerTransport) RoundTrip(r *http.Request) (*http.Response, error) { return t.d.Do(r) }

// OpenAI returns the underlying, guarded go-openai client.
func (c *Client) OpenAI() *openai.Client { return c.client }

// CreateChatCompletion is go-openai's CreateChatCompletion, guarded.
func (c *Client) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return c.client.CreateChatCompletion(ctx, req)
}

// CreateChatCompletionStream is go-openai's CreateChatCompletionStream,
// guarded: the stream's text is verified before Recv returns it, and Recv
// returns an error wrapping *ContaminationError when the stream is cut.
func (c *Client) CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	return c.client.CreateChatCompletionStream(ctx, req)
}

// CreateCompletion is go-openai's CreateCompletion, guarded.
func (c *Client) CreateCompletion(ctx context.Context, req openai.CompletionRequest) (openai.CompletionResponse, error) {
	return c.client.CreateCompletion(ctx, req)
}

// CreateCompletionStream is go-openai's CreateCompletionStream, guarded.
func (c *Client) CreateCompletionStream(ctx context.Context, req openai.CompletionRequest) (*openai.CompletionStream, error) {
	return c.client.CreateCompletionStream(ctx, req)
}

// CreateEmbeddings is go-openai's CreateEmbeddings, guarded.
func (c *Client) CreateEmbeddings(ctx context.Context, conv openai.EmbeddingRequestConverter) (openai.EmbeddingResponse, error) {
	return c.client.CreateEmbeddings(ctx, conv)
}
