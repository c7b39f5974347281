package embedded

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/storetest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

func open(t testing.TB, dir string, models ...rag.ModelInfo) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Dir: dir, Models: models})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, models []rag.ModelInfo) index.Store {
		return open(t, t.TempDir(), models...)
	})
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, storetest.M4)
	doc, chunks := storetest.Encode(storetest.Doc{ID: "d", Source: "/d.txt", Chunks: []storetest.Chunk{
		{ID: "c0", Text: "persistent attention", M4: []float32{1, 0, 0, 0}},
	}})
	if err := s.Replace(t.Context(), doc, chunks); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Reopen with no models: the stored model set is kept.
	s = open(t, dir)
	if got := s.Models(); len(got) != 1 || got[0] != storetest.M4 {
		t.Errorf("Models after reopen = %v, want [%v]", got, storetest.M4)
	}
	hs, err := s.Search(t.Context(), rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "m4", Vector: []float32{1, 0, 0, 0}}}})
	if err != nil || len(hs) != 1 || hs[0].Chunk.ID != "c0" {
		t.Errorf("search after reopen = %v, %v; want c0", hs, err)
	}
}

func TestModelReconcile(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, storetest.M4)
	doc, chunks := storetest.Encode(storetest.Doc{ID: "d", Source: "/d.txt", Chunks: []storetest.Chunk{
		{ID: "c0", Text: "one", M4: []float32{1, 0, 0, 0}},
		{ID: "c1", Text: "two", M4: []float32{0, 1, 0, 0}},
	}})
	if err := s.Replace(t.Context(), doc, chunks); err != nil {
		t.Fatal(err)
	}
	s.Close()

	t.Run("changed dimension refused", func(t *testing.T) {
		_, err := Open(t.Context(), Config{Dir: dir, Models: []rag.ModelInfo{{Name: "m4", Dim: 8, Metric: rag.Cosine}}})
		if !errors.Is(err, ErrModelChanged) {
			t.Fatalf("error = %v, want ErrModelChanged", err)
		}
		for _, want := range []string{"m4", "dimension 4", "dimension 8", "footnote index --rebuild"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	})
	t.Run("changed metric refused", func(t *testing.T) {
		_, err := Open(t.Context(), Config{Dir: dir, Models: []rag.ModelInfo{{Name: "m4", Dim: 4, Metric: rag.IP}}})
		if !errors.Is(err, ErrModelChanged) || !strings.Contains(err.Error(), "IP") {
			t.Fatalf("error = %v, want ErrModelChanged naming IP", err)
		}
	})
	t.Run("added model back-filled", func(t *testing.T) {
		s := open(t, dir, storetest.M4, storetest.M2)
		miss, err := s.MissingDense(t.Context(), "m2", 0)
		if err != nil || len(miss) != 2 || miss[0].ID != "c0" || miss[1].ID != "c1" {
			t.Fatalf("MissingDense = %v, %v; want c0, c1", miss, err)
		}
	})
	t.Run("rebuild", func(t *testing.T) {
		s, err := Open(t.Context(), Config{Dir: dir, Models: []rag.ModelInfo{{Name: "m4", Dim: 8}}, Rebuild: true})
		if err != nil {
			t.Fatalf("Open with Rebuild: %v", err)
		}
		defer s.Close()
		st, err := s.Stats(t.Context())
		if err != nil || st.Chunks != 0 || st.Documents != 0 || len(st.DF) != 0 {
			t.Errorf("Stats after rebuild = %+v, %v; want empty", st, err)
		}
		if got := s.Models(); len(got) != 1 || got[0].Dim != 8 || got[0].Metric != rag.Cosine {
			t.Errorf("Models after rebuild = %v", got)
		}
	})
}

func TestOpenValidates(t *testing.T) {
	tests := []Config{
		{},
		{Dir: t.TempDir(), Corpus: "../escape"},
		{Dir: t.TempDir(), Models: []rag.ModelInfo{{Name: "bad-name", Dim: 4}}},
		{Dir: t.TempDir(), Models: []rag.ModelInfo{{Name: "m", Dim: 0}}},
		{Dir: t.TempDir(), Models: []rag.ModelInfo{{Name: "m", Dim: 4, Metric: "HAMMING"}}},
		{Dir: t.TempDir(), Models: []rag.ModelInfo{{Name: "m", Dim: 4}, {Name: "m", Dim: 4}}},
	}
	for i, cfg := range tests {
		if s, err := Open(t.Context(), cfg); err == nil {
			s.Close()
			t.Errorf("case %d: Open(%+v) succeeded", i, cfg)
		}
	}
}

