// Package milvus is the Milvus store: one collection per corpus holding every chunk with one
// FLOAT_VECTOR field per dense model and a SPARSE_FLOAT_VECTOR `bm25` field, searched with a
// plain ANN search for one retriever and Milvus' HybridSearch (RRF or weighted fusion) for
// several. Documents and BM25 statistics live beside the chunks in two more collections in
// Milvus itself, so several footnote replicas share them.
//
// It is the only package that imports milvus-sdk-go; SDK types and errors never leave it.
//
// # Collections
//
// For corpus "papers" (see CollectionName):
//
//	footnote_papers       chunks: pk (chunk_id@version), chunk_id, doc_id, version, text, metadata,
//	                      one vector field per model, bm25
//	footnote_papers_docs  documents: doc_id (primary key), the rag.Document as JSON, content
//	                      hash, chunk and term counts, pending/deleted flags
//	footnote_papers_df    BM25 document frequencies: term hash (primary key), df
//
// The chunk collection records the schema version and the model set in its properties;
// opening it with another model set fails (ErrSchemaMismatch) naming the difference.
//
// # Consistency without transactions
//
// Milvus has no multi-row transactions. Every Replace writes its rows under a new version
// (the primary key is chunk_id@version, so no row of the old version is overwritten), and
// a chunk row is visible only when its version is the one its document's record names;
// search results, Chunks, MissingDense and Stats apply that rule. So the document record is
// the switch: Replace writes the new chunks (invisible), then upserts the record (a
// single-row write, atomic in Milvus: the new version becomes visible and the old one
// invisible at once), then updates the BM25 statistics and deletes the old rows. Readers
// see the old version or the new one, never a mix. The record stays flagged pending from
// before the first write to after the last one, which is the statistics update: the
// changes of several writes (Config.StatsBatch) are merged in memory and written
// together — document frequencies and corpus totals in the same upserts — before those
// documents' pending flags are cleared. Until then readers through other Stores see the
// statistics as they were before the batch (consistent with each other, a batch behind the
// chunks); this Store writes the batch before it answers Stats, Counts, QueryStats or
// DocFreq, and Flush and Close write it. If footnote dies in between, searches still
// see exactly one version of each document, but the statistics may be off and invisible
// rows may remain (they cost space and may take a few top-k slots); the next write through
// any Store finds the pending flag and runs Repair, which recomputes the statistics from
// the visible chunks and deletes the invisible rows.
//
// Writers must be serialised per corpus (one `footnote index` at a time); readers may be
// many. A Store serialises its own writes.
package milvus

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/milvus-io/milvus-sdk-go/v2/client"
	"github.com/milvus-io/milvus-sdk-go/v2/entity"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// SchemaVersion is the layout of the collections this package writes. A collection with
// another version must be rebuilt.
const SchemaVersion = 1

// ErrSchemaMismatch reports a collection whose schema version or model set differs from the
// configuration. Errors wrapping it name the difference and the fix.
var ErrSchemaMismatch = errors.New("milvus collection does not match the configuration")

// ErrUnavailable reports that Milvus could not be reached (or kept failing with transient
// errors) within the call's time limit.
var ErrUnavailable = errors.New("milvus unavailable")

