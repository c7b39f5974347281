// Package embedded is footnote's default store: one SQLite file per corpus (pure Go,
// modernc.org/sqlite), crash-safe per document, with exact search over vectors held in
// memory. It implements index.Store and rag.Searcher.
//
// Layout: <Dir>/corpora/<corpus>.db in WAL mode. Documents, chunks, BM25 document vectors,
// dense vectors (one row per chunk and model, float32 little-endian, unit length for cosine
// models), BM25 document frequencies and totals all live in that file, so a Replace is one
// SQLite transaction: a crash or a cancelled context leaves the previous version.
//
// Search scans vectors cached in memory (loaded on first search). A generation counter,
// bumped by every write in the same transaction, tells a process when another process has
// written the file, so `footnote index` in one terminal is seen by `footnote serve` in
// another without a restart.
package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// SchemaVersion is the layout this package writes; a file with a newer version is refused.
// Version 2 added chunks.page_breaks; a version 1 file gains the column on open (its
// chunks read with no page breaks until re-indexed).
const SchemaVersion = 2

// ErrModelChanged reports that a configured model's dimension or metric differs from the
// one the store was built with. Errors wrapping it say what differs and how to rebuild.
var ErrModelChanged = errors.New("embedding model changed")

// Config configures Open.
type Config struct {
	// Dir is the data directory; the corpus lives in Dir/corpora/<Corpus>.db. Required.
	Dir string
	// Corpus names the tenant (letters, digits, '_', '-', '.'); "" means "default".
	Corpus string
	// Models are the dense models to hold. A model the store lacks is added (its chunks are
	// then listed by MissingDense for back-fill); a stored model not listed here is kept.
	// A model whose name is stored with another dimension or metric is refused with an
	// error wrapping ErrModelChanged. A zero Metric means rag.Cosine.
	Models []rag.ModelInfo
	// Rebuild empties the corpus (documents, vectors, statistics, models) before use, so
	// that a changed model set can be indexed from scratch.
	Rebuild bool
	// BM25 are the parameters the corpus' BM25 document vectors are weighted with (the
	// caller's indexer must use the same). They are recorded with the corpus on first use;
	// opening it with other ones fails with an error wrapping bm25.ErrParamsChanged, unless
	// Rebuild empties it. Zero means the defaults.
	BM25 bm25.Params
	// Logger receives lifecycle events; nil discards.
	Logger *slog.Logger
}

// Store is an embedded corpus. It is safe for concurrent use; writes are serialised.
type Store struct {
	db     *sql.DB
	path   string
	log    *slog.Logger
	models []rag.ModelInfo
	byName map[string]int // model name → position in models and entry.dense

	mu    sync.Mutex // serialises writes and cache loads
	snap  atomic.Pointer[snapshot]
	stats atomic.Pointer[statsSnap]

	// beforeCommit, when set by tests, runs just before a write transaction commits.
	beforeCommit func()
}

var (
	_ index.Store  = (*Store)(nil)
	_ rag.Searcher = (*Store)(nil)
)

var (
	corpusName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	modelName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

const schema = `
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
	id         TEXT PRIMARY KEY,
	source     TEXT NOT NULL,
	name       TEXT NOT NULL,
	kind       TEXT NOT NULL,
	title      TEXT NOT NULL,
	authors    TEXT NOT NULL,
	pages      INTEGER NOT NULL,
	lines      INTEGER NOT NULL,
	hash       TEXT NOT NULL,
	chunks     INTEGER NOT NULL,
	indexed_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_source ON documents(source);
CREATE TABLE IF NOT EXISTS chunks (
	id          TEXT PRIMARY KEY,
	doc_id      TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
	idx         INTEGER NOT NULL,
	text        TEXT NOT NULL,
	tokens      INTEGER NOT NULL,
	page_start  INTEGER NOT NULL,
	page_end    INTEGER NOT NULL,
	line_start  INTEGER NOT NULL,
	line_end    INTEGER NOT NULL,
	section     TEXT NOT NULL,
	section_top TEXT NOT NULL,
	char_start  INTEGER NOT NULL,
	char_end    INTEGER NOT NULL,
	source      TEXT NOT NULL,
	name        TEXT NOT NULL,
	title       TEXT NOT NULL,
	page_breaks TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, idx);
CREATE TABLE IF NOT EXISTS sparse (
	chunk_id TEXT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
	terms    INTEGER NOT NULL,
	vector   BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS dense (
	chunk_id TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
	model    TEXT NOT NULL,
	vector   BLOB NOT NULL,
	PRIMARY KEY (chunk_id, model)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS dense_model ON dense(model);
CREATE TABLE IF NOT EXISTS df (
	term INTEGER PRIMARY KEY,
	n    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS totals (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	chunks     INTEGER NOT NULL,
	terms      INTEGER NOT NULL,
	generation INTEGER NOT NULL
);
INSERT OR IGNORE INTO totals (id, chunks, terms, generation) VALUES (1, 0, 0, 0);
`

// Open opens (creating if needed) the corpus file and reconciles its model set with
// cfg.Models.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedded: Config.Dir is required")
	}
	if cfg.Corpus == "" {
		cfg.Corpus = "default"
	}
	if !corpusName.MatchString(cfg.Corpus) {
		return nil, fmt.Errorf("embedded: corpus name %q: use letters, digits, '_', '-' or '.'", cfg.Corpus)
	}
	want := make([]rag.ModelInfo, 0, len(cfg.Models))
	for _, m := range cfg.Models {
		if !modelName.MatchString(m.Name) {
			return nil, fmt.Errorf("embedded: model name %q: use letters, digits and '_'", m.Name)
		}
		if m.Dim <= 0 {
			return nil, fmt.Errorf("embedded: model %s: dimension %d", m.Name, m.Dim)
		}
		if m.Metric == "" {
			m.Metric = rag.Cosine
		}
		switch m.Metric {
		case rag.Cosine, rag.IP, rag.L2:
		default:
			return nil, fmt.Errorf("embedded: model %s: unknown metric %q", m.Name, m.Metric)
		}
		if slices.ContainsFunc(want, func(o rag.ModelInfo) bool { return o.Name == m.Name }) {
			return nil, fmt.Errorf("embedded: model %s configured twice", m.Name)
		}
		want = append(want, m)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Join(cfg.Dir, "corpora")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	path := filepath.Join(dir, cfg.Corpus+".db")
	q := url.Values{}
	q.Set("_busy_timeout", "10000")
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "NORMAL") // with WAL: durable against process crashes, never corrupt
	q.Set("_txlock", "immediate")   // write transactions take the lock up front: no upgrade deadlocks
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	s := &Store{db: db, path: path, log: log.With("component", "embedded", "corpus", cfg.Corpus)}
	if err := s.init(ctx, want, cfg.BM25, cfg.Rebuild); err != nil {
		db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	s.log.Info("store opened", "path", path, "models", modelNames(s.models))
	return s, nil
}