// TestCancelDuringReplace cancels the context after every statement of the new version has
// run but before the commit: the old version must survive whole.
func TestCancelDuringReplace(t *testing.T) {
	s := open(t, t.TempDir(), storetest.M4)
	v1 := storetest.Doc{ID: "d", Source: "/d.txt", Chunks: []storetest.Chunk{
		{ID: "v1-0", Text: "old attention", M4: []float32{1, 0, 0, 0}},
		{ID: "v1-1", Text: "old convolution", M4: []float32{0, 1, 0, 0}},
	}}
	doc, chunks := storetest.Encode(v1)
	if err := s.Replace(t.Context(), doc, chunks); err != nil {
		t.Fatal(err)
	}
	before, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Warm the search cache so the test also covers it.
	q := bm25.NewQueryEncoder(bm25.Params{}, before.Chunks, before.DF).EncodeQuery("old attention")
	if _, err := s.Search(t.Context(), rag.SearchRequest{Sparse: &q}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := false
	s.beforeCommit = func() { ran = true; cancel() }
	doc2, chunks2 := storetest.Encode(storetest.Doc{ID: "d", Source: "/d.txt", Chunks: []storetest.Chunk{
		{ID: "v2-0", Text: "new transformer text", M4: []float32{0, 0, 1, 0}},
	}})
	if err := s.Replace(ctx, doc2, chunks2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Replace error = %v, want context.Canceled", err)
	}
	s.beforeCommit = nil
	if !ran {
		t.Fatal("commit hook never ran")
	}

	after, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if after.Chunks != before.Chunks || after.Terms != before.Terms || len(after.DF) != len(before.DF) {
		t.Errorf("Stats changed: before %+v, after %+v", before, after)
	}
	got, err := s.Chunks(t.Context(), []string{"v1-0", "v1-1"})
	if err != nil || len(got) != 2 {
		t.Errorf("old chunks = %v, %v", got, err)
	}
	if _, err := s.Chunks(t.Context(), []string{"v2-0"}); !errors.Is(err, rag.ErrNotFound) {
		t.Errorf("new chunk error = %v, want ErrNotFound", err)
	}
	hs, err := s.Search(t.Context(), rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "m4", Vector: []float32{0, 0, 1, 0}}}, Limit: 5})
	if err != nil || len(hs) != 2 {
		t.Errorf("dense hits after cancelled replace = %d, %v; want the 2 old chunks", len(hs), err)
	}
	for _, h := range hs {
		if !strings.HasPrefix(h.Chunk.ID, "v1-") {
			t.Errorf("hit %s from the cancelled version", h.Chunk.ID)
		}
	}
}

// TestOtherProcessWrites opens the same corpus twice, as `footnote serve` and
// `footnote index` would from two processes: a write through one is searchable through
// the other without a restart.
func TestOtherProcessWrites(t *testing.T) {
	dir := t.TempDir()
	reader := open(t, dir, storetest.M4)
	writer := open(t, dir, storetest.M4)
	dq := []rag.DenseQuery{{Model: "m4", Vector: []float32{1, 0, 0, 0}}}
	if hs, err := reader.Search(t.Context(), rag.SearchRequest{Dense: dq}); err != nil || len(hs) != 0 {
		t.Fatalf("first search = %v, %v", hs, err)
	}
	for i, id := range []string{"a", "b"} {
		doc, chunks := storetest.Encode(storetest.Doc{ID: id, Source: "/" + id, Chunks: []storetest.Chunk{
			{ID: id + "-0", Text: "text " + id, M4: []float32{1, float32(i), 0, 0}},
		}})
		if err := writer.Replace(t.Context(), doc, chunks); err != nil {
			t.Fatal(err)
		}
		hs, err := reader.Search(t.Context(), rag.SearchRequest{Dense: dq})
		if err != nil || len(hs) != i+1 {
			t.Fatalf("after writing %s: %d hits, %v; want %d", id, len(hs), err, i+1)
		}
		st, err := reader.Stats(t.Context())
		if err != nil || st.Documents != i+1 {
			t.Fatalf("after writing %s: Stats %+v, %v", id, st, err)
		}
	}
}

