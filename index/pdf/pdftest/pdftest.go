// Package pdftest writes small PDF files for tests: pages of positioned text in the standard
// Helvetica and Helvetica-Bold fonts, optional image-only pages, document info and a fake
// password protection. The output is deliberately plain (no compression, one content stream
// per page) so that a test knows exactly what a parser should find.
package pdftest

import (
	"bytes"
	"fmt"
	"strings"
)

// PageWidth and PageHeight are US Letter in points; every page has this size.
const (
	PageWidth  = 612.0
	PageHeight = 792.0
)

// Text is one run of text. Y is the baseline measured from the top of the page, so tests read
// like the page: larger Y is further down.
type Text struct {
	X, Y float64
	Size float64 // zero means 10
	Bold bool
	S    string // Latin-1 text; ( ) and \ are escaped
}

// Page is one page. An Image page carries a small picture and no text layer.
type Page struct {
	Texts []Text
	Image bool
}

// Options are document-wide settings.
type Options struct {
	Title, Author string // document info; empty leaves the entry out
	// Outline is the document outline (bookmarks), in reading order.
	Outline []Bookmark
	// Encrypt adds a standard security handler whose user password is not empty, so a reader
	// must ask for a password. The content is not really encrypted; readers stop before it.
	Encrypt bool
}

// Bookmark is one outline entry pointing at a place on a page.
type Bookmark struct {
	Title string
	Level int     // 1 for top-level entries
	Page  int     // 1-based
	Y     float64 // from the top of the page, like Text.Y
}

// Build returns the bytes of a PDF holding pages.
func Build(pages []Page, opt Options) []byte {
	var objs []string // objs[i] is object i+1
	add := func(s string) int { objs = append(objs, s); return len(objs) }

	catalog := add("") // filled in below
	pagesObj := add("")
	fontR := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	fontB := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
	img := add("<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length 4 >>\nstream\n\x20\x80\xc0\xff\nendstream")

	var kids []string
	for _, p := range pages {
		var c strings.Builder
		if p.Image {
			c.WriteString("q 400 0 0 500 100 150 cm /Im1 Do Q\n")
		}
		for _, t := range p.Texts {
			size := t.Size
			if size == 0 {
				size = 10
			}
			font := "/F1"
			if t.Bold {
				font = "/F2"
			}
			fmt.Fprintf(&c, "BT %s %.2f Tf 1 0 0 1 %.2f %.2f Tm (%s) Tj ET\n", font, size, t.X, PageHeight-t.Y, escape(t.S))
		}
		content := add(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", c.Len(), c.String()))
		page := add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %g %g] /Resources << /Font << /F1 %d 0 R /F2 %d 0 R >> /XObject << /Im1 %d 0 R >> >> /Contents %d 0 R >>",
			pagesObj, PageWidth, PageHeight, fontR, fontB, img, content))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	outlines := ""
	if len(opt.Outline) > 0 {
		outlines = fmt.Sprintf(" /Outlines %d 0 R", addOutline(&objs, opt.Outline, kids))
	}
	objs[catalog-1] = fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R%s >>", pagesObj, outlines)
	objs[pagesObj-1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))

	info := 0
	if opt.Title != "" || opt.Author != "" {
		var s strings.Builder
		s.WriteString("<< ")
		if opt.Title != "" {
			fmt.Fprintf(&s, "/Title (%s) ", escape(opt.Title))
		}
		if opt.Author != "" {
			fmt.Fprintf(&s, "/Author (%s) ", escape(opt.Author))
		}
		s.WriteString(">>")
		info = add(s.String())
	}
	encrypt := 0
	if opt.Encrypt {
		// /O and /U that no empty password produces: the reader must ask for one.
		encrypt = add("<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O <" +
			strings.Repeat("5a", 32) + "> /U <" + strings.Repeat("c3", 32) + "> >>")
	}

	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R", len(objs)+1, catalog)
	if info != 0 {
		fmt.Fprintf(&b, " /Info %d 0 R", info)
	}
	if encrypt != 0 {
		id := strings.Repeat("0f", 16)
		fmt.Fprintf(&b, " /Encrypt %d 0 R /ID [<%s> <%s>]", encrypt, id, id)
	}
	fmt.Fprintf(&b, " >>\nstartxref\n%d\n%%%%EOF\n", xref)
	return b.Bytes()
}

// addOutline writes the outline tree and returns its root object number.
func addOutline(objs *[]string, marks []Bookmark, kids []string) int {
	add := func() int { *objs = append(*objs, ""); return len(*objs) }
	root := add()
	type node struct {
		obj, parent       int
		first, last, prev int
		next, count       int
		mark              Bookmark
	}
	nodes := map[int]*node{root: {obj: root}}
	stack := []int{root} // stack[i] is the open entry at level i
	for _, m := range marks {
		level := min(max(m.Level, 1), len(stack))
		stack = stack[:level]
		parent := nodes[stack[level-1]]
		n := &node{obj: add(), parent: parent.obj, mark: m, prev: parent.last}
		nodes[n.obj] = n
		if parent.first == 0 {
			parent.first = n.obj
		} else {
			nodes[parent.last].next = n.obj
		}
		parent.last = n.obj
		for p := parent; ; p = nodes[p.parent] {
			p.count++
			if p.obj == root {
				break
			}
		}
		stack = append(stack, n.obj)
	}
	for obj, n := range nodes {
		var b strings.Builder
		if obj == root {
			b.WriteString("<< /Type /Outlines")
		} else {
			page := kids[min(max(n.mark.Page, 1), len(kids))-1]
			fmt.Fprintf(&b, "<< /Title (%s) /Parent %d 0 R /Dest [%s /XYZ 0 %.2f 0]", escape(n.mark.Title), n.parent, page, PageHeight-n.mark.Y)
			if n.prev != 0 {
				fmt.Fprintf(&b, " /Prev %d 0 R", n.prev)
			}
			if n.next != 0 {
				fmt.Fprintf(&b, " /Next %d 0 R", n.next)
			}
		}
		if n.first != 0 {
			fmt.Fprintf(&b, " /First %d 0 R /Last %d 0 R /Count %d", n.first, n.last, n.count)
		}
		b.WriteString(" >>")
		(*objs)[obj-1] = b.String()
	}
	return root
}

func escape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	return r.Replace(s)
}

// Paragraph lays text out as left-aligned lines of at most width characters starting at
// (x, y) with the given leading, and returns the runs and the y below the last line.
func Paragraph(x, y, leading float64, width int, text string) ([]Text, float64) {
	var out []Text
	var line strings.Builder
	flush := func() {
		if line.Len() == 0 {
			return
		}
		out = append(out, Text{X: x, Y: y, S: line.String()})
		line.Reset()
		y += leading
	}
	for _, w := range strings.Fields(text) {
		if line.Len() > 0 && line.Len()+1+len(w) > width {
			flush()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(w)
	}
	flush()
	return out, y
}
