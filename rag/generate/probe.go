package generate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/footnote-dev/footnote/rag"
)

// probeEvery is how long a server's reported limits are trusted before asking again: the
// measured speed moves with the load, the context window only on a restart.
const probeEvery = time.Minute

// prober asks an OpenAI-compatible server what it tells about its model: the context
// window from GET /v1/models (llama.cpp: data[].meta.n_ctx; vLLM: data[].max_model_len)
// and the measured prompt speed from llama.cpp's Prometheus counters at GET /metrics
// (prompt_tokens_total / prompt_seconds_total, cumulative since the server started, so
// every footnote process sees the same measurement). OpenAI itself reports neither.
type prober struct {
	base, key  string
	hc         *http.Client
	fixedCtx   int
	firstToken time.Duration

	mu    sync.Mutex
	at    time.Time
	lim   rag.ModelLimits
	model string // the first model the server lists
}

func newProber(base, key string, hc *http.Client, fixedCtx int, firstToken time.Duration) *prober {
	return &prober{base: strings.TrimRight(base, "/"), key: key, hc: hc, fixedCtx: fixedCtx, firstToken: firstToken}
}

// remoteOpenAI reports whether the base URL is OpenAI's own API, which reports neither.
func (p *prober) remoteOpenAI() bool { return strings.HasPrefix(p.base, "https://api.openai.com") }

func (p *prober) limits(ctx context.Context) rag.ModelLimits {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.remoteOpenAI() {
		return rag.ModelLimits{ContextTokens: p.fixedCtx, FirstTokenTimeout: p.firstToken}
	}
	if !p.at.IsZero() && time.Since(p.at) < probeEvery {
		return p.lim
	}
	// A server that does not answer quickly here will not answer the question either;
	// the generation reports that, so the probe only bounds its own wait.
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	lim := rag.ModelLimits{ContextTokens: p.fixedCtx, FirstTokenTimeout: p.firstToken}
	n, model, ok := p.models(ctx)
	if model != "" {
		p.model = model
	}
	if lim.ContextTokens == 0 {
		lim.ContextTokens = n
	}
	lim.PrefillPerSec = p.promptSpeed(ctx)
	p.lim = lim
	// A server that did not answer is asked again next time: once it is back, its window
	// must be known before a prompt overflows it.
	if ok {
		p.at = time.Now()
	}
	return lim
}

// servedModel is the first model the server lists, "" when unknown.
func (p *prober) servedModel(ctx context.Context) string {
	p.limits(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.model
}

func (p *prober) get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if p.key != "" {
		req.Header.Set("Authorization", "Bearer "+p.key)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &HTTPError{Generator: "openai", StatusCode: resp.StatusCode}
	}
	return resp, nil
}

// models reads the model list; ok is false when the server did not answer at all.
func (p *prober) models(ctx context.Context) (nCtx int, model string, ok bool) {
	resp, err := p.get(ctx, p.base+"/models")
	if err != nil {
		var he *HTTPError
		return 0, "", errors.As(err, &he) // an error status is an answer: no model list
	}
	defer resp.Body.Close()
	var body struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
			Meta        struct {
				NCtx int `json:"n_ctx"`
			} `json:"meta"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil || len(body.Data) == 0 {
		return 0, "", true
	}
	d := body.Data[0]
	n := d.Meta.NCtx
	if n == 0 {
		n = d.MaxModelLen
	}
	return n, d.ID, true
}

// promptSpeed reads llama.cpp's cumulative prompt counters; zero when the server has none
// (metrics off, another server) or has not read a prompt yet.
func (p *prober) promptSpeed(ctx context.Context) float64 {
	root := strings.TrimSuffix(p.base, "/v1")
	resp, err := p.get(ctx, root+"/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var tokens, seconds float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "llamacpp:prompt_tokens_total":
			tokens, _ = strconv.ParseFloat(strings.TrimSpace(val), 64)
		case "llamacpp:prompt_seconds_total":
			seconds, _ = strconv.ParseFloat(strings.TrimSpace(val), 64)
		}
	}
	if tokens <= 0 || seconds <= 0 {
		return 0
	}
	return tokens / seconds
}
