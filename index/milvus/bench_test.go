package milvus

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/milvus/milvustest"
	"github.com/footnote-dev/footnote/rag"
)

// Benchmarks against FOOTNOTE_MILVUS_TEST_ADDR with a synthetic corpus:
// FOOTNOTE_MILVUS_BENCH_CHUNKS chunks (default 2,000) in documents of 50 chunks, each chunk
// with a 384-dimensional vector (the size of bge-small and MiniLM) and a BM25 vector of
// ~150 distinct terms drawn from a Zipf-distributed vocabulary of 50,000 terms.
//
//	FOOTNOTE_MILVUS_BENCH_CHUNKS=100000 go test -run '^$' -bench BenchmarkMilvus -benchtime 200x ./index/milvus/

const (
	benchDim       = 384
	benchDocChunks = 50
	benchVocab     = 50000
	benchTerms     = 150
)

var benchModels = []rag.ModelInfo{{Name: "bench_384", Dim: benchDim, Metric: rag.Cosine}}

func benchChunks(b *testing.B) int {
	n := 2000
	if v := os.Getenv("FOOTNOTE_MILVUS_BENCH_CHUNKS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("FOOTNOTE_MILVUS_BENCH_CHUNKS=%q is not a positive number", v)
		}
	}
	return n
}

type benchCorpus struct {
	rng  *rand.Rand
	zipf *rand.Zipf
}

func newBenchCorpus(seed uint64) *benchCorpus {
	rng := rand.New(rand.NewPCG(seed, 1))
	return &benchCorpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 2, benchVocab-1)}
}

func (c *benchCorpus) vector() []float32 {
	v := make([]float32, benchDim)
	var n float64
	for i := range v {
		v[i] = float32(c.rng.NormFloat64())
		n += float64(v[i] * v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}

func (c *benchCorpus) sparse(terms int) rag.SparseVector {
	set := map[uint32]float32{}
	for len(set) < terms {
		// Spread term ids over the hash space as bm25.Hash does.
		t := uint32(c.zipf.Uint64()) * 2654435761
		set[t] += 0.5 + c.rng.Float32()
	}
	v := rag.SparseVector{}
	for t := range set {
		v.Indices = append(v.Indices, t)
	}
	slices.Sort(v.Indices)
	for _, t := range v.Indices {
		v.Values = append(v.Values, set[t])
	}
	return v
}

func (c *benchCorpus) doc(i int) (rag.Document, []index.EncodedChunk) {
	id := fmt.Sprintf("bench-%06d", i)
	doc := rag.Document{ID: id, Source: "/bench/" + id + ".pdf", Name: id, Kind: "pdf", Title: "Synthetic paper " + id,
		Hash: fmt.Sprintf("%064x", i), Pages: 20, IndexedAt: time.Now()}
	chunks := make([]index.EncodedChunk, benchDocChunks)
	for j := range chunks {
		text := fmt.Sprintf("Synthetic chunk %d of %s. ", j, id)
		for len(text) < 2000 {
			text += "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "
		}
		chunks[j] = index.EncodedChunk{
			Chunk: rag.Chunk{ID: fmt.Sprintf("%s-%03d", id, j), DocID: id, Index: j, Text: text, Tokens: 400,
				PageStart: j/3 + 1, PageEnd: j/3 + 1, Section: []string{fmt.Sprintf("%d Section", j/10+1)},
				CharStart: j * 2000, CharEnd: (j + 1) * 2000, Source: doc.Source, Name: doc.Name, Title: doc.Title},
			Sparse: c.sparse(benchTerms),
			Terms:  300,
			Dense:  map[string][]float32{benchModels[0].Name: c.vector()},
		}
	}
	doc.Chunks = len(chunks)
	return doc, chunks
}

// BenchmarkMilvusInsert measures Replace of one 50-chunk document per iteration.
func BenchmarkMilvusInsert(b *testing.B) {
	addr := milvustest.Addr(b)
	s := openBench(b, addr)
	c := newBenchCorpus(1)
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		doc, chunks := c.doc(i)
		if err := s.Replace(b.Context(), doc, chunks); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchDocChunks)/time.Since(start).Seconds(), "chunks/s")
}

// BenchmarkMilvusSearch loads the synthetic corpus once (reporting its insert rate) and then
// measures sparse, dense and hybrid searches of 20 candidates, reporting p50 and p95.
func BenchmarkMilvusSearch(b *testing.B) {
	addr := milvustest.Addr(b)
	s := openBench(b, addr)
	n := benchChunks(b)
	c := newBenchCorpus(2)
	start := time.Now()
	docs := (n + benchDocChunks - 1) / benchDocChunks
	for i := range docs {
		doc, chunks := c.doc(i)
		if err := s.Replace(b.Context(), doc, chunks); err != nil {
			b.Fatal(err)
		}
		if (i+1)%200 == 0 {
			// Progress goes to stderr at once: b.Logf prints only when the benchmark ends.
			fmt.Fprintf(os.Stderr, "loaded %d chunks in %s\n", (i+1)*benchDocChunks, time.Since(start).Round(time.Second))
		}
	}
	loaded := docs * benchDocChunks
	if err := s.Flush(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d chunks in %s: %.0f chunks/s", loaded, time.Since(start).Round(time.Millisecond), float64(loaded)/time.Since(start).Seconds())

	for _, kind := range []string{"sparse", "dense", "hybrid"} {
		b.Run(kind, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				q := c.sparse(6)
				req := rag.SearchRequest{Limit: 20}
				if kind != "dense" {
					req.Sparse = &q
				}
				if kind != "sparse" {
					req.Dense = []rag.DenseQuery{{Model: benchModels[0].Name, Vector: c.vector()}}
				}
				t0 := time.Now()
				hits, err := s.Search(b.Context(), req)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if len(hits) == 0 {
					b.Fatalf("%s search found nothing", kind)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
			b.ReportMetric(float64(loaded), "chunks")
		})
	}
}

func openBench(b *testing.B, addr string) *Store {
	b.Helper()
	return openBenchBatch(b, addr, 0)
}

// openBenchBatch opens a fresh corpus with the given Config.StatsBatch (zero: default).
func openBenchBatch(b *testing.B, addr string, statsBatch int) *Store {
	b.Helper()
	s, err := Open(b.Context(), Config{Addr: addr, Corpus: milvustest.Corpus(b), Models: benchModels, Timeout: time.Minute, StatsBatch: statsBatch})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Drop(ctx); err != nil {
			b.Logf("drop: %v", err)
		}
		s.Close()
	})
	return s
}
