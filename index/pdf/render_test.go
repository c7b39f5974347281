package pdf

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gen2brain/go-fitz"

	"github.com/footnote-dev/footnote/index/pdf/pdftest"
	"github.com/footnote-dev/footnote/internal/corpustest"
)

// highlighted counts pixels of img equal to HighlightColor (white paper under the highlight)
// and returns their vertical extent.
func highlighted(img image.Image) (n, minY, maxY int) {
	b := img.Bounds()
	minY, maxY = b.Max.Y, b.Min.Y-1
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == HighlightColor.R && uint8(g>>8) == HighlightColor.G && uint8(bl>>8) == HighlightColor.B {
				n++
				minY, maxY = min(minY, y), max(maxY, y)
			}
		}
	}
	return n, minY, maxY
}

func decode(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	return img
}

// TestRenderHighlightsQuotedLines draws a page with a known paragraph in the lower half and
// unrelated text above: the crop must hold the paragraph (highlighted) and leave out the
// top of the page.
func TestRenderHighlightsQuotedLines(t *testing.T) {
	other, _ := pdftest.Paragraph(72, 100, 14, 70, strings.Repeat("Unrelated introductory prose about gardening and weather patterns. ", 5))
	quote := "The encoder is composed of a stack of identical layers. Each layer has two sub-layers: a multi-head self-attention mechanism and a position-wise fully connected feed-forward network."
	para, _ := pdftest.Paragraph(72, 500, 14, 70, quote)
	data := pdftest.Build([]pdftest.Page{{Texts: append(other, para...)}}, pdftest.Options{})

	r, err := RenderPage(context.Background(), data, 1, quote, RenderOptions{DPI: 144})
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines != len(para) || !r.Cropped {
		t.Fatalf("highlighted %d lines (cropped %v), want the %d lines of the quote", r.Lines, r.Cropped, len(para))
	}
	img := decode(t, r.PNG)
	if img.Bounds().Dx() != r.Width || img.Bounds().Dy() != r.Height {
		t.Fatalf("PNG is %v, Rendered says %dx%d", img.Bounds(), r.Width, r.Height)
	}
	fullH := int(pdftest.PageHeight * 2)
	// Three lines of text plus margins at 2 px per point: far less than the page.
	if r.Height >= fullH/3 || r.Height < 3*14*2 {
		t.Fatalf("crop height %d px, want the paragraph with margins (page %d px)", r.Height, fullH)
	}
	n, minY, maxY := highlighted(img)
	if n < 1000 {
		t.Fatalf("only %d highlight pixels", n)
	}
	if minY-img.Bounds().Min.Y < 20 || img.Bounds().Max.Y-maxY < 20 {
		t.Fatalf("highlight rows %d–%d leave no margin in %v", minY, maxY, img.Bounds())
	}
}

func TestRenderWithoutQuoteOrMatchShowsWholePage(t *testing.T) {
	para, _ := pdftest.Paragraph(72, 100, 14, 70, "Some text on a page that nobody quoted at all in this test.")
	data := pdftest.Build([]pdftest.Page{{Texts: para}}, pdftest.Options{})
	for _, quote := range []string{"", "words that are nowhere on the page whatsoever"} {
		r, err := RenderPage(context.Background(), data, 1, quote, RenderOptions{DPI: 72})
		if err != nil {
			t.Fatal(err)
		}
		if r.Lines != 0 || r.Cropped || r.Width != 612 || r.Height != 792 {
			t.Fatalf("quote %q: %+v, want the whole page at 72 DPI", quote, r)
		}
		if n, _, _ := highlighted(decode(t, r.PNG)); n != 0 {
			t.Fatalf("quote %q: %d highlight pixels on an unquoted page", quote, n)
		}
	}
}

