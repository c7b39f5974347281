package milvus

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// Corpus totals (documents, chunks, terms) are kept as three rows of the df collection
// under negative keys, which no term hash (a uint32) can take. Writers update them beside
// the document frequencies, so the question path reads its BM25 statistics — N and the
// query's document frequencies — with one point query (QueryStats), and /health and chat
// placeholders count documents with another (Counts), instead of scanning every document
// record and the whole vocabulary as Stats does. Like the document frequencies they are
// not updated atomically with the document records: a crashed write can leave them off
// until Repair, which recomputes them.
const (
	totDocs   int64 = -1
	totChunks int64 = -2
	totTerms  int64 = -3
)

// dfOnly restricts a df collection scan to document frequencies.
const dfOnly = fTerm + " >= 0"

// totals is a change of (or the value of) the corpus totals.
type totals struct {
	docs, chunks int
	terms        int64
}

func (t totals) zero() bool { return t == totals{} }

// readTotals reads the totals rows; ok is false when the collection has none (written by
// a footnote before they existed, until the next Repair).
func (s *Store) readTotals(ctx context.Context, extra []int64) (t totals, df map[uint32]int, ok bool, err error) {
	keys := append([]int64{totDocs, totChunks, totTerms}, extra...)
	rs, err := s.queryDF(ctx, fTerm+" in "+intList(keys))
	if err != nil {
		return totals{}, nil, false, err
	}
	df = make(map[uint32]int, len(extra))
	found := 0
	for k, v := range rs {
		switch k {
		case totDocs:
			t.docs, found = int(v), found+1
		case totChunks:
			t.chunks, found = int(v), found+1
		case totTerms:
			t.terms, found = v, found+1
		default:
			if k >= 0 {
				df[uint32(k)] = int(v)
			}
		}
	}
	return t, df, found == 3, nil
}

// queryDF reads df collection rows by raw key.
func (s *Store) queryDF(ctx context.Context, expr string) (map[int64]int64, error) {
	var r *rows
	if err := s.do(ctx, "read document frequencies", func(ctx context.Context) error {
		rs, err := s.query(ctx, s.df, nil, expr, []string{fTerm, fDF})
		r = newRows(rs)
		return err
	}); err != nil {
		return nil, err
	}
	out := make(map[int64]int64, r.n)
	for i := 0; i < r.n; i++ {
		out[int64(r.int(fTerm, i))] = int64(r.int(fDF, i))
	}
	return out, r.err
}

// writeTotals stores the totals rows.
func (s *Store) writeTotals(ctx context.Context, t totals) error {
	return s.writeDF(ctx, []int64{totDocs, totChunks, totTerms}, []int64{int64(t.docs), int64(t.chunks), t.terms})
}

// addTotals adds d to the stored totals. Without stored totals (an old collection) it
// does nothing: Counts falls back to the records until Repair writes them.
func (s *Store) addTotals(ctx context.Context, d totals) error {
	if d.zero() {
		return nil
	}
	cur, _, ok, err := s.readTotals(ctx, nil)
	if err != nil || !ok {
		return err
	}
	return s.writeTotals(ctx, totals{cur.docs + d.docs, cur.chunks + d.chunks, cur.terms + d.terms})
}

// Counts returns the corpus totals (documents, chunks, terms; no document frequencies)
// with one point query. A collection written before totals were kept is counted from its
// document records, with a warning once that `footnote index --repair` records them.
func (s *Store) Counts(ctx context.Context) (index.Stats, error) {
	if err := s.settle(ctx); err != nil {
		return index.Stats{}, fmt.Errorf("counts: %w", err)
	}
	t, _, ok, err := s.readTotals(ctx, nil)
	if err != nil {
		return index.Stats{}, fmt.Errorf("counts: %w", err)
	}
	if !ok {
		return s.countRecords(ctx)
	}
	return index.Stats{Documents: t.docs, Chunks: t.chunks, Terms: t.terms}, nil
}

func (s *Store) countRecords(ctx context.Context) (index.Stats, error) {
	if s.warnedTotals.CompareAndSwap(false, true) {
		s.log.Warn("collection keeps no corpus totals (written by an older footnote): counting document records; " +
			"run `footnote index --repair` once to record them")
	}
	st, err := s.Stats(ctx)
	st.DF = nil
	return st, err
}

