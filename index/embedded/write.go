package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/rag"
)

// prepared is one validated chunk ready to write: dense vectors by model position,
// normalised for cosine models.
type prepared struct {
	chunk  rag.Chunk
	sparse rag.SparseVector
	terms  int
	dense  [][]float32
}

func (s *Store) prepare(doc rag.Document, chunks []index.EncodedChunk) ([]prepared, error) {
	if doc.ID == "" {
		return nil, errors.New("document without id")
	}
	seen := make(map[string]bool, len(chunks))
	out := make([]prepared, len(chunks))
	for i, c := range chunks {
		if c.ID == "" {
			return nil, fmt.Errorf("chunk %d without id", i)
		}
		if seen[c.ID] {
			return nil, fmt.Errorf("chunk id %s twice", c.ID)
		}
		seen[c.ID] = true
		if c.DocID != "" && c.DocID != doc.ID {
			return nil, fmt.Errorf("chunk %s belongs to document %s", c.ID, c.DocID)
		}
		if c.Terms < 0 {
			return nil, fmt.Errorf("chunk %s: negative term count", c.ID)
		}
		if err := checkSparse(c.Sparse); err != nil {
			return nil, fmt.Errorf("chunk %s: %w", c.ID, err)
		}
		if err := checkPageBreaks(c.Chunk); err != nil {
			return nil, fmt.Errorf("chunk %s: %w", c.ID, err)
		}
		// Copies: the search cache keeps these, and the caller may reuse its slices.
		sparse := rag.SparseVector{Indices: slices.Clone(c.Sparse.Indices), Values: slices.Clone(c.Sparse.Values)}
		p := prepared{chunk: c.Chunk, sparse: sparse, terms: c.Terms, dense: make([][]float32, len(s.models))}
		p.chunk.Section = slices.Clone(c.Section)
		p.chunk.PageBreaks = slices.Clone(c.PageBreaks)
		p.chunk.DocID = doc.ID
		for name, v := range c.Dense {
			v, err := s.checkDense(name, v)
			if err != nil {
				return nil, fmt.Errorf("chunk %s: %w", c.ID, err)
			}
			p.dense[s.byName[name]] = v
		}
		out[i] = p
	}
	return out, nil
}

func checkSparse(v rag.SparseVector) error {
	if len(v.Indices) != len(v.Values) {
		return fmt.Errorf("sparse vector with %d indices and %d values", len(v.Indices), len(v.Values))
	}
	for i := 1; i < len(v.Indices); i++ {
		if v.Indices[i] <= v.Indices[i-1] {
			return errors.New("sparse vector indices not strictly increasing")
		}
	}
	return nil
}

// checkPageBreaks rejects page breaks that could not be resolved to a page: more breaks
// than the chunk has further pages, or offsets outside Text or out of order.
func checkPageBreaks(c rag.Chunk) error {
	if len(c.PageBreaks) == 0 {
		return nil
	}
	if c.PageStart <= 0 || len(c.PageBreaks) > c.PageEnd-c.PageStart {
		return fmt.Errorf("%d page breaks for pages %d-%d", len(c.PageBreaks), c.PageStart, c.PageEnd)
	}
	prev := 0
	for _, b := range c.PageBreaks {
		if b < prev || b > len(c.Text) {
			return fmt.Errorf("page breaks %v not ascending within the text's %d bytes", c.PageBreaks, len(c.Text))
		}
		prev = b
	}
	return nil
}

// checkDense validates a vector for a model and returns what to store.
func (s *Store) checkDense(model string, v []float32) ([]float32, error) {
	i, ok := s.byName[model]
	if !ok {
		return nil, fmt.Errorf("model %s is not in this store (it holds: %s)", model, modelNames(s.models))
	}
	m := s.models[i]
	if len(v) != m.Dim {
		return nil, fmt.Errorf("model %s: vector of dimension %d, want %d", model, len(v), m.Dim)
	}
	for _, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("model %s: vector holds NaN or Inf", model)
		}
	}
	if m.Metric == rag.Cosine {
		return normalize(v), nil // a copy
	}
	return slices.Clone(v), nil
}

// beginWrite starts a write transaction and bumps the generation, returning the new one.
func (s *Store) beginWrite(ctx context.Context) (*sql.Tx, int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, err
	}
	var gen int64
	if err := tx.QueryRowContext(ctx, `UPDATE totals SET generation = generation + 1 WHERE id = 1 RETURNING generation`).Scan(&gen); err != nil {
		tx.Rollback()
		return nil, 0, err
	}
	return tx, gen, nil
}

