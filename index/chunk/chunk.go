package chunk

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/footnote-dev/footnote/rag"
	"github.com/tiktoken-go/tokenizer"
)

// Options size the chunks. Sizes are in tokens as counted by CountTokens.
type Options struct {
	Min     int // fragments below this merge into a neighbour; zero means 100
	Max     int // a chunk never holds more, except a single word longer than it; zero means 512
	Window  int // window size when a paragraph alone exceeds Max; zero means 400
	Overlap int // tokens shared by consecutive windows; zero means 50, negative means none

	// CountTokens counts tokens; nil means CountTokens (cl100k_base).
	CountTokens func(string) int
}

func (o Options) withDefaults() Options {
	if o.Min == 0 {
		o.Min = 100
	}
	if o.Max == 0 {
		o.Max = 512
	}
	if o.Window == 0 {
		o.Window = 400
	}
	if o.Window > o.Max {
		o.Window = o.Max
	}
	if o.Overlap == 0 {
		o.Overlap = 50
	}
	if o.Overlap < 0 {
		o.Overlap = 0
	}
	if o.Overlap >= o.Window {
		o.Overlap = o.Window / 4
	}
	if o.CountTokens == nil {
		o.CountTokens = CountTokens
	}
	return o
}

var (
	cl100kOnce sync.Once
	cl100k     tokenizer.Codec
)

// CountTokens counts cl100k_base tokens (OpenAI's tokenizer for its embedding and GPT-4
// models) with the vocabulary embedded in the binary, so it works offline.
func CountTokens(s string) int {
	cl100kOnce.Do(func() {
		c, err := tokenizer.Get(tokenizer.Cl100kBase)
		if err != nil {
			panic("chunk: cl100k_base is compiled in: " + err.Error())
		}
		cl100k = c
	})
	n, err := cl100k.Count(s)
	if err != nil {
		// Only invalid UTF-8 in strict mode errors; fall back to an estimate.
		return (len(s) + 3) / 4
	}
	return n
}

// Meta is the document-level data every chunk carries.
type Meta struct {
	DocID  string
	Hash   string // sha256 hex of the file's bytes; with DocID and the index it makes the chunk id
	Source string
	Name   string
	Title  string
}

// ID returns the id of the index-th chunk of a document: the first 16 bytes, in hex, of
// sha256(docID ":" hash ":" index), where hash is the content hash. Re-indexing the same
// bytes at the same path gives the same ids; the same file copied to two paths gives two
// sets of ids, so the copies never collide in a store.
func ID(docID, hash string, index int) string {
	sum := sha256.Sum256([]byte(docID + ":" + hash + ":" + strconv.Itoa(index)))
	return hex.EncodeToString(sum[:16])
}

// piece is a span of the document's text that becomes one chunk.
type piece struct {
	start, end int // byte offsets into Document.Text
	tokens     int
	group      int // index of the section group it came from
	section    []string
	pageStart  int
	pageEnd    int
	lineStart  int
	lineEnd    int
}

// Split cuts doc into chunks: sections first, then paragraphs packed up to Max tokens, then
// windows of Window tokens overlapping by Overlap for paragraphs that are too long alone.
// Pieces under Min tokens merge into a neighbour, preferably within their section. Every
// chunk's Text is doc.Text[CharStart:CharEnd].
func Split(doc *Document, meta Meta, opt Options) []rag.Chunk {
	opt = opt.withDefaults()
	s := splitter{doc: doc, opt: opt}
	pieces := s.pieces()
	pieces = s.merge(pieces)
	out := make([]rag.Chunk, 0, len(pieces))
	for i, p := range pieces {
		out = append(out, rag.Chunk{
			ID:         ID(meta.DocID, meta.Hash, i),
			DocID:      meta.DocID,
			Index:      i,
			Text:       doc.Text[p.start:p.end],
			Tokens:     opt.CountTokens(doc.Text[p.start:p.end]),
			PageStart:  p.pageStart,
			PageEnd:    p.pageEnd,
			LineStart:  p.lineStart,
			LineEnd:    p.lineEnd,
			Section:    p.section,
			CharStart:  p.start,
			CharEnd:    p.end,
			PageBreaks: pageBreaks(doc.Blocks, p),
			Source:     meta.Source,
			Name:       meta.Name,
			Title:      meta.Title,
		})
	}
	return out
}

