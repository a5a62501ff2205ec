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
// A blocked request returns *BlockedError, an answer with foreign
// material *ContaminationError, a failure of the guard *GuardError
// (errors.As finds them; a stream cut mid-way returns an error wrapping
// *ContaminationError from Recv). The client returned by OpenAI gets the
// guard's refusals as go-openai's *openai.APIError (codes aishield_*);
// sdk.WithRefusal recovers the typed error there too. A Client is safe for concurrent use.
type Client struct {
	client *openai.Client
	guard  *Guard
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
	return &Client{client: openai.NewClientWithConfig(config), guard: g}
}

// Guard returns the guard the client's requests go through.
func (c *Client) Guard() *Guard { return c.guard }

// doerTransport adapts a go-openai HTTPDoer to an http.RoundTripper.
type doerTransport struct{ d openai.HTTPDoer }

func (t doerTransport) RoundTrip(r *http.Request) (*http.Response, error) { return t.d.Do(r) }

// OpenAI returns the underlying, guarded go-openai client.
func (c *Client) OpenAI() *openai.Client { return c.client }

// CreateChatCompletion is go-openai's CreateChatCompletion, guarded.
func (c *Client) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	ctx, refused := WithRefusal(ctx)
	resp, err := c.client.CreateChatCompletion(ctx, req)
	return resp, guardErr(err, refused)
}

// CreateChatCompletionStream is go-openai's CreateChatCompletionStream,
// guarded: the stream's text is verified before Recv returns it, and Recv
// returns an error wrapping *ContaminationError when the stream is cut.
func (c *Client) CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	ctx, refused := WithRefusal(ctx)
	resp, err := c.client.CreateChatCompletionStream(ctx, req)
	return resp, guardErr(err, refused)
}

// CreateCompletion is go-openai's CreateCompletion, guarded.
func (c *Client) CreateCompletion(ctx context.Context, req openai.CompletionRequest) (openai.CompletionResponse, error) {
	ctx, refused := WithRefusal(ctx)
	resp, err := c.client.CreateCompletion(ctx, req)
	return resp, guardErr(err, refused)
}

// CreateCompletionStream is go-openai's CreateCompletionStream, guarded.
func (c *Client) CreateCompletionStream(ctx context.Context, req openai.CompletionRequest) (*openai.CompletionStream, error) {
	ctx, refused := WithRefusal(ctx)
	resp, err := c.client.CreateCompletionStream(ctx, req)
	return resp, guardErr(err, refused)
}

// CreateEmbeddings is go-openai's CreateEmbeddings, guarded.
func (c *Client) CreateEmbeddings(ctx context.Context, conv openai.EmbeddingRequestConverter) (openai.EmbeddingResponse, error) {
	ctx, refused := WithRefusal(ctx)
	resp, err := c.client.CreateEmbeddings(ctx, conv)
	return resp, guardErr(err, refused)
}

// guardErr returns the guard's typed error when it refused the call (the
// Transport answered with an HTTP error, which go-openai turned into an
// *openai.APIError), else err.
func guardErr(err error, refused func() error) error {
	if err == nil {
		return nil
	}
	if r := refused(); r != nil {
		return r
	}
	return err
}
