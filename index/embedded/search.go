package embedded

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/footnote-dev/footnote/rag"
)

// entry is one chunk as search needs it. Entries are immutable once in a snapshot.
type entry struct {
	id, doc, section string
	sparse           rag.SparseVector
	dense            [][]float32 // by model position; nil when the chunk lacks that vector
}

// snapshot is the in-memory search cache of one generation. It is never modified: writes
// build a new one (copying the entry pointers, not the vectors) and swap it in, so
// searches run without locks.
type snapshot struct {
	gen     int64
	entries []*entry

	// postings is the BM25 inverted index over entries, built on the first sparse search
	// of this snapshot: a query then touches only the chunks that share a term with it.
	postingsOnce sync.Once
	postings     map[uint32][]posting
}

type posting struct {
	entry  int32 // position in entries
	weight float32
}

func (sn *snapshot) index() map[uint32][]posting {
	sn.postingsOnce.Do(func() {
		counts := map[uint32]int32{}
		for _, e := range sn.entries {
			for _, t := range e.sparse.Indices {
				counts[t]++
			}
		}
		// One backing array for all lists: fewer allocations, better locality.
		total := 0
		for _, c := range counts {
			total += int(c)
		}
		backing := make([]posting, total)
		sn.postings = make(map[uint32][]posting, len(counts))
		off := 0
		for t, c := range counts {
			sn.postings[t] = backing[off : off : off+int(c)]
			off += int(c)
		}
		for i, e := range sn.entries {
			for j, t := range e.sparse.Indices {
				sn.postings[t] = append(sn.postings[t], posting{int32(i), e.sparse.Values[j]})
			}
		}
	})
	return sn.postings
}

// searchSparse returns the best k chunks by BM25: the inner product of q with each
// chunk's vector, accumulated over the posting lists of q's terms. Terms are visited in
// ascending index order, so each sum is added up in the same order as
// rag.SparseVector.Dot and gives the same float64.
func (sn *snapshot) searchSparse(q rag.SparseVector, keep func(*entry) bool, k int) []scored {
	idx := sn.index()
	acc := accPool.Get().(*accumulator)
	defer accPool.Put(acc)
	acc.reset(len(sn.entries))
	for i, t := range q.Indices {
		w := float64(q.Values[i])
		for _, p := range idx[t] {
			if !acc.seen[p.entry] {
				acc.seen[p.entry] = true
				acc.touched = append(acc.touched, p.entry)
			}
			acc.score[p.entry] += w * float64(p.weight)
		}
	}
	t := topK{k: k, h: make([]scored, 0, min(k, len(acc.touched)))}
	for _, i := range acc.touched {
		e := sn.entries[i]
		if sc := acc.score[i]; sc > 0 && (keep == nil || keep(e)) {
			t.push(scored{e, sc})
		}
	}
	return sortScored(t.h, k)
}

// accumulator holds per-chunk BM25 sums during one sparse search; pooled because a large
// corpus would otherwise allocate megabytes per query.
type accumulator struct {
	score   []float64
	seen    []bool
	touched []int32
}

func (a *accumulator) reset(n int) {
	for _, i := range a.touched {
		a.score[i] = 0
		a.seen[i] = false
	}
	a.touched = a.touched[:0]
	if cap(a.score) < n {
		a.score = make([]float64, n)
		a.seen = make([]bool, n)
	}
	a.score = a.score[:n]
	a.seen = a.seen[:n]
}

var accPool = sync.Pool{New: func() any { return new(accumulator) }}

func (old *snapshot) replaceDoc(gen int64, docID string, ps []prepared) *snapshot {
	n := &snapshot{gen: gen, entries: make([]*entry, 0, len(old.entries)+len(ps))}
	for _, e := range old.entries {
		if e.doc != docID {
			n.entries = append(n.entries, e)
		}
	}
	for _, p := range ps {
		n.entries = append(n.entries, &entry{
			id: p.chunk.ID, doc: docID, section: sectionTop(p.chunk.Section),
			sparse: p.sparse, dense: p.dense,
		})
	}
	return n
}

