// Package textfile parses line-based files — Markdown, plain text and source code — into
// chunk.Documents whose blocks carry line ranges instead of pages. Markdown headings (ATX
// "#" and setext underlines) become sections; other files are split at blank lines.
package textfile

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/footnote-dev/footnote/index/chunk"
)

// ErrBinary reports a file that is not text (NUL bytes or mostly invalid UTF-8).
var ErrBinary = errors.New("binary file")

// ErrEmpty reports a file with no text.
var ErrEmpty = errors.New("empty file")

var kinds = map[string]string{
	".md": chunk.KindMarkdown, ".markdown": chunk.KindMarkdown,
	".txt": chunk.KindText, ".text": chunk.KindText, ".rst": chunk.KindText,
	".go": chunk.KindCode, ".py": chunk.KindCode, ".js": chunk.KindCode, ".ts": chunk.KindCode,
	".java": chunk.KindCode, ".c": chunk.KindCode, ".h": chunk.KindCode, ".cpp": chunk.KindCode,
	".cc": chunk.KindCode, ".hpp": chunk.KindCode, ".rs": chunk.KindCode, ".sh": chunk.KindCode,
	".yaml": chunk.KindCode, ".yml": chunk.KindCode, ".json": chunk.KindCode, ".html": chunk.KindCode,
	".css": chunk.KindCode, ".toml": chunk.KindCode, ".sql": chunk.KindCode,
}

// Kind returns the document kind for path's extension ("markdown", "text" or "code"), or ""
// when this package does not handle it.
func Kind(path string) string { return kinds[strings.ToLower(filepath.Ext(path))] }

// Parse reads data as the file at path (the extension picks the kind; the base name is the
// fallback title).
func Parse(path string, data []byte) (*chunk.Document, error) {
	kind := Kind(path)
	if kind == "" {
		return nil, fmt.Errorf("unsupported file type %q", filepath.Ext(path))
	}
	text, err := decode(data)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(text) == "" {
		return nil, ErrEmpty
	}
	d := &chunk.Document{Kind: kind, Text: text}
	lines := splitLines(text)
	d.Lines = len(lines)
	if kind == chunk.KindMarkdown {
		markdown(d, lines)
	} else {
		paragraphs(d, lines)
	}
	if d.Title == "" {
		d.Title = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return d, nil
}

// decode checks that data is text and returns it with a BOM removed and line endings
// normalised to \n.
func decode(data []byte) (string, error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return "", fmt.Errorf("%w: contains NUL bytes", ErrBinary)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		bad := 0
		for i := 0; i < len(data); {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n == 1 {
				bad++
			}
			i += n
		}
		if bad*10 > len(data) {
			return "", fmt.Errorf("%w: %d of %d bytes are not UTF-8", ErrBinary, bad, len(data))
		}
		data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
	}
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n"), nil
}

// span is one line: text[start:end] without its newline.
type span struct{ start, end int }

func splitLines(text string) []span {
	var out []span
	start := 0
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			out = append(out, span{start, i})
			start = i + 1
		}
	}
	if start < len(text) {
		out = append(out, span{start, len(text)})
	}
	return out
}

func blank(text string, l span) bool { return strings.TrimSpace(text[l.start:l.end]) == "" }

// block makes a block of lines[i:j] (0-based) with the given section.
func block(d *chunk.Document, lines []span, i, j int, section []string, heading bool) chunk.Block {
	start, end := lines[i].start, lines[j-1].end
	return chunk.Block{
		Text: d.Text[start:end], Section: section, Heading: heading,
		LineStart: i + 1, LineEnd: j, CharStart: start, CharEnd: end,
	}
}

// paragraphs splits plain text and code at blank lines.
func paragraphs(d *chunk.Document, lines []span) {
	for i := 0; i < len(lines); {
		if blank(d.Text, lines[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(lines) && !blank(d.Text, lines[j]) {
			j++
		}
		d.Blocks = append(d.Blocks, block(d, lines, i, j, nil, false))
		i = j
	}
}

var (
	reATX    = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	reSetext = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	reFence  = regexp.MustCompile("^ {0,3}(```+|~~~+)")
)

// markdown splits at headings, blank lines and fenced code blocks (kept whole).
func markdown(d *chunk.Document, lines []span) {
	var section []string
	setSection := func(level int, name string) {
		section = append(append([]string(nil), section[:min(level-1, len(section))]...), name)
		if level == 1 && d.Title == "" {
			d.Title = name
		}
	}
	text := func(i int) string { return d.Text[lines[i].start:lines[i].end] }
	for i := 0; i < len(lines); {
		if blank(d.Text, lines[i]) {
			i++
			continue
		}
		if m := reFence.FindStringSubmatch(text(i)); m != nil {
			j := i + 1
			for j < len(lines) && !strings.HasPrefix(strings.TrimSpace(text(j)), m[1]) {
				j++
			}
			j = min(j+1, len(lines))
			d.Blocks = append(d.Blocks, block(d, lines, i, j, section, false))
			i = j
			continue
		}
		if m := reATX.FindStringSubmatch(text(i)); m != nil && strings.TrimSpace(m[2]) != "" {
			setSection(len(m[1]), strings.TrimSpace(m[2]))
			d.Blocks = append(d.Blocks, block(d, lines, i, i+1, section, true))
			i++
			continue
		}
		// A paragraph runs to a blank line, a heading or a fence; a setext underline turns
		// its last line into a heading.
		j := i + 1
		for j < len(lines) && !blank(d.Text, lines[j]) && !reFence.MatchString(text(j)) && reATX.FindStringSubmatch(text(j)) == nil {
			if m := reSetext.FindStringSubmatch(text(j)); m != nil {
				break
			}
			j++
		}
		if j < len(lines) && reSetext.MatchString(text(j)) && !blank(d.Text, lines[j-1]) {
			if j-1 > i {
				d.Blocks = append(d.Blocks, block(d, lines, i, j-1, section, false))
			}
			level := 1
			if strings.Contains(text(j), "-") {
				level = 2
			}
			setSection(level, strings.TrimSpace(text(j-1)))
			d.Blocks = append(d.Blocks, block(d, lines, j-1, j+1, section, true))
			i = j + 1
			continue
		}
		d.Blocks = append(d.Blocks, block(d, lines, i, j, section, false))
		i = j
	}
}
