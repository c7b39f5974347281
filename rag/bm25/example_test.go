package bm25_test

import (
	"fmt"

	"github.com/footnote-dev/footnote/rag/bm25"
)

// Indexing encodes each chunk with the corpus' mean length; searching encodes the query
// with the corpus' document frequencies. Their inner product is the BM25 score; here
// (attent, attend: idf ln 2 each; first chunk 5 terms, avgdl 4) 2·ln2·2.5/(1+1.78125).
func Example() {
	texts := []string{"Multi-head attention attends to all positions.", "Convolutions share filters."}
	var p bm25.Params // k1 = 1.5, b = 0.75

	df := map[uint32]int{}
	total := 0
	for _, t := range texts {
		tf, n := bm25.Count(t)
		total += n
		for _, i := range tf.Indices {
			df[i]++
		}
	}
	avgdl := float64(total) / float64(len(texts))

	q := bm25.NewQueryEncoder(p, len(texts), df).EncodeQuery("what does attention attend to?")
	for _, t := range texts {
		tf, n := bm25.Count(t)
		fmt.Printf("%.4f %q\n", q.Dot(p.Document(tf, n, avgdl)), t)
	}
	// Output:
	// 1.2461 "Multi-head attention attends to all positions."
	// 0.0000 "Convolutions share filters."
}
