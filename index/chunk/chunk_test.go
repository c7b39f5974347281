package chunk

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/rag"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// words counts whitespace-separated words: a token counter whose results a reader can check.
func words(s string) int { return len(strings.Fields(s)) }

func sentence(topic string, i int) string {
	return fmt.Sprintf("Sentence %d about %s has exactly eight words.", i, topic)
}

func para(topic string, n int) string {
	var s []string
	for i := range n {
		s = append(s, sentence(topic, i))
	}
	return strings.Join(s, " ")
}

// doc builds a PDF-like document: each entry is a heading (when it starts with "#") or a
// paragraph on the given page.
func doc(entries ...any) *Document {
	d := &Document{Kind: KindPDF}
	var section []string
	page := 1
	for _, e := range entries {
		switch v := e.(type) {
		case int:
			page = v
		case string:
			if h, ok := strings.CutPrefix(v, "#"); ok {
				level := 1
				for strings.HasPrefix(h, "#") {
					h = h[1:]
					level++
				}
				section = append(append([]string(nil), section[:min(level-1, len(section))]...), h)
				d.Append(Block{Text: h, Section: section, Heading: true, PageStart: page, PageEnd: page})
				continue
			}
			d.Append(Block{Text: v, Section: section, PageStart: page, PageEnd: page})
		}
	}
	return d
}

func checkInvariants(t *testing.T, d *Document, chunks []rag.Chunk, opt Options) {
	t.Helper()
	opt = opt.withDefaults()
	ids := map[string]bool{}
	for i, c := range chunks {
		if c.Index != i {
			t.Errorf("chunk %d has Index %d", i, c.Index)
		}
		if got := d.Text[c.CharStart:c.CharEnd]; got != c.Text {
			t.Errorf("chunk %d: Text differs from doc.Text[%d:%d]", i, c.CharStart, c.CharEnd)
		}
		if n := opt.CountTokens(c.Text); n != c.Tokens {
			t.Errorf("chunk %d: Tokens = %d, counted %d", i, c.Tokens, n)
		}
		if c.Tokens > opt.Max {
			t.Errorf("chunk %d: %d tokens > max %d", i, c.Tokens, opt.Max)
		}
		if c.Text != strings.TrimSpace(c.Text) {
			t.Errorf("chunk %d has surrounding space: %q", i, c.Text)
		}
		// Never mid-word: the characters around the span are spaces or the text's ends.
		if c.CharStart > 0 && !unicode.IsSpace(rune(d.Text[c.CharStart-1])) {
			t.Errorf("chunk %d starts mid-word: %q", i, d.Text[max(0, c.CharStart-10):c.CharStart+10])
		}
		if c.CharEnd < len(d.Text) && !unicode.IsSpace(rune(d.Text[c.CharEnd])) {
			t.Errorf("chunk %d ends mid-word: %q", i, d.Text[c.CharEnd-10:min(len(d.Text), c.CharEnd+10)])
		}
		checkPageBreaks(t, d, c)
		if ids[c.ID] {
			t.Errorf("duplicate id %s", c.ID)
		}
		ids[c.ID] = true
	}
}

// checkPageBreaks resolves the page of every block's first byte within the chunk through
// PageBreaks and compares it with the block's page, so a break that is off by one block
// (or missing) cites the wrong page and fails.
func checkPageBreaks(t *testing.T, d *Document, c rag.Chunk) {
	t.Helper()
	if want := max(c.PageEnd-c.PageStart, 0); len(c.PageBreaks) != want {
		t.Errorf("chunk %d: %d page breaks for pages %d-%d", c.Index, len(c.PageBreaks), c.PageStart, c.PageEnd)
		return
	}
	for _, b := range d.Blocks {
		if b.CharEnd <= c.CharStart || b.CharStart >= c.CharEnd || b.PageStart == 0 {
			continue
		}
		off := max(b.CharStart, c.CharStart) - c.CharStart
		page := c.PageStart
		for _, br := range c.PageBreaks {
			if off >= br {
				page++
			}
		}
		if page != b.PageStart {
			t.Errorf("chunk %d: block %q at offset %d resolves to page %d, want %d", c.Index, b.Text[:min(20, len(b.Text))], off, page, b.PageStart)
		}
	}
}

// TestPageBreaks splits paragraphs spread over pages, including a page that holds no text
// (a full-page figure), into multi-page chunks.
func TestPageBreaks(t *testing.T) {
	opt := Options{Min: 5, Max: 40, Window: 30, Overlap: 5, CountTokens: words}
	d := doc("#1 A", sentence("a", 0), 2, sentence("b", 0), sentence("b", 1), 4, sentence("d", 0),
		5, sentence("e", 0), sentence("e", 1), sentence("e", 2), 6, sentence("f", 0))
	chunks := Split(d, Meta{Hash: "p"}, opt)
	checkInvariants(t, d, chunks, opt)
	multi := 0
	for _, c := range chunks {
		if c.PageEnd > c.PageStart {
			multi++
		}
	}
	if multi == 0 {
		t.Fatalf("no chunk spans pages; the test checks nothing: %+v", chunks)
	}
	// Page 3 has no block: it begins where page 4 does.
	c := chunks[0]
	if c.PageStart != 1 || c.PageEnd < 4 {
		t.Fatalf("first chunk spans pages %d-%d, want 1 to at least 4", c.PageStart, c.PageEnd)
	}
	if c.PageBreaks[1] != c.PageBreaks[2] || !strings.HasPrefix(c.Text[c.PageBreaks[2]:], sentence("d", 0)) {
		t.Errorf("page 3 (empty) should begin where page 4 does, at %q: breaks %v", sentence("d", 0), c.PageBreaks)
	}
}

