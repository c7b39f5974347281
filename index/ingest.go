package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/footnote-dev/footnote/index/chunk"
	"github.com/footnote-dev/footnote/index/pdf"
	"github.com/footnote-dev/footnote/index/textfile"
	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/bm25"
)

// Config assembles an Indexer. Zero values are documented per field.
type Config struct {
	Store Store // required
	// Embedders are the dense models every chunk is embedded with; empty means BM25 only.
	Embedders []rag.Embedder
	BM25      bm25.Params   // zero means k1 = 1.5, b = 0.75
	Chunk     chunk.Options // zero means the chunk package's defaults
	// CountTokens counts tokens for chunk sizes; nil means chunk.CountTokens (cl100k_base).
	// It overrides Chunk.CountTokens when both are set.
	CountTokens func(string) int
	MaxPages    int // longer PDFs are skipped; zero means pdf.DefaultMaxPages
	// ParseTimeout bounds parsing one PDF (in its child process); zero means
	// pdf.DefaultTimeout.
	ParseTimeout time.Duration
	Workers      int // files parsed at once; zero means 2
	EmbedBatch   int // texts per EmbedDocuments call; zero means 32
	// BatchFiles is how many files are parsed before their documents are stored; it bounds
	// memory. BM25 weights use the corpus statistics as of each batch. Zero means 256.
	BatchFiles int
	Logger     *slog.Logger // nil discards
	// Progress, when set, is called (never concurrently) as files are found, parsed,
	// stored or skipped; the CLI draws its progress bar from it.
	Progress func(Event)
	Now      func() time.Time // nil means time.Now
}

// Options select what one Index run does.
type Options struct {
	Prune bool // delete stored documents whose source files under the given roots are gone
	Force bool // re-index files even when their content hash is unchanged
}

// Skip is a file that was not indexed, with the reason.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Summary reports an Index run.
type Summary struct {
	Files     int           `json:"files"`     // supported files found
	Indexed   int           `json:"indexed"`   // new or changed documents stored
	Unchanged int           `json:"unchanged"` // skipped because their content hash matched
	Removed   int           `json:"removed"`   // pruned documents
	Pages     int           `json:"pages"`     // PDF pages parsed
	Chunks    int           `json:"chunks"`    // chunks stored
	Skipped   []Skip        `json:"skipped,omitempty"`
	Failed    bool          `json:"failed"` // some supported file could not be indexed
	Elapsed   time.Duration `json:"elapsed_ns"`
}

// EventKind names a progress step.
type EventKind string

const (
	EventFound     EventKind = "found"     // the walk is done; Event.Files is the total
	EventParsed    EventKind = "parsed"    // a file was parsed and chunked
	EventUnchanged EventKind = "unchanged" // a file's content hash matched the stored one
	EventSkipped   EventKind = "skipped"   // a file was skipped; Event.Reason says why
	EventStored    EventKind = "stored"    // a document was encoded and stored
	EventRemoved   EventKind = "removed"   // a document was pruned
	EventBackfill  EventKind = "backfill"  // Backfill stored a batch; Event.Chunks counts all so far
)

// Event is one progress report. Done counts files finished (unchanged, skipped or stored)
// out of Files.
type Event struct {
	Kind   EventKind `json:"kind"`
	Path   string    `json:"path,omitempty"`
	Files  int       `json:"files"`
	Done   int       `json:"done"`
	Pages  int       `json:"pages,omitempty"`  // pages of the file (parsed, stored)
	Chunks int       `json:"chunks,omitempty"` // chunks of the file (parsed, stored); so far (backfill)
	Reason string    `json:"reason,omitempty"`
}

// Indexer walks folders and keeps a Store in step with the files in them. One Index call at
// a time per store.
type Indexer struct {
	cfg      Config
	log      *slog.Logger
	readFile func(string) ([]byte, error) // a seam for tests
}