// pageBreaks returns the offsets into the piece's text at which pages pageStart+1, …,
// pageEnd begin: where the first block of that page or a later one starts. A page without
// a block in the piece (a full-page figure) begins where the next page does. Blocks are in
// text order and a PDF block never spans pages, so every offset lies between blocks.
func pageBreaks(blocks []Block, p piece) []int {
	if p.pageStart <= 0 || p.pageEnd <= p.pageStart {
		return nil
	}
	first := sort.Search(len(blocks), func(i int) bool { return blocks[i].CharEnd > p.start })
	out := make([]int, 0, p.pageEnd-p.pageStart)
	at := 0
	for page := p.pageStart + 1; page <= p.pageEnd; page++ {
		off := p.end - p.start
		for _, b := range blocks[first:] {
			if b.CharStart >= p.end {
				break
			}
			if b.PageStart >= page {
				off = max(b.CharStart, p.start) - p.start
				break
			}
		}
		at = max(at, off) // ascending even if a parser emitted pages out of order
		out = append(out, at)
	}
	return out
}

type splitter struct {
	doc *Document
	opt Options
}

func (s *splitter) count(start, end int) int { return s.opt.CountTokens(s.doc.Text[start:end]) }

// fits reports whether text[start:end] has at most limit tokens, given est, the sum of its
// parts' counts. Token counts are close to additive over whitespace-separated parts, so
// the text is only counted when the estimate is near the limit; counting every candidate
// span would dominate the cost of indexing.
func (s *splitter) fits(start, end, est, limit int) bool {
	switch {
	case est <= limit-limit/20-2:
		return true
	case est > limit+limit/20+2:
		return false
	}
	return s.count(start, end) <= limit
}

// pieces cuts each section group into pieces of at most Max tokens.
func (s *splitter) pieces() []piece {
	var out []piece
	blocks := s.doc.Blocks
	group := 0
	for i := 0; i < len(blocks); {
		j := i + 1
		for j < len(blocks) && sameSection(blocks[j].Section, blocks[i].Section) {
			j++
		}
		out = append(out, s.group(blocks[i:j], group)...)
		group++
		i = j
	}
	return out
}

