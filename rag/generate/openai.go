package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/footnote-dev/footnote/rag"
	openai "github.com/sashabaranov/go-openai"
)

// OpenAIConfig configures an OpenAI-compatible generator.
type OpenAIConfig struct {
	// APIKey is sent as a bearer token; local servers (vLLM, llama.cpp, LM Studio) usually
	// accept any value, including empty.
	APIKey string
	// BaseURL is the API root including "/v1", e.g. "http://127.0.0.1:8000/v1" for vLLM,
	// "http://127.0.0.1:8080/v1" for llama.cpp's server, "http://127.0.0.1:1234/v1" for LM
	// Studio; empty means OpenAI's.
	BaseURL string
	// Model is the model name the server knows; empty means "gpt-4o-mini".
	Model string
	// HTTPClient carries the requests; nil means a client without a timeout of its own.
	HTTPClient *http.Client
	// Timeout bounds one generation, first byte to last; zero means DefaultTimeout.
	Timeout time.Duration
	// FirstTokenTimeout bounds the wait for the first token (the server reading the
	// prompt); zero means DefaultFirstTokenTimeout.
	FirstTokenTimeout time.Duration
	// IdleTimeout bounds the wait between two tokens; zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ContextTokens is the model's context window; zero asks the server (see Limits).
	ContextTokens int
}

// OpenAI generates answers through the chat completions API with server-sent events.
type OpenAI struct {
	client   *openai.Client
	model    string
	timeouts Timeouts
	probe    *prober
	// askModel: no model was configured for a server of one's own, so the model the
	// server lists is used (vLLM refuses any other name; llama.cpp accepts any).
	askModel bool
}

// NewOpenAI returns an OpenAI-compatible generator. It does not contact the server.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	c := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
			return nil, fmt.Errorf("openai base URL %q: want http:// or https://", cfg.BaseURL)
		}
		c.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	if cfg.HTTPClient != nil {
		c.HTTPClient = cfg.HTTPClient
	}
	askModel := cfg.Model == "" && cfg.BaseURL != ""
	if cfg.Model == "" {
		cfg.Model = "gpt-4o-mini"
	}
	t := Timeouts{Total: cfg.Timeout, FirstToken: cfg.FirstTokenTimeout, Idle: cfg.IdleTimeout}.withDefaults()
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return &OpenAI{
		client:   openai.NewClientWithConfig(c),
		model:    cfg.Model,
		timeouts: t,
		probe:    newProber(c.BaseURL, cfg.APIKey, hc, cfg.ContextTokens, t.FirstToken),
		askModel: askModel,
	}, nil
}

// Limits reports the model's context window and the server's measured prompt speed, as
// far as the server tells (llama.cpp and vLLM do; OpenAI does not), so rag can size the
// prompt to fit. It asks at most once a minute and never fails: unknown fields are zero.
func (o *OpenAI) Limits(ctx context.Context) rag.ModelLimits { return o.probe.limits(ctx) }

// Name is "openai:<model>", with the model the server lists once known when none was
// configured.
func (o *OpenAI) Name() string { return "openai:" + o.currentModel() }

func (o *OpenAI) currentModel() string {
	if o.askModel {
		o.probe.mu.Lock()
		m := o.probe.model
		o.probe.mu.Unlock()
		if m != "" {
			return m
		}
	}
	return o.model
}

// reasoningModel reports OpenAI's reasoning models, which take max_completion_tokens and
// no temperature (go-openai refuses the request otherwise).
func reasoningModel(m string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// Generate streams the model's answer to req through fn, with the same error contract as
// Ollama.Generate (an *HTTPError for an error status, including one sent inside the
// stream).
func (o *OpenAI) Generate(ctx context.Context, req rag.GenerateRequest, fn func(delta string) error) error {
	parent := ctx
	ctx, wd, stop := watch(ctx, o.timeouts)
	defer stop()

	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
	}
	model := o.model
	if o.askModel {
		if m := o.probe.servedModel(ctx); m != "" {
			model = m
		}
	}
	creq := openai.ChatCompletionRequest{Model: model, Messages: msgs, Stream: true}
	temperature, maxTokens := req.Temperature, req.MaxTokens
	if temperature == 0 {
		temperature = DefaultTemperature
	}
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	if reasoningModel(model) {
		creq.MaxCompletionTokens = maxTokens
	} else {
		creq.Temperature = float32(temperature)
		creq.MaxTokens = maxTokens
	}

	stream, err := o.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return o.translate(parent, ctx, err)
	}
	defer stream.Close()
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return o.translate(parent, ctx, err)
		}
		for _, ch := range resp.Choices {
			if ch.Index != 0 || ch.Delta.Content == "" {
				continue
			}
			wd.progress()
			if err := fn(ch.Delta.Content); err != nil {
				return err
			}
		}
	}
	if cerr := ctxErr(parent, ctx); cerr != nil {
		return fmt.Errorf("%s: %w", o.Name(), cerr)
	}
	return nil
}

// translate turns go-openai's errors into this package's.
func (o *OpenAI) translate(parent, ctx context.Context, err error) error {
	if cerr := ctxErr(parent, ctx); cerr != nil {
		return fmt.Errorf("%s: %w", o.Name(), cerr)
	}
	var ae *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(err, &ae) && ae.HTTPStatusCode > 0:
		return &HTTPError{Generator: o.Name(), StatusCode: ae.HTTPStatusCode, Message: ae.Message}
	case errors.As(err, &ae):
		// An error event inside a 200 stream: the server failed mid-answer.
		return &HTTPError{Generator: o.Name(), StatusCode: http.StatusInternalServerError, Message: ae.Message}
	case errors.As(err, &re):
		msg := strings.TrimSpace(string(re.Body))
		if re.Err != nil {
			msg = re.Err.Error()
		}
		return &HTTPError{Generator: o.Name(), StatusCode: re.HTTPStatusCode, Message: msg}
	}
	return fmt.Errorf("%s: %w", o.Name(), err)
}
