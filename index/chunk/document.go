// Package chunk cuts parsed documents into retrievable passages. It also defines Document,
// the parsers' output (index/pdf, index/textfile) and the chunker's input: the full extracted
// text plus its blocks (headings and paragraphs, or runs of lines), each with its section path,
// page or line range and offsets into the text.
package chunk

import "strings"

// Document kinds, as stored in rag.Document.Kind.
const (
	KindPDF      = "pdf"
	KindMarkdown = "markdown"
	KindText     = "text"
	KindCode     = "code"
)

// Document is a parsed file.
type Document struct {
	Kind    string
	Title   string
	Authors []string
	Pages   int // PDF page count; 0 for line-based files
	Lines   int // line count for line-based files

	// Text is the document's extracted text. Every Block is Text[CharStart:CharEnd], and a
	// chunk's text is the span of Text from its first block to its last, so chunk offsets
	// point into Text. Offsets are byte offsets.
	Text   string
	Blocks []Block

	buf *strings.Builder // Append's buffer, so building Text stays linear
}

// Block is a heading or a paragraph (PDF), or a run of lines (text, Markdown, code). A
// PDF block never spans pages.
type Block struct {
	Text    string
	Section []string // outermost first; a heading's path ends with itself
	Heading bool

	PageStart, PageEnd int // 1-based, inclusive; zero for line-based files
	LineStart, LineEnd int // 1-based, inclusive; zero for PDFs

	CharStart, CharEnd int // Text[CharStart:CharEnd] == Block.Text
}

// Append adds b to the end of d, separated from the previous block by a blank line, and
// sets b's offsets. Parsers that build Text from blocks (PDF) use it; parsers that keep the
// original file as Text (textfile) set the offsets themselves.
func (d *Document) Append(b Block) {
	if b.Text == "" {
		return
	}
	if d.buf == nil || d.buf.Len() != len(d.Text) {
		d.buf = new(strings.Builder)
		d.buf.WriteString(d.Text)
	}
	if d.buf.Len() > 0 {
		d.buf.WriteString("\n\n")
	}
	b.CharStart = d.buf.Len()
	d.buf.WriteString(b.Text)
	b.CharEnd = d.buf.Len()
	d.Text = d.buf.String()
	d.Blocks = append(d.Blocks, b)
}
