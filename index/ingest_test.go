package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/index/pdf/pdftest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

var _ Store = (*memStore)(nil)

// memStore is an in-memory Store. Replace is all-or-nothing like the real stores: it checks
// ctx before touching anything.
type memStore struct {
	mu       sync.Mutex
	docs     map[string]rag.Document
	chunks   map[string][]EncodedChunk
	replaces int
}

func newMemStore() *memStore {
	return &memStore{docs: map[string]rag.Document{}, chunks: map[string][]EncodedChunk{}}
}

func (s *memStore) Search(context.Context, rag.SearchRequest) ([]rag.Hit, error) { return nil, nil }
func (s *memStore) Chunks(_ context.Context, ids []string) ([]rag.Chunk, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []rag.Chunk
	for _, id := range ids {
		found := false
		for _, cs := range s.chunks {
			for _, c := range cs {
				if c.ID == id {
					out, found = append(out, c.Chunk), true
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("chunk %s: %w", id, rag.ErrNotFound)
		}
	}
	return out, nil
}
func (s *memStore) Models() []rag.ModelInfo { return nil }
func (s *memStore) Document(_ context.Context, id string) (rag.Document, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	if !ok {
		return rag.Document{}, fmt.Errorf("document %s: %w", id, rag.ErrNotFound)
	}
	return d, nil
}
func (s *memStore) Documents(context.Context) ([]rag.Document, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []rag.Document
	for _, d := range s.docs {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b rag.Document) int { return strings.Compare(a.Source, b.Source) })
	return out, nil
}
func (s *memStore) Replace(ctx context.Context, doc rag.Document, chunks []EncodedChunk) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs[doc.ID] = doc
	s.chunks[doc.ID] = chunks
	s.replaces++
	return nil
}
func (s *memStore) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.docs, id)
	delete(s.chunks, id)
	return nil
}
func (s *memStore) Stats(context.Context) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Documents: len(s.docs), DF: map[uint32]int{}}
	for _, cs := range s.chunks {
		for _, c := range cs {
			st.Chunks++
			st.Terms += int64(c.Terms)
			for _, i := range c.Sparse.Indices {
				st.DF[i]++
			}
		}
	}
	return st, nil
}
func (s *memStore) MissingDense(_ context.Context, model string, limit int) ([]rag.Chunk, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []rag.Chunk
	for _, id := range slices.Sorted(mapsKeys(s.chunks)) {
		for _, c := range s.chunks[id] {
			if _, ok := c.Dense[model]; !ok && len(out) < limit {
				out = append(out, c.Chunk)
			}
		}
	}
	return out, nil
}
func (s *memStore) PutDense(_ context.Context, model string, ids []string, vecs [][]float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range ids {
		for _, cs := range s.chunks {
			for j := range cs {
				if cs[j].ID == id {
					if cs[j].Dense == nil {
						cs[j].Dense = map[string][]float32{}
					}
					cs[j].Dense[model] = vecs[i]
				}
			}
		}
	}
	return nil
}
func (s *memStore) Close() error { return nil }

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (s *memStore) doc(t *testing.T, path string) (rag.Document, []EncodedChunk) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := DocID(path)
	d, ok := s.docs[id]
	if !ok {
		t.Fatalf("%s not stored", path)
	}
	return d, s.chunks[id]
}

// fakeEmbedder returns [len(text), 1, 0] and records its batch sizes.
type fakeEmbedder struct {
	name    string
	mu      sync.Mutex
	batches []int
	err     error
}

func (e *fakeEmbedder) Info() rag.ModelInfo {
	return rag.ModelInfo{Name: e.name, Dim: 3, Metric: rag.Cosine}
}
func (e *fakeEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	if e.err != nil {
		return nil, e.err
	}
	e.mu.Lock()
	e.batches = append(e.batches, len(texts))
	e.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1, 0}
	}
	return out, ctx.Err()
}
func (e *fakeEmbedder) EmbedQuery(context.Context, string) ([]float32, error) {
	return []float32{1, 0, 0}, nil
}