func TestRenderBounds(t *testing.T) {
	para, _ := pdftest.Paragraph(72, 100, 14, 70, strings.Repeat("Dense text fills the page. ", 80))
	data := pdftest.Build([]pdftest.Page{{Texts: para}}, pdftest.Options{})
	// MaxBytes forces lower resolutions; MinDPI stops it.
	r, err := RenderPage(context.Background(), data, 1, "", RenderOptions{DPI: 200, MaxBytes: 60_000, MinDPI: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.PNG) > 60_000 || r.DPI >= 200 {
		t.Fatalf("%d bytes at %.0f DPI, want ≤ 60000 at a lower DPI", len(r.PNG), r.DPI)
	}
	if _, err := RenderPage(context.Background(), data, 1, "", RenderOptions{DPI: 100, MinDPI: 100, MaxBytes: 100}); !errors.Is(err, ErrRenderTooBig) {
		t.Fatalf("err = %v, want ErrRenderTooBig", err)
	}
	// MaxPixels lowers the resolution before drawing.
	r, err = RenderPage(context.Background(), data, 1, "", RenderOptions{DPI: 600, MaxPixels: 612 * 792})
	if err != nil {
		t.Fatal(err)
	}
	if r.Width > 613 || r.Height > 793 {
		t.Fatalf("%dx%d, want at most one pixel per point", r.Width, r.Height)
	}
	if _, err := RenderPage(context.Background(), data, 2, "", RenderOptions{}); err == nil {
		t.Fatal("page 2 of a one-page PDF rendered")
	}
	if _, err := RenderPage(context.Background(), []byte("%PDF-1.4 garbage"), 1, "", RenderOptions{}); err == nil {
		t.Fatal("garbage rendered")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RenderPage(ctx, data, 1, "", RenderOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: err = %v", err)
	}
}

func TestCacheEvictsOldest(t *testing.T) {
	c := &Cache{Dir: t.TempDir(), MaxBytes: 250}
	for i, k := range []string{"a", "b", "c"} {
		if err := c.Put(k, bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(time.Duration(i-10) * time.Minute)
		os.Chtimes(c.path(k), old, old)
	}
	if _, ok := c.Get("a"); ok {
		t.Fatal("oldest entry survived a cache over its cap")
	}
	for _, k := range []string{"b", "c"} {
		if d, ok := c.Get(k); !ok || len(d) != 100 {
			t.Fatalf("entry %s lost", k)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(c.Dir, ".tmp-*")); len(m) > 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

// encoderQuote is the start of section 3.1 of "Attention Is All You Need" (page 3).
const encoderQuote = `Encoder: The encoder is composed of a stack of N = 6 identical layers. Each layer has two sub-layers. The first is a multi-head self-attention mechanism, and the second is a simple, position-wise fully connected feed-forward network. We employ a residual connection around each of the two sub-layers, followed by layer normalization.`

func TestRenderCorpusPage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpustest.Papers(t), "1706.03762.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := RenderPage(context.Background(), data, 3, encoderQuote, RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines < 3 || !r.Cropped {
		t.Fatalf("%+v: want the encoder paragraph found and cropped", r)
	}
	n, _, _ := highlighted(decode(t, r.PNG))
	if n < 5000 {
		t.Fatalf("%d highlight pixels", n)
	}
	t.Logf("page 3: %dx%d px, %d bytes, %d lines", r.Width, r.Height, len(r.PNG), r.Lines)
}

// BenchmarkRenderCorpus measures, over the first four pages of every corpus paper: the
// page's text with positions (what indexing reads, the baseline), the whole page drawn at
// the default 144 DPI, and the Show source picture (a passage from the middle of the page
// located, highlighted and cropped). ns/op is per page; png-bytes/page is the mean size.
func BenchmarkRenderCorpus(b *testing.B) {
	papers := corpustest.Papers(b)
	files, _ := filepath.Glob(filepath.Join(papers, "*.pdf"))
	type pg struct {
		data  []byte
		n     int
		quote string
	}
	var pages []pg
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		doc, err := fitz.NewFromMemory(data)
		if err != nil {
			continue
		}
		for i := 0; i < doc.NumPage() && i < 4; i++ {
			text, _ := doc.Text(i)
			w := strings.Fields(text)
			mid := len(w) / 2
			quote := strings.Join(w[max(0, mid-40):min(len(w), mid+40)], " ")
			pages = append(pages, pg{data, i + 1, quote})
		}
		doc.Close()
	}
	if len(pages) == 0 {
		b.Fatal("no pages")
	}
	b.Run("text", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p := pages[i%len(pages)]
			doc, err := fitz.NewFromMemory(p.data)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := pageHTML(doc, p.data, p.n-1); err != nil {
				b.Fatal(err)
			}
			doc.Close()
		}
	})
	for _, mode := range []string{"page", "source"} {
		b.Run(mode, func(b *testing.B) {
			var total, most, found int
			for i := 0; i < b.N; i++ {
				p := pages[i%len(pages)]
				quote := ""
				if mode == "source" {
					quote = p.quote
				}
				r, err := RenderPage(context.Background(), p.data, p.n, quote, RenderOptions{})
				if err != nil {
					b.Fatal(err)
				}
				total += len(r.PNG)
				most = max(most, len(r.PNG))
				if r.Lines > 0 {
					found++
				}
			}
			b.ReportMetric(float64(total)/float64(b.N), "png-bytes/page")
			b.ReportMetric(float64(most), "max-png-bytes")
			if mode == "source" {
				b.ReportMetric(float64(found)/float64(b.N), "located")
			}
		})
	}
}