func TestSplitSections(t *testing.T) {
	opt := Options{Min: 5, Max: 60, Window: 40, Overlap: 10, CountTokens: words}
	d := doc("#1 Intro", para("intro", 2), "#2 Method", para("method", 2), "##2.1 Detail", para("detail", 2))
	chunks := Split(d, Meta{Hash: "abc"}, opt)
	checkInvariants(t, d, chunks, opt)
	var got [][]string
	for _, c := range chunks {
		got = append(got, c.Section)
	}
	want := [][]string{{"1 Intro"}, {"2 Method"}, {"2 Method", "2.1 Detail"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(chunks[2].Text, "2.1 Detail\n\nSentence 0 about detail") {
		t.Errorf("chunk does not start with its heading: %q", chunks[2].Text)
	}
}

func TestSplitPacksParagraphs(t *testing.T) {
	opt := Options{Min: 5, Max: 30, Window: 20, Overlap: 5, CountTokens: words}
	// Eight-word paragraphs: three fit in 30 tokens, four do not.
	var entries []any
	entries = append(entries, "#1 A")
	for i := range 7 {
		entries = append(entries, sentence("p", i))
	}
	d := doc(entries...)
	chunks := Split(d, Meta{Hash: "abc"}, opt)
	checkInvariants(t, d, chunks, opt)
	var sizes []int
	for _, c := range chunks {
		sizes = append(sizes, c.Tokens)
	}
	// Heading (2 words) + 3 paragraphs = 26, then 3 paragraphs = 24, then the last one
	// (8 words) is above Min so it stays alone.
	if diff := cmp.Diff([]int{26, 24, 8}, sizes); diff != "" {
		t.Errorf("chunk sizes (-want +got):\n%s", diff)
	}
}

func TestSplitMergesSmallFragments(t *testing.T) {
	opt := Options{Min: 12, Max: 60, Window: 40, Overlap: 10, CountTokens: words}
	t.Run("within section", func(t *testing.T) {
		d := doc("#1 A", para("a", 5), "A short tail.")
		// 2+45+3 words fit in 60: one chunk.
		chunks := Split(d, Meta{Hash: "h"}, opt)
		checkInvariants(t, d, chunks, opt)
		if len(chunks) != 1 {
			t.Fatalf("got %d chunks, want 1", len(chunks))
		}
	})
	t.Run("across sections", func(t *testing.T) {
		// "3 Model Architecture" has only its heading and one short line; it merges
		// into the next section's chunk, which is larger and keeps its section.
		d := doc("#1 A", para("a", 6), "#3 Model Architecture", "Intro line.", "##3.1 Stacks", para("stack", 3))
		chunks := Split(d, Meta{Hash: "h"}, opt)
		checkInvariants(t, d, chunks, opt)
		var got [][]string
		for _, c := range chunks {
			got = append(got, c.Section)
		}
		want := [][]string{{"1 A"}, {"3 Model Architecture", "3.1 Stacks"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("sections (-want +got):\n%s", diff)
		}
		if !strings.HasPrefix(chunks[1].Text, "3 Model Architecture") {
			t.Errorf("merged chunk starts %q", chunks[1].Text[:30])
		}
	})
}

func TestSplitWindows(t *testing.T) {
	opt := Options{Min: 5, Max: 50, Window: 40, Overlap: 10, CountTokens: words}
	long := para("long", 20) // 180 words in one paragraph
	d := doc("#1 Long", 4, long)
	chunks := Split(d, Meta{Hash: "h"}, opt)
	checkInvariants(t, d, chunks, opt)
	if len(chunks) < 5 {
		t.Fatalf("got %d chunks, want at least 5", len(chunks))
	}
	for i, c := range chunks[1:] {
		if c.PageStart != 4 || c.PageEnd != 4 {
			t.Errorf("window %d pages %d-%d, want 4", i, c.PageStart, c.PageEnd)
		}
		if c.Tokens > opt.Window {
			t.Errorf("window %d has %d tokens > window %d", i, c.Tokens, opt.Window)
		}
		// Windows cut at sentence ends and overlap by one sentence (eight words <= 10).
		if !strings.HasSuffix(c.Text, ".") || !strings.HasPrefix(c.Text, "Sentence") {
			t.Errorf("window %d not on sentence boundaries: %q", i, c.Text)
		}
		prev := chunks[i]
		if c.CharStart >= prev.CharEnd {
			t.Errorf("window %d does not overlap the previous one", i+1)
		}
	}
	last := chunks[len(chunks)-1]
	if !strings.HasSuffix(last.Text, sentence("long", 19)) {
		t.Errorf("last window %q does not reach the end", last.Text)
	}
}

func TestSplitLongSentence(t *testing.T) {
	opt := Options{Min: 5, Max: 30, Window: 20, Overlap: 4, CountTokens: words}
	var w []string
	for i := range 100 {
		w = append(w, fmt.Sprintf("w%d", i))
	}
	d := &Document{Kind: KindText}
	d.Append(Block{Text: strings.Join(w, " "), LineStart: 1, LineEnd: 1})
	chunks := Split(d, Meta{Hash: "h"}, opt)
	checkInvariants(t, d, chunks, opt)
	covered := map[string]bool{}
	for _, c := range chunks {
		for _, f := range strings.Fields(c.Text) {
			covered[f] = true
		}
		if c.LineStart != 1 || c.LineEnd != 1 {
			t.Errorf("lines %d-%d, want 1-1", c.LineStart, c.LineEnd)
		}
	}
	if len(covered) != 100 {
		t.Errorf("windows cover %d of 100 words", len(covered))
	}
}

func TestSplitLines(t *testing.T) {
	// A code-like block: lines advance with newlines inside windows.
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("line%d a b c d", i+1))
	}
	d := &Document{Kind: KindCode, Text: strings.Join(lines, "\n")}
	d.Blocks = []Block{{Text: d.Text, LineStart: 1, LineEnd: 30, CharStart: 0, CharEnd: len(d.Text)}}
	opt := Options{Min: 5, Max: 40, Window: 30, Overlap: 5, CountTokens: words}
	chunks := Split(d, Meta{Hash: "h"}, opt)
	checkInvariants(t, d, chunks, opt)
	for _, c := range chunks {
		first := strings.Fields(c.Text)[0]
		lastLine := c.Text[strings.LastIndexByte(c.Text, '\n')+1:]
		if want := fmt.Sprintf("line%d", c.LineStart); first != want {
			t.Errorf("chunk starting %q says line %d", first, c.LineStart)
		}
		if want := fmt.Sprintf("line%d", c.LineEnd); strings.Fields(lastLine)[0] != want {
			t.Errorf("chunk ending in %q says line %d", lastLine, c.LineEnd)
		}
	}
}

func TestIDsStable(t *testing.T) {
	d := doc("#1 A", para("a", 30), "#2 B", para("b", 30))
	opt := Options{CountTokens: words, Max: 100, Window: 80, Min: 10}
	a := Split(d, Meta{Hash: "h1"}, opt)
	b := Split(doc("#1 A", para("a", 30), "#2 B", para("b", 30)), Meta{Hash: "h1"}, opt)
	c := Split(d, Meta{Hash: "h2"}, opt)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("re-split differs (-first +second):\n%s", diff)
	}
	if a[0].ID == c[0].ID {
		t.Error("different content hash gave the same chunk id")
	}
	if a[0].ID != ID("", "h1", 0) || len(a[0].ID) != 32 {
		t.Errorf("id = %q, want ID(\"\", h1, 0) = %q", a[0].ID, ID("", "h1", 0))
	}
	if ID("doc1", "h1", 0) == ID("doc2", "h1", 0) {
		t.Error("the same content at two paths gave the same chunk id")
	}
}

