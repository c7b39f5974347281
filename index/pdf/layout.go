package pdf

import (
	"html"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// page is one page's text lines in reading order.
type page struct {
	number        int
	width, height float64
	lines         []line
	twoColumn     bool
	splitX        float64 // left edge of the right column on two-column pages
}

// line is one visual line of text.
type line struct {
	top, left float64
	size      float64 // dominant font size
	maxSize   float64 // largest font size (small capitals set their first letter larger)
	firstSize float64 // size of the first characters (a smaller one is a superscript mark)
	text      string
	chars     int // non-space characters
	boldChars int

	drop bool // header, footer, page number or stamp
}

// bold reports whether most of the line is set in bold.
func (l line) bold() bool { return l.chars > 0 && l.boldChars*10 >= l.chars*6 }

// right estimates the line's right edge; MuPDF's HTML gives no widths, and an average
// glyph is about half an em wide in the fonts papers use.
func (l line) right() float64 { return l.left + float64(l.chars)*l.size*0.5 }

var (
	reDiv  = regexp.MustCompile(`^<div id="page\d+" style="width:([\d.]+)pt;height:([\d.]+)pt`)
	reP    = regexp.MustCompile(`^<p style="top:(-?[\d.]+)pt;left:(-?[\d.]+)pt;line-height:([\d.]+)pt">(.*)</p>$`)
	reSize = regexp.MustCompile(`font-size:([\d.]+)pt`)
)

// parseHTML reads the page HTML go-fitz produces: one <p> per line, positioned in points,
// with <span> runs carrying the font and <b> marking bold. Image data lines are skipped.
func parseHTML(h string, number int) page {
	p := page{number: number, width: 612, height: 792}
	for raw := range strings.SplitSeq(h, "\n") {
		if strings.HasPrefix(raw, "<div") {
			if m := reDiv.FindStringSubmatch(raw); m != nil {
				p.width, _ = strconv.ParseFloat(m[1], 64)
				p.height, _ = strconv.ParseFloat(m[2], 64)
			}
			continue
		}
		if !strings.HasPrefix(raw, "<p ") {
			continue
		}
		m := reP.FindStringSubmatch(raw)
		if m == nil {
			continue
		}
		l := parseRuns(m[4])
		if l.chars == 0 {
			continue
		}
		l.top, _ = strconv.ParseFloat(m[1], 64)
		l.left, _ = strconv.ParseFloat(m[2], 64)
		if l.size == 0 {
			l.size, _ = strconv.ParseFloat(m[3], 64)
		}
		p.lines = append(p.lines, l)
	}
	p.layout()
	return p
}

// parseRuns turns a line's inline HTML into text and its dominant style.
func parseRuns(s string) line {
	var (
		text      strings.Builder
		bold      int
		size      float64
		sizeChars = map[float64]int{}
		boldChars int
		total     int
		maxSize   float64
		firstSize float64
	)
	for len(s) > 0 {
		if s[0] == '<' {
			end := strings.IndexByte(s, '>')
			if end < 0 {
				break
			}
			tag := s[1:end]
			switch {
			case tag == "b":
				bold++
			case tag == "/b":
				bold = max(0, bold-1)
			case strings.HasPrefix(tag, "span "):
				if m := reSize.FindStringSubmatch(tag); m != nil {
					size, _ = strconv.ParseFloat(m[1], 64)
				}
			}
			s = s[end+1:]
			continue
		}
		end := strings.IndexByte(s, '<')
		if end < 0 {
			end = len(s)
		}
		t := normalize(html.UnescapeString(s[:end]))
		text.WriteString(t)
		n := 0
		for _, r := range t {
			if r != ' ' {
				n++
			}
		}
		total += n
		sizeChars[math.Round(size*2)/2] += n
		if n > 0 {
			maxSize = max(maxSize, size)
			if firstSize == 0 {
				firstSize = size
			}
		}
		if bold > 0 {
			boldChars += n
		}
		s = s[end:]
	}
	l := line{text: collapseSpaces(composeAccents(text.String())), chars: total, boldChars: boldChars, maxSize: maxSize, firstSize: firstSize}
	best := -1
	for sz, n := range sizeChars {
		if n > best || (n == best && sz > l.size) {
			l.size, best = sz, n
		}
	}
	return l
}

// layout merges pieces of one visual line, detects two columns and, when the PDF's stream
// order interleaves the columns, re-sorts the lines into column order.
func (p *page) layout() {
	p.detectColumns()
	side := func(l line) int {
		if !p.twoColumn {
			return 0
		}
		if l.left >= p.splitX-1 {
			return 1
		}
		return 0
	}
	// Merge runs MuPDF split on one baseline ("3.1" and "Encoder and Decoder Stacks").
	var merged []line
	for _, l := range p.lines {
		if n := len(merged); n > 0 {
			prev := &merged[n-1]
			if math.Abs(prev.top-l.top) < 0.5*max(prev.size, l.size) && l.left > prev.left && side(*prev) == side(l) {
				prev.boldChars += l.boldChars
				prev.maxSize = max(prev.maxSize, l.maxSize)
				if l.chars > prev.chars {
					prev.size = l.size
				}
				prev.text = prev.text + " " + l.text
				prev.chars += l.chars
				continue
			}
		}
		merged = append(merged, l)
	}
	p.lines = merged
	if !p.twoColumn {
		return
	}
	// Count switches between columns in stream order: a column-ordered page switches a few
	// times (figures, footnotes); an interleaved one about once per line.
	switches := 0
	for i := 1; i < len(p.lines); i++ {
		if side(p.lines[i]) != side(p.lines[i-1]) {
			switches++
		}
	}
	if switches <= max(6, len(p.lines)/4) {
		return
	}
	p.sortColumns(side)
}

// detectColumns decides whether the page is set in two columns: enough body lines start
// near the middle of the page while others start at the left margin.
func (p *page) detectColumns() {
	var leftN, rightN int
	splitX := p.width
	for _, l := range p.lines {
		if l.chars < 15 {
			continue
		}
		switch {
		case l.left < 0.4*p.width:
			leftN++
		case l.left < 0.62*p.width:
			rightN++
			splitX = min(splitX, l.left)
		}
	}
	if rightN >= 4 && leftN >= 4 && rightN*5 >= (leftN+rightN) {
		p.twoColumn, p.splitX = true, splitX
	}
}

// sortColumns orders lines top to bottom in bands separated by lines spanning both
// columns; within a band the left column comes before the right one.
func (p *page) sortColumns(side func(line) int) {
	lines := p.lines
	full := func(l line) bool { return side(l) == 0 && l.right() > p.splitX+0.15*p.width }
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].top < lines[j].top })
	var out, left, right []line
	flush := func() {
		out = append(out, left...)
		out = append(out, right...)
		left, right = left[:0:0], right[:0:0]
	}
	for _, l := range lines {
		switch {
		case full(l):
			flush()
			out = append(out, l)
		case side(l) == 1:
			right = append(right, l)
		default:
			left = append(left, l)
		}
	}
	flush()
	p.lines = out
}