// Config configures Open.
type Config struct {
	// Addr is Milvus' gRPC address, "host:19530"; "https://…" turns TLS on. Required.
	Addr string
	// Token is an API key or "user:password" (Zilliz Cloud, Milvus with auth); empty means none.
	Token string
	// User and Password authenticate when Token is empty; empty means no authentication.
	User     string
	Password string
	// DB is the Milvus database; empty means "default".
	DB string
	// TLS forces TLS transport (implied by an https:// Addr).
	TLS bool
	// Corpus names the corpus; the collections are named after it (CollectionName). Empty
	// means "default".
	Corpus string
	// Models are the dense models the chunk collection holds one vector field for.
	Models []rag.ModelInfo
	// Timeout bounds each Milvus call (not a whole Replace); zero means 10s.
	Timeout time.Duration
	// Recreate drops the corpus' collections before opening (`footnote index --rebuild`).
	Recreate bool
	// DenseIndex is the index built on each dense field when a collection is created:
	// "HNSW" (approximate; the default), "FLAT" (exact, brute force: ranks exactly as the
	// embedded store, fine up to a few hundred thousand chunks) or "AUTOINDEX" (Zilliz
	// Cloud). An existing collection keeps the index it was built with.
	DenseIndex string
	// BM25 are the parameters the chunks' BM25 vectors are weighted with (the indexer
	// must use the same). A new collection records them; opening one recorded with other
	// ones fails with an error wrapping bm25.ErrParamsChanged. Zero means the defaults.
	BM25 bm25.Params
	// StatsBatch is how many document writes (Replace, Delete) have their BM25 statistics
	// changes (document frequencies, corpus totals) merged in memory before one write of
	// them: a paper touches ~3,000 document-frequency rows, and the union over many papers
	// is far smaller than the sum (Zipf), so bulk indexing rewrites far fewer rows. Zero
	// means 64; 1 writes them with every document, as footnote did before. See the package
	// comment for what readers see meanwhile.
	StatsBatch int
	// Logger receives lifecycle and retry messages; nil discards them.
	Logger *slog.Logger
}

// Store is a Milvus-backed index.Store and rag.Searcher. It is safe for concurrent use.
type Store struct {
	c       client.Client
	addr    string
	timeout time.Duration
	log     *slog.Logger

	coll, docs, df string
	models         []rag.ModelInfo
	byName         map[string]rag.ModelInfo
	denseIndex     string // for new collections
	bm25           bm25.Params
	fieldIndex     map[string]entity.IndexType // dense field -> its index type, found at Open
	flatFallback   bool                        // the engine built FLAT instead of denseIndex (Milvus Lite)
	pageBreaks     bool                        // the chunk collection has fBreaks (false: built before it)

	wmu          sync.Mutex // serialises Replace, Delete, PutDense and Repair
	statsBatch   int
	batch        statsDelta  // merged statistics changes not yet written; guarded by wmu
	unapplied    atomic.Bool // batch holds something
	dirty        atomic.Bool // written since the last Flush
	warnedTotals atomic.Bool // Counts warned once that the collection keeps no totals
}

// Field names of the chunk collection. Dense fields are named after their model.
const (
	fPK        = "pk" // chunk_id@version: versions of one chunk never overwrite each other
	fChunkID   = "chunk_id"
	fDocID     = "doc_id"
	fVersion   = "version" // the Replace that wrote the row; decides visibility
	fIndex     = "chunk_index"
	fText      = "text"
	fTokens    = "tokens"
	fTerms     = "terms"
	fPageStart = "page_start"
	fPageEnd   = "page_end"
	fLineStart = "line_start"
	fLineEnd   = "line_end"
	fSection   = "section"  // JSON array
	fSection0  = "section0" // first element, for the section filter
	fCharStart = "char_start"
	fCharEnd   = "char_end"
	fSource    = "source"
	fName      = "name"
	fTitle     = "title"
	fBM25      = "bm25"
	fBreaks    = "page_breaks" // rag.Chunk.PageBreaks as a JSON array; absent in collections from before it
	hasPrefix  = "has_"        // has_<model>: whether the row holds that model's vector

	// documents collection
	fDoc     = "doc" // rag.Document as JSON
	fHash    = "content_hash"
	fChunks  = "chunks"
	fPending = "pending"
	fDeleted = "deleted"
	fDummy   = "v" // Milvus requires a vector field in every collection

	// df collection
	fTerm = "term"
	fDF   = "df"
)

// Maximum byte lengths of VARCHAR fields (Milvus counts bytes; 65,535 is its limit).
const (
	maxID      = 512
	maxHash    = 128
	maxVersion = 32
	maxText    = 65535
	maxPath    = 4096
	maxSection = 8192
	maxName    = 1024
)

// chunkScalars are the chunk fields returned with every hit.
var chunkScalars = []string{fPK, fChunkID, fDocID, fVersion, fIndex, fText, fTokens, fPageStart, fPageEnd,
	fLineStart, fLineEnd, fSection, fCharStart, fCharEnd, fSource, fName, fTitle}

