package embedded

import (
	"math"
	"slices"
	"testing"

	"github.com/footnote-dev/footnote/index/storetest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// pagedDoc is a two-chunk document whose first chunk spans pages 3-5.
func pagedDoc(t *testing.T) ([]rag.Chunk, func(s *Store) error) {
	doc, chunks := storetest.Encode(storetest.Doc{ID: "d", Source: "/d.txt", Chunks: []storetest.Chunk{
		{ID: "c0", Text: "page three text. page four text. page five text.", M4: []float32{3, 4, 0, 0}},
		{ID: "c1", Text: "one page only", M4: []float32{0, 0, 1, 0}},
	}})
	chunks[0].PageStart, chunks[0].PageEnd, chunks[0].PageBreaks = 3, 5, []int{17, 33}
	chunks[1].PageStart, chunks[1].PageEnd = 5, 5
	want := []rag.Chunk{chunks[0].Chunk, chunks[1].Chunk}
	return want, func(s *Store) error { return s.Replace(t.Context(), doc, chunks) }
}

func TestPageBreaksPersist(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, storetest.M4)
	want, put := pagedDoc(t)
	if err := put(s); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		got, err := s.Chunks(t.Context(), []string{"c0", "c1"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0].PageBreaks, want[0].PageBreaks) || got[1].PageBreaks != nil {
			t.Errorf("page breaks read back %v and %v, want %v and none", got[0].PageBreaks, got[1].PageBreaks, want[0].PageBreaks)
		}
		hs, err := s.Search(t.Context(), rag.SearchRequest{Dense: []rag.DenseQuery{{Model: "m4", Vector: []float32{1, 1, 0, 0}}}, Limit: 1})
		if err != nil || len(hs) != 1 || !slices.Equal(hs[0].Chunk.PageBreaks, want[0].PageBreaks) {
			t.Errorf("search hit %+v, %v: want c0 with its page breaks", hs, err)
		}
	}
	check(s)
	s.Close()
	check(open(t, dir))
}

func TestPageBreaksValidated(t *testing.T) {
	s := open(t, t.TempDir(), storetest.M4)
	for name, breaks := range map[string][]int{
		"more breaks than pages": {5, 10, 15},
		"descending":             {30, 10},
		"past the text":          {10, 400},
	} {
		doc, chunks := storetest.Encode(storetest.Doc{ID: "d", Source: "/d.txt", Chunks: []storetest.Chunk{{ID: "c0", Text: "some text that is forty-odd bytes long"}}})
		chunks[0].PageStart, chunks[0].PageEnd, chunks[0].PageBreaks = 1, 3, breaks
		if err := s.Replace(t.Context(), doc, chunks); err == nil {
			t.Errorf("%s: page breaks %v accepted", name, breaks)
		}
	}
}

// TestMigrateV1 opens a file laid out as schema version 1 (no page_breaks column): the
// column is added, old chunks read with no page breaks, and new ones keep theirs.
func TestMigrateV1(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, storetest.M4)
	doc, chunks := storetest.Encode(storetest.Doc{ID: "old", Source: "/old.txt", Chunks: []storetest.Chunk{{ID: "o0", Text: "old chunk", M4: []float32{1, 0, 0, 0}}}})
	if err := s.Replace(t.Context(), doc, chunks); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE chunks DROP COLUMN page_breaks`, `UPDATE meta SET value = '1' WHERE key = 'schema_version'`} {
		if _, err := s.db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("make a version 1 file: %s: %v", q, err)
		}
	}
	s.Close()

	s = open(t, dir)
	got, err := s.Chunks(t.Context(), []string{"o0"})
	if err != nil || got[0].Text != "old chunk" || got[0].PageBreaks != nil {
		t.Fatalf("old chunk after migration: %+v, %v", got, err)
	}
	var version string
	if err := s.db.QueryRowContext(t.Context(), `SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&version); err != nil || version != "2" {
		t.Errorf("schema version after migration = %q, %v; want 2", version, err)
	}
	want, put := pagedDoc(t)
	if err := put(s); err != nil {
		t.Fatal(err)
	}
	got, err = s.Chunks(t.Context(), []string{"c0"})
	if err != nil || !slices.Equal(got[0].PageBreaks, want[0].PageBreaks) {
		t.Errorf("new chunk after migration: %+v, %v", got, err)
	}
}

// TestSearchWithVectors checks that hits carry their stored (unit-length) vectors only
// when asked, for a single retriever and for fused results.
func TestSearchWithVectors(t *testing.T) {
	s := open(t, t.TempDir(), storetest.M4, storetest.M2)
	doc, chunks := storetest.Encode(storetest.Doc{ID: "d", Source: "/d.txt", Chunks: []storetest.Chunk{
		{ID: "c0", Text: "attention heads", M4: []float32{3, 4, 0, 0}, M2: []float32{1, 0}},
		{ID: "c1", Text: "attention layers", M4: []float32{0, 0, 2, 0}},
	}})
	if err := s.Replace(t.Context(), doc, chunks); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string][]float32{
		"c0": {"m4": {0.6, 0.8, 0, 0}, "m2": {1, 0}},
		"c1": {"m4": {0, 0, 1, 0}},
	}
	dense := []rag.DenseQuery{{Model: "m4", Vector: []float32{1, 1, 1, 0}}}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sparse := bm25.NewQueryEncoder(bm25.Params{}, st.Chunks, st.DF).EncodeQuery("attention")
	for name, req := range map[string]rag.SearchRequest{
		"dense":  {Dense: dense},
		"sparse": {Sparse: &sparse},
		"fused":  {Dense: dense, Sparse: &sparse},
	} {
		hs, err := s.Search(t.Context(), req)
		if err != nil || len(hs) != 2 {
			t.Fatalf("%s: %d hits, %v", name, len(hs), err)
		}
		for _, h := range hs {
			if h.Vectors != nil {
				t.Errorf("%s: vectors returned without WithVectors", name)
			}
		}
		req.WithVectors = true
		hs, _ = s.Search(t.Context(), req)
		for _, h := range hs {
			w := want[h.Chunk.ID]
			if len(h.Vectors) != len(w) {
				t.Errorf("%s: %s carries models %v, want %v", name, h.Chunk.ID, keys(h.Vectors), keys(w))
			}
			for m, v := range w {
				if !near(h.Vectors[m], v) {
					t.Errorf("%s: %s %s = %v, want %v", name, h.Chunk.ID, m, h.Vectors[m], v)
				}
			}
		}
		// Hits own their vectors: changing one must not change the store's.
		hs[0].Vectors["m4"][0] = 42
		again, _ := s.Search(t.Context(), req)
		if again[0].Vectors["m4"][0] == 42 {
			t.Fatalf("%s: a hit's vector aliases the search cache", name)
		}
	}
}

func keys(m map[string][]float32) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}