func (s *Store) commit(ctx context.Context, tx *sql.Tx) error {
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	// database/sql rolls back when ctx ends, but only notices asynchronously; check here
	// so a cancelled write never commits.
	if err := ctx.Err(); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// removeDoc deletes a document and its chunks inside tx, recording the BM25 statistics it
// takes away in df and returning the chunk and term counts removed. found is false when
// the document did not exist.
func removeDoc(ctx context.Context, tx *sql.Tx, docID string, df map[uint32]int) (chunks int, terms int64, found bool, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT s.terms, s.vector FROM sparse s JOIN chunks c ON c.id = s.chunk_id WHERE c.doc_id = ?`, docID)
	if err != nil {
		return 0, 0, false, err
	}
	for rows.Next() {
		var n int64
		var blob []byte
		if err := rows.Scan(&n, &blob); err != nil {
			rows.Close()
			return 0, 0, false, err
		}
		v, err := decodeSparse(blob)
		if err != nil {
			rows.Close()
			return 0, 0, false, err
		}
		for _, idx := range v.Indices {
			df[idx]--
		}
		chunks++
		terms += n
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, 0, false, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM documents WHERE id = ?`, docID)
	if err != nil {
		return 0, 0, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, 0, false, err
	}
	return chunks, terms, n > 0, nil
}

// applyStats writes document-frequency deltas and total changes inside tx.
func applyStats(ctx context.Context, tx *sql.Tx, df map[uint32]int, chunks int, terms int64) error {
	up, err := tx.PrepareContext(ctx, `INSERT INTO df (term, n) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET n = n + excluded.n`)
	if err != nil {
		return err
	}
	defer up.Close()
	negative := false
	for term, d := range df {
		if d == 0 {
			continue
		}
		negative = negative || d < 0
		if _, err := up.ExecContext(ctx, int64(term), d); err != nil {
			return err
		}
	}
	if negative {
		if _, err := tx.ExecContext(ctx, `DELETE FROM df WHERE n <= 0`); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, `UPDATE totals SET chunks = chunks + ?, terms = terms + ? WHERE id = 1`, chunks, terms)
	return err
}

// Replace stores doc and its chunks, replacing every chunk of an earlier version of the
// same doc.ID, in one transaction. A chunk may lack a vector for a model (MissingDense
// lists it); a vector for a model the store does not hold, or of the wrong dimension, is
// an error. doc.Chunks is set to len(chunks) and a zero doc.IndexedAt to now.
func (s *Store) Replace(ctx context.Context, doc rag.Document, chunks []index.EncodedChunk) error {
	ps, err := s.prepare(doc, chunks)
	if err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}
	doc.Chunks = len(chunks)
	if doc.IndexedAt.IsZero() {
		doc.IndexedAt = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gen, err := s.replace(ctx, doc, ps)
	if err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}
	s.afterWrite(gen, func(old *snapshot) *snapshot { return old.replaceDoc(gen, doc.ID, ps) })
	s.log.Debug("document stored", "doc_id", doc.ID, "source", doc.Source, "chunks", len(chunks))
	return nil
}