func sameSection(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// group packs the blocks of one section into pieces.
func (s *splitter) group(blocks []Block, group int) []piece {
	var out []piece
	cur := -1 // index into blocks of the first block of the open piece
	curTokens := 0
	flush := func(end int) { // closes blocks[cur:end]
		if cur < 0 {
			return
		}
		out = append(out, s.span(blocks[cur:end], group, blocks[cur].CharStart, blocks[end-1].CharEnd, curTokens))
		cur = -1
		curTokens = 0
	}
	for i, b := range blocks {
		n := s.opt.CountTokens(b.Text)
		if n > s.opt.Max {
			flush(i)
			for _, w := range s.windows(b.CharStart, b.CharEnd) {
				out = append(out, s.span(blocks[i:i+1], group, w[0], w[1], w[2]))
			}
			continue
		}
		if cur >= 0 {
			if est := curTokens + n + 1; s.fits(blocks[cur].CharStart, b.CharEnd, est, s.opt.Max) {
				curTokens = est
				continue
			}
			flush(i)
		}
		cur, curTokens = i, n
	}
	flush(len(blocks))
	return out
}

// span builds a piece for text[start:end] lying within blocks.
func (s *splitter) span(blocks []Block, group, start, end, tokens int) piece {
	p := piece{start: start, end: end, tokens: tokens, group: group, section: blocks[0].Section}
	for _, b := range blocks {
		if b.CharEnd <= start || b.CharStart >= end {
			continue
		}
		if b.PageStart > 0 && (p.pageStart == 0 || b.PageStart < p.pageStart) {
			p.pageStart = b.PageStart
		}
		p.pageEnd = max(p.pageEnd, b.PageEnd)
		if b.LineStart > 0 {
			// Lines inside a block advance with its newlines.
			ls := b.LineStart + strings.Count(s.doc.Text[b.CharStart:max(b.CharStart, start)], "\n")
			le := b.LineStart + strings.Count(s.doc.Text[b.CharStart:min(b.CharEnd, end)], "\n")
			if p.lineStart == 0 || ls < p.lineStart {
				p.lineStart = ls
			}
			p.lineEnd = max(p.lineEnd, min(le, b.LineEnd))
		}
	}
	return p
}

// windows cuts text[start:end] into windows of about Window tokens that overlap by about
// Overlap tokens, cutting at sentence ends where possible and never inside a word. Each
// result is {start, end, tokens}.
func (s *splitter) windows(start, end int) [][3]int {
	units, ut := s.units(start, end)
	sum := func(i, j int) int { // estimated tokens of units[i:j]
		n := 0
		for _, t := range ut[i:j] {
			n += t
		}
		return n
	}
	var out [][3]int
	for i := 0; i < len(units); {
		// Grow the window unit by unit while it fits.
		j, n := i+1, ut[i]
		for j < len(units) && s.fits(units[i][0], units[j][1], n+ut[j], s.opt.Window) {
			n += ut[j]
			j++
		}
		ws, we := units[i][0], units[j-1][1]
		out = append(out, [3]int{ws, we, n})
		if j >= len(units) {
			break
		}
		// Step back over whole units to share about Overlap tokens with the next window.
		k, shared := j, 0
		for k-1 > i && shared+ut[k-1] <= s.opt.Overlap {
			shared += ut[k-1]
			k--
		}
		last, lastTokens := units[j-1], ut[j-1]
		if k == j && s.opt.Overlap > 0 {
			// The last unit is longer than the overlap: share its last words instead.
			if o := s.tailWords(last[0], we, s.opt.Overlap); o < we {
				units[j-1], ut[j-1] = [2]int{o, we}, s.count(o, we)
				k = j - 1
			}
		}
		// The next window must reach past the shared part, or windows would shrink.
		if k < j && !s.fits(units[k][0], units[j][1], sum(k, j+1), s.opt.Window) {
			units[j-1], ut[j-1] = last, lastTokens
			k = j
		}
		i = k
	}
	return out
}

// units splits text[start:end] into sentences; a sentence longer than Window is split
// further at line breaks and then between words.
func (s *splitter) units(start, end int) ([][2]int, []int) {
	var out [][2]int
	var tokens []int
	for _, sen := range sentences(s.doc.Text, start, end) {
		if n := s.count(sen[0], sen[1]); n <= s.opt.Window {
			out = append(out, sen)
			tokens = append(tokens, n)
			continue
		}
		for _, w := range s.wordRuns(sen[0], sen[1]) {
			out = append(out, w)
			tokens = append(tokens, s.count(w[0], w[1]))
		}
	}
	return out, tokens
}

// wordRuns splits text[start:end] into runs of whole words of at most Window tokens.
func (s *splitter) wordRuns(start, end int) [][2]int {
	words := wordSpans(s.doc.Text, start, end)
	var out [][2]int
	for i := 0; i < len(words); {
		j := i + 1
		// Binary growth would be faster; runs are rare and windows small, so keep it simple
		// but avoid quadratic counting by stepping in strides.
		for j < len(words) {
			step := min(len(words), j+8)
			if s.count(words[i][0], words[step-1][1]) <= s.opt.Window {
				j = step
				continue
			}
			if s.count(words[i][0], words[j][1]) <= s.opt.Window {
				j++
				continue
			}
			break
		}
		out = append(out, [2]int{words[i][0], words[j-1][1]})
		i = j
	}
	return out
}

// tailWords returns the start of the longest run of whole words ending at end that has at
// most n tokens, or end when not even one word fits.
func (s *splitter) tailWords(start, end, n int) int {
	words := wordSpans(s.doc.Text, start, end)
	best := end
	for k := len(words) - 1; k > 0; k-- { // never the whole unit: that would not advance
		if s.count(words[k][0], end) > n {
			break
		}
		best = words[k][0]
	}
	return best
}

// wordSpans returns the byte spans of whitespace-separated words in text[start:end].
func wordSpans(text string, start, end int) [][2]int {
	var out [][2]int
	in := -1
	for i := start; i < end; {
		r, n := utf8.DecodeRuneInString(text[i:])
		if unicode.IsSpace(r) {
			if in >= 0 {
				out = append(out, [2]int{in, i})
				in = -1
			}
		} else if in < 0 {
			in = i
		}
		i += n
	}
	if in >= 0 {
		out = append(out, [2]int{in, end})
	}
	return out
}

// abbreviations end with a period without ending a sentence.
var abbreviations = map[string]bool{
	"e.g.": true, "i.e.": true, "et al.": true, "al.": true, "etc.": true, "vs.": true, "cf.": true,
	"fig.": true, "figs.": true, "eq.": true, "eqs.": true, "sec.": true, "tab.": true, "no.": true,
	"dr.": true, "mr.": true, "ms.": true, "prof.": true, "approx.": true, "resp.": true, "ref.": true,
	"refs.": true, "vol.": true, "pp.": true, "ch.": true, "app.": true, "st.": true,
}

// sentences splits text[start:end] into sentence spans without surrounding whitespace. A
// sentence ends at . ! or ? (optionally followed by closing quotes or brackets) before
// whitespace and an uppercase letter, digit or opening bracket, unless the word is a known
// abbreviation or a single letter (initials). Blank lines end sentences too.
func sentences(text string, start, end int) [][2]int {
	var out [][2]int
	s := skipSpace(text, start, end)
	i := s
	for i < end {
		r, n := utf8.DecodeRuneInString(text[i:])
		cut := -1
		switch {
		case r == '.' || r == '!' || r == '?':
			j := i + n
			for j < end && strings.ContainsRune(`"')]”’`, rune(text[j])) {
				j++
			}
			if j >= end {
				break
			}
			if k := skipSpace(text, j, end); k > j && k < end && startsSentence(text[k:]) && !(r == '.' && isAbbrev(text[s:i+1])) {
				cut = j
			}
		case r == '\n':
			if k := i + 1; k < end && strings.HasPrefix(strings.TrimLeft(text[k:end], " \t"), "\n") {
				cut = i
			}
		}
		if cut >= 0 {
			if e := trimRight(text, s, cut); e > s {
				out = append(out, [2]int{s, e})
			}
			s = skipSpace(text, cut, end)
			i = s
			continue
		}
		i += n
	}
	if e := trimRight(text, s, end); e > s {
		out = append(out, [2]int{s, e})
	}
	return out
}

func startsSentence(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r) || unicode.IsDigit(r) || r == '(' || r == '[' || r == '"' || r == '“'
}