// New validates cfg and fills its defaults.
func New(cfg Config) (*Indexer, error) {
	if cfg.Store == nil {
		return nil, errors.New("index: Config.Store is required")
	}
	if cfg.CountTokens != nil {
		cfg.Chunk.CountTokens = cfg.CountTokens
	}
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = pdf.DefaultMaxPages
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.EmbedBatch <= 0 {
		cfg.EmbedBatch = 32
	}
	if cfg.BatchFiles <= 0 {
		cfg.BatchFiles = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	seen := map[string]bool{}
	for _, e := range cfg.Embedders {
		name := e.Info().Name
		if seen[name] {
			return nil, fmt.Errorf("index: embedder %q configured twice", name)
		}
		seen[name] = true
	}
	return &Indexer{cfg: cfg, log: cfg.Logger.With("component", "index"), readFile: os.ReadFile}, nil
}

// DocID is the stable document id for a source path: the first 16 bytes of the sha256 of
// the cleaned absolute path, in hex.
func DocID(source string) string {
	if abs, err := filepath.Abs(source); err == nil {
		source = abs
	}
	sum := sha256.Sum256([]byte(filepath.Clean(source)))
	return hex.EncodeToString(sum[:16])
}

// Supported reports whether Index reads files with path's extension.
func Supported(path string) bool {
	return strings.EqualFold(filepath.Ext(path), ".pdf") || textfile.Kind(path) != ""
}

// parsed is one file after the parse phase.
type parsed struct {
	path      string
	doc       rag.Document
	chunks    []rag.Chunk
	tf        []rag.SparseVector
	terms     []int
	oldChunks int // chunks of the stored version it replaces
}

// Index brings the store in step with the files under paths (files or folders, walked
// recursively; hidden entries are ignored). Unchanged files are skipped by content hash;
// changed files replace their stored version all-or-nothing. A cancelled ctx stops the
// run between steps; a document is then either fully stored or left at its old version.
// The error is non-nil only when the run could not go on (ctx, the store, an embedder); a
// file that cannot be parsed is reported in Summary.Skipped and sets Summary.Failed.
func (ix *Indexer) Index(ctx context.Context, paths []string, opt Options) (sum Summary, _ error) {
	start := time.Now()
	defer func() { sum.Elapsed = time.Since(start) }()

	files, roots, skips := ix.walk(paths)
	sum.Files = len(files)
	for _, s := range skips {
		ix.skip(&sum, s, false)
	}
	var mu sync.Mutex // guards sum and emits from workers
	done := 0
	emit := func(e Event) {
		if ix.cfg.Progress != nil {
			e.Files, e.Done = sum.Files, done
			ix.cfg.Progress(e)
		}
	}
	emit(Event{Kind: EventFound})

	// Files go in batches: parse a batch concurrently, then encode and store its documents
	// one by one. Batches bound the memory a first run over a large library needs; a
	// library within one batch gets exact BM25 length normalisation.
	for start := 0; start < len(files); start += ix.cfg.BatchFiles {
		batch := files[start:min(len(files), start+ix.cfg.BatchFiles)]
		results := make([]*parsed, len(batch))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(ix.cfg.Workers)
		for i, path := range batch {
			if gctx.Err() != nil {
				break
			}
			g.Go(func() error {
				p, reason, err := ix.parse(gctx, path, opt.Force)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					return err
				case reason != "":
					done++
					ix.skip(&sum, Skip{Path: path, Reason: reason}, true)
					emit(Event{Kind: EventSkipped, Path: path, Reason: reason})
				case p == nil:
					done++
					sum.Unchanged++
					emit(Event{Kind: EventUnchanged, Path: path})
				default:
					results[i] = p
					emit(Event{Kind: EventParsed, Path: path, Pages: p.doc.Pages, Chunks: len(p.chunks)})
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return sum, err
		}
		if err := ctx.Err(); err != nil {
			return sum, err
		}

		// BM25 document weights need the mean chunk length of the corpus as it will be.
		avgdl, err := ix.avgdl(ctx, results)
		if err != nil {
			return sum, err
		}

		// Write phase: one document at a time, each all-or-nothing.
		for _, p := range results {
			if p == nil {
				continue
			}
			if err := ctx.Err(); err != nil {
				return sum, err
			}
			enc, err := ix.encode(ctx, p, avgdl)
			if err != nil {
				return sum, fmt.Errorf("encode %s: %w", p.path, err)
			}
			p.doc.IndexedAt = ix.cfg.Now().UTC()
			if err := ctx.Err(); err != nil {
				return sum, err // never start a write after cancellation
			}
			if err := ix.cfg.Store.Replace(ctx, p.doc, enc); err != nil {
				return sum, fmt.Errorf("store %s: %w", p.path, err)
			}
			done++
			sum.Indexed++
			sum.Pages += p.doc.Pages
			sum.Chunks += len(enc)
			ix.log.Info("indexed", "path", p.path, "pages", p.doc.Pages, "chunks", len(enc))
			emit(Event{Kind: EventStored, Path: p.path, Pages: p.doc.Pages, Chunks: len(enc)})
		}
	}

	if opt.Prune {
		if err := ix.prune(ctx, roots, &sum, emit); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

func (ix *Indexer) skip(sum *Summary, s Skip, failed bool) {
	sum.Skipped = append(sum.Skipped, s)
	if failed {
		sum.Failed = true
		ix.log.Warn("file not indexed", "path", s.Path, "reason", s.Reason)
	}
}

// walk expands paths into supported files (sorted, unique), the roots they came from and
// the entries it skipped. Hidden files and folders below a root are ignored silently.
func (ix *Indexer) walk(paths []string) (files, roots []string, skips []Skip) {
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	for _, root := range paths {
		abs, err := filepath.Abs(root)
		if err != nil {
			skips = append(skips, Skip{Path: root, Reason: err.Error()})
			continue
		}
		abs = filepath.Clean(abs)
		info, err := os.Stat(abs)
		if err != nil {
			skips = append(skips, Skip{Path: abs, Reason: reason(err)})
			if errors.Is(err, fs.ErrNotExist) {
				roots = append(roots, abs) // a folder deleted as a whole can still be pruned
			}
			continue
		}
		roots = append(roots, abs)
		if !info.IsDir() {
			if Supported(abs) {
				add(abs)
			} else {
				skips = append(skips, Skip{Path: abs, Reason: unsupported(abs)})
			}
			continue
		}
		_ = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				skips = append(skips, Skip{Path: p, Reason: reason(err)})
				if d != nil && d.IsDir() && p != abs {
					return fs.SkipDir
				}
				return nil
			}
			if p != abs && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			if Supported(p) {
				add(p)
			} else {
				skips = append(skips, Skip{Path: p, Reason: unsupported(p)})
			}
			return nil
		})
	}
	slices.Sort(files)
	return files, roots, skips
}

func unsupported(path string) string {
	ext := filepath.Ext(path)
	if ext == "" {
		return "unsupported file type (no extension)"
	}
	return fmt.Sprintf("unsupported file type %s", ext)
}

// reason turns a file error into a short sentence for Summary.Skipped.
func reason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "file not found"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return err.Error()
}

// parse reads, hashes and (unless unchanged) parses and chunks one file. It returns a nil
// result and empty reason for an unchanged file, a reason for a file that cannot be
// indexed, and an error only when the run must stop.
func (ix *Indexer) parse(ctx context.Context, path string, force bool) (p *parsed, why string, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, why, err = nil, fmt.Sprintf("parser crashed: %v", r), nil
		}
	}()
	data, err := ix.readFile(path)
	if err != nil {
		return nil, reason(err), nil
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	id := DocID(path)
	old, err := ix.cfg.Store.Document(ctx, id)
	switch {
	case errors.Is(err, rag.ErrNotFound):
	case err != nil:
		return nil, "", fmt.Errorf("look up %s: %w", path, err)
	case old.Hash == hash && !force:
		return nil, "", nil
	}

	var doc *chunk.Document
	if strings.EqualFold(filepath.Ext(path), ".pdf") {
		doc, err = pdf.Parse(ctx, data, pdf.Options{MaxPages: ix.cfg.MaxPages, Timeout: ix.cfg.ParseTimeout})
	} else {
		doc, err = textfile.Parse(path, data)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, err.Error(), nil
	}

	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	title := doc.Title
	if title == "" {
		title = name
	}
	p = &parsed{
		path:      path,
		oldChunks: old.Chunks,
		doc: rag.Document{
			ID: id, Source: path, Name: name, Kind: doc.Kind, Title: title, Authors: doc.Authors,
			Pages: doc.Pages, Lines: doc.Lines, Hash: hash,
		},
	}
	p.chunks = chunk.Split(doc, chunk.Meta{DocID: id, Hash: hash, Source: path, Name: name, Title: title}, ix.cfg.Chunk)
	if len(p.chunks) == 0 {
		return nil, "no text to index", nil
	}
	p.doc.Chunks = len(p.chunks)
	for _, c := range p.chunks {
		tf, n := bm25.Count(c.Text)
		p.tf = append(p.tf, tf)
		p.terms = append(p.terms, n)
	}
	return p, "", nil
}

