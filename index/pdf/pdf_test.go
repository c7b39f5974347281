package pdf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/index/chunk"
	"github.com/footnote-dev/footnote/index/pdf/pdftest"
	"github.com/footnote-dev/footnote/internal/corpustest"
)

const (
	leftPara  = "Alpha words fill the left column first. They describe the encoder in plain terms. Every line here belongs to the left side of the page and should be read before the right side."
	rightPara = "Bravo words fill the right column next. They describe the decoder in plain terms. Every line here belongs to the right side of the page and comes after the left side."
	quokka    = "The quokka measurement appears only on the fifth page."
)

// paper builds a five-page synthetic paper: a title in a large bold font, running header
// and page-number footer on every page, numbered bold headings at two sizes, a paragraph
// with line-break hyphens, a two-column page whose content stream interleaves the columns
// line by line, and a sentence that occurs only on page 5.
func paper(t *testing.T, opt pdftest.Options) []byte {
	t.Helper()
	header := func(n int) []pdftest.Text {
		return []pdftest.Text{
			{X: 250, Y: 40, Size: 8, S: "Preprint under review"},
			{X: 300, Y: 760, Size: 9, S: strconv.Itoa(n)},
		}
	}
	body := func(y float64, text string) ([]pdftest.Text, float64) {
		ts, y := pdftest.Paragraph(72, y, 12, 85, text)
		return ts, y + 10
	}
	var pages []pdftest.Page

	// Page 1: title, abstract, introduction with hyphenated line breaks.
	p1 := header(1)
	p1 = append(p1,
		pdftest.Text{X: 150, Y: 90, Size: 18, Bold: true, S: "A Synthetic Study of"},
		pdftest.Text{X: 150, Y: 112, Size: 18, Bold: true, S: "Chunking Documents"},
		pdftest.Text{X: 200, Y: 140, Size: 10, S: "Ada Example and Bob Sample"},
		pdftest.Text{X: 72, Y: 180, Size: 12, Bold: true, S: "Abstract"},
	)
	ts, y := body(198, "We present a synthetic paper used to test extraction. It has headings, columns and hyphens.")
	p1 = append(p1, ts...)
	p1 = append(p1, pdftest.Text{X: 72, Y: y + 10, Size: 12, Bold: true, S: "1 Introduction"})
	y += 28
	for _, l := range []string{
		"We study how learned repre-",
		"sentations behave when the self-",
		"attention layers are removed, and we keep the self-attention",
		"mechanism as the baseline of this work.",
	} {
		p1 = append(p1, pdftest.Text{X: 72, Y: y, S: l})
		y += 12
	}
	pages = append(pages, pdftest.Page{Texts: p1})

	// Page 2: two columns written line by line across both.
	p2 := header(2)
	p2 = append(p2,
		pdftest.Text{X: 72, Y: 80, Size: 12, Bold: true, S: "2 Method"},
		pdftest.Text{X: 320, Y: 80, Size: 10, Bold: true, S: "2.1 Encoder Details"},
	)
	left, _ := pdftest.Paragraph(72, 100, 12, 40, leftPara)
	right, _ := pdftest.Paragraph(320, 100, 12, 40, rightPara)
	for i := range max(len(left), len(right)) {
		if i < len(left) {
			p2 = append(p2, left[i])
		}
		if i < len(right) {
			p2 = append(p2, right[i])
		}
	}
	pages = append(pages, pdftest.Page{Texts: p2})

	// Pages 3 and 4: results text; page 5: the quokka and references.
	for n := 3; n <= 4; n++ {
		p := header(n)
		if n == 3 {
			p = append(p, pdftest.Text{X: 72, Y: 80, Size: 12, Bold: true, S: "3 Results"})
		}
		ts, _ := body(100, strings.Repeat(fmt.Sprintf("Result sentence number %d reports a value on page %d. ", n*10, n), 6))
		pages = append(pages, pdftest.Page{Texts: append(p, ts...)})
	}
	p5 := header(5)
	ts, y = body(100, quokka+" It closes the results.")
	p5 = append(p5, ts...)
	p5 = append(p5, pdftest.Text{X: 72, Y: y + 10, Size: 12, Bold: true, S: "References"})
	ts, _ = body(y+28, "[1] A. Author. A referenced work. 2020.")
	p5 = append(p5, ts...)
	pages = append(pages, pdftest.Page{Texts: p5})
	return pdftest.Build(pages, opt)
}