func isAbbrev(sentence string) bool {
	i := strings.LastIndexFunc(sentence[:len(sentence)-1], unicode.IsSpace)
	word := strings.ToLower(sentence[i+1:])
	if abbreviations[word] {
		return true
	}
	if strings.HasSuffix(sentence, "et al.") {
		return true
	}
	// Initials such as "A." or "J. R. R." and enumerators like "(i)." rarely end sentences.
	letters := strings.TrimSuffix(word, ".")
	return utf8.RuneCountInString(letters) == 1 && unicode.IsLetter([]rune(letters)[0])
}

func skipSpace(text string, i, end int) int {
	for i < end {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += n
	}
	return i
}

func trimRight(text string, start, end int) int {
	for end > start {
		r, n := utf8.DecodeLastRuneInString(text[start:end])
		if !unicode.IsSpace(r) {
			break
		}
		end -= n
	}
	return end
}

// merge folds pieces under Min tokens into a neighbour: the previous piece of the same
// section, else the next of the same section, else the previous or next across a section
// boundary, as long as the result stays within Max. The merged piece keeps the section of
// its larger part.
func (s *splitter) merge(ps []piece) []piece {
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(ps); i++ {
			if ps[i].tokens >= s.opt.Min || len(ps) == 1 {
				continue
			}
			target := -1
			try := func(j int, sameGroup bool) bool {
				if j < 0 || j >= len(ps) || (sameGroup && ps[j].group != ps[i].group) {
					return false
				}
				a, b := min(i, j), max(i, j)
				if !s.fits(ps[a].start, ps[b].end, ps[a].tokens+ps[b].tokens+1, s.opt.Max) {
					return false
				}
				target = j
				return true
			}
			// Across a section boundary, prefer the neighbour whose section is closer: a
			// parent section's short introduction joins its first subsection.
			prev, next := i-1, i+1
			if next < len(ps) && prev >= 0 && common(ps[next].section, ps[i].section) > common(ps[prev].section, ps[i].section) {
				prev, next = next, prev
			}
			if !(try(i-1, true) || try(i+1, true) || try(prev, false) || try(next, false)) {
				continue
			}
			a, b := min(i, target), max(i, target)
			ps[a] = s.join(ps[a], ps[b])
			ps = append(ps[:b], ps[b+1:]...)
			changed = true
			i = a - 1
		}
	}
	return ps
}

func (s *splitter) join(a, b piece) piece {
	big := a
	if b.tokens > a.tokens {
		big = b
	}
	p := piece{start: a.start, end: b.end, group: big.group, section: big.section}
	p.tokens = a.tokens + b.tokens + 1 // an estimate; Split counts the final text
	p.pageStart, p.pageEnd = minPos(a.pageStart, b.pageStart), max(a.pageEnd, b.pageEnd)
	p.lineStart, p.lineEnd = minPos(a.lineStart, b.lineStart), max(a.lineEnd, b.lineEnd)
	return p
}

// common is the length of the common prefix of two section paths.
func common(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// minPos is the smaller of two positions where zero means unset.
func minPos(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
