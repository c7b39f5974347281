// Package pdf extracts text from PDF files with MuPDF (through go-fitz, which only this
// package imports): per-page text with exact 1-based page numbers, reading order across two
// columns, running headers, footers and page numbers removed, line-break hyphens undone,
// ligatures normalised, title and authors, and a section path for every paragraph from the
// headings' fonts and numbering and from the PDF outline.
//
// Parse runs MuPDF in a child process (this program re-executed; see Parse), because a
// malformed file can make MuPDF abort the process it runs in.
//
// MuPDF and go-fitz are AGPL-3.0.
package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gen2brain/go-fitz"

	"github.com/footnote-dev/footnote/index/chunk"
)

// Errors for files that cannot be indexed. Parse wraps them with detail; test with errors.Is.
var (
	ErrEmpty        = errors.New("empty file")
	ErrCorrupt      = errors.New("not a readable PDF")
	ErrEncrypted    = errors.New("PDF is password protected")
	ErrNoText       = errors.New("PDF has no text layer (scanned or image-only)")
	ErrTooManyPages = errors.New("PDF has too many pages")
)

// DefaultMaxPages is the page limit when Options.MaxPages is zero.
const DefaultMaxPages = 2000

// Options tune parsing.
type Options struct {
	// MaxPages refuses longer documents with ErrTooManyPages; zero means DefaultMaxPages.
	MaxPages int
	// InProcess parses in the calling process. By default MuPDF runs in a child process
	// (see Parse), because a malformed file can make it abort the whole process.
	InProcess bool
	// Timeout bounds the child process, so that a file MuPDF loops on cannot stall
	// indexing; zero means DefaultTimeout. In process, only ctx stops parsing.
	Timeout time.Duration
}

// DefaultTimeout is the parse time limit when Options.Timeout is zero: far above the
// seconds the largest papers take.
const DefaultTimeout = 5 * time.Minute

// Open reads and parses the PDF at path.
func Open(ctx context.Context, path string, opt Options) (*chunk.Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(ctx, data, opt)
}

// Parse extracts the document in data. A cancelled ctx stops it with ctx.Err(). Files that
// cannot be indexed give an error wrapping ErrEmpty, ErrCorrupt, ErrEncrypted, ErrNoText or
// ErrTooManyPages.
//
// MuPDF aborts the process on some malformed files (errors raised outside go-fitz's
// fz_try blocks, seen with broken embedded fonts), which no recover can catch. Unless
// opt.InProcess is set, Parse therefore runs the extraction in a child process — this
// program's own executable, which this package's init turns into a parser when started
// with FOOTNOTE_PDF_WORKER=1 — so that a crash costs one file, reported as ErrCorrupt.
// When the child cannot be started Parse falls back to parsing in process.
func Parse(ctx context.Context, data []byte, opt Options) (*chunk.Document, error) {
	if opt.MaxPages <= 0 {
		opt.MaxPages = DefaultMaxPages
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if err := precheck(data); err != nil {
		return nil, err
	}
	if !opt.InProcess {
		if d, err, ok := parseInChild(ctx, data, opt); ok {
			return d, err
		}
	}
	return parse(ctx, data, opt)
}

// precheck rejects what is clearly not a PDF without starting MuPDF.
func precheck(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return ErrEmpty
	}
	if !bytes.Contains(data[:min(len(data), 1024)], []byte("%PDF-")) {
		return fmt.Errorf("%w: no PDF header", ErrCorrupt)
	}
	return nil
}

// parse extracts the document with MuPDF in this process.
func parse(ctx context.Context, data []byte, opt Options) (doc *chunk.Document, err error) {
	// MuPDF reports errors through setjmp/longjmp inside go-fitz; a panic escaping the
	// wrapper must not take the indexer down with it.
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("%w: mupdf: %v", ErrCorrupt, r)
		}
	}()

	f, err := fitz.NewFromMemory(data)
	if f != nil {
		defer f.Close()
	}
	switch {
	case errors.Is(err, fitz.ErrNeedsPassword):
		return nil, ErrEncrypted
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	n := f.NumPage()
	switch {
	case n <= 0:
		return nil, fmt.Errorf("%w: no pages", ErrEmpty)
	case n > opt.MaxPages:
		return nil, fmt.Errorf("%w: %d pages, limit %d", ErrTooManyPages, n, opt.MaxPages)
	}

	render := func(i int) (string, error) { return f.HTML(i, false) }
	if fast, ok := openFast(data); ok && !slowHTML {
		defer fast.close()
		render = func(i int) (string, error) {
			if h, err := fast.html(i); err == nil {
				return h, nil
			}
			return f.HTML(i, false)
		}
	}
	pages := make([]page, 0, n)
	failed := 0
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, err := render(i)
		if err != nil {
			failed++
			pages = append(pages, page{number: i + 1, width: 612, height: 792})
			continue
		}
		pages = append(pages, parseHTML(h, i+1))
	}
	if failed == n {
		return nil, fmt.Errorf("%w: no page could be read", ErrCorrupt)
	}

	meta := f.Metadata()
	var toc []outline
	if entries, err := f.ToC(); err == nil { // an error only means there is no outline
		for _, e := range entries {
			toc = append(toc, outline{level: e.Level, title: normalize(e.Title), page: e.Page + 1, top: e.Top})
		}
	}
	d := build(pages, toc, cleanMeta(meta["title"]), cleanMeta(meta["author"]))
	if strings.TrimSpace(d.Text) == "" {
		// A file MuPDF had to repair and that then yields nothing is broken, not scanned.
		if !bytes.Contains(data[max(0, len(data)-2048):], []byte("%%EOF")) {
			return nil, fmt.Errorf("%w: truncated (no %%%%EOF) and no text", ErrCorrupt)
		}
		return nil, ErrNoText
	}
	d.Pages = n
	return d, nil
}

// cleanMeta trims go-fitz's fixed-size metadata buffer (NUL padded) and whitespace.
func cleanMeta(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(normalize(s))
}

// slowHTML forces go-fitz's HTML rendering (with images); tests compare the two paths.
var slowHTML bool