func (s *Store) init(ctx context.Context, want []rag.ModelInfo, params bm25.Params, rebuild bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	var version int
	var modelsJSON string
	err = tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		version = SchemaVersion
	case err != nil:
		return fmt.Errorf("read schema version: %w", err)
	case version > SchemaVersion:
		return fmt.Errorf("schema version %d was written by a newer footnote (this one knows %d)", version, SchemaVersion)
	}
	if err := migrate(ctx, tx); err != nil {
		return fmt.Errorf("migrate schema version %d to %d: %w", version, SchemaVersion, err)
	}
	if rebuild {
		for _, t := range []string{"dense", "sparse", "chunks", "documents", "df"} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+t); err != nil {
				return fmt.Errorf("rebuild: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE totals SET chunks = 0, terms = 0, generation = generation + 1`); err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE key IN ('models', 'bm25')`); err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
	}
	if err := s.checkBM25(ctx, tx, params); err != nil {
		return err
	}
	var stored []rag.ModelInfo
	err = tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'models'`).Scan(&modelsJSON)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("read models: %w", err)
	default:
		if err := json.Unmarshal([]byte(modelsJSON), &stored); err != nil {
			return fmt.Errorf("read models: %w", err)
		}
	}
	models, err := reconcile(stored, want)
	if err != nil {
		return err
	}
	b, err := json.Marshal(models)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('models', ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value`, fmt.Sprint(SchemaVersion), string(b)); err != nil {
		return fmt.Errorf("write meta: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.models = models
	s.byName = make(map[string]int, len(models))
	for i, m := range models {
		s.byName[m.Name] = i
	}
	return nil
}

// migrate brings a file written by an older version up to SchemaVersion inside tx. Every
// step is idempotent, so it runs on every open.
func migrate(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('chunks') WHERE name = 'page_breaks'`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE chunks ADD COLUMN page_breaks TEXT NOT NULL DEFAULT ''`); err != nil {
			return err
		}
	}
	return nil
}

// checkBM25 records the BM25 parameters with a corpus that has none recorded and refuses
// other ones than recorded.
func (s *Store) checkBM25(ctx context.Context, tx *sql.Tx, params bm25.Params) error {
	var stored string
	err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'bm25'`).Scan(&stored)
	switch {
	case err == nil:
		return params.Check("this corpus", stored)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("read bm25 parameters: %w", err)
	}
	var chunks int
	if err := tx.QueryRowContext(ctx, `SELECT chunks FROM totals WHERE id = 1`).Scan(&chunks); err != nil {
		return fmt.Errorf("read totals: %w", err)
	}
	if chunks > 0 {
		// Indexed by a footnote that did not record them: they cannot be checked now,
		// only from here on.
		s.log.Warn("corpus was indexed before footnote recorded its BM25 parameters; recording the configured ones",
			"k1", params.Setting().K1, "b", params.Setting().B)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('bm25', ?)`, params.Setting().Encode()); err != nil {
		return fmt.Errorf("write bm25 parameters: %w", err)
	}
	return nil
}

// reconcile keeps the stored models in their order and appends new configured ones.
func reconcile(stored, want []rag.ModelInfo) ([]rag.ModelInfo, error) {
	out := slices.Clone(stored)
	for _, w := range want {
		i := slices.IndexFunc(stored, func(m rag.ModelInfo) bool { return m.Name == w.Name })
		if i < 0 {
			out = append(out, w)
			continue
		}
		if m := stored[i]; m.Dim != w.Dim || m.Metric != w.Metric {
			return nil, fmt.Errorf("%w: model %s is stored with dimension %d and metric %s but configured with dimension %d and metric %s; "+
				"configure the stored model again, or re-index everything with `footnote index --rebuild`",
				ErrModelChanged, w.Name, m.Dim, m.Metric, w.Dim, w.Metric)
		}
	}
	return out, nil
}

func modelNames(ms []rag.ModelInfo) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = fmt.Sprintf("%s(%d,%s)", m.Name, m.Dim, m.Metric)
	}
	return strings.Join(names, " ")
}

// Path is the SQLite file of the corpus.
func (s *Store) Path() string { return s.path }

// Models returns the dense models the store holds, stored ones first.
func (s *Store) Models() []rag.ModelInfo { return slices.Clone(s.models) }

// Close closes the database. The store must not be used afterwards.
func (s *Store) Close() error {
	s.snap.Store(nil)
	s.stats.Store(nil)
	return s.db.Close()
}