func (old *snapshot) putDense(gen int64, pos int, put map[string][]float32) *snapshot {
	n := &snapshot{gen: gen, entries: slices.Clone(old.entries)}
	for i, e := range n.entries {
		if v, ok := put[e.id]; ok {
			c := *e
			c.dense = slices.Clone(e.dense)
			c.dense[pos] = v
			n.entries[i] = &c
		}
	}
	return n
}

// current returns the search cache for the database's current generation, loading it
// when another process (or nothing yet) has written since.
func (s *Store) current(ctx context.Context) (*snapshot, error) {
	gen, err := s.generation(ctx, s.db)
	if err != nil {
		return nil, err
	}
	if sn := s.snap.Load(); sn != nil && sn.gen == gen {
		return sn, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn := s.snap.Load(); sn != nil && sn.gen >= gen {
		return sn, nil
	}
	sn, err := s.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	s.snap.Store(sn)
	return sn, nil
}

func (s *Store) load(ctx context.Context) (*snapshot, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	sn := &snapshot{}
	if sn.gen, err = s.generation(ctx, tx); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT c.id, c.doc_id, c.section_top, s.vector FROM sparse s JOIN chunks c ON c.id = s.chunk_id ORDER BY s.chunk_id`)
	if err != nil {
		return nil, err
	}
	byID := map[string]*entry{}
	for rows.Next() {
		e := &entry{dense: make([][]float32, len(s.models))}
		var blob []byte
		if err := rows.Scan(&e.id, &e.doc, &e.section, &blob); err != nil {
			rows.Close()
			return nil, err
		}
		if e.sparse, err = decodeSparse(blob); err != nil {
			rows.Close()
			return nil, fmt.Errorf("chunk %s: %w", e.id, err)
		}
		sn.entries = append(sn.entries, e)
		byID[e.id] = e
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, err
	}
	// Each model's vectors go into one contiguous slab, in the order they are scanned
	// (chunk id, the dense table's key order, so no sort): a dense search is bound by
	// memory bandwidth, and the prefetcher likes a stream.
	slabs := make([][]float32, len(s.models))
	for i, m := range s.models {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM dense WHERE model = ?`, m.Name).Scan(&n); err != nil {
			return nil, err
		}
		slabs[i] = make([]float32, 0, n*m.Dim)
	}
	rows, err = tx.QueryContext(ctx, `SELECT chunk_id, model, vector FROM dense ORDER BY chunk_id, model`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, model string
		var blob []byte
		if err := rows.Scan(&id, &model, &blob); err != nil {
			return nil, err
		}
		pos, ok := s.byName[model]
		e := byID[id]
		if !ok || e == nil {
			continue
		}
		dim := s.models[pos].Dim
		slab := slabs[pos]
		if len(slab)+dim > cap(slab) { // a row the count did not see; cannot happen in one transaction
			return nil, fmt.Errorf("chunk %s model %s: more vectors than counted", id, model)
		}
		v := slab[len(slab) : len(slab)+dim : len(slab)+dim]
		if err := decodeDenseInto(v, blob); err != nil {
			return nil, fmt.Errorf("chunk %s model %s: %w", id, model, err)
		}
		slabs[pos] = slab[:len(slab)+dim]
		e.dense[pos] = v
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.log.Debug("vectors loaded", "chunks", len(sn.entries), "generation", sn.gen)
	return sn, nil
}