func blockWith(t *testing.T, d *chunk.Document, s string) chunk.Block {
	t.Helper()
	for _, b := range d.Blocks {
		if strings.Contains(b.Text, s) {
			return b
		}
	}
	t.Fatalf("no block contains %q; text:\n%s", s, d.Text)
	return chunk.Block{}
}

func TestParseSyntheticPaper(t *testing.T) {
	d, err := Parse(t.Context(), paper(t, pdftest.Options{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Pages != 5 {
		t.Errorf("pages = %d, want 5", d.Pages)
	}
	if want := "A Synthetic Study of Chunking Documents"; d.Title != want {
		t.Errorf("title = %q, want %q", d.Title, want)
	}
	for _, b := range d.Blocks {
		if got := d.Text[b.CharStart:b.CharEnd]; got != b.Text {
			t.Fatalf("block offsets [%d,%d) give %q, want %q", b.CharStart, b.CharEnd, got, b.Text)
		}
	}

	t.Run("sections", func(t *testing.T) {
		var got [][]string
		for _, b := range d.Blocks {
			if b.Heading {
				got = append(got, b.Section)
			}
		}
		want := [][]string{
			{"Abstract"},
			{"1 Introduction"},
			{"2 Method"},
			{"2 Method", "2.1 Encoder Details"},
			{"3 Results"},
			{"References"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("heading paths (-want +got):\n%s", diff)
		}
		cases := []struct {
			text    string
			section []string
			page    int
		}{
			{"synthetic paper used to test", []string{"Abstract"}, 1},
			{"We study how", []string{"1 Introduction"}, 1},
			{"Alpha words", []string{"2 Method"}, 2},
			{"Bravo words", []string{"2 Method", "2.1 Encoder Details"}, 2},
			{"Result sentence number 30", []string{"3 Results"}, 3},
			{"Result sentence number 40", []string{"3 Results"}, 4},
			{"quokka", []string{"3 Results"}, 5},
			{"A referenced work", []string{"References"}, 5},
		}
		for _, c := range cases {
			b := blockWith(t, d, c.text)
			if diff := cmp.Diff(c.section, b.Section); diff != "" {
				t.Errorf("%q: section (-want +got):\n%s", c.text, diff)
			}
			if b.PageStart != c.page || b.PageEnd != c.page {
				t.Errorf("%q: pages %d-%d, want %d", c.text, b.PageStart, b.PageEnd, c.page)
			}
		}
	})

	t.Run("two columns", func(t *testing.T) {
		l := blockWith(t, d, "Alpha words")
		r := blockWith(t, d, "Bravo words")
		if l.Text != leftPara {
			t.Errorf("left column paragraph:\n got %q\nwant %q", l.Text, leftPara)
		}
		if r.Text != rightPara {
			t.Errorf("right column paragraph:\n got %q\nwant %q", r.Text, rightPara)
		}
		if l.CharEnd > r.CharStart {
			t.Errorf("left column (ends %d) not before right column (starts %d)", l.CharEnd, r.CharStart)
		}
	})

	t.Run("headers and footers", func(t *testing.T) {
		if strings.Contains(d.Text, "Preprint under review") {
			t.Error("running header kept")
		}
		for _, b := range d.Blocks {
			if _, err := strconv.Atoi(b.Text); err == nil {
				t.Errorf("bare page number %q kept on page %d", b.Text, b.PageStart)
			}
		}
	})

	t.Run("hyphenation", func(t *testing.T) {
		b := blockWith(t, d, "We study how")
		want := "We study how learned representations behave when the self-attention layers are removed, and we keep the self-attention mechanism as the baseline of this work."
		if b.Text != want {
			t.Errorf("paragraph:\n got %q\nwant %q", b.Text, want)
		}
	})

	t.Run("chunk pages", func(t *testing.T) {
		chunks := chunk.Split(d, chunk.Meta{Hash: "h"}, chunk.Options{Min: 5, Max: 40, Window: 30, Overlap: 5})
		found := false
		for _, c := range chunks {
			if strings.Contains(c.Text, "quokka") {
				found = true
				if c.PageStart != 5 || c.PageEnd != 5 {
					t.Errorf("chunk quoting page 5 says pages %d-%d", c.PageStart, c.PageEnd)
				}
			}
		}
		if !found {
			t.Error("no chunk quotes the quokka sentence")
		}
	})
}

func TestTitleFromMetadata(t *testing.T) {
	cases := []struct {
		name, meta, author, want string
	}{
		{"good metadata on page 1", "A Synthetic Study of Chunking Documents", "Ada Example and Bob Sample", "A Synthetic Study of Chunking Documents"},
		{"word export name", "Microsoft Word - draft7.doc", "", "A Synthetic Study of Chunking Documents"},
		{"template title not on page", "Transaction / Regular Paper Title", "Erin Espriu", "A Synthetic Study of Chunking Documents"},
		{"empty", "", "", "A Synthetic Study of Chunking Documents"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Parse(t.Context(), paper(t, pdftest.Options{Title: c.meta, Author: c.author}), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Title != c.want {
				t.Errorf("title = %q, want %q", d.Title, c.want)
			}
			if diff := cmp.Diff([]string{"Ada Example", "Bob Sample"}, d.Authors); diff != "" {
				t.Errorf("authors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	text := []pdftest.Page{{Texts: []pdftest.Text{{X: 72, Y: 100, S: "Some text on a page."}}}}
	valid := pdftest.Build(text, pdftest.Options{})
	cases := []struct {
		name string
		data []byte
		opt  Options
		want error
	}{
		{"zero bytes", nil, Options{}, ErrEmpty},
		{"whitespace", []byte("  \n\t "), Options{}, ErrEmpty},
		{"not a pdf", []byte("hello, this is a text file and not a PDF at all"), Options{}, ErrCorrupt},
		{"garbage after header", []byte("%PDF-1.4\n" + strings.Repeat("\x00\x13garbage", 50)), Options{}, ErrCorrupt},
		{"encrypted", pdftest.Build(text, pdftest.Options{Encrypt: true}), Options{}, ErrEncrypted},
		{"image only", pdftest.Build([]pdftest.Page{{Image: true}, {Image: true}}, pdftest.Options{}), Options{}, ErrNoText},
		{"no pages", pdftest.Build(nil, pdftest.Options{}), Options{}, ErrEmpty},
		{"too many pages", pdftest.Build(append(append(text, text...), text...), pdftest.Options{}), Options{MaxPages: 2}, ErrTooManyPages},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Parse(t.Context(), c.data, c.opt)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v (doc %+v)", err, c.want, d)
			}
			if err.Error() == "" {
				t.Error("empty error message")
			}
		})
	}
	t.Run("valid control", func(t *testing.T) {
		if _, err := Parse(t.Context(), valid, Options{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		// MuPDF may repair a truncated file; either it yields text or a clear error.
		for _, n := range []int{len(valid) / 3, len(valid) / 2, len(valid) - 30} {
			_, err := Parse(t.Context(), valid[:n], Options{})
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNoText) {
				t.Errorf("truncated to %d: err = %v, want nil, ErrCorrupt or ErrNoText", n, err)
			}
		}
	})
	t.Run("random mutations never crash", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for range 40 {
			b := append([]byte(nil), valid...)
			for range 1 + r.IntN(20) {
				b[r.IntN(len(b))] = byte(r.IntN(256))
			}
			d, err := Parse(t.Context(), b, Options{})
			if err == nil && d.Pages == 0 {
				t.Error("no error and no pages")
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := Parse(ctx, valid, Options{}); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

// manifest reads the corpus MANIFEST.tsv: file name → (pages, title).
func manifest(t *testing.T, papers string) map[string]struct {
	pages int
	title string
} {
	t.Helper()
	f, err := os.Open(filepath.Join(filepath.Dir(papers), "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]struct {
		pages int
		title string
	}{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 4 {
			continue
		}
		n, _ := strconv.Atoi(cols[3])
		out[filepath.Base(cols[0])] = struct {
			pages int
			title string
		}{n, cols[2]}
	}
	return out
}

func TestCorpus(t *testing.T) {
	papers := corpustest.Papers(t)
	want := manifest(t, papers)
	if len(want) == 0 {
		t.Fatal("empty manifest")
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			d, err := Open(t.Context(), filepath.Join(papers, name), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Pages != w.pages {
				t.Errorf("pages = %d, want %d", d.Pages, w.pages)
			}
			// Titles may differ in case ("ELECTRA: PRE-TRAINING ...") and punctuation.
			if got := lettersOnly(d.Title); got != lettersOnly(w.title) {
				t.Errorf("title = %q, want %q", d.Title, w.title)
			}
			headings := 0
			for _, b := range d.Blocks {
				if b.Heading {
					headings++
				}
				if b.PageStart < 1 || b.PageEnd > d.Pages {
					t.Fatalf("block on page %d-%d of %d", b.PageStart, b.PageEnd, d.Pages)
				}
			}
			if headings < 3 {
				t.Errorf("only %d headings found", headings)
			}
			if strings.ContainsRune(d.Text, '\uFFFD') {
				t.Error("text keeps U+FFFD")
			}
		})
	}
}

func TestAttentionPaper(t *testing.T) {
	path := filepath.Join(corpustest.Papers(t), "1706.03762.pdf")
	d, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	chunks := chunk.Split(d, chunk.Meta{Hash: "x"}, chunk.Options{})
	found := false
	for _, c := range chunks {
		if !strings.Contains(c.Text, "two sub-layers") || !strings.Contains(c.Text, "encoder is composed of a stack") {
			continue
		}
		found = true
		if c.PageStart != 3 {
			t.Errorf("chunk with \"two sub-layers\" starts on page %d, want 3", c.PageStart)
		}
		want := []string{"3 Model Architecture", "3.1 Encoder and Decoder Stacks"}
		if diff := cmp.Diff(want, c.Section); diff != "" {
			t.Errorf("section (-want +got):\n%s", diff)
		}
	}
	if !found {
		t.Error("no chunk holds the encoder's \"two sub-layers\" sentence")
	}
	if strings.Contains(d.Text, "arXiv:1706.03762") {
		t.Errorf("arXiv stamp kept")
	}
	authors := []string{"Ashish Vaswani", "Noam Shazeer", "Niki Parmar", "Jakob Uszkoreit", "Llion Jones", "Aidan N. Gomez", "Łukasz Kaiser", "Illia Polosukhin"}
	if diff := cmp.Diff(authors, d.Authors); diff != "" {
		t.Errorf("authors from the first page (-want +got):\n%s", diff)
	}
}

func TestBrokenParagraphs(t *testing.T) {
	lines := func(x, y float64, ls ...string) []pdftest.Text {
		var out []pdftest.Text
		for i, l := range ls {
			out = append(out, pdftest.Text{X: x, Y: y + float64(i)*12, S: l})
		}
		return out
	}
	var filler []string
	for i := range 6 {
		filler = append(filler, fmt.Sprintf("Filler line %d keeps the page in two columns.", i))
	}
	// The left column ends mid-sentence and the sentence runs on at the top of the right
	// column; the right column ends the page with a word broken across the page break.
	var p1 []pdftest.Text
	p1 = append(p1, lines(72, 100, filler...)...)
	p1 = append(p1, lines(72, 300, "The first column talks about the encoder", "and its layers, which is")...)
	p1 = append(p1, lines(320, 100, "continued in the second column without", "a break.")...)
	p1 = append(p1, lines(320, 300, append(filler, "The page then ends with repre-")...)...)
	p2 := lines(72, 100, "sentations of words. A new sentence follows.")
	d, err := Parse(t.Context(), pdftest.Build([]pdftest.Page{{Texts: p1}, {Texts: p2}}, pdftest.Options{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ contains, want string }{
		{"first column", "The first column talks about the encoder and its layers, which is continued in the second column without a break."},
		{"The page then ends", strings.Join(filler, " ") + " The page then ends with representations"},
		{"of words.", "of words. A new sentence follows."},
	}
	for _, c := range cases {
		if b := blockWith(t, d, c.contains); b.Text != c.want {
			t.Errorf("block:\n got %q\nwant %q", b.Text, c.want)
		}
	}
}

func TestOutlineHeadings(t *testing.T) {
	// "Our Approach" and "Training Details" are set like body text; only the outline says
	// they are headings. The outline's first entry is the paper's title.
	var texts []pdftest.Text
	texts = append(texts, pdftest.Text{X: 150, Y: 80, Size: 16, Bold: true, S: "Outlined Paper"})
	y := 120.0
	for _, l := range []string{"Our Approach", "We describe the approach here in plain words.", "Training Details", "Training used a small batch and many steps."} {
		texts = append(texts, pdftest.Text{X: 72, Y: y, S: l})
		y += 24
	}
	data := pdftest.Build([]pdftest.Page{{Texts: texts}}, pdftest.Options{Outline: []pdftest.Bookmark{
		{Title: "Outlined Paper", Level: 1, Page: 1, Y: 70},
		{Title: "Our Approach", Level: 2, Page: 1, Y: 110},
		{Title: "Training Details", Level: 3, Page: 1, Y: 134},
		{Title: "Nowhere To Be Found", Level: 2, Page: 1, Y: 300},
	}})
	d, err := Parse(t.Context(), data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b := blockWith(t, d, "Training used"); !cmp.Equal(b.Section, []string{"Our Approach", "Training Details"}) {
		t.Errorf("section %q", b.Section)
	}
	if b := blockWith(t, d, "We describe"); !cmp.Equal(b.Section, []string{"Our Approach"}) {
		t.Errorf("section %q", b.Section)
	}
	if strings.Contains(d.Text, "Nowhere") {
		t.Error("unmatched outline entry became text")
	}
}

// TestCrashIsolation parses a corpus file with bytes edited so that MuPDF aborts the process
// it runs in: Parse must survive it and call the file corrupt.
func TestCrashIsolation(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpustest.Papers(t), "1910.01108.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	edits, err := os.ReadFile(filepath.Join("testdata", "abort-1910.01108.edits"))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.SplitSeq(string(edits), "\n") {
		off, val, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(l, "#") {
			continue
		}
		i, err1 := strconv.Atoi(off)
		v, err2 := strconv.Atoi(val)
		if err1 != nil || err2 != nil || i >= len(data) {
			t.Fatalf("bad edit %q", l)
		}
		data[i] = byte(v)
	}
	_, err = Parse(t.Context(), data, Options{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "crashed") {
		t.Errorf("err = %v, want ErrCorrupt saying the library crashed", err)
	}
}

func TestTimeout(t *testing.T) {
	var pages []pdftest.Page
	for i := range 400 {
		ts, _ := pdftest.Paragraph(72, 100, 12, 80, strings.Repeat(fmt.Sprintf("Page %d has words. ", i), 40))
		pages = append(pages, pdftest.Page{Texts: ts})
	}
	_, err := Parse(t.Context(), pdftest.Build(pages, pdftest.Options{}), Options{Timeout: 20 * time.Millisecond})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("err = %v, want ErrCorrupt for taking too long", err)
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"e\uFB03cient \uFB01ne-tuning", "efficient fine-tuning"},
		{"Barlas O\u02D8guz and Ruckl\u00B4e", "Barlas Oğuz and Rucklé"},
		{"x\uFFFD = y\u00A0z", "x = y z"},
		{"soft\u00ADhyphen", "softhyphen"},
	}
	for _, c := range cases {
		if got := collapseSpaces(normalize(c.in)); got != c.want {
			t.Errorf("normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
