package milvus

import (
	"context"
	"fmt"
	"math"

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
