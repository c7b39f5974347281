package milvus

import (
	"testing"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/milvus/milvustest"
	"github.com/footnote-dev/footnote/index/storetest"
	"github.com/footnote-dev/footnote/rag"
)

// TestConformance runs the store conformance suite against Milvus (Lite in CI), each
// subtest on fresh collections.
func TestConformance(t *testing.T) {
	addr := milvustest.Addr(t)
	storetest.Run(t, func(t *testing.T, models []rag.ModelInfo) index.Store {
		return open(t, addr, milvustest.Corpus(t), models)
	})
}
