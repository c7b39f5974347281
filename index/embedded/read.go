package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/rag"
)

const documentCols = `id, source, name, kind, title, authors, pages, lines, hash, chunks, indexed_at`

type scanner interface{ Scan(dest ...any) error }

func scanDocument(r scanner) (rag.Document, error) {
	var d rag.Document
	var authors, at string
	if err := r.Scan(&d.ID, &d.Source, &d.Name, &d.Kind, &d.Title, &authors, &d.Pages, &d.Lines, &d.Hash, &d.Chunks, &at); err != nil {
		return d, err
	}
	if err := json.Unmarshal([]byte(authors), &d.Authors); err != nil {
		return d, fmt.Errorf("document %s authors: %w", d.ID, err)
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return d, fmt.Errorf("document %s indexed_at: %w", d.ID, err)
	}
	d.IndexedAt = t
	return d, nil
}

// Document returns one document; an unknown id wraps rag.ErrNotFound.
func (s *Store) Document(ctx context.Context, id string) (rag.Document, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+documentCols+` FROM documents WHERE id = ?`, id)
	d, err := scanDocument(row)
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("document %s: %w", id, rag.ErrNotFound)
	}
	if err != nil {
		return d, fmt.Errorf("document %s: %w", id, err)
	}
	return d, nil
}

// Documents lists every document, ordered by source.
func (s *Store) Documents(ctx context.Context) ([]rag.Document, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+documentCols+` FROM documents ORDER BY source, id`)
	if err != nil {
		return nil, fmt.Errorf("documents: %w", err)
	}
	defer rows.Close()
	var out []rag.Document
	for rows.Next() {
		d, err := scanDocument(rows)
		if err != nil {
			return nil, fmt.Errorf("documents: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("documents: %w", err)
	}
	return out, nil
}

const chunkCols = `id, doc_id, idx, text, tokens, page_start, page_end, line_start, line_end, section, char_start, char_end, source, name, title, page_breaks`

func scanChunk(r scanner) (rag.Chunk, error) {
	var c rag.Chunk
	var section, breaks string
	if err := r.Scan(&c.ID, &c.DocID, &c.Index, &c.Text, &c.Tokens, &c.PageStart, &c.PageEnd, &c.LineStart, &c.LineEnd,
		&section, &c.CharStart, &c.CharEnd, &c.Source, &c.Name, &c.Title, &breaks); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(section), &c.Section); err != nil {
		return c, fmt.Errorf("chunk %s section: %w", c.ID, err)
	}
	// Empty for single-page chunks and for chunks stored before schema version 2.
	if breaks != "" {
		if err := json.Unmarshal([]byte(breaks), &c.PageBreaks); err != nil {
			return c, fmt.Errorf("chunk %s page breaks: %w", c.ID, err)
		}
	}
	return c, nil
}

// chunkBatch bounds the number of SQL parameters per query (SQLite allows 32766).
const chunkBatch = 500

// lookupChunks fetches the chunks that exist among ids, keyed by id.
func (s *Store) lookupChunks(ctx context.Context, ids []string) (map[string]rag.Chunk, error) {
	found := make(map[string]rag.Chunk, len(ids))
	for start := 0; start < len(ids); start += chunkBatch {
		batch := ids[start:min(start+chunkBatch, len(ids))]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		q := `SELECT ` + chunkCols + ` FROM chunks WHERE id IN (?` + strings.Repeat(",?", len(batch)-1) + `)`
		rows, err := s.db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			c, err := scanChunk(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			found[c.ID] = c
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}

// Chunks returns the chunks with the given ids, in the order asked; an unknown id is an
// error wrapping rag.ErrNotFound.
func (s *Store) Chunks(ctx context.Context, ids []string) ([]rag.Chunk, error) {
	found, err := s.lookupChunks(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("chunks: %w", err)
	}
	out := make([]rag.Chunk, len(ids))
	for i, id := range ids {
		c, ok := found[id]
		if !ok {
			return nil, fmt.Errorf("chunk %s: %w", id, rag.ErrNotFound)
		}
		out[i] = c
	}
	return out, nil
}

// statsSnap is the cached Stats of one generation.
type statsSnap struct {
	gen   int64
	stats index.Stats
}

// generation reads the write counter that every write transaction bumps.
func (s *Store) generation(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var g int64
	err := q.QueryRowContext(ctx, `SELECT generation FROM totals WHERE id = 1`).Scan(&g)
	return g, err
}

// Stats returns the current corpus statistics. The DF map is shared with other callers
// and the store's cache: treat it as read-only.
func (s *Store) Stats(ctx context.Context) (index.Stats, error) {
	gen, err := s.generation(ctx, s.db)
	if err != nil {
		return index.Stats{}, fmt.Errorf("stats: %w", err)
	}
	if c := s.stats.Load(); c != nil && c.gen == gen {
		return c.stats, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.stats.Load(); c != nil && c.gen >= gen {
		return c.stats, nil
	}
	c, err := s.loadStats(ctx)
	if err != nil {
		return index.Stats{}, fmt.Errorf("stats: %w", err)
	}
	s.stats.Store(c)
	return c.stats, nil
}

func (s *Store) loadStats(ctx context.Context) (*statsSnap, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	c := &statsSnap{}
	st := &c.stats
	if err := tx.QueryRowContext(ctx, `SELECT chunks, terms, generation FROM totals WHERE id = 1`).Scan(&st.Chunks, &st.Terms, &c.gen); err != nil {
		return nil, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM documents`).Scan(&st.Documents); err != nil {
		return nil, err
	}
	var terms int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM df`).Scan(&terms); err != nil {
		return nil, err
	}
	st.DF = make(map[uint32]int, terms)
	rows, err := tx.QueryContext(ctx, `SELECT term, n FROM df`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var term int64
		var n int
		if err := rows.Scan(&term, &n); err != nil {
			return nil, err
		}
		st.DF[uint32(term)] = n
	}
	return c, rows.Err()
}

// Counts returns the corpus totals; the statistics are cached per write generation, so
// this is one generation lookup when nothing changed.
func (s *Store) Counts(ctx context.Context) (index.Stats, error) {
	st, err := s.Stats(ctx)
	st.DF = nil
	return st, err
}

// QueryStats returns the chunk count and the document frequencies of terms (absent: in no
// chunk) from the cached statistics.
func (s *Store) QueryStats(ctx context.Context, terms []uint32) (int, map[uint32]int, error) {
	st, err := s.Stats(ctx)
	if err != nil {
		return 0, nil, err
	}
	df := make(map[uint32]int, len(terms))
	for _, t := range terms {
		if n, ok := st.DF[t]; ok {
			df[t] = n
		}
	}
	return st.Chunks, df, nil
}