func (s *Store) replace(ctx context.Context, doc rag.Document, ps []prepared) (int64, error) {
	tx, gen, err := s.beginWrite(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	df := map[uint32]int{}
	oldChunks, oldTerms, _, err := removeDoc(ctx, tx, doc.ID, df)
	if err != nil {
		return 0, fmt.Errorf("remove old version: %w", err)
	}
	authors, err := json.Marshal(doc.Authors)
	if err != nil {
		return 0, err
	}
	if doc.Authors == nil {
		authors = []byte("[]")
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO documents (`+documentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		doc.ID, doc.Source, doc.Name, doc.Kind, doc.Title, string(authors), doc.Pages, doc.Lines, doc.Hash, doc.Chunks,
		doc.IndexedAt.UTC().Format(time.RFC3339Nano)); err != nil {
		return 0, fmt.Errorf("insert document: %w", err)
	}
	insChunk, err := tx.PrepareContext(ctx, `INSERT INTO chunks (`+chunkCols+`, section_top) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	defer insChunk.Close()
	insSparse, err := tx.PrepareContext(ctx, `INSERT INTO sparse (chunk_id, terms, vector) VALUES (?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	defer insSparse.Close()
	insDense, err := tx.PrepareContext(ctx, `INSERT INTO dense (chunk_id, model, vector) VALUES (?, ?, ?)`)
	if err != nil {
		return 0, err
	}
	defer insDense.Close()
	var terms int64
	for _, p := range ps {
		c := p.chunk
		section := []byte("[]")
		if len(c.Section) > 0 {
			if section, err = json.Marshal(c.Section); err != nil {
				return 0, err
			}
		}
		breaks := ""
		if len(c.PageBreaks) > 0 {
			b, err := json.Marshal(c.PageBreaks)
			if err != nil {
				return 0, err
			}
			breaks = string(b)
		}
		if _, err := insChunk.ExecContext(ctx, c.ID, c.DocID, c.Index, c.Text, c.Tokens, c.PageStart, c.PageEnd, c.LineStart, c.LineEnd,
			string(section), c.CharStart, c.CharEnd, c.Source, c.Name, c.Title, breaks, sectionTop(c.Section)); err != nil {
			return 0, fmt.Errorf("insert chunk %s (chunk ids must be unique across documents): %w", c.ID, err)
		}
		if _, err := insSparse.ExecContext(ctx, c.ID, p.terms, encodeSparse(p.sparse)); err != nil {
			return 0, fmt.Errorf("insert chunk %s: %w", c.ID, err)
		}
		for i, v := range p.dense {
			if v == nil {
				continue
			}
			if _, err := insDense.ExecContext(ctx, c.ID, s.models[i].Name, encodeDense(v)); err != nil {
				return 0, fmt.Errorf("insert chunk %s: %w", c.ID, err)
			}
		}
		for _, idx := range p.sparse.Indices {
			df[idx]++
		}
		terms += int64(p.terms)
	}
	if err := applyStats(ctx, tx, df, len(ps)-oldChunks, terms-oldTerms); err != nil {
		return 0, fmt.Errorf("update statistics: %w", err)
	}
	return gen, s.commit(ctx, tx)
}

func sectionTop(section []string) string {
	if len(section) == 0 {
		return ""
	}
	return section[0]
}

// Delete removes a document and its chunks; deleting an unknown id is not an error.
func (s *Store) Delete(ctx context.Context, docID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen, found, err := s.delete(ctx, docID)
	if err != nil {
		return fmt.Errorf("delete %s: %w", docID, err)
	}
	if found {
		s.afterWrite(gen, func(old *snapshot) *snapshot { return old.replaceDoc(gen, docID, nil) })
		s.log.Debug("document deleted", "doc_id", docID)
	}
	return nil
}

func (s *Store) delete(ctx context.Context, docID string) (int64, bool, error) {
	tx, gen, err := s.beginWrite(ctx)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback()
	df := map[uint32]int{}
	chunks, terms, found, err := removeDoc(ctx, tx, docID, df)
	if err != nil || !found {
		return 0, false, err
	}
	if err := applyStats(ctx, tx, df, -chunks, -terms); err != nil {
		return 0, false, fmt.Errorf("update statistics: %w", err)
	}
	return gen, true, s.commit(ctx, tx)
}

// afterWrite updates the caches after a committed write of generation gen. The search
// cache is patched in place when it was current; otherwise (or without one) it is dropped
// and reloaded by the next search. Callers hold s.mu.
func (s *Store) afterWrite(gen int64, patch func(*snapshot) *snapshot) {
	s.stats.Store(nil)
	if old := s.snap.Load(); old != nil && old.gen == gen-1 {
		s.snap.Store(patch(old))
	} else {
		s.snap.Store(nil)
	}
}

// MissingDense lists up to limit chunks (all when limit <= 0) that have no vector for
// model, in document and chunk order.
func (s *Store) MissingDense(ctx context.Context, model string, limit int) ([]rag.Chunk, error) {
	if _, ok := s.byName[model]; !ok {
		return nil, fmt.Errorf("missing dense: model %s is not in this store (it holds: %s)", model, modelNames(s.models))
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+chunkCols+` FROM chunks c
		WHERE NOT EXISTS (SELECT 1 FROM dense d WHERE d.chunk_id = c.id AND d.model = ?)
		ORDER BY doc_id, idx, id LIMIT ?`, model, limit)
	if err != nil {
		return nil, fmt.Errorf("missing dense %s: %w", model, err)
	}
	defer rows.Close()
	var out []rag.Chunk
	for rows.Next() {
		c, err := scanChunk(rows)
		if err != nil {
			return nil, fmt.Errorf("missing dense %s: %w", model, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("missing dense %s: %w", model, err)
	}
	return out, nil
}

// PutDense stores vectors for model, one per chunk id, replacing any held. An unknown chunk
// id is an error wrapping rag.ErrNotFound, and nothing is stored.
func (s *Store) PutDense(ctx context.Context, model string, ids []string, vectors [][]float32) error {
	if len(ids) != len(vectors) {
		return fmt.Errorf("put dense %s: %d ids and %d vectors", model, len(ids), len(vectors))
	}
	put := make(map[string][]float32, len(ids))
	for i, id := range ids {
		v, err := s.checkDense(model, vectors[i])
		if err != nil {
			return fmt.Errorf("put dense: chunk %s: %w", id, err)
		}
		put[id] = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gen, err := s.putDense(ctx, model, ids, put)
	if err != nil {
		return fmt.Errorf("put dense %s: %w", model, err)
	}
	pos := s.byName[model]
	s.afterWrite(gen, func(old *snapshot) *snapshot { return old.putDense(gen, pos, put) })
	return nil
}

func (s *Store) putDense(ctx context.Context, model string, ids []string, put map[string][]float32) (int64, error) {
	tx, gen, err := s.beginWrite(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	exists, err := tx.PrepareContext(ctx, `SELECT count(*) FROM chunks WHERE id = ?`)
	if err != nil {
		return 0, err
	}
	defer exists.Close()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO dense (chunk_id, model, vector) VALUES (?, ?, ?)
		ON CONFLICT(chunk_id, model) DO UPDATE SET vector = excluded.vector`)
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	for _, id := range ids {
		var n int
		if err := exists.QueryRowContext(ctx, id).Scan(&n); err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, fmt.Errorf("chunk %s: %w", id, rag.ErrNotFound)
		}
		if _, err := ins.ExecContext(ctx, id, model, encodeDense(put[id])); err != nil {
			return 0, err
		}
	}
	return gen, s.commit(ctx, tx)
}
