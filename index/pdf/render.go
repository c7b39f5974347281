package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
	"unicode"

	"github.com/gen2brain/go-fitz"
)

// Page images for "Show source n" and GET /documents/{id}/pages/{n}.png: MuPDF draws the
// page, MuPDF's own text positions (the same HTML lines the indexer reads) locate the
// chunk's lines on it, and the picture is cropped to them with a margin and the lines
// highlighted.

// HighlightColor is what a highlighted line's white background becomes: the highlight is a
// multiply blend, so text stays black and the paper turns this yellow.
var HighlightColor = color.RGBA{R: 255, G: 236, B: 128, A: 255}

// ErrRenderTooBig reports a page that does not fit RenderOptions.MaxBytes even at the
// lowest resolution tried.
var ErrRenderTooBig = errors.New("page image too large")

// RenderOptions bound one page image.
type RenderOptions struct {
	// DPI is the resolution tried first; zero means 144 (small print stays legible when a
	// chat client scales the picture to its column).
	DPI float64
	// MinDPI is the lowest resolution tried when the image exceeds MaxBytes; zero means 72.
	MinDPI float64
	// MaxBytes bounds the PNG; zero means 4 MiB (well under Discord's 10 MiB and Slack's
	// inline preview sizes).
	MaxBytes int
	// MaxPixels bounds the drawn full page, which is what costs memory and time; zero means
	// 6 million (A4 at 250 DPI). The DPI is lowered to fit before drawing.
	MaxPixels int
	// Margin is the space kept around the cropped lines, in points; zero means 28.
	Margin float64
}

func (o *RenderOptions) fill() {
	if o.DPI <= 0 {
		o.DPI = 144
	}
	if o.MinDPI <= 0 {
		o.MinDPI = 72
	}
	o.MinDPI = min(o.MinDPI, o.DPI)
	if o.MaxBytes <= 0 {
		o.MaxBytes = 4 << 20
	}
	if o.MaxPixels <= 0 {
		o.MaxPixels = 6_000_000
	}
	if o.Margin <= 0 {
		o.Margin = 28
	}
}

// Rendered is one page image.
type Rendered struct {
	PNG           []byte
	Width, Height int     // of the PNG, in pixels
	Page          int     // 1-based page number drawn
	DPI           float64 // resolution used
	Lines         int     // lines highlighted; 0 means the quote was not found and the page is shown whole
	Cropped       bool
}

// renderSlots bounds concurrent page drawing: each holds a full-page bitmap (tens of MB at
// high DPI) and a CPU core.
var renderSlots = make(chan struct{}, 2)

// RenderPage draws page (1-based) of the PDF in data. When quote is not empty, the lines of
// the page whose words belong to quote are highlighted and the picture is cropped to them
// with a margin; when none match, the whole page is returned with Lines == 0. ctx bounds
// the wait for a drawing slot and the drawing: MuPDF cannot be interrupted, so a render
// that outlives ctx finishes in the background while RenderPage returns ctx's error.
func RenderPage(ctx context.Context, data []byte, page int, quote string, opt RenderOptions) (Rendered, error) {
	opt.fill()
	if err := precheck(data); err != nil {
		return Rendered{}, err
	}
	select {
	case renderSlots <- struct{}{}:
	case <-ctx.Done():
		return Rendered{}, fmt.Errorf("render page %d: %w", page, ctx.Err())
	}
	type result struct {
		r   Rendered
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-renderSlots }()
		r, err := renderPage(data, page, quote, opt)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.r, res.err
	case <-ctx.Done():
		return Rendered{}, fmt.Errorf("render page %d: %w", page, ctx.Err())
	}
}

