package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/footnote-dev/footnote/rag"
)

// DefaultOllamaHost is where Ollama listens unless told otherwise (as with OLLAMA_HOST).
const DefaultOllamaHost = "http://127.0.0.1:11434"

// DefaultOllamaModel is the embedding model used when OllamaConfig.Model is empty.
const DefaultOllamaModel = "nomic-embed-text"

// ollamaPrefixes are the task prefixes embedding models served by Ollama were trained
// with; without them retrieval quality drops (nomic-embed-text's model card asks for
// "search_query: " / "search_document: ").
var ollamaPrefixes = map[string][2]string{ // model → {query, document}
	"nomic-embed-text":       {"search_query: ", "search_document: "},
	"mxbai-embed-large":      {"Represent this sentence for searching relevant passages: ", ""},
	"snowflake-arctic-embed": {"Represent this sentence for searching relevant passages: ", ""},
}

// OllamaConfig configures an Ollama embedder.
type OllamaConfig struct {
	// Host is Ollama's address, "http://host:port" or "host:port"; zero means
	// http://127.0.0.1:11434.
	Host string
	// Model is the embedding model as Ollama names it; zero means nomic-embed-text.
	Model string
	// Dim is the vector dimension; zero means ask the server once, in NewOllama.
	Dim int
	// QueryPrefix and DocumentPrefix are prepended to queries and documents. Both zero
	// means the prefixes the model is known to want (see ollamaPrefixes), else none.
	QueryPrefix, DocumentPrefix string
	// BatchSize is the number of texts per request; zero means 32.
	BatchSize int
	// MaxRetries is how often a request is repeated after a 429, a 5xx or a transport
	// error (Ollama answers 503 while it loads a model); zero means 4, negative never.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the backoff between attempts; zero means 500ms, 30s.
	MinBackoff, MaxBackoff time.Duration
	// HTTPClient sends the requests; nil means a client with a 120s timeout (a cold model
	// load can take a while).
	HTTPClient *http.Client
	// Logger receives retries at Warn; nil discards.
	Logger *slog.Logger
}

// Ollama embeds text with a model served by Ollama (POST /api/embed). It is safe for
// concurrent use.
type Ollama struct {
	client      *api.Client
	model       string
	queryPrefix string
	docPrefix   string
	info        rag.ModelInfo
	batch       int
	retry       backoff
}

// NewOllama validates cfg and fills its defaults. When cfg.Dim is zero it embeds one
// probe text to learn the dimension, so ctx bounds that request; otherwise it does no I/O.
func NewOllama(ctx context.Context, cfg OllamaConfig) (*Ollama, error) {
	if cfg.Host == "" {
		cfg.Host = DefaultOllamaHost
	}
	if !strings.Contains(cfg.Host, "://") {
		cfg.Host = "http://" + cfg.Host
	}
	base, err := url.Parse(cfg.Host)
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("ollama embedder: bad host %q", cfg.Host)
	}
	if cfg.Model == "" {
		cfg.Model = DefaultOllamaModel
	}
	if cfg.Dim < 0 {
		return nil, fmt.Errorf("ollama embedder: negative dimension %d", cfg.Dim)
	}
	if cfg.QueryPrefix == "" && cfg.DocumentPrefix == "" {
		p := ollamaPrefixes[strings.TrimSuffix(cfg.Model, ":latest")]
		cfg.QueryPrefix, cfg.DocumentPrefix = p[0], p[1]
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 32
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &Ollama{
		client:      api.NewClient(base, hinting(cfg.HTTPClient, 120*time.Second)),
		model:       cfg.Model,
		queryPrefix: cfg.QueryPrefix,
		docPrefix:   cfg.DocumentPrefix,
		// "nomic-embed-text:latest" and "nomic-embed-text" are the same model.
		info:  rag.ModelInfo{Name: "ollama_" + rag.FieldName(strings.TrimSuffix(cfg.Model, ":latest")), Dim: cfg.Dim, Metric: rag.Cosine},
		batch: cfg.BatchSize,
		retry: newBackoff(cfg.MaxRetries, cfg.MinBackoff, cfg.MaxBackoff, log.With("component", "ollama-embed")),
	}
	if o.info.Dim == 0 {
		vs, err := o.embed(ctx, []string{o.queryPrefix + "dimension probe"})
		if err != nil {
			return nil, fmt.Errorf("ollama embedder: probe %s dimension: %w", cfg.Model, err)
		}
		o.info.Dim = len(vs[0])
	}
	return o, nil
}

// Info names the model, e.g. "ollama_nomic_embed_text", with its dimension.
func (o *Ollama) Info() rag.ModelInfo { return o.info }

// EmbedQuery embeds a search query with the model's query prefix.
func (o *Ollama) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vs, err := o.embed(ctx, []string{o.queryPrefix + text})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// EmbedDocuments embeds texts with the model's document prefix in batches of BatchSize
// and returns one vector per text in order.
func (o *Ollama) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.batch {
		end := min(start+o.batch, len(texts))
		batch := make([]string, 0, end-start)
		for _, t := range texts[start:end] {
			batch = append(batch, o.docPrefix+t)
		}
		vs, err := o.embed(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("embed texts %d-%d of %d: %w", start+1, end, len(texts), err)
		}
		out = append(out, vs...)
	}
	return out, nil
}

func (o *Ollama) embed(ctx context.Context, input []string) ([][]float32, error) {
	var resp *api.EmbedResponse
	err := o.retry.do(ctx, "embed", func(ctx context.Context) error {
		var err error
		resp, err = o.client.Embed(ctx, &api.EmbedRequest{Model: o.model, Input: input})
		return ollamaError(err)
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Embeddings) != len(input) {
		return nil, fmt.Errorf("ollama: %d embeddings for %d inputs", len(resp.Embeddings), len(input))
	}
	for _, v := range resp.Embeddings {
		if len(v) == 0 || (o.info.Dim != 0 && len(v) != o.info.Dim) {
			return nil, fmt.Errorf("ollama: %s returned %d dimensions, want %d", o.model, len(v), o.info.Dim)
		}
	}
	return resp.Embeddings, nil
}

// ollamaError translates the Ollama client's errors into httpError.
func ollamaError(err error) error {
	if err == nil {
		return nil
	}
	var se api.StatusError
	if errors.As(err, &se) {
		msg := se.ErrorMessage
		if msg == "" {
			msg = se.Status
		}
		return &httpError{service: "ollama", status: se.StatusCode, msg: msg}
	}
	var ae api.AuthorizationError
	if errors.As(err, &ae) {
		return &httpError{service: "ollama", status: ae.StatusCode, msg: "unauthorized"}
	}
	return transportError("ollama", err)
}