func TestCountTokens(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"Attention Is All You Need", 5},
		{"<|endoftext|>", 7}, // plain text, not a special token
	}
	for _, c := range cases {
		if got := CountTokens(c.in); got != c.want {
			t.Errorf("CountTokens(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestSentences(t *testing.T) {
	text := "We use BERT (Devlin et al., 2019). Results are in Fig. 3 and e.g. Table 2. It works! Does it? Yes.\n\nNew paragraph"
	var got []string
	for _, s := range sentences(text, 0, len(text)) {
		got = append(got, text[s[0]:s[1]])
	}
	want := []string{
		"We use BERT (Devlin et al., 2019).",
		"Results are in Fig. 3 and e.g. Table 2.",
		"It works!",
		"Does it?",
		"Yes.",
		"New paragraph",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sentences (-want +got):\n%s", diff)
	}
}

// TestGolden pins the chunker's output for a small document with the real tokenizer.
func TestGolden(t *testing.T) {
	d := doc(
		"#Abstract", "We study chunking of research papers. "+para("abstract", 3),
		"#1 Introduction", para("introduction", 12), para("motivation", 30),
		2, "#2 Method", "Short.", "##2.1 Windows", para("windows", 80),
		3, "#References", "[1] A. Author. A paper. 2020.",
	)
	chunks := Split(d, Meta{DocID: "doc", Hash: "golden", Source: "/papers/x.pdf", Name: "x", Title: "X"}, Options{})
	checkInvariants(t, d, chunks, Options{})
	got, err := json.MarshalIndent(chunks, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(strings.TrimSpace(string(want)), strings.TrimSpace(string(got))); diff != "" {
		t.Errorf("chunks differ from %s (-want +got):\n%s", path, diff)
	}
}