// avgdl is the mean chunk length in analysed terms of the corpus after this run: the
// store's statistics, minus the versions being replaced (estimated at the stored mean, as
// the store keeps no per-document totals), plus the chunks about to be written. A corpus
// indexed in one run is therefore encoded exactly.
func (ix *Indexer) avgdl(ctx context.Context, results []*parsed) (float64, error) {
	var newChunks, oldChunks int
	var newTerms int64
	for _, p := range results {
		if p == nil {
			continue
		}
		newChunks += len(p.chunks)
		oldChunks += p.oldChunks
		for _, n := range p.terms {
			newTerms += int64(n)
		}
	}
	if newChunks == 0 {
		return 0, nil
	}
	st, err := ix.cfg.Store.Stats(ctx)
	if err != nil {
		return 0, fmt.Errorf("store stats: %w", err)
	}
	terms, chunks := float64(st.Terms), float64(st.Chunks)
	if st.Chunks > 0 && oldChunks > 0 {
		mean := terms / chunks
		drop := float64(min(oldChunks, st.Chunks))
		terms -= drop * mean
		chunks -= drop
	}
	terms += float64(newTerms)
	chunks += float64(newChunks)
	if chunks <= 0 || terms <= 0 {
		return 0, nil
	}
	return terms / chunks, nil
}

