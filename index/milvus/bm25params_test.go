package milvus

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/index/milvus/milvustest"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// TestBM25ParamsRecorded: a collection refuses to be opened with other BM25 parameters
// than it was created with, and accepts them after a rebuild.
func TestBM25ParamsRecorded(t *testing.T) {
	addr := milvustest.Addr(t)
	corpus := milvustest.Corpus(t)
	s := open(t, addr, corpus, testModels)
	replace(t, s, makeDoc("a", "v1", testModels, nil, corpusTexts[0]...))

	cfg := Config{Addr: addr, Corpus: corpus, Models: testModels, Timeout: 20 * time.Second}
	cfg.BM25 = bm25.Params{K1: 1.5, B: 0.75}
	if same, err := Open(t.Context(), cfg); err != nil {
		t.Errorf("defaults spelled out: %v", err)
	} else {
		same.Close()
	}
	cfg.BM25 = bm25.Params{B: 0.5}
	_, err := Open(t.Context(), cfg)
	if !errors.Is(err, bm25.ErrParamsChanged) || !strings.Contains(err.Error(), "footnote index --rebuild") {
		t.Fatalf("open with b=0.5: %v, want ErrParamsChanged naming `footnote index --rebuild`", err)
	}
	cfg.Recreate = true
	re, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("recreate with b=0.5: %v", err)
	}
	re.Close()
	cfg.Recreate, cfg.BM25 = false, bm25.Params{}
	if _, err := Open(t.Context(), cfg); !errors.Is(err, bm25.ErrParamsChanged) {
		t.Errorf("after recreating with b=0.5, opening with the defaults: %v", err)
	}
}
