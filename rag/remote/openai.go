// Package remote holds dense embedders served over HTTP: OpenAI's embeddings API (and
// OpenAI-compatible servers) and Ollama. Both implement rag.Embedder, batch their inputs
// and retry rate limits and server errors with exponential backoff.
//
// This package is the only importer of go-openai and the Ollama API client for embeddings;
// their error types are translated here.
package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/footnote-dev/footnote/rag"
)

// DefaultOpenAIModel is the embedding model used when OpenAIConfig.Model is empty.
const DefaultOpenAIModel = "text-embedding-3-small"

// openAIDims are the native dimensions of OpenAI's embedding models.
var openAIDims = map[string]int{
	"text-embedding-3-small": 1536,
	"text-embedding-3-large": 3072,
	"text-embedding-ada-002": 1536,
}

// OpenAIConfig configures an OpenAI embedder.
type OpenAIConfig struct {
	APIKey string // sent as a bearer token; may be empty for OpenAI-compatible servers that need none
	// BaseURL is the API root including /v1; zero means https://api.openai.com/v1.
	BaseURL string
	// Model is the embedding model; zero means text-embedding-3-small.
	Model string
	// Dim is the vector dimension. Zero means the model's native dimension (1536 for
	// text-embedding-3-small); a smaller Dim is requested through the API's `dimensions`
	// (text-embedding-3 models only). Required for models this package does not know.
	Dim int
	// BatchSize is the number of texts per request; zero means 100.
	BatchSize int
	// MaxRetries is how often a request is repeated after a 429, a 5xx or a transport
	// error; zero means 4, negative means never.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between attempts; zero means
	// 500ms and 30s. A longer Retry-After from the server wins (up to one minute).
	MinBackoff, MaxBackoff time.Duration
	// HTTPClient sends the requests; nil means a client with a 60s timeout.
	HTTPClient *http.Client
	// Logger receives retries at Warn; nil discards.
	Logger *slog.Logger
}

// OpenAI embeds text with OpenAI's embeddings API (POST {BaseURL}/embeddings).
// It is safe for concurrent use.
type OpenAI struct {
	client *openai.Client
	model  string
	dims   int // requested `dimensions`; 0 leaves the model's native size
	info   rag.ModelInfo
	batch  int
	retry  backoff
}

// NewOpenAI validates cfg and fills its defaults; it does no I/O.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.Model == "" {
		cfg.Model = DefaultOpenAIModel
	}
	native, known := openAIDims[cfg.Model]
	var dims int
	switch {
	case cfg.Dim < 0:
		return nil, fmt.Errorf("openai embedder: negative dimension %d", cfg.Dim)
	case cfg.Dim == 0 && !known:
		return nil, fmt.Errorf("openai embedder: model %q is not one of %s: set its dimension", cfg.Model, strings.Join(slices.Sorted(maps.Keys(openAIDims)), ", "))
	case cfg.Dim == 0:
		cfg.Dim = native
	case known && cfg.Dim > native:
		return nil, fmt.Errorf("openai embedder: %s has %d dimensions, not %d", cfg.Model, native, cfg.Dim)
	case known && cfg.Dim != native:
		if !strings.HasPrefix(cfg.Model, "text-embedding-3") {
			return nil, fmt.Errorf("openai embedder: %s cannot shorten its vectors to %d dimensions", cfg.Model, cfg.Dim)
		}
		dims = cfg.Dim
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	oc.HTTPClient = hinting(cfg.HTTPClient, 60*time.Second)

	// Vectors of a shortened model live in their own field: they do not compare with
	// full-size ones.
	name := "openai_" + rag.FieldName(cfg.Model)
	if dims != 0 {
		name = fmt.Sprintf("%s_%d", name, dims)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &OpenAI{
		client: openai.NewClientWithConfig(oc),
		model:  cfg.Model,
		dims:   dims,
		// OpenAI's embeddings are normalised to length 1, so cosine and inner product agree.
		info:  rag.ModelInfo{Name: name, Dim: cfg.Dim, Metric: rag.Cosine},
		batch: cfg.BatchSize,
		retry: newBackoff(cfg.MaxRetries, cfg.MinBackoff, cfg.MaxBackoff, log.With("component", "openai-embed")),
	}, nil
}

// Info names the model, e.g. "openai_text_embedding_3_small", 1536 dimensions, cosine.
func (o *OpenAI) Info() rag.ModelInfo { return o.info }

// EmbedQuery embeds one search query; OpenAI's models take no query instruction.
func (o *OpenAI) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vs, err := o.EmbedDocuments(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// EmbedDocuments embeds texts in batches of BatchSize, one request at a time, and returns
// one vector per text in order.
func (o *OpenAI) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.batch {
		batch := texts[start:min(start+o.batch, len(texts))]
		vs, err := o.embedBatch(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("embed texts %d-%d of %d: %w", start+1, start+len(batch), len(texts), err)
		}
		out = append(out, vs...)
	}
	return out, nil
}

func (o *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	input := make([]string, len(texts))
	for i, t := range texts {
		// The API rejects empty strings in input.
		if strings.TrimSpace(t) == "" {
			t = " "
		}
		input[i] = t
	}
	var resp openai.EmbeddingResponse
	err := o.retry.do(ctx, "embeddings", func(ctx context.Context) error {
		var err error
		resp, err = o.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{
			Input:          input,
			Model:          openai.EmbeddingModel(o.model),
			EncodingFormat: openai.EmbeddingEncodingFormatFloat,
			Dimensions:     o.dims,
		})
		return openAIError(err)
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("openai: %d embeddings for %d inputs", len(resp.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out) || out[d.Index] != nil {
			return nil, fmt.Errorf("openai: bad or repeated embedding index %d", d.Index)
		}
		if len(d.Embedding) != o.info.Dim {
			return nil, fmt.Errorf("openai: %s returned %d dimensions, want %d", o.model, len(d.Embedding), o.info.Dim)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

// openAIError translates go-openai's errors into httpError, keeping the API's message.
func openAIError(err error) error {
	if err == nil {
		return nil
	}
	var ae *openai.APIError
	if errors.As(err, &ae) {
		return &httpError{service: "openai", status: ae.HTTPStatusCode, msg: ae.Message}
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		msg := strings.TrimSpace(string(re.Body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		if msg == "" {
			msg = re.HTTPStatus
		}
		return &httpError{service: "openai", status: re.HTTPStatusCode, msg: msg}
	}
	return transportError("openai", err)
}