var reserved = map[string]bool{}

func init() {
	for _, f := range append(slices.Clone(chunkScalars), fTerms, fSection0, fBM25, fBreaks) {
		reserved[f] = true
	}
}

var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,254}$`)

// CollectionName is the chunk collection of a corpus: "footnote_" and the corpus name
// lowercased with every character outside [a-z0-9_] replaced by "_". A name that had to
// change that way, or that would exceed Milvus' length limit, is shortened as needed and
// suffixed with a hash of the corpus name, so distinct corpora never share collections
// (corpus names are case-insensitive).
func CollectionName(corpus string) string {
	if corpus == "" {
		corpus = "default"
	}
	var b strings.Builder
	for _, r := range strings.ToLower(corpus) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	// Names that had to change get a hash of the corpus name, so "a-b" and "a_b" stay apart;
	// 200 leaves room for the "_docs" suffix under Milvus' 255-byte limit.
	if name != strings.ToLower(corpus) || len(name) > 200 {
		if len(name) > 191 {
			name = name[:191]
		}
		h := fnv.New32a()
		h.Write([]byte(corpus))
		name = fmt.Sprintf("%s_%08x", name, h.Sum32())
	}
	return "footnote_" + name
}

// Open connects to Milvus and opens (creating when absent) the corpus' collections, loaded
// and ready to search.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Addr == "" {
		return nil, errors.New("milvus: no address")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	models := slices.Clone(cfg.Models)
	byName := make(map[string]rag.ModelInfo, len(models))
	for _, m := range models {
		switch {
		case !fieldName.MatchString(m.Name) || len(m.Name) > 200:
			return nil, fmt.Errorf("milvus: model name %q is not a valid field name ([A-Za-z_][A-Za-z0-9_]*, at most 200)", m.Name)
		case reserved[m.Name] || strings.HasPrefix(m.Name, hasPrefix):
			return nil, fmt.Errorf("milvus: model name %q collides with a chunk field", m.Name)
		case byName[m.Name].Name != "":
			return nil, fmt.Errorf("milvus: model %q configured twice", m.Name)
		case m.Dim <= 0 || m.Dim > 32768:
			return nil, fmt.Errorf("milvus: model %q has dimension %d", m.Name, m.Dim)
		}
		if _, err := metricType(m.Metric); err != nil {
			return nil, fmt.Errorf("milvus: model %q: %w", m.Name, err)
		}
		if m.Metric == "" {
			m.Metric = rag.Cosine
		}
		byName[m.Name] = m
	}
	for i := range models {
		models[i] = byName[models[i].Name]
	}
	denseIndex := strings.ToUpper(cfg.DenseIndex)
	switch denseIndex {
	case "":
		denseIndex = string(entity.HNSW)
	case string(entity.HNSW), string(entity.Flat), string(entity.AUTOINDEX):
	default:
		return nil, fmt.Errorf("milvus: dense index %q: use HNSW, FLAT or AUTOINDEX", cfg.DenseIndex)
	}
	coll := CollectionName(cfg.Corpus)
	s := &Store{
		addr:       cfg.Addr,
		timeout:    cfg.Timeout,
		log:        log.With("component", "milvus", "collection", coll),
		coll:       coll,
		docs:       coll + "_docs",
		df:         coll + "_df",
		models:     models,
		byName:     byName,
		denseIndex: denseIndex,
		bm25:       cfg.BM25,
		fieldIndex: map[string]entity.IndexType{},
		pageBreaks: true,
		statsBatch: cmp.Or(max(cfg.StatsBatch, 0), defaultStatsBatch),
	}

	ccfg := client.Config{
		Address:       cfg.Addr,
		Username:      cfg.User,
		Password:      cfg.Password,
		DBName:        cfg.DB,
		EnableTLSAuth: cfg.TLS,
		APIKey:        cfg.Token,
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	c, err := client.NewClient(dctx, ccfg)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: connect %s: %v", ErrUnavailable, cfg.Addr, plain(err))
	}
	s.c = c
	if err := s.setUp(ctx, cfg.Recreate); err != nil {
		c.Close()
		return nil, err
	}
	s.log.Info("milvus store open", "addr", cfg.Addr, "models", len(models))
	return s, nil
}

// Close flushes what this Store wrote since the last Flush (so that one `footnote index`
// run ends with sealed, indexed segments) and releases the connection; the collections stay
// in Milvus.
func (s *Store) Close() error {
	var ferr error
	if s.dirty.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*s.timeout)
		ferr = s.Flush(ctx)
		cancel()
	}
	if err := s.c.Close(); err != nil {
		return fmt.Errorf("close milvus client: %v", plain(err))
	}
	if ferr != nil {
		return fmt.Errorf("close: %w", ferr)
	}
	return nil
}

// Models are the dense models the chunk collection holds fields for.
func (s *Store) Models() []rag.ModelInfo { return slices.Clone(s.models) }

// Collection is the chunk collection's name.
func (s *Store) Collection() string { return s.coll }

// Flush seals what was written so far: Milvus (and Milvus Lite) index written rows only
// once their segment is sealed, and search unsealed rows by brute force. Milvus seals
// segments by itself over time; Milvus Lite only when 128 MB of rows are pending, and its
// brute-force sparse search is slow (seconds for a few thousand chunks). Call Flush after
// a batch of writes, e.g. at the end of `footnote index`; not after every document (Milvus
// rate-limits flushes).
func (s *Store) Flush(ctx context.Context) error {
	if err := s.settle(ctx); err != nil {
		return err
	}
	s.dirty.Store(false)
	for _, name := range []string{s.coll, s.docs, s.df} {
		if err := s.do(ctx, "flush "+name, func(ctx context.Context) error {
			return s.c.Flush(ctx, name, false)
		}); err != nil {
			s.dirty.Store(true)
			return err
		}
	}
	return nil
}

// Drop deletes the corpus' three collections and everything in them. The Store is
// unusable afterwards except for Close.
func (s *Store) Drop(ctx context.Context) error {
	s.wmu.Lock()
	s.batch = statsDelta{}
	s.unapplied.Store(false)
	s.wmu.Unlock()
	s.dirty.Store(false)
	for _, name := range []string{s.coll, s.docs, s.df} {
		if err := s.dropIfExists(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) dropIfExists(ctx context.Context, name string) error {
	var has bool
	if err := s.do(ctx, "check collection "+name, func(ctx context.Context) (err error) {
		has, err = s.c.HasCollection(ctx, name)
		return err
	}); err != nil {
		return err
	}
	if !has {
		return nil
	}
	s.log.Info("dropping collection", "name", name)
	return s.do(ctx, "drop collection "+name, func(ctx context.Context) error {
		return s.c.DropCollection(ctx, name)
	})
}

// modelsProperty is how a collection records its model set.
type modelsProperty []rag.ModelInfo

const (
	propVersion = "footnote.schema_version"
	propModels  = "footnote.models"
)

func (s *Store) setUp(ctx context.Context, recreate bool) error {
	if recreate {
		if err := s.Drop(ctx); err != nil {
			return err
		}
	}
	if _, err := s.ensure(ctx, s.coll, s.chunkSchema, s.chunkIndexes, true); err != nil {
		return err
	}
	if _, err := s.ensure(ctx, s.docs, docsSchema, dummyIndex, false); err != nil {
		return err
	}
	created, err := s.ensure(ctx, s.df, dfSchema, dummyIndex, false)
	if err != nil {
		return err
	}
	if created {
		// A new corpus keeps totals from the start (see totals.go).
		if err := s.writeTotals(ctx, totals{}); err != nil {
			return err
		}
	}
	if err := s.checkBM25(ctx, created); err != nil {
		return err
	}
	// Search parameters depend on each dense field's actual index.
	for _, m := range s.models {
		var idx []entity.Index
		if err := s.do(ctx, "describe index of "+m.Name, func(ctx context.Context) (err error) {
			idx, err = s.c.DescribeIndex(ctx, s.coll, m.Name)
			return err
		}); err != nil {
			return err
		}
		if len(idx) > 0 {
			s.fieldIndex[m.Name] = idx[0].IndexType()
		}
	}
	return nil
}

// searchParam is the search parameter for a dense field's index.
func (s *Store) searchParam(field string, limit int) (entity.SearchParam, error) {
	switch s.fieldIndex[field] {
	case entity.Flat:
		return entity.NewIndexFlatSearchParam()
	case entity.AUTOINDEX:
		return entity.NewIndexAUTOINDEXSearchParam(1)
	}
	// ef must be at least the number of results; 64 keeps recall high for small limits.
	return entity.NewIndexHNSWSearchParam(max(64, limit))
}

// ensure creates a collection with its indexes when it does not exist, checks its schema
// when it does, and loads it.
func (s *Store) ensure(ctx context.Context, name string, schema func(name string) *entity.Schema,
	indexes func() (map[string]entity.Index, error), chunks bool) (created bool, err error) {
	var has bool
	if err := s.do(ctx, "check collection "+name, func(ctx context.Context) (err error) {
		has, err = s.c.HasCollection(ctx, name)
		return err
	}); err != nil {
		return false, err
	}
	if !has {
		opts := []client.CreateCollectionOption{
			client.WithConsistencyLevel(entity.ClStrong),
			client.WithCollectionProperty(propVersion, fmt.Sprint(SchemaVersion)),
		}
		if chunks {
			js, _ := json.Marshal(modelsProperty(s.models))
			opts = append(opts, client.WithCollectionProperty(propModels, string(js)))
		}
		s.log.Info("creating collection", "name", name)
		err := s.do(ctx, "create collection "+name, func(ctx context.Context) error {
			return s.c.CreateCollection(ctx, schema(name), 1, opts...)
		})
		if err != nil && !strings.Contains(strings.ToLower(err.Error()), "already exist") {
			return false, err
		}
		created = err == nil
		idx, err := indexes()
		if err != nil {
			return false, err
		}
		// Asynchronously: the SDK's synchronous CreateIndex polls DescribeIndex until the
		// state is Finished, which Milvus Lite 2.5 (the C++ engine) never reports for an
		// empty collection, so it would hang. Milvus builds the index of sealed segments
		// in the background anyway; what a reader needs is a loaded collection, and load
		// (below) waits for that on every engine. A build that failed outright is
		// reported by DescribeIndex right away and fails here.
		for field, ix := range idx {
			err := s.do(ctx, "create index on "+name+"."+field, func(ctx context.Context) error {
				return s.c.CreateIndex(ctx, name, field, ix, true)
			})
			if err != nil && !strings.Contains(strings.ToLower(err.Error()), "already exist") {
				return false, err
			}
		}
		if err := s.checkIndexes(ctx, name, idx, chunks); err != nil {
			return false, err
		}
	}
	if err := s.checkSchema(ctx, name, schema(name), chunks); err != nil {
		return false, err
	}
	return created, s.load(ctx, name)
}

// checkIndexes makes sure Milvus lists every index just created. Milvus Lite 2.5 (the C++
// engine) accepts an HNSW or AUTOINDEX request on a dense field without error but builds
// nothing (it supports FLAT only), and an unindexed vector field cannot be loaded; such a
// field gets a FLAT index instead, with a warning. Any other missing index is an error.
func (s *Store) checkIndexes(ctx context.Context, name string, want map[string]entity.Index, chunks bool) error {
	for field := range want {
		listed, err := s.hasIndex(ctx, name, field)
		if err != nil {
			return err
		}
		if listed {
			continue
		}
		m, dense := s.byName[field]
		if !chunks || !dense || s.denseIndex == string(entity.Flat) {
			return fmt.Errorf("create index on %s.%s: Milvus accepted the request but lists no index", name, field)
		}
		s.log.Warn("Milvus did not build the requested dense index (Milvus Lite supports FLAT only); using FLAT",
			"field", field, "requested", s.denseIndex)
		s.flatFallback = true
		mt, _ := metricType(m.Metric)
		flat, ferr := entity.NewIndexFlat(mt)
		if ferr != nil {
			return fmt.Errorf("flat index for %s: %v", field, plain(ferr))
		}
		if err := s.do(ctx, "create index on "+name+"."+field, func(ctx context.Context) error {
			return s.c.CreateIndex(ctx, name, field, flat, true)
		}); err != nil {
			return err
		}
		if listed, err = s.hasIndex(ctx, name, field); err != nil {
			return err
		} else if !listed {
			return fmt.Errorf("create FLAT index on %s.%s: Milvus accepted the request but lists no index", name, field)
		}
	}
	return nil
}

func (s *Store) hasIndex(ctx context.Context, name, field string) (bool, error) {
	var idx []entity.Index
	if err := s.do(ctx, "describe index on "+name+"."+field, func(ctx context.Context) (err error) {
		idx, err = s.c.DescribeIndex(ctx, name, field)
		return err
	}); err != nil {
		return false, err
	}
	return len(idx) > 0, nil
}

func (s *Store) load(ctx context.Context, name string) error {
	return s.do(ctx, "load collection "+name, func(ctx context.Context) error {
		return s.c.LoadCollection(ctx, name, false)
	})
}

// checkSchema compares an existing collection with what this configuration would create.
func (s *Store) checkSchema(ctx context.Context, name string, want *entity.Schema, chunks bool) error {
	var coll *entity.Collection
	if err := s.do(ctx, "describe collection "+name, func(ctx context.Context) (err error) {
		coll, err = s.c.DescribeCollection(ctx, name)
		return err
	}); err != nil {
		return err
	}
	rebuild := "run `footnote index --rebuild` to drop and re-create the corpus' collections"
	if v, ok := coll.Properties[propVersion]; ok && v != fmt.Sprint(SchemaVersion) {
		return fmt.Errorf("%w: collection %s has schema version %s, this footnote writes version %d; %s",
			ErrSchemaMismatch, name, v, SchemaVersion, rebuild)
	}
	have := map[string]*entity.Field{}
	for _, f := range coll.Schema.Fields {
		have[f.Name] = f
	}
	if !chunks {
		for _, f := range want.Fields {
			if have[f.Name] == nil || have[f.Name].DataType != f.DataType {
				return fmt.Errorf("%w: collection %s lacks field %s (%s); %s", ErrSchemaMismatch, name, f.Name, f.DataType.Name(), rebuild)
			}
		}
		return nil
	}
	// The model set: from the recorded property when present (it carries the metrics),
	// else from the schema's vector fields.
	var stored []rag.ModelInfo
	if js, ok := coll.Properties[propModels]; ok {
		if err := json.Unmarshal([]byte(js), &stored); err != nil {
			return fmt.Errorf("%w: collection %s has an unreadable %s property: %v", ErrSchemaMismatch, name, propModels, err)
		}
	} else {
		for _, f := range coll.Schema.Fields {
			if f.DataType == entity.FieldTypeFloatVector {
				var dim int
				fmt.Sscan(f.TypeParams[entity.TypeParamDim], &dim)
				stored = append(stored, rag.ModelInfo{Name: f.Name, Dim: dim})
			}
		}
	}
	if diff := modelDiff(stored, s.models, coll.Properties[propModels] != ""); diff != "" {
		return fmt.Errorf("%w: collection %s was built for models %s but footnote is configured with %s (%s); "+
			"Milvus cannot add or change a vector field of an existing collection, so %s "+
			"(or configure the models the collection holds)",
			ErrSchemaMismatch, name, describeModels(stored), describeModels(s.models), diff, rebuild)
	}
	for _, f := range want.Fields {
		if f.Name == fBreaks && have[f.Name] == nil {
			// Page breaks came later; an older collection stays readable without them.
			s.pageBreaks = false
			s.log.Warn("collection predates page breaks: citations point to page ranges; "+
				"run `footnote index --rebuild` for page-precise citations", "collection", name)
			continue
		}
		if have[f.Name] == nil || have[f.Name].DataType != f.DataType {
			return fmt.Errorf("%w: collection %s lacks field %s (%s); %s", ErrSchemaMismatch, name, f.Name, f.DataType.Name(), rebuild)
		}
	}
	return nil
}

// legacyChunkSchema makes new chunk collections as footnote did before page breaks, so
// tests can check that such collections stay readable.
var legacyChunkSchema = false

// scalars are the chunk fields to read for a hit or a chunk.
func (s *Store) scalars() []string {
	out := slices.Clone(chunkScalars)
	if s.pageBreaks {
		out = append(out, fBreaks)
	}
	return out
}

// modelDiff describes how two model sets differ; "" means they match. Metrics are compared
// only when known.
func modelDiff(stored, want []rag.ModelInfo, metrics bool) string {
	var parts []string
	have := map[string]rag.ModelInfo{}
	for _, m := range stored {
		have[m.Name] = m
	}
	seen := map[string]bool{}
	for _, m := range want {
		seen[m.Name] = true
		h, ok := have[m.Name]
		switch {
		case !ok:
			parts = append(parts, "added "+m.Name)
		case h.Dim != m.Dim:
			parts = append(parts, fmt.Sprintf("%s has dimension %d, configured %d", m.Name, h.Dim, m.Dim))
		case metrics && h.Metric != m.Metric:
			parts = append(parts, fmt.Sprintf("%s has metric %s, configured %s", m.Name, h.Metric, m.Metric))
		}
	}
	for _, m := range stored {
		if !seen[m.Name] {
			parts = append(parts, "removed "+m.Name)
		}
	}
	return strings.Join(parts, "; ")
}

func describeModels(ms []rag.ModelInfo) string {
	if len(ms) == 0 {
		return "[] (BM25 only)"
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%s(%d", m.Name, m.Dim)
		if m.Metric != "" {
			parts[i] += "," + string(m.Metric)
		}
		parts[i] += ")"
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func metricType(m rag.Metric) (entity.MetricType, error) {
	switch m {
	case rag.Cosine, "":
		return entity.COSINE, nil
	case rag.IP:
		return entity.IP, nil
	case rag.L2:
		return entity.L2, nil
	}
	return "", fmt.Errorf("unknown metric %q", m)
}

func varchar(name string, max int64) *entity.Field {
	return entity.NewField().WithName(name).WithDataType(entity.FieldTypeVarChar).WithMaxLength(max)
}

func int64Field(name string) *entity.Field {
	return entity.NewField().WithName(name).WithDataType(entity.FieldTypeInt64)
}

func (s *Store) chunkSchema(name string) *entity.Schema {
	sc := entity.NewSchema().WithName(name).WithDescription("footnote chunks").WithAutoID(false).
		WithField(varchar(fPK, maxID+maxVersion+1).WithIsPrimaryKey(true)).
		WithField(varchar(fChunkID, maxID)).
		WithField(varchar(fDocID, maxID)).
		WithField(varchar(fVersion, maxVersion)).
		WithField(int64Field(fIndex)).
		WithField(varchar(fText, maxText)).
		WithField(int64Field(fTokens)).
		WithField(int64Field(fTerms)).
		WithField(int64Field(fPageStart)).
		WithField(int64Field(fPageEnd)).
		WithField(int64Field(fLineStart)).
		WithField(int64Field(fLineEnd)).
		WithField(varchar(fSection, maxSection)).
		WithField(varchar(fSection0, maxPath)).
		WithField(int64Field(fCharStart)).
		WithField(int64Field(fCharEnd)).
		WithField(varchar(fSource, maxPath)).
		WithField(varchar(fName, maxName)).
		WithField(varchar(fTitle, maxPath))
	if !legacyChunkSchema {
		sc.WithField(varchar(fBreaks, maxSection))
	}
	for _, m := range s.models {
		sc.WithField(entity.NewField().WithName(m.Name).WithDataType(entity.FieldTypeFloatVector).WithDim(int64(m.Dim)))
		// Milvus 2.4 has no nullable vectors: a chunk still waiting for this model's vector
		// (back-fill) stores a placeholder and false here, and searches skip it.
		sc.WithField(entity.NewField().WithName(hasPrefix + m.Name).WithDataType(entity.FieldTypeBool))
	}
	return sc.WithField(entity.NewField().WithName(fBM25).WithDataType(entity.FieldTypeSparseVector))
}

func (s *Store) chunkIndexes() (map[string]entity.Index, error) {
	out := map[string]entity.Index{}
	for _, m := range s.models {
		mt, _ := metricType(m.Metric)
		var ix entity.Index
		var err error
		switch s.denseIndex {
		case string(entity.Flat):
			ix, err = entity.NewIndexFlat(mt)
		case string(entity.AUTOINDEX):
			ix, err = entity.NewIndexAUTOINDEX(mt)
		default:
			// HNSW: the recall/latency trade-off Milvus recommends for in-memory float
			// vectors; M=16, efConstruction=200 as in Milvus' examples for 384–1024 dims.
			ix, err = entity.NewIndexHNSW(mt, 16, 200)
		}
		if err != nil {
			return nil, fmt.Errorf("%s index for %s: %v", s.denseIndex, m.Name, plain(err))
		}
		out[m.Name] = ix
	}
	// Drop ratio 0: exact inner products, so BM25 ranks as in the embedded store.
	ix, err := entity.NewIndexSparseInverted(entity.IP, 0)
	if err != nil {
		return nil, fmt.Errorf("sparse index: %v", plain(err))
	}
	out[fBM25] = ix
	// Chunks and Replace look rows up by chunk and document id.
	out[fChunkID] = entity.NewScalarIndexWithType(entity.Inverted)
	out[fDocID] = entity.NewScalarIndexWithType(entity.Inverted)
	return out, nil
}

func dummyVector() *entity.Field {
	return entity.NewField().WithName(fDummy).WithDataType(entity.FieldTypeFloatVector).WithDim(2)
}

func docsSchema(name string) *entity.Schema {
	return entity.NewSchema().WithName(name).WithDescription("footnote documents").WithAutoID(false).
		WithField(varchar(fDocID, maxID).WithIsPrimaryKey(true)).
		WithField(varchar(fSource, maxPath)).
		WithField(varchar(fHash, maxHash)).
		WithField(varchar(fVersion, maxVersion)).
		WithField(int64Field(fChunks)).
		WithField(int64Field(fTerms)).
		WithField(entity.NewField().WithName(fPending).WithDataType(entity.FieldTypeBool)).
		WithField(entity.NewField().WithName(fDeleted).WithDataType(entity.FieldTypeBool)).
		WithField(varchar(fDoc, maxText)).
		WithField(dummyVector())
}

func dfSchema(name string) *entity.Schema {
	return entity.NewSchema().WithName(name).WithDescription("footnote BM25 document frequencies").WithAutoID(false).
		WithField(int64Field(fTerm).WithIsPrimaryKey(true)).
		WithField(int64Field(fDF)).
		WithField(dummyVector())
}

func dummyIndex() (map[string]entity.Index, error) {
	ix, err := entity.NewIndexFlat(entity.L2)
	if err != nil {
		return nil, fmt.Errorf("flat index: %v", plain(err))
	}
	return map[string]entity.Index{fDummy: ix}, nil
}

// each runs fn for every row a query iterator yields, one call (with its own time limit)
// per batch.
func (s *Store) each(ctx context.Context, coll, expr string, fields []string, batch int, fn func(client.ResultSet) error) error {
	var it *client.QueryIterator
	opt := client.NewQueryIteratorOption(coll).WithExpr(expr).WithOutputFields(fields...).WithBatchSize(batch)
	if err := s.do(ctx, "scan "+coll, func(ctx context.Context) (err error) {
		it, err = s.c.QueryIterator(ctx, opt)
		return err
	}); err != nil {
		return err
	}
	for {
		var rs client.ResultSet
		err := s.do(ctx, "scan "+coll, func(ctx context.Context) (err error) {
			rs, err = it.Next(ctx)
			if err != nil && noFieldData(err) {
				err = io.EOF // an empty batch, as Milvus Lite 2.5 answers it (see query)
			}
			return err
		})
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(rs); err != nil {
			return err
		}
	}
}
