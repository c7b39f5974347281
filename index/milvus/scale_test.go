package milvus

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/embedded"
	"github.com/footnote-dev/footnote/index/milvus/milvustest"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// BenchmarkScale loads the same synthetic corpus (see BenchmarkMilvusSearch) into Milvus
// and into the embedded store in one run and prints, side by side: insert throughput,
// question-path latency p50/p95 per method (bm25, dense, hybrid; BM25 query encoding
// included, as the pipeline does it), the BM25 encoding alone before (Stats: every
// document record and the whole vocabulary) and after (QueryStats: one point query), and
// memory (the Milvus server's RSS from FOOTNOTE_MILVUS_BENCH_PID, this process' Go heap
// for the embedded store). Opt-in and slow at scale; not part of the test run:
//
//	FOOTNOTE_MILVUS_BENCH_CHUNKS=100000 FOOTNOTE_MILVUS_BENCH_PID=$(cat DIR.pid) \
//	  go test -run '^$' -bench BenchmarkScale -benchtime 1x -timeout 60m ./index/milvus/
//
// FOOTNOTE_MILVUS_BENCH_STATS_BATCH sets Config.StatsBatch of the Milvus store (1: the
// statistics written with every document, as before batching). FOOTNOTE_MILVUS_BENCH_BEFORE_CHUNKS=M
// first loads M chunks into a second corpus with StatsBatch 1 and prints its insert rate
// beside the batched store's rate over its first M chunks (same run, same server).
func BenchmarkScale(b *testing.B) {
	addr := milvustest.Addr(b)
	n := benchChunks(b)
	queries := 200
	if v := os.Getenv("FOOTNOTE_MILVUS_BENCH_QUERIES"); v != "" {
		queries, _ = strconv.Atoi(v)
	}
	envInt := func(name string) int {
		v, err := strconv.Atoi(cmp.Or(os.Getenv(name), "0"))
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return v
	}
	statsBatch, beforeChunks := envInt("FOOTNOTE_MILVUS_BENCH_STATS_BATCH"), envInt("FOOTNOTE_MILVUS_BENCH_BEFORE_CHUNKS")
	ctx := b.Context()
	mv := openBenchBatch(b, addr, statsBatch)
	emb, err := embedded.Open(ctx, embedded.Config{Dir: b.TempDir(), Corpus: "scale", Models: benchModels})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { emb.Close() })

	docs := (n + benchDocChunks - 1) / benchDocChunks
	rssBefore := serverRSS()
	beforeDocs := (beforeChunks + benchDocChunks - 1) / benchDocChunks
	// load returns the insert rate over all docs documents and over the first beforeDocs
	// (the latter without the final Flush, as the "before" load is measured).
	load := func(st index.Store, name string, docs int) (rate, firstRate float64) {
		c := newBenchCorpus(2) // the same corpus for every store
		start := time.Now()
		for i := range docs {
			doc, chunks := c.doc(i)
			if err := st.Replace(ctx, doc, chunks); err != nil {
				b.Fatal(err)
			}
			if i+1 == beforeDocs {
				firstRate = float64(beforeDocs*benchDocChunks) / time.Since(start).Seconds()
			}
			if (i+1)%400 == 0 {
				fmt.Fprintf(os.Stderr, "%s: loaded %d chunks in %s\n", name, (i+1)*benchDocChunks, time.Since(start).Round(time.Second))
			}
		}
		if s, ok := st.(*Store); ok {
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		return float64(docs*benchDocChunks) / time.Since(start).Seconds(), firstRate
	}
	var beforeRate float64
	if beforeDocs > 0 {
		old := openBenchBatch(b, addr, 1)
		beforeRate, _ = load(old, "milvus StatsBatch=1", beforeDocs)
		if err := old.Drop(ctx); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	embRate, _ := load(emb, "embedded", docs)
	mvRate, mvFirst := load(mv, "milvus", docs)
	// Let Milvus seal and index what was flushed before measuring searches.
	time.Sleep(5 * time.Second)

	type result struct{ p50, p95 time.Duration }
	measure := func(times int, fn func(q *benchCorpus) error) result {
		q := newBenchCorpus(99)
		lat := make([]time.Duration, 0, times)
		for range times {
			t0 := time.Now()
			if err := fn(q); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		return result{lat[len(lat)/2], lat[len(lat)*95/100]}
	}
	// queryTerms draws six query terms as the corpus draws its terms.
	queryTerms := func(q *benchCorpus) []uint32 { return q.sparse(6).Indices }
	encode := func(terms []uint32, chunks int, df map[uint32]int) rag.SparseVector {
		v := rag.SparseVector{Indices: terms}
		for _, t := range terms {
			v.Values = append(v.Values, float32(bm25.IDF(chunks, df[t])))
		}
		return v
	}
	encodeNew := func(st index.Store, q *benchCorpus) (rag.SparseVector, error) {
		terms := queryTerms(q)
		chunks, df, err := st.(index.QueryStatser).QueryStats(ctx, terms)
		return encode(terms, chunks, df), err
	}
	encodeOld := func(st index.Store, q *benchCorpus) (rag.SparseVector, error) {
		terms := queryTerms(q)
		s, err := st.Stats(ctx)
		return encode(terms, s.Chunks, s.DF), err
	}
	ask := func(st index.Store, method string, enc func(index.Store, *benchCorpus) (rag.SparseVector, error)) func(*benchCorpus) error {
		return func(q *benchCorpus) error {
			req := rag.SearchRequest{Limit: 20}
			if method != "dense" {
				v, err := enc(st, q)
				if err != nil {
					return err
				}
				req.Sparse = &v
			}
			if method != "bm25" {
				req.Dense = []rag.DenseQuery{{Model: benchModels[0].Name, Vector: q.vector()}}
			}
			hits, err := st.Search(ctx, req)
			if err == nil && len(hits) == 0 {
				err = fmt.Errorf("%s search found nothing", method)
			}
			return err
		}
	}
	oldQueries := max(queries/10, 5) // a full Stats read per query is slow at scale
	var out strings.Builder
	fmt.Fprintf(&out, "\nscale: %d chunks (%d documents), %d-dim dense, %d queries per row (%d for Stats rows)\n", docs*benchDocChunks, docs, benchDim, queries, oldQueries)
	fmt.Fprintf(&out, "%-34s %12s %12s\n", "", "embedded", "milvus")
	fmt.Fprintf(&out, "%-34s %12.0f %12.0f\n", "insert chunks/s", embRate, mvRate)
	fmt.Fprintf(&out, "%-34s %12s %12d\n", "milvus StatsBatch (0: default)", "", statsBatch)
	b.ReportMetric(mvRate, "milvus-insert-chunks/s")
	if beforeDocs > 0 {
		label := fmt.Sprintf("first %d chunks: StatsBatch 1 / this", beforeDocs*benchDocChunks)
		fmt.Fprintf(&out, "%-34s %12s %5.0f/%6.0f  (%.1fx)\n", label, "", beforeRate, mvFirst, mvFirst/beforeRate)
	}
	row := func(label string, e, m result) {
		fmt.Fprintf(&out, "%-34s %5.1f/%6.1f %5.1f/%6.1f\n", label+" p50/p95 ms", ms(e.p50), ms(e.p95), ms(m.p50), ms(m.p95))
	}
	for _, method := range []string{"bm25", "dense", "hybrid"} {
		e := measure(queries, ask(emb, method, encodeNew))
		m := measure(queries, ask(mv, method, encodeNew))
		row(method, e, m)
		b.ReportMetric(ms(m.p50), "milvus-"+method+"-p50-ms")
		b.ReportMetric(ms(m.p95), "milvus-"+method+"-p95-ms")
		b.ReportMetric(ms(e.p50), "embedded-"+method+"-p50-ms")
	}
	for _, method := range []string{"bm25", "hybrid"} {
		m := measure(oldQueries, ask(mv, method, encodeOld))
		fmt.Fprintf(&out, "%-34s %12s %5.1f/%6.1f\n", method+" via Stats (before) p50/p95 ms", "", ms(m.p50), ms(m.p95))
		b.ReportMetric(ms(m.p50), "milvus-"+method+"-before-p50-ms")
	}
	encOld := measure(oldQueries, func(q *benchCorpus) error { _, err := encodeOld(mv, q); return err })
	encNew := measure(queries, func(q *benchCorpus) error { _, err := encodeNew(mv, q); return err })
	row("bm25 encoding: Stats (before)", result{}, encOld)
	row("bm25 encoding: QueryStats (after)", result{}, encNew)
	counts := measure(queries, func(*benchCorpus) error { _, err := index.Counts(ctx, mv); return err })
	row("document count (Counts)", result{}, counts)
	var m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m1)
	fmt.Fprintf(&out, "%-34s %9.0f MB %9.0f MB\n", "memory (Go heap / server RSS)", float64(m1.HeapInuse-min(m0.HeapInuse, m1.HeapInuse))/1e6, float64(serverRSS())/1e6)
	if rssBefore > 0 {
		fmt.Fprintf(&out, "%-34s %12s %9.0f MB\n", "server RSS before loading", "", float64(rssBefore)/1e6)
	}
	fmt.Fprint(os.Stderr, out.String())
	b.Log(out.String())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// serverRSS is the resident memory of the Milvus server process named by
// FOOTNOTE_MILVUS_BENCH_PID, in bytes; zero when unknown.
func serverRSS() int64 {
	pid := os.Getenv("FOOTNOTE_MILVUS_BENCH_PID")
	if pid == "" {
		return 0
	}
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb * 1024
		}
	}
	return 0
}