// Search returns at most req.Limit hits, best first: BM25 scores are sparse inner products,
// dense scores are cosine similarity (COSINE), inner product (IP) or negated squared
// Euclidean distance (L2), so higher is always better. Each retriever keeps its top
// req.Limit; several retrievers are fused with rag.Fuse. Chunks that share no term with
// the query are not BM25 hits. Filters apply before ranking. Ties go to the smaller
// chunk ID.
func (s *Store) Search(ctx context.Context, req rag.SearchRequest) ([]rag.Hit, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = 20
	}
	n := len(req.Dense)
	if req.Sparse != nil {
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("search: no retriever (neither dense nor sparse query)")
	}
	switch req.Fusion.Method {
	case "", "rrf", "weighted":
	default:
		return nil, fmt.Errorf("search: unknown fusion method %q (want rrf or weighted)", req.Fusion.Method)
	}
	if req.Fusion.Method == "weighted" && len(req.Fusion.Weights) > 0 && len(req.Fusion.Weights) != n {
		return nil, fmt.Errorf("search: %d fusion weights for %d retrievers", len(req.Fusion.Weights), n)
	}
	type denseQ struct {
		pos    int
		metric rag.Metric
		vec    []float32
	}
	dqs := make([]denseQ, len(req.Dense))
	for i, d := range req.Dense {
		pos, ok := s.byName[d.Model]
		if !ok {
			return nil, fmt.Errorf("search: dense model %s is not in this store (it holds: %s)", d.Model, modelNames(s.models))
		}
		m := s.models[pos]
		if len(d.Vector) != m.Dim {
			return nil, fmt.Errorf("search: model %s: query vector of dimension %d, want %d", d.Model, len(d.Vector), m.Dim)
		}
		v := d.Vector
		if m.Metric == rag.Cosine {
			v = normalize(v)
		}
		dqs[i] = denseQ{pos, m.Metric, v}
	}
	if req.Sparse != nil {
		if err := checkSparse(*req.Sparse); err != nil {
			return nil, fmt.Errorf("search: query: %w", err)
		}
	}

	sn, err := s.current(ctx)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	keep := filterFunc(req.Filter)

	var lists [][]scored
	for _, q := range dqs {
		pos, vec := q.pos, q.vec
		score := func(e *entry) (float64, bool) {
			v := e.dense[pos]
			if v == nil {
				return 0, false
			}
			if q.metric == rag.L2 {
				return -l2sq(vec, v), true
			}
			return dot(vec, v), true
		}
		lists = append(lists, scan(sn.entries, keep, score, limit))
	}
	if req.Sparse != nil {
		lists = append(lists, sn.searchSparse(*req.Sparse, keep, limit))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}

	var ids []string
	for _, l := range lists {
		for _, h := range l {
			ids = append(ids, h.e.id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	chunks, err := s.lookupChunks(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	hitLists := make([][]rag.Hit, len(lists))
	for i, l := range lists {
		hs := make([]rag.Hit, 0, len(l))
		for _, h := range l {
			// A chunk can vanish between the scan and the lookup when a concurrent
			// Replace commits in between; it is no longer a valid answer.
			if c, ok := chunks[h.e.id]; ok {
				hs = append(hs, rag.Hit{Chunk: c, Score: h.score})
			}
		}
		hitLists[i] = hs
	}
	var hits []rag.Hit
	if len(hitLists) == 1 {
		hits = hitLists[0]
	} else {
		hits = rag.Fuse(hitLists, req.Fusion, limit)
	}
	if req.WithVectors {
		s.attachVectors(hits, lists)
	}
	return hits, nil
}

// attachVectors sets each hit's stored dense vectors from the snapshot entries the search
// scored, so a similarity reranker need not embed the passages again. The vectors are
// copies: the snapshot's are shared by every search.
func (s *Store) attachVectors(hits []rag.Hit, lists [][]scored) {
	byID := map[string]*entry{}
	for _, l := range lists {
		for _, h := range l {
			byID[h.e.id] = h.e
		}
	}
	for i := range hits {
		e := byID[hits[i].Chunk.ID]
		if e == nil {
			continue
		}
		for pos, v := range e.dense {
			if v == nil {
				continue
			}
			if hits[i].Vectors == nil {
				hits[i].Vectors = make(map[string][]float32, len(s.models))
			}
			hits[i].Vectors[s.models[pos].Name] = slices.Clone(v)
		}
	}
}

func filterFunc(f rag.Filter) func(*entry) bool {
	var docs map[string]bool
	if len(f.DocIDs) > 0 {
		docs = make(map[string]bool, len(f.DocIDs))
		for _, id := range f.DocIDs {
			docs[id] = true
		}
	}
	prefix := f.SectionPrefix
	if docs == nil && prefix == "" {
		return nil
	}
	return func(e *entry) bool {
		return (docs == nil || docs[e.doc]) && strings.HasPrefix(e.section, prefix)
	}
}

type scored struct {
	e     *entry
	score float64
}

// better orders hits: higher score first, then smaller chunk ID.
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.e.id < b.e.id
}

// topK keeps the k best hits in a heap whose root is the worst kept.
type topK struct {
	k int
	h []scored
}

func (t *topK) push(s scored) {
	if len(t.h) < t.k {
		t.h = append(t.h, s)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !better(t.h[p], t.h[i]) {
				break
			}
			t.h[p], t.h[i] = t.h[i], t.h[p]
			i = p
		}
		return
	}
	if !better(s, t.h[0]) {
		return
	}
	t.h[0] = s
	for i := 0; ; {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(t.h) && better(t.h[w], t.h[l]) {
			w = l
		}
		if r < len(t.h) && better(t.h[w], t.h[r]) {
			w = r
		}
		if w == i {
			break
		}
		t.h[w], t.h[i] = t.h[i], t.h[w]
		i = w
	}
}

// parallelMin is the corpus size from which a scan is split across CPUs.
const parallelMin = 8192

// scan scores every kept entry and returns the best k, best first.
func scan(entries []*entry, keep func(*entry) bool, score func(*entry) (float64, bool), k int) []scored {
	part := func(es []*entry) []scored {
		t := topK{k: k, h: make([]scored, 0, min(k, len(es)))}
		for _, e := range es {
			if keep != nil && !keep(e) {
				continue
			}
			if s, ok := score(e); ok {
				t.push(scored{e, s})
			}
		}
		return t.h
	}
	var all []scored
	workers := min(runtime.GOMAXPROCS(0), len(entries)/parallelMin)
	if workers <= 1 {
		all = part(entries)
	} else {
		parts := make([][]scored, workers)
		var wg sync.WaitGroup
		size := (len(entries) + workers - 1) / workers
		for w := range workers {
			es := entries[min(w*size, len(entries)):min((w+1)*size, len(entries))]
			wg.Go(func() { parts[w] = part(es) })
		}
		wg.Wait()
		for _, p := range parts {
			all = append(all, p...)
		}
	}
	return sortScored(all, k)
}

// sortScored sorts best first and keeps k.
func sortScored(all []scored, k int) []scored {
	// Chunk IDs are unique, so better is a total order.
	slices.SortFunc(all, func(a, b scored) int {
		switch {
		case a.e == b.e:
			return 0
		case better(a, b):
			return -1
		}
		return 1
	})
	return all[:min(k, len(all))]
}

func dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	// Eight lanes a step with explicit bounds hints: the compiler then drops the
	// per-element bounds checks, which otherwise cost more than the arithmetic.
	for len(a) >= 8 {
		a8, b8 := a[:8:8], b[:8:8]
		s0 += a8[0]*b8[0] + a8[4]*b8[4]
		s1 += a8[1]*b8[1] + a8[5]*b8[5]
		s2 += a8[2]*b8[2] + a8[6]*b8[6]
		s3 += a8[3]*b8[3] + a8[7]*b8[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return float64(s0 + s1 + s2 + s3)
}

func l2sq(a, b []float32) float64 {
	var s float32
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return float64(s)
}
