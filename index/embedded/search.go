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
}

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
	rows, err := tx.QueryContext(ctx, `SELECT c.id, c.doc_id, c.section_top, s.vector FROM chunks c JOIN sparse s ON s.chunk_id = c.id`)
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
	rows, err = tx.QueryContext(ctx, `SELECT chunk_id, model, vector FROM dense`)
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
		if e.dense[pos], err = decodeDense(blob, s.models[pos].Dim); err != nil {
			return nil, fmt.Errorf("chunk %s model %s: %w", id, model, err)
		}
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
		q := *req.Sparse
		score := func(e *entry) (float64, bool) {
			s := sparseDot(q, e.sparse)
			return s, s > 0
		}
		lists = append(lists, scan(sn.entries, keep, score, limit))
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
	if len(hitLists) == 1 {
		return hitLists[0], nil
	}
	return rag.Fuse(hitLists, req.Fusion, limit), nil
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
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
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

// sparseDot is rag.SparseVector.Dot tuned for a short query against a long document:
// each query term is found by binary search in the rest of the document's indices.
func sparseDot(q, d rag.SparseVector) float64 {
	if len(q.Indices)*8 > len(d.Indices) {
		return q.Dot(d)
	}
	var s float64
	lo := 0
	for i, idx := range q.Indices {
		j, found := slices.BinarySearch(d.Indices[lo:], idx)
		lo += j
		if found {
			s += float64(q.Values[i]) * float64(d.Values[lo])
			lo++
		}
		if lo >= len(d.Indices) {
			break
		}
	}
	return s
}