// samplePDF is a three-page PDF whose pages name their number.
func samplePDF(words string) []byte {
	var pages []pdftest.Page
	for n := 1; n <= 3; n++ {
		ts, _ := pdftest.Paragraph(72, 100, 12, 80, strings.Repeat(fmt.Sprintf("Page %d talks about %s in some detail. ", n, words), 12))
		pages = append(pages, pdftest.Page{Texts: ts})
	}
	return pdftest.Build(pages, pdftest.Options{Title: "A Sample Paper About " + words})
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// corpus writes a folder with indexable, hidden, unsupported and broken files.
func corpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "paper.pdf"), samplePDF("kangaroos"))
	write(t, filepath.Join(dir, "notes", "guide.md"), []byte("# Guide\n\nSome notes about wombats.\n\n## Setup\n\nInstall it.\n"))
	write(t, filepath.Join(dir, "src", "main.go"), []byte("package main\n\nfunc main() {}\n"))
	write(t, filepath.Join(dir, ".hidden", "secret.md"), []byte("# Hidden\n"))
	write(t, filepath.Join(dir, ".dotfile.txt"), []byte("hidden too"))
	write(t, filepath.Join(dir, "figure.png"), []byte("\x89PNG\r\n"))
	write(t, filepath.Join(dir, "locked.pdf"), pdftest.Build([]pdftest.Page{{Texts: []pdftest.Text{{X: 72, Y: 72, S: "x"}}}}, pdftest.Options{Encrypt: true}))
	write(t, filepath.Join(dir, "empty.txt"), nil)
	write(t, filepath.Join(dir, "blob.txt"), []byte("bin\x00ary"))
	return dir
}

