package generate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/footnote-dev/footnote/rag"
	"github.com/ollama/ollama/api"
)

// OllamaConfig configures an Ollama generator.
type OllamaConfig struct {
	// Host is the Ollama server as OLLAMA_HOST spells it: "http://127.0.0.1:11434",
	// "127.0.0.1:11434" or "gpu-box" (a missing scheme means http, a missing port 11434).
	// Empty means http://127.0.0.1:11434.
	Host string
	// Model is the model tag, e.g. "llama3.2" or "qwen2.5:7b-instruct"; empty means "llama3.2".
	Model string
	// HTTPClient carries the requests; nil means a client without a timeout of its own.
	HTTPClient *http.Client
	// Timeout bounds one generation, first byte to last; zero means DefaultTimeout.
	Timeout time.Duration
	// FirstTokenTimeout bounds the wait for the first token (model load and prompt);
	// zero means DefaultFirstTokenTimeout.
	FirstTokenTimeout time.Duration
	// IdleTimeout bounds the wait between two tokens; zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ContextTokens is the model's context window (Ollama's num_ctx); zero means unknown.
	ContextTokens int
}

// Ollama generates answers with a model served by Ollama's /api/chat, streaming NDJSON.
type Ollama struct {
	client   *api.Client
	model    string
	timeouts Timeouts
	numCtx   int
}

// NewOllama returns an Ollama generator. It does not contact the server.
func NewOllama(cfg OllamaConfig) (*Ollama, error) {
	base, err := ollamaURL(cfg.Host)
	if err != nil {
		return nil, err
	}
	if cfg.Model == "" {
		cfg.Model = "llama3.2"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	t := Timeouts{Total: cfg.Timeout, FirstToken: cfg.FirstTokenTimeout, Idle: cfg.IdleTimeout}.withDefaults()
	return &Ollama{client: api.NewClient(base, cfg.HTTPClient), model: cfg.Model, timeouts: t, numCtx: cfg.ContextTokens}, nil
}

// Limits reports the configured context window; Ollama's own default (num_ctx) is small
// and model-dependent, so footnote does not guess it.
func (o *Ollama) Limits(context.Context) rag.ModelLimits {
	return rag.ModelLimits{ContextTokens: o.numCtx, FirstTokenTimeout: o.timeouts.FirstToken}
}

func ollamaURL(host string) (*url.URL, error) {
	host = strings.TrimSpace(host)
	if host == "" {
		host = "http://127.0.0.1:11434"
	}
	scheme := "http://"
	if i := strings.Index(host, "://"); i >= 0 {
		scheme, host = host[:i+3], host[i+3:]
	} else if h, _, _ := strings.Cut(host, "/"); !strings.Contains(h, ":") || strings.HasSuffix(h, "]") {
		// No scheme and no port: Ollama's own default port.
		host = net.JoinHostPort(strings.Trim(h, "[]"), "11434") + strings.TrimPrefix(host, h)
	}
	u, err := url.Parse(scheme + host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("ollama host %q: not a host or URL", host)
	}
	return u, nil
}

// Name is "ollama:<model>".
func (o *Ollama) Name() string { return "ollama:" + o.model }

// Generate streams the model's answer to req through fn. It returns fn's error unchanged
// when fn fails, an error wrapping ctx.Err() when ctx ends, one wrapping
// context.DeadlineExceeded when the configured Timeout passes, an *HTTPError when the
// server answers with an error status, and an error when the stream ends before Ollama
// reports the answer done.
func (o *Ollama) Generate(ctx context.Context, req rag.GenerateRequest, fn func(delta string) error) error {
	parent := ctx
	ctx, wd, stop := watch(ctx, o.timeouts)
	defer stop()

	stream := true
	msgs := make([]api.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = api.Message{Role: m.Role, Content: m.Content}
	}
	temperature, maxTokens := req.Temperature, req.MaxTokens
	if temperature == 0 {
		temperature = DefaultTemperature
	}
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	done := false
	opts := map[string]any{"temperature": temperature, "num_predict": maxTokens}
	if o.numCtx > 0 {
		opts["num_ctx"] = o.numCtx
	}
	err := o.client.Chat(ctx, &api.ChatRequest{
		Model:    o.model,
		Messages: msgs,
		Stream:   &stream,
		Options:  opts,
	}, func(r api.ChatResponse) error {
		if r.Message.Content != "" {
			wd.progress()
			if err := fn(r.Message.Content); err != nil {
				return cbError{err}
			}
		}
		if r.Done {
			done = true
		}
		return nil
	})
	if cb, ok := callbackErr(err); ok {
		return cb
	}
	if cerr := ctxErr(parent, ctx); cerr != nil {
		return fmt.Errorf("%s: %w", o.Name(), cerr)
	}
	var se api.StatusError
	var ae api.AuthorizationError
	switch {
	case errors.As(err, &se):
		return &HTTPError{Generator: o.Name(), StatusCode: se.StatusCode, Message: se.ErrorMessage}
	case errors.As(err, &ae):
		return &HTTPError{Generator: o.Name(), StatusCode: ae.StatusCode, Message: ae.Status}
	case err != nil:
		return fmt.Errorf("%s: %w", o.Name(), err)
	case !done:
		// The client stops quietly when the body ends early or is empty (an error status
		// without a JSON body): without "done" the answer is incomplete.
		return fmt.Errorf("%s: the stream ended before the answer was done", o.Name())
	}
	return nil
}
