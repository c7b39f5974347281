//go:build unix

package embedded

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

const benchDim = 384

// fillSynthetic stores n chunks in documents of 500: 384-dim random vectors and BM25
// vectors of ~120 distinct terms drawn from a Zipf vocabulary of 50,000 terms.
func fillSynthetic(b *testing.B, s *Store, n int) *rand.Rand {
	b.Helper()
	r := rand.New(rand.NewPCG(7, uint64(n)))
	zipf := rand.NewZipf(r, 1.1, 2, 49_999)
	const perDoc = 500
	for d := 0; d*perDoc < n; d++ {
		doc := rag.Document{ID: fmt.Sprintf("doc%04d", d), Source: fmt.Sprintf("/bench/%04d.pdf", d)}
		var chunks []index.EncodedChunk
		for i := 0; i < perDoc && d*perDoc+i < n; i++ {
			counts := map[uint32]float32{}
			terms := 150 + r.IntN(100)
			for range terms {
				counts[bm25.Hash(fmt.Sprint("t", zipf.Uint64()))]++
			}
			tf := rag.SparseVector{}
			for k := range counts {
				tf.Indices = append(tf.Indices, k)
			}
			slices.Sort(tf.Indices)
			for _, k := range tf.Indices {
				tf.Values = append(tf.Values, counts[k])
			}
			v := make([]float32, benchDim)
			for j := range v {
				v[j] = float32(r.NormFloat64())
			}
			chunks = append(chunks, index.EncodedChunk{
				Chunk:  rag.Chunk{ID: fmt.Sprintf("%s-%04d", doc.ID, i), Index: i, Text: "synthetic passage", Section: []string{"1 Intro"}},
				Sparse: bm25.Params{}.Document(tf, terms, 200),
				Terms:  terms,
				Dense:  map[string][]float32{"bench": v},
			})
		}
		if err := s.Replace(b.Context(), doc, chunks); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// cpuTime is the process' user+system CPU time in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{3_000, 100_000} {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			s := open(b, b.TempDir(), rag.ModelInfo{Name: "bench", Dim: benchDim, Metric: rag.Cosine})
			r := fillSynthetic(b, s, n)
			st, err := s.Stats(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			sparse := rag.SparseVector{}
			for _, t := range []string{"t3", "t17", "t250", "t1200", "t9000"} {
				sparse.Indices = append(sparse.Indices, bm25.Hash(t))
			}
			slices.Sort(sparse.Indices)
			for _, idx := range sparse.Indices {
				sparse.Values = append(sparse.Values, float32(bm25.IDF(st.Chunks, st.DF[idx])))
			}
			vec := make([]float32, benchDim)
			for j := range vec {
				vec[j] = float32(r.NormFloat64())
			}
			dense := []rag.DenseQuery{{Model: "bench", Vector: vec}}
			// Load the vector cache outside the timed loop.
			if _, err := s.Search(b.Context(), rag.SearchRequest{Sparse: &sparse}); err != nil {
				b.Fatal(err)
			}
			for _, c := range []struct {
				name string
				req  rag.SearchRequest
			}{
				{"bm25", rag.SearchRequest{Sparse: &sparse}},
				{"dense", rag.SearchRequest{Dense: dense}},
				{"hybrid", rag.SearchRequest{Sparse: &sparse, Dense: dense}},
			} {
				b.Run(c.name, func(b *testing.B) {
					cpu0 := cpuTime(b)
					for b.Loop() {
						hs, err := s.Search(b.Context(), c.req)
						if err != nil || len(hs) != 20 {
							b.Fatalf("%d hits, %v", len(hs), err)
						}
					}
					// CPU time, unlike ns/op, does not grow when other processes
					// compete for the cores.
					b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
				})
			}
		})
	}
}

// BenchmarkReplace writes one 100-chunk document (384-dim vectors, ~120 terms a chunk)
// into a store that already holds 3,000 chunks, replacing its previous version.
func BenchmarkReplace(b *testing.B) {
	s := open(b, b.TempDir(), rag.ModelInfo{Name: "bench", Dim: benchDim, Metric: rag.Cosine})
	fillSynthetic(b, s, 3_000)
	r := rand.New(rand.NewPCG(3, 4))
	doc := rag.Document{ID: "replaced", Source: "/bench/replaced.pdf"}
	var chunks []index.EncodedChunk
	for i := range 100 {
		tf := rag.SparseVector{}
		for t := range 120 {
			tf.Indices = append(tf.Indices, uint32(t*1000+r.IntN(1000)))
			tf.Values = append(tf.Values, 1)
		}
		v := make([]float32, benchDim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		chunks = append(chunks, index.EncodedChunk{
			Chunk:  rag.Chunk{ID: fmt.Sprintf("replaced-%03d", i), Index: i, Text: "synthetic passage of some length"},
			Sparse: bm25.Params{}.Document(tf, 150, 200), Terms: 150,
			Dense: map[string][]float32{"bench": v},
		})
	}
	for b.Loop() {
		if err := s.Replace(b.Context(), doc, chunks); err != nil {
			b.Fatal(err)
		}
	}
}