func newIndexer(t *testing.T, cfg Config) *Indexer {
	t.Helper()
	ix, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func TestIndexFolder(t *testing.T) {
	dir := corpus(t)
	store := newMemStore()
	emb := &fakeEmbedder{name: "fake"}
	var events []Event
	ix := newIndexer(t, Config{Store: store, Embedders: []rag.Embedder{emb}, EmbedBatch: 2, Progress: func(e Event) { events = append(events, e) }})
	sum, err := ix.Index(t.Context(), []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 6 || sum.Indexed != 3 || sum.Unchanged != 0 || sum.Pages != 3 || !sum.Failed {
		t.Errorf("summary = %+v", sum)
	}
	reasons := map[string]string{}
	for _, s := range sum.Skipped {
		reasons[filepath.Base(s.Path)] = s.Reason
	}
	wantReasons := map[string]string{
		"figure.png": "unsupported file type .png",
		"locked.pdf": "PDF is password protected",
		"empty.txt":  "empty file",
		"blob.txt":   "binary file: contains NUL bytes",
	}
	if diff := cmp.Diff(wantReasons, reasons); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}

	d, chunks := store.doc(t, filepath.Join(dir, "paper.pdf"))
	if d.Kind != "pdf" || d.Pages != 3 || d.Title != "A Sample Paper About kangaroos" || d.Name != "paper" || d.Chunks != len(chunks) || len(d.Hash) != 64 {
		t.Errorf("document = %+v", d)
	}
	if sum.Chunks < 3 {
		t.Errorf("only %d chunks", sum.Chunks)
	}
	for _, c := range chunks {
		if c.DocID != d.ID || c.Source != d.Source || c.Title != d.Title || c.PageStart < 1 {
			t.Errorf("chunk metadata %+v", c.Chunk)
		}
		if want := fmt.Sprintf("Page %d talks", c.PageStart); !strings.Contains(c.Text, want) {
			t.Errorf("chunk on page %d does not quote that page: %q", c.PageStart, c.Text[:40])
		}
		if len(c.Sparse.Indices) == 0 || c.Terms == 0 {
			t.Errorf("chunk %d has no BM25 encoding", c.Index)
		}
		if v := c.Dense["fake"]; len(v) != 3 || v[0] != float32(len(c.Text)) {
			t.Errorf("chunk %d dense = %v", c.Index, v)
		}
	}
	md, mdChunks := store.doc(t, filepath.Join(dir, "notes", "guide.md"))
	if md.Kind != "markdown" || md.Title != "Guide" || md.Lines != 7 || mdChunks[0].LineStart != 1 {
		t.Errorf("markdown document %+v, first chunk %+v", md, mdChunks[0].Chunk)
	}
	for _, b := range emb.batches {
		if b > 2 {
			t.Errorf("embed batch of %d > 2", b)
		}
	}
	if len(events) == 0 || events[0].Kind != EventFound || events[0].Files != 6 {
		t.Errorf("first event %+v", events[:min(1, len(events))])
	}
	if last := events[len(events)-1]; last.Done != 6 {
		t.Errorf("last event %+v: Done should reach 6", last)
	}
}

func TestReindex(t *testing.T) {
	dir := corpus(t)
	store := newMemStore()
	ix := newIndexer(t, Config{Store: store})
	if _, err := ix.Index(t.Context(), []string{dir}, Options{}); err != nil {
		t.Fatal(err)
	}
	pdfPath := filepath.Join(dir, "paper.pdf")
	_, before := store.doc(t, pdfPath)

	t.Run("unchanged files are skipped", func(t *testing.T) {
		n := store.replaces
		sum, err := ix.Index(t.Context(), []string{dir}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Indexed != 0 || sum.Unchanged != 3 || store.replaces != n {
			t.Errorf("summary %+v, replaces %d -> %d", sum, n, store.replaces)
		}
	})
	t.Run("force re-indexes with the same ids", func(t *testing.T) {
		sum, err := ix.Index(t.Context(), []string{dir}, Options{Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Indexed != 3 {
			t.Errorf("summary %+v", sum)
		}
		_, after := store.doc(t, pdfPath)
		if diff := cmp.Diff(ids(before), ids(after)); diff != "" {
			t.Errorf("chunk ids changed (-before +after):\n%s", diff)
		}
	})
	t.Run("a changed file replaces its chunks", func(t *testing.T) {
		write(t, pdfPath, samplePDF("platypuses"))
		sum, err := ix.Index(t.Context(), []string{dir}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Indexed != 1 || sum.Unchanged != 2 {
			t.Errorf("summary %+v", sum)
		}
		d, after := store.doc(t, pdfPath)
		if d.Title != "A Sample Paper About platypuses" {
			t.Errorf("title %q", d.Title)
		}
		for _, c := range after {
			if strings.Contains(c.Text, "kangaroos") || slices.Contains(ids(before), c.ID) {
				t.Errorf("old chunk survived: %s %q", c.ID, c.Text[:30])
			}
		}
	})
}

func ids(cs []EncodedChunk) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestCancelKeepsOldVersion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "paper.pdf")
	write(t, path, samplePDF("kangaroos"))
	store := newMemStore()
	if _, err := newIndexer(t, Config{Store: store}).Index(t.Context(), []string{dir}, Options{}); err != nil {
		t.Fatal(err)
	}
	old, oldChunks := store.doc(t, path)
	write(t, path, samplePDF("platypuses"))

	cases := []struct {
		name string
		cfg  func(cancel context.CancelFunc) Config
		want error
	}{
		{"cancelled after parsing", func(cancel context.CancelFunc) Config {
			return Config{Store: store, Progress: func(e Event) {
				if e.Kind == EventParsed {
					cancel()
				}
			}}
		}, context.Canceled},
		{"cancelled while embedding", func(cancel context.CancelFunc) Config {
			return Config{Store: store, Embedders: []rag.Embedder{cancelEmbedder{cancel}}}
		}, context.Canceled},
		{"store write fails", func(context.CancelFunc) Config {
			return Config{Store: failingStore{store}}
		}, nil},
		{"embedder fails", func(context.CancelFunc) Config {
			return Config{Store: store, Embedders: []rag.Embedder{&fakeEmbedder{name: "x", err: errors.New("model exploded")}}}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			_, err := newIndexer(t, c.cfg(cancel)).Index(ctx, []string{dir}, Options{})
			if err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			d, chunks := store.doc(t, path)
			if d.Hash != old.Hash || !slices.Equal(ids(chunks), ids(oldChunks)) {
				t.Errorf("store changed: hash %s -> %s", old.Hash, d.Hash)
			}
		})
	}
}

// failingStore refuses every write, leaving the wrapped store as it was.
type failingStore struct{ *memStore }

func (failingStore) Replace(context.Context, rag.Document, []EncodedChunk) error {
	return errors.New("disk full")
}

// cancelEmbedder cancels the run while it embeds, as Ctrl-C would.
type cancelEmbedder struct{ cancel context.CancelFunc }

func (e cancelEmbedder) Info() rag.ModelInfo { return rag.ModelInfo{Name: "c", Dim: 1} }
func (e cancelEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	e.cancel()
	return nil, ctx.Err()
}
func (e cancelEmbedder) EmbedQuery(context.Context, string) ([]float32, error) { return nil, nil }

func TestPrune(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write(t, filepath.Join(a, "one.md"), []byte("# One\n\ntext one\n"))
	write(t, filepath.Join(a, "two.md"), []byte("# Two\n\ntext two\n"))
	write(t, filepath.Join(b, "three.md"), []byte("# Three\n\ntext three\n"))
	store := newMemStore()
	ix := newIndexer(t, Config{Store: store})
	if _, err := ix.Index(t.Context(), []string{a, b}, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(a, "two.md"), filepath.Join(b, "three.md")} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := ix.Index(t.Context(), []string{a}, Options{})
	if err != nil || sum.Removed != 0 || len(store.docs) != 3 {
		t.Fatalf("without prune: %+v, %v, %d docs", sum, err, len(store.docs))
	}
	sum, err = ix.Index(t.Context(), []string{a}, Options{Prune: true})
	if err != nil {
		t.Fatal(err)
	}
	// two.md is gone from a; three.md is gone too but lies outside the root given.
	if sum.Removed != 1 || len(store.docs) != 2 {
		t.Errorf("summary %+v, %d docs left", sum, len(store.docs))
	}
	if _, err := store.Document(t.Context(), DocID(filepath.Join(b, "three.md"))); err != nil {
		t.Errorf("document outside the pruned root removed: %v", err)
	}
	// A root deleted as a whole is pruned too.
	if err := os.RemoveAll(b); err != nil {
		t.Fatal(err)
	}
	sum, err = ix.Index(t.Context(), []string{b}, Options{Prune: true})
	if err != nil || sum.Removed != 1 || len(store.docs) != 1 {
		t.Errorf("deleted root: %+v, %v, %d docs left", sum, err, len(store.docs))
	}
}

func TestCopiesDoNotCollide(t *testing.T) {
	dir := t.TempDir()
	data := samplePDF("echidnas")
	write(t, filepath.Join(dir, "a", "paper.pdf"), data)
	write(t, filepath.Join(dir, "b", "paper.pdf"), data)
	store := newMemStore()
	if _, err := newIndexer(t, Config{Store: store}).Index(t.Context(), []string{dir}, Options{}); err != nil {
		t.Fatal(err)
	}
	_, a := store.doc(t, filepath.Join(dir, "a", "paper.pdf"))
	_, b := store.doc(t, filepath.Join(dir, "b", "paper.pdf"))
	for _, id := range ids(a) {
		if slices.Contains(ids(b), id) {
			t.Errorf("chunk id %s used by both copies", id)
		}
	}
}

func TestUnreadableAndMissing(t *testing.T) {
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked.md")
	write(t, locked, []byte("# Locked\n"))
	write(t, filepath.Join(dir, "ok.md"), []byte("# Fine\n\nreadable\n"))
	store := newMemStore()
	ix := newIndexer(t, Config{Store: store})
	// Tests run as root, where chmod 000 does not stop reads: fail the read instead.
	ix.readFile = func(p string) ([]byte, error) {
		if p == locked {
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
		}
		return os.ReadFile(p)
	}
	sum, err := ix.Index(t.Context(), []string{dir, filepath.Join(dir, "missing.pdf"), filepath.Join(dir, "ok.md")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Skip{
		{Path: filepath.Join(dir, "missing.pdf"), Reason: "file not found"},
		{Path: locked, Reason: "permission denied"},
	}
	if diff := cmp.Diff(want, sum.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if sum.Indexed != 1 || sum.Files != 2 || !sum.Failed {
		t.Errorf("summary %+v (ok.md named twice must be indexed once)", sum)
	}
}

func TestBM25UsesCorpusMean(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.md"), []byte("# A\n\nshort text about cats\n"))
	write(t, filepath.Join(dir, "b.md"), []byte("# B\n\n"+strings.Repeat("a much longer text about dogs and their owners. ", 20)+"\n"))
	store := newMemStore()
	params := bm25.Params{K1: 1.2, B: 0.75}
	if _, err := newIndexer(t, Config{Store: store, BM25: params}).Index(t.Context(), []string{dir}, Options{}); err != nil {
		t.Fatal(err)
	}
	st, _ := store.Stats(t.Context())
	avgdl := float64(st.Terms) / float64(st.Chunks)
	for _, cs := range store.chunks {
		for _, c := range cs {
			tf, n := bm25.Count(c.Text)
			want := params.Document(tf, n, avgdl)
			if n != c.Terms || !slices.Equal(want.Indices, c.Sparse.Indices) {
				t.Fatalf("chunk %s: terms %d vs %d", c.ID, c.Terms, n)
			}
			for i := range want.Values {
				if math.Abs(float64(want.Values[i]-c.Sparse.Values[i])) > 1e-6 {
					t.Errorf("chunk %s weight %d = %v, want %v (avgdl %.2f)", c.ID, i, c.Sparse.Values[i], want.Values[i], avgdl)
				}
			}
		}
	}
}

func TestBackfill(t *testing.T) {
	dir := corpus(t)
	store := newMemStore()
	if _, err := newIndexer(t, Config{Store: store}).Index(t.Context(), []string{dir}, Options{}); err != nil {
		t.Fatal(err)
	}
	st, _ := store.Stats(t.Context())
	emb := &fakeEmbedder{name: "late"}
	ix := newIndexer(t, Config{Store: store, Embedders: []rag.Embedder{emb}, EmbedBatch: 2})
	n, err := ix.Backfill(t.Context(), "late")
	if err != nil {
		t.Fatal(err)
	}
	if n != st.Chunks {
		t.Errorf("backfilled %d chunks, want %d", n, st.Chunks)
	}
	if left, _ := store.MissingDense(t.Context(), "late", 10); len(left) != 0 {
		t.Errorf("%d chunks still missing", len(left))
	}
	if _, err := ix.Backfill(t.Context(), "unknown"); err == nil {
		t.Error("backfill with an unconfigured model succeeded")
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without a store succeeded")
	}
	e := &fakeEmbedder{name: "x"}
	if _, err := New(Config{Store: newMemStore(), Embedders: []rag.Embedder{e, e}}); err == nil {
		t.Error("New with a model twice succeeded")
	}
}

func TestBatches(t *testing.T) {
	dir := corpus(t)
	store := newMemStore()
	var last Event
	ix := newIndexer(t, Config{Store: store, BatchFiles: 2, Progress: func(e Event) { last = e }})
	sum, err := ix.Index(t.Context(), []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Indexed != 3 || len(store.docs) != 3 || len(sum.Skipped) != 4 || last.Done != 6 {
		t.Errorf("summary %+v, %d docs, last event %+v", sum, len(store.docs), last)
	}
}
