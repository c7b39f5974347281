package milvus

import (
	"os"
	"testing"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/milvus/milvustest"
	"github.com/footnote-dev/footnote/index/storetest"
	"github.com/footnote-dev/footnote/rag"
)

// TestConformance runs the store conformance suite against Milvus (the C++ engine in CI),
// each subtest on fresh collections, and against Milvus Lite 3.x too when a second server
// is named.
func TestConformance(t *testing.T) {
	addr := milvustest.Addr(t)
	storetest.Run(t, func(t *testing.T, models []rag.ModelInfo) index.Store {
		return open(t, addr, milvustest.Corpus(t), models)
	})
	// Statistics written with every document (Config.StatsBatch 1), as before batching.
	t.Run("per-write statistics", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T, models []rag.ModelInfo) index.Store {
			return openBatch(t, addr, milvustest.Corpus(t), models, 1)
		})
	})
	if lite3 := os.Getenv(milvustest.EnvAddrLite3); lite3 != "" {
		t.Run("lite3", func(t *testing.T) {
			storetest.Run(t, func(t *testing.T, models []rag.ModelInfo) index.Store {
				return open(t, lite3, milvustest.Corpus(t), models)
			})
		})
	}
}

// TestVectorsAndPageBreaks runs the stored-vector and page-break contracts on Milvus.
func TestVectorsAndPageBreaks(t *testing.T) {
	addr := milvustest.Addr(t)
	storetest.VectorsAndPageBreaks(t, func(t *testing.T, models []rag.ModelInfo) index.Store {
		return open(t, addr, milvustest.Corpus(t), models)
	})
}