// QueryStats returns what a BM25 query encoder needs for one query: the corpus' chunk
// count (BM25's N) and the document frequencies of the given term hashes (absent: no
// chunk contains the term), in one point query.
func (s *Store) QueryStats(ctx context.Context, terms []uint32) (int, map[uint32]int, error) {
	if err := s.settle(ctx); err != nil {
		return 0, nil, fmt.Errorf("bm25 statistics: %w", err)
	}
	if len(terms) > dfBatch {
		// Not a query any more; the general path reads in batches.
		st, err := s.Counts(ctx)
		if err != nil {
			return 0, nil, err
		}
		df, err := s.DocFreq(ctx, terms)
		return st.Chunks, df, err
	}
	keys := make([]int64, len(terms))
	for i, t := range terms {
		keys[i] = int64(sparseIndex(t))
	}
	t, got, ok, err := s.readTotals(ctx, keys)
	if err != nil {
		return 0, nil, fmt.Errorf("bm25 statistics: %w", err)
	}
	if !ok {
		st, err := s.countRecords(ctx)
		if err != nil {
			return 0, nil, fmt.Errorf("bm25 statistics: %w", err)
		}
		t.chunks = st.Chunks
	}
	df := make(map[uint32]int, len(terms))
	for _, term := range terms {
		if n, ok := got[sparseIndex(term)]; ok {
			df[term] = n
		}
	}
	return t.chunks, df, nil
}

// The BM25 parameters the stored vectors were weighted with (bm25.Setting) are kept as
// df collection rows too, because Milvus Lite 2.5 keeps no collection properties: k1 and
// b in millionths, and the length normalisation as a code.
const (
	keyK1     int64 = -4
	keyB      int64 = -5
	keyLength int64 = -6
)

// lengthCodes numbers the length normalisations bm25 knows.
var lengthCodes = map[string]int64{bm25.LengthNorm: 1}

func micro(x float64) int64 { return int64(math.Round(x * 1e6)) }

// checkBM25 refuses a corpus recorded with other BM25 parameters than configured; a new
// corpus records them, and so does one from before they were recorded (with a warning
// that they could not be checked).
func (s *Store) checkBM25(ctx context.Context, created bool) error {
	want := s.bm25.Setting()
	rows, err := s.queryDF(ctx, fTerm+" in "+intList([]int64{keyK1, keyB, keyLength}))
	if err != nil {
		return err
	}
	if len(rows) == 3 {
		got := bm25.Setting{K1: float64(rows[keyK1]) / 1e6, B: float64(rows[keyB]) / 1e6}
		for name, code := range lengthCodes {
			if code == rows[keyLength] {
				got.Length = name
			}
		}
		if got.Length == "" {
			got.Length = fmt.Sprintf("unknown (%d)", rows[keyLength])
		}
		if micro(got.K1) == micro(want.K1) && micro(got.B) == micro(want.B) && got.Length == want.Length {
			return nil
		}
		return s.bm25.Check("collection "+s.coll, got.Encode())
	}
	if !created {
		s.log.Warn("collection was indexed before footnote recorded its BM25 parameters; recording the configured ones",
			"k1", want.K1, "b", want.B)
	}
	return s.writeDF(ctx, []int64{keyK1, keyB, keyLength}, []int64{micro(want.K1), micro(want.B), lengthCodes[want.Length]})
}

// defaultStatsBatch is Config.StatsBatch's default: in BenchmarkScale's synthetic corpus
// 64 papers touch 222,116 document-frequency rows one paper at a time and 40,284 distinct
// ones together (5.5× fewer rewrites), while serving replicas lag at most 64 documents.
const defaultStatsBatch = 64

// statsDelta is the merged statistics change of the writes since the last applyBatch.
type statsDelta struct {
	writes int
	df     map[uint32]int
	tot    totals
	recs   map[string]*docRecord // final record per document; nil: delete the tombstone
}