func renderPage(data []byte, pageNo int, quote string, opt RenderOptions) (r Rendered, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = Rendered{}, fmt.Errorf("%w: mupdf: %v", ErrCorrupt, p)
		}
	}()
	f, err := fitz.NewFromMemory(data)
	if f != nil {
		defer f.Close()
	}
	switch {
	case errors.Is(err, fitz.ErrNeedsPassword):
		return Rendered{}, ErrEncrypted
	case err != nil:
		return Rendered{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if pageNo < 1 || pageNo > f.NumPage() {
		return Rendered{}, fmt.Errorf("page %d: the document has %d pages", pageNo, f.NumPage())
	}
	idx := pageNo - 1

	// Where the quoted lines are, in points.
	var hl []rectF
	var crop rectF
	if strings.TrimSpace(quote) != "" {
		h, err := pageHTML(f, data, idx)
		if err != nil {
			return Rendered{}, fmt.Errorf("page %d text positions: %w", pageNo, err)
		}
		p := parseHTML(h, pageNo)
		hl = locate(p, quote)
		if len(hl) > 0 {
			crop = hl[0]
			for _, b := range hl[1:] {
				crop = crop.union(b)
			}
			crop = crop.grow(opt.Margin).clip(rectF{0, 0, p.width, p.height})
		}
	}

	bounds, err := f.Bound(idx)
	if err != nil {
		return Rendered{}, fmt.Errorf("page %d bounds: %w", pageNo, err)
	}
	// Bound is in pixels at 72 DPI, i.e. points.
	wPt, hPt := float64(bounds.Dx()), float64(bounds.Dy())
	if wPt <= 0 || hPt <= 0 {
		return Rendered{}, fmt.Errorf("%w: page %d has no area", ErrCorrupt, pageNo)
	}
	dpi := opt.DPI
	if px := wPt * hPt * (dpi / 72) * (dpi / 72); px > float64(opt.MaxPixels) {
		dpi = 72 * math.Sqrt(float64(opt.MaxPixels)/(wPt*hPt))
	}
	for {
		img, err := f.ImageDPI(idx, dpi)
		if err != nil {
			return Rendered{}, fmt.Errorf("draw page %d: %w", pageNo, err)
		}
		scale := dpi / 72
		var rs []image.Rectangle
		for _, b := range hl {
			rs = append(rs, b.scale(scale).rect())
		}
		highlight(img, rs)
		var out image.Image = img
		cropped := false
		if len(hl) > 0 {
			cr := crop.scale(scale).rect().Intersect(img.Bounds())
			if !cr.Empty() {
				out, cropped = img.SubImage(cr), true
			}
		}
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&buf, out); err != nil {
			return Rendered{}, fmt.Errorf("encode page %d: %w", pageNo, err)
		}
		if buf.Len() <= opt.MaxBytes {
			b := out.Bounds()
			return Rendered{PNG: buf.Bytes(), Width: b.Dx(), Height: b.Dy(), Page: pageNo, DPI: dpi, Lines: len(hl), Cropped: cropped}, nil
		}
		if dpi <= opt.MinDPI {
			return Rendered{}, fmt.Errorf("%w: page %d is %d bytes at %.0f DPI, limit %d", ErrRenderTooBig, pageNo, buf.Len(), dpi, opt.MaxBytes)
		}
		// PNG size grows about with the pixel count: aim under the limit in one step.
		dpi = max(opt.MinDPI, dpi*math.Sqrt(float64(opt.MaxBytes)/float64(buf.Len()))*0.9)
	}
}

// pageHTML is the page's positioned text lines, without the images go-fitz's HTML would
// encode (the indexer's fast path), falling back to go-fitz.
func pageHTML(f *fitz.Document, data []byte, idx int) (string, error) {
	if fast, ok := openFast(data); ok && !slowHTML {
		defer fast.close()
		if h, err := fast.html(idx); err == nil {
			return h, nil
		}
	}
	return f.HTML(idx, false)
}