func TestWeightedAndMetrics(t *testing.T) {
	ip := rag.ModelInfo{Name: "ip", Dim: 2, Metric: rag.IP}
	l2 := rag.ModelInfo{Name: "l2", Dim: 2, Metric: rag.L2}
	s := open(t, t.TempDir(), ip, l2)
	doc := rag.Document{ID: "d", Source: "/d"}
	var chunks []index.EncodedChunk
	for i, v := range [][]float32{{1, 0}, {2, 2}, {0, 3}} {
		tf, n := bm25.Count(strings.Repeat("word ", i+1))
		chunks = append(chunks, index.EncodedChunk{
			Chunk:  rag.Chunk{ID: fmt.Sprintf("c%d", i), Index: i, Text: "t"},
			Sparse: bm25.Params{}.Document(tf, n, 2), Terms: n,
			Dense: map[string][]float32{"ip": v, "l2": v},
		})
	}
	if err := s.Replace(t.Context(), doc, chunks); err != nil {
		t.Fatal(err)
	}
	search := func(req rag.SearchRequest) []rag.Hit {
		t.Helper()
		hs, err := s.Search(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	// IP with (1,1): c0 = 1, c1 = 4, c2 = 3 (not normalised).
	hs := search(rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "ip", Vector: []float32{1, 1}}}})
	want := []struct {
		id    string
		score float64
	}{{"c1", 4}, {"c2", 3}, {"c0", 1}}
	for i, w := range want {
		if hs[i].Chunk.ID != w.id || math.Abs(hs[i].Score-w.score) > 1e-6 {
			t.Errorf("IP hit %d = %s %v, want %s %v", i, hs[i].Chunk.ID, hs[i].Score, w.id, w.score)
		}
	}
	// L2 from (0,3): c2 = -0, c1 = -(4+1) = -5, c0 = -(1+9) = -10.
	hs = search(rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "l2", Vector: []float32{0, 3}}}})
	want = []struct {
		id    string
		score float64
	}{{"c2", 0}, {"c1", -5}, {"c0", -10}}
	for i, w := range want {
		if hs[i].Chunk.ID != w.id || math.Abs(hs[i].Score-w.score) > 1e-6 {
			t.Errorf("L2 hit %d = %s %v, want %s %v", i, hs[i].Chunk.ID, hs[i].Score, w.id, w.score)
		}
	}
	// Weighted: IP (1,1) normalises to c1 1, c2 2/3, c0 0; L2 from (0,3) to c2 1, c1 0.5,
	// c0 0. Weights 1 and 3: c2 = 2/3 + 3 = 3.667, c1 = 1 + 1.5 = 2.5, c0 = 0.
	hs = search(rag.SearchRequest{
		Dense:  []rag.DenseQuery{{Model: "ip", Vector: []float32{1, 1}}, {Model: "l2", Vector: []float32{0, 3}}},
		Fusion: rag.Fusion{Method: "weighted", Weights: []float64{1, 3}},
	})
	want = []struct {
		id    string
		score float64
	}{{"c2", 2.0/3 + 3}, {"c1", 2.5}, {"c0", 0}}
	for i, w := range want {
		if hs[i].Chunk.ID != w.id || math.Abs(hs[i].Score-w.score) > 1e-6 {
			t.Errorf("weighted hit %d = %s %v, want %s %v", i, hs[i].Chunk.ID, hs[i].Score, w.id, w.score)
		}
	}
	for _, req := range []rag.SearchRequest{
		{},
		{Dense: []rag.DenseQuery{{Model: "ip", Vector: []float32{1, 1, 1}}}},
		{Dense: []rag.DenseQuery{{Model: "ip", Vector: []float32{1, 1}}}, Fusion: rag.Fusion{Method: "borda"}},
		{Dense: []rag.DenseQuery{{Model: "ip", Vector: []float32{1, 1}}}, Fusion: rag.Fusion{Method: "weighted", Weights: []float64{1, 2}}},
	} {
		if _, err := s.Search(t.Context(), req); err == nil {
			t.Errorf("Search(%+v) succeeded, want an error", req)
		}
	}
}

func TestTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 100, 20000} {
		entries := make([]*entry, n)
		scores := map[*entry]float64{}
		for i := range entries {
			entries[i] = &entry{id: fmt.Sprintf("%06d", i)}
			scores[entries[i]] = float64(r.IntN(50)) // many ties
		}
		for _, k := range []int{1, 7, 30} {
			got := scan(entries, nil, func(e *entry) (float64, bool) { return scores[e], true }, k)
			if len(got) != min(k, n) {
				t.Fatalf("n=%d k=%d: %d hits", n, k, len(got))
			}
			// The reference: full sort.
			all := make([]scored, n)
			for i, e := range entries {
				all[i] = scored{e, scores[e]}
			}
			for i := 0; i < len(got); i++ {
				best := -1
				for j := range all {
					if all[j].e != nil && (best < 0 || better(all[j], all[best])) {
						best = j
					}
				}
				if got[i].e != all[best].e {
					t.Fatalf("n=%d k=%d: hit %d = %s, want %s", n, k, i, got[i].e.id, all[best].e.id)
				}
				all[best].e = nil
			}
		}
	}
}

// TestSparseSignedWeights uses a hand-made query whose partial sum passes through zero:
// the chunk must still be one hit with the full sum.
func TestSparseSignedWeights(t *testing.T) {
	s := open(t, t.TempDir())
	doc := rag.Document{ID: "d", Source: "/d"}
	chunks := []index.EncodedChunk{
		{Chunk: rag.Chunk{ID: "all", Text: "x"}, Sparse: rag.SparseVector{Indices: []uint32{1, 2, 3}, Values: []float32{1, 1, 1}}, Terms: 3},
		{Chunk: rag.Chunk{ID: "one", Text: "y"}, Sparse: rag.SparseVector{Indices: []uint32{1}, Values: []float32{0.5}}, Terms: 1},
	}
	if err := s.Replace(t.Context(), doc, chunks); err != nil {
		t.Fatal(err)
	}
	q := rag.SparseVector{Indices: []uint32{1, 2, 3}, Values: []float32{1, -1, 2}}
	hs, err := s.Search(t.Context(), rag.SearchRequest{Sparse: &q})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].Chunk.ID != "all" || hs[0].Score != 2 || hs[1].Chunk.ID != "one" || hs[1].Score != 0.5 {
		t.Errorf("hits = %+v, want all (2) then one (0.5)", hs)
	}
}
