package rag

import (
	"errors"
	"fmt"
	"strings"
)

// Retrieval methods a Question (or `--method`) may name. A dense method names its model,
// "dense:<model>", with the model's ModelInfo.Name; a bare "dense" means the first
// configured model.
const (
	MethodHybrid = "hybrid" // every configured dense model and BM25, fused
	MethodBM25   = "bm25"
	MethodDense  = "dense"
)

// ErrUnknownMethod reports a retrieval method name footnote does not know, or one that the
// pipeline was configured without (BM25 disabled). A method that needs a dense model which
// is not configured wraps ErrModelMissing instead.
var ErrUnknownMethod = errors.New("unknown retrieval method")

// retrievalPlan is a resolved method: the retrievers one search uses.
type retrievalPlan struct {
	method string // canonical name: "hybrid", "bm25" or "dense:<model>"
	dense  []int  // dense retrievers: indices into Config.Embedders, in order
	sparse bool   // BM25 retriever
}

// Methods lists the methods this pipeline can run, canonical names, hybrid first:
// "hybrid", "bm25" (when BM25 is configured) and "dense:<model>" per dense model.
func (p *Pipeline) Methods() []string {
	var ms []string
	if len(p.cfg.Embedders) > 0 || p.cfg.Sparse != nil {
		ms = append(ms, MethodHybrid)
	}
	if p.cfg.Sparse != nil {
		ms = append(ms, MethodBM25)
	}
	for _, e := range p.cfg.Embedders {
		ms = append(ms, MethodDense+":"+e.Info().Name)
	}
	return ms
}

// ResolveMethod returns the canonical name of method ("" means Config.Method, whose own
// empty value means hybrid; "dense" the first dense model; model names match ignoring case
// and punctuation), or an error wrapping ErrUnknownMethod or ErrModelMissing that says
// what to do.
func (p *Pipeline) ResolveMethod(method string) (string, error) {
	pl, err := p.resolve(method)
	return pl.method, err
}

func (p *Pipeline) resolve(method string) (retrievalPlan, error) {
	if strings.TrimSpace(method) == "" {
		method = p.cfg.Method
	}
	m := strings.ToLower(strings.TrimSpace(method))
	switch {
	case m == "" || m == MethodHybrid:
		if len(p.cfg.Embedders) == 0 && p.cfg.Sparse == nil {
			return retrievalPlan{}, fmt.Errorf("%w: hybrid search needs BM25 or a dense model, and neither is configured; install models with \"footnote models pull\" and index documents", ErrModelMissing)
		}
		// With no dense model configured hybrid degrades to BM25 alone (Config.Embedders
		// documents that), and without BM25 to the dense models alone.
		pl := retrievalPlan{method: MethodHybrid, sparse: p.cfg.Sparse != nil}
		for i := range p.cfg.Embedders {
			pl.dense = append(pl.dense, i)
		}
		return pl, nil
	case m == MethodBM25:
		if p.cfg.Sparse == nil {
			return retrievalPlan{}, fmt.Errorf("%w %q: BM25 is not configured in this pipeline", ErrUnknownMethod, method)
		}
		return retrievalPlan{method: MethodBM25, sparse: true}, nil
	case m == MethodDense:
		if len(p.cfg.Embedders) == 0 {
			return retrievalPlan{}, fmt.Errorf("%w: method %q needs a dense embedding model and none is configured; install one with \"footnote models pull\" (then re-index), or use --method bm25", ErrModelMissing, method)
		}
		return retrievalPlan{method: MethodDense + ":" + p.cfg.Embedders[0].Info().Name, dense: []int{0}}, nil
	case strings.HasPrefix(m, MethodDense+":"):
		want := FieldName(strings.TrimPrefix(m, MethodDense+":"))
		var names []string
		for i, e := range p.cfg.Embedders {
			name := e.Info().Name
			if FieldName(name) == want {
				return retrievalPlan{method: MethodDense + ":" + name, dense: []int{i}}, nil
			}
			names = append(names, name)
		}
		configured := "none"
		if len(names) > 0 {
			configured = strings.Join(names, ", ")
		}
		return retrievalPlan{}, fmt.Errorf("%w: method %q needs dense model %q, which is not configured (configured: %s); install it with \"footnote models pull\" (then re-index), or use --method hybrid or bm25", ErrModelMissing, method, want, configured)
	}
	return retrievalPlan{}, fmt.Errorf("%w %q: use hybrid, bm25 or dense:<model> (available: %s)", ErrUnknownMethod, method, strings.Join(p.Methods(), ", "))
}

// FieldName maps a model name to a field-safe ModelInfo.Name: the part after the last "/",
// lower case, every run of characters other than ASCII letters and digits replaced by one
// underscore ("BAAI/bge-small-en-v1.5" → "bge_small_en_v1_5"). Method names are matched
// through it, so users may type a model either way.
func FieldName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			under = false
			continue
		}
		if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}