// highlight multiplies the pixels inside any of rs with HighlightColor, once each even where
// the rectangles of neighbouring lines overlap.
func highlight(img *image.RGBA, rs []image.Rectangle) {
	b := img.Bounds()
	mask := make([]bool, b.Dx()*b.Dy())
	for _, r := range rs {
		r = r.Intersect(b)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			row := mask[(y-b.Min.Y)*b.Dx():]
			for x := r.Min.X; x < r.Max.X; x++ {
				row[x-b.Min.X] = true
			}
		}
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if !mask[(y-b.Min.Y)*b.Dx()+x-b.Min.X] {
				continue
			}
			i := img.PixOffset(x, y)
			img.Pix[i] = uint8(uint16(img.Pix[i]) * uint16(HighlightColor.R) / 255)
			img.Pix[i+1] = uint8(uint16(img.Pix[i+1]) * uint16(HighlightColor.G) / 255)
			img.Pix[i+2] = uint8(uint16(img.Pix[i+2]) * uint16(HighlightColor.B) / 255)
		}
	}
}

// rectF is a rectangle in points.
type rectF struct{ x0, y0, x1, y1 float64 }

func (a rectF) union(b rectF) rectF {
	return rectF{min(a.x0, b.x0), min(a.y0, b.y0), max(a.x1, b.x1), max(a.y1, b.y1)}
}
func (a rectF) grow(m float64) rectF { return rectF{a.x0 - m, a.y0 - m, a.x1 + m, a.y1 + m} }
func (a rectF) clip(b rectF) rectF {
	return rectF{max(a.x0, b.x0), max(a.y0, b.y0), min(a.x1, b.x1), min(a.y1, b.y1)}
}
func (a rectF) scale(s float64) rectF { return rectF{a.x0 * s, a.y0 * s, a.x1 * s, a.y1 * s} }
func (a rectF) rect() image.Rectangle {
	return image.Rect(int(math.Floor(a.x0)), int(math.Floor(a.y0)), int(math.Ceil(a.x1)), int(math.Ceil(a.y1)))
}

// locate returns the boxes of the page's lines that belong to quote. A line belongs when
// most of its word trigrams occur in quote (hyphenated line ends and maths glyphs spoil a
// few); lines of one or two words, which could match anywhere, count only between matched
// lines.
func locate(p page, quote string) []rectF {
	qw := words(quote)
	if len(qw) == 0 {
		return nil
	}
	tri := map[string]bool{}
	for i := 0; i+2 < len(qw); i++ {
		tri[qw[i]+" "+qw[i+1]+" "+qw[i+2]] = true
	}
	joined := " " + strings.Join(qw, " ") + " "
	type cand struct {
		box   rectF
		long  bool
		match bool
	}
	var cs []cand
	for _, l := range p.lines {
		lw := words(l.text)
		if len(lw) == 0 {
			continue
		}
		h := max(l.size, 4) * 1.2
		right := min(max(l.right(), l.left+l.size), p.width)
		c := cand{box: rectF{l.left - 1, l.top - 1, right + 1, l.top + h}}
		if len(lw) >= 3 {
			c.long = true
			hit, n := 0, 0
			for i := 0; i+2 < len(lw); i++ {
				n++
				if tri[lw[i]+" "+lw[i+1]+" "+lw[i+2]] {
					hit++
				}
			}
			c.match = hit*10 >= n*6
		} else {
			c.match = strings.Contains(joined, " "+strings.Join(lw, " ")+" ")
		}
		cs = append(cs, c)
	}
	// MuPDF's HTML gives no line widths and right() only estimates them: a justified
	// paragraph's lines end at its widest line, so matched lines of one column share it.
	for i := range cs {
		for j := range cs {
			if cs[i].match && cs[j].match && cs[j].long && math.Abs(cs[j].box.x0-cs[i].box.x0) < 30 {
				cs[i].box.x1 = max(cs[i].box.x1, cs[j].box.x1)
			}
		}
	}
	var out []rectF
	var span rectF
	found := false
	for _, c := range cs {
		if c.long && c.match {
			if !found {
				span, found = c.box, true
			} else {
				span = span.union(c.box)
			}
		}
	}
	if !found {
		return nil
	}
	for _, c := range cs {
		if !c.match {
			continue
		}
		if !c.long && (c.box.y0 < span.y0 || c.box.y1 > span.y1) {
			continue
		}
		out = append(out, c.box)
	}
	return out
}

// words lowercases s and splits it into runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
