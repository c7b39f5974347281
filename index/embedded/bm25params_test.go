package embedded

import (
	"errors"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// TestBM25ParamsRecorded: a corpus refuses to be opened with other BM25 parameters than
// it was indexed with (they weight the stored vectors), and accepts them after a rebuild.
func TestBM25ParamsRecorded(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	s, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tf, n := bm25.Count("attention is all you need")
	if err := s.Replace(ctx, rag.Document{ID: "d"}, []index.EncodedChunk{{Chunk: rag.Chunk{ID: "c"}, Sparse: bm25.Params{}.Document(tf, n, 5), Terms: n}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	if s, err := Open(ctx, Config{Dir: dir, BM25: bm25.Params{K1: 1.5, B: 0.75}}); err != nil {
		t.Errorf("defaults spelled out: %v", err)
	} else {
		s.Close()
	}
	_, err = Open(ctx, Config{Dir: dir, BM25: bm25.Params{K1: 1.2}})
	if !errors.Is(err, bm25.ErrParamsChanged) || !strings.Contains(err.Error(), "--rebuild") {
		t.Fatalf("open with k1=1.2: %v, want ErrParamsChanged naming --rebuild", err)
	}
	s, err = Open(ctx, Config{Dir: dir, BM25: bm25.Params{K1: 1.2}, Rebuild: true})
	if err != nil {
		t.Fatalf("rebuild with k1=1.2: %v", err)
	}
	s.Close()
	if _, err := Open(ctx, Config{Dir: dir}); !errors.Is(err, bm25.ErrParamsChanged) {
		t.Errorf("after the rebuild with k1=1.2, opening with the defaults: %v", err)
	}
}