// encode computes BM25 weights and every dense embedding for one document's chunks.
func (ix *Indexer) encode(ctx context.Context, p *parsed, avgdl float64) ([]EncodedChunk, error) {
	out := make([]EncodedChunk, len(p.chunks))
	texts := make([]string, len(p.chunks))
	for i, c := range p.chunks {
		out[i] = EncodedChunk{
			Chunk:  c,
			Sparse: ix.cfg.BM25.Document(p.tf[i], p.terms[i], avgdl),
			Terms:  p.terms[i],
		}
		if len(ix.cfg.Embedders) > 0 {
			out[i].Dense = make(map[string][]float32, len(ix.cfg.Embedders))
		}
		texts[i] = c.Text
	}
	for _, e := range ix.cfg.Embedders {
		name := e.Info().Name
		vecs, err := ix.embed(ctx, e, texts)
		if err != nil {
			return nil, fmt.Errorf("embed with %s: %w", name, err)
		}
		for i, v := range vecs {
			out[i].Dense[name] = v
		}
	}
	return out, nil
}

// embed embeds texts in batches of EmbedBatch.
func (ix *Indexer) embed(ctx context.Context, e rag.Embedder, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += ix.cfg.EmbedBatch {
		batch := texts[start:min(len(texts), start+ix.cfg.EmbedBatch)]
		vecs, err := e.EmbedDocuments(ctx, batch)
		if err != nil {
			return nil, err
		}
		if len(vecs) != len(batch) {
			return nil, fmt.Errorf("got %d vectors for %d texts", len(vecs), len(batch))
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// prune deletes stored documents under roots whose source file no longer exists.
func (ix *Indexer) prune(ctx context.Context, roots []string, sum *Summary, emit func(Event)) error {
	docs, err := ix.cfg.Store.Documents(ctx)
	if err != nil {
		return fmt.Errorf("list documents: %w", err)
	}
	for _, d := range docs {
		if !under(d.Source, roots) {
			continue
		}
		if _, err := os.Stat(d.Source); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := ix.cfg.Store.Delete(ctx, d.ID); err != nil {
			return fmt.Errorf("delete %s: %w", d.Source, err)
		}
		sum.Removed++
		ix.log.Info("removed", "path", d.Source)
		emit(Event{Kind: EventRemoved, Path: d.Source})
	}
	return nil
}

// under reports whether path is one of roots or inside one of them.
func under(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, strings.TrimSuffix(r, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Backfill embeds, with the configured embedder named model, every stored chunk that has
// no vector for it yet (a model added after indexing), in batches. It returns how many
// chunks it embedded.
func (ix *Indexer) Backfill(ctx context.Context, model string) (int, error) {
	var emb rag.Embedder
	for _, e := range ix.cfg.Embedders {
		if e.Info().Name == model {
			emb = e
		}
	}
	if emb == nil {
		return 0, fmt.Errorf("backfill: no configured embedder named %q", model)
	}
	total := 0
	seen := map[string]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		missing, err := ix.cfg.Store.MissingDense(ctx, model, ix.cfg.EmbedBatch)
		if err != nil {
			return total, fmt.Errorf("backfill %s: %w", model, err)
		}
		if len(missing) == 0 {
			return total, nil
		}
		ids := make([]string, len(missing))
		texts := make([]string, len(missing))
		for i, c := range missing {
			if seen[c.ID] {
				return total, fmt.Errorf("backfill %s: store still reports chunk %s as missing after PutDense", model, c.ID)
			}
			seen[c.ID] = true
			ids[i], texts[i] = c.ID, c.Text
		}
		vecs, err := ix.embed(ctx, emb, texts)
		if err != nil {
			return total, fmt.Errorf("backfill %s: %w", model, err)
		}
		if err := ix.cfg.Store.PutDense(ctx, model, ids, vecs); err != nil {
			return total, fmt.Errorf("backfill %s: %w", model, err)
		}
		total += len(ids)
		if ix.cfg.Progress != nil {
			ix.cfg.Progress(Event{Kind: EventBackfill, Chunks: total})
		}
	}
}