// merge adds one write's statistics change to the batch (wmu held) and writes the batch
// when it is full. rec is the document's final record, nil for a deletion.
func (s *Store) merge(ctx context.Context, delta map[uint32]int, d totals, docID string, rec *docRecord) error {
	if s.batch.df == nil {
		s.batch.df = map[uint32]int{}
		s.batch.recs = map[string]*docRecord{}
	}
	for t, v := range delta {
		s.batch.df[t] += v
	}
	s.batch.tot = totals{s.batch.tot.docs + d.docs, s.batch.tot.chunks + d.chunks, s.batch.tot.terms + d.terms}
	s.batch.recs[docID] = rec
	s.batch.writes++
	s.unapplied.Store(true)
	if s.batch.writes < s.statsBatch {
		return nil
	}
	return s.applyBatch(ctx)
}

// applyBatch writes the batch (wmu held): the merged document frequencies and totals,
// then the records without their pending flags. On failure the batch is dropped and its
// records stay pending, so the next write repairs the statistics from the chunks instead
// of applying a half-written delta twice.
func (s *Store) applyBatch(ctx context.Context) error {
	b := s.batch
	s.batch = statsDelta{}
	s.unapplied.Store(false)
	if b.writes == 0 {
		return nil
	}
	if err := s.applyStats(ctx, b.df, b.tot); err != nil {
		return err
	}
	var put []docRecord
	var del []string
	for _, id := range slices.Sorted(maps.Keys(b.recs)) {
		if r := b.recs[id]; r != nil {
			put = append(put, *r)
		} else {
			del = append(del, id)
		}
	}
	for start := 0; start < len(put); start += upsertBatch {
		if err := s.putRecords(ctx, put[start:min(start+upsertBatch, len(put))]); err != nil {
			return err
		}
	}
	return s.deleteRecords(ctx, del)
}

// settle writes this Store's batch before a read of the statistics, so that a Store
// reads its own writes; free when nothing is batched (every serving replica).
func (s *Store) settle(ctx context.Context) error {
	if !s.unapplied.Load() {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.applyBatch(ctx)
}

// foreignPending selects pending records other than this Store's batched ones: those are
// pending on purpose until applyBatch.
func (s *Store) foreignPending() string {
	expr := fPending + " == true"
	if len(s.batch.recs) == 0 {
		return expr
	}
	return expr + " && " + fDocID + " not in " + quoteList(slices.Sorted(maps.Keys(s.batch.recs)))
}

// applyStats adds delta and d to the stored document frequencies and totals, in one read
// and one upsert per dfBatch terms; the totals ride in the first, so a reader sees N
// change with (the first part of) the frequencies. Terms that reach zero are deleted.
// Without stored totals (an old collection) the totals are left to Repair.
func (s *Store) applyStats(ctx context.Context, delta map[uint32]int, d totals) error {
	terms := make([]int64, 0, len(delta))
	for t, v := range delta {
		if v != 0 {
			terms = append(terms, int64(t))
		}
	}
	if len(terms) == 0 && d.zero() {
		return nil
	}
	slices.Sort(terms)
	totKeys := []int64{totDocs, totChunks, totTerms}
	for start := 0; start == 0 || start < len(terms); start += dfBatch {
		part := terms[start:min(start+dfBatch, len(terms))]
		keys := part
		if start == 0 && !d.zero() {
			keys = append(slices.Clone(totKeys), part...)
		}
		cur, err := s.queryDF(ctx, fTerm+" in "+intList(keys))
		if err != nil {
			return err
		}
		var put, vals, del []int64
		if start == 0 && !d.zero() {
			c, ok1 := cur[totDocs]
			ch, ok2 := cur[totChunks]
			tm, ok3 := cur[totTerms]
			if ok1 && ok2 && ok3 {
				put = append(put, totKeys...)
				vals = append(vals, c+int64(d.docs), ch+int64(d.chunks), tm+d.terms)
			}
		}
		for _, t := range part {
			old, had := cur[t]
			v := old + int64(delta[uint32(t)])
			if v <= 0 {
				if had {
					del = append(del, t)
				}
				continue
			}
			put = append(put, t)
			vals = append(vals, v)
		}
		if err := s.writeDF(ctx, put, vals); err != nil {
			return err
		}
		if err := s.deleteDF(ctx, del); err != nil {
			return err
		}
	}
	return nil
}
