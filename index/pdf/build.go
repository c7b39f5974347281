package pdf

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/footnote-dev/footnote/index/chunk"
)

var (
	// arXiv's rotated margin stamp: "arXiv:1706.03762v7 [cs.CL] 2 Aug 2023".
	reStamp = regexp.MustCompile(`^arXiv:\s?\d{4}\.\d{4,5}(v\d+)?\b`)
	// A bare page number: "3", "iv", "Page 3", "3 of 12", "- 3 -".
	rePageNo = regexp.MustCompile(`(?i)^[-–— ]*(page\s+)?(\d{1,4}|[ivxlc]{1,7})(\s*(/|of)\s*\d{1,4})?[-–— ]*$`)
	reDigits = regexp.MustCompile(`\d+`)
	// A numbered heading: "3 Model Architecture", "3.2.1 Scaled Dot-Product Attention",
	// "1. Introduction", "A Appendix", "B.2 Details".
	reNumbered  = regexp.MustCompile(`^((?:\d{1,2}|[A-Z])(?:\.\d{1,2}){0,3})\.?\s+(\S.*)$`)
	reKnown     = regexp.MustCompile(`(?i)^(abstract|introduction|related work|background|preliminaries|methods?|methodology|approach|models?|model architecture|architecture|experiments?|experimental (setup|results)|evaluation|results|analysis|discussion|conclusions?|conclusions? and future work|limitations|future work|references|bibliography|acknowledge?ments?|appendix( [a-z])?|appendices|supplementary material)\s*[.:]?$`)
	reSentence  = regexp.MustCompile(`([\w)]+)\. [A-Z]`)
	reJunkTitle = regexp.MustCompile(`(?i)^(microsoft (word|powerpoint) ?-|untitled|layout \d|arxiv|title$)|\.(docx?|pdf|dvi|tex|ps|indd|qxd)$`)
)

// build turns pages of lines into a document: it removes running headers, footers and page
// numbers, finds the title, detects headings and groups lines into paragraphs.
func build(pages []page, toc []outline, metaTitle, metaAuthor string) *chunk.Document {
	dropRunning(pages)
	body := bodySize(pages)

	d := &chunk.Document{Kind: chunk.KindPDF}
	vocab := vocabulary{}
	for _, p := range pages {
		prev := ""
		for _, l := range p.lines {
			if !l.drop {
				vocab.addLine(l.text, hyphenBreak(prev, l.text))
				prev = l.text
			}
		}
	}
	titleLines := titleCandidates(pages, body)
	var fontTitle string
	if len(titleLines) > 0 {
		var ts []string
		for _, i := range titleLines {
			ts = append(ts, pages[0].lines[i].text)
		}
		fontTitle = vocab.joinLines(ts)
	}
	// Templates leave titles such as "Transaction / Regular Paper Title" in the info
	// dictionary: trust it only when the first page shows it.
	switch {
	case goodTitle(metaTitle) && (fontTitle == "" || onFirstPage(pages, metaTitle)):
		d.Title = metaTitle
	case fontTitle != "":
		d.Title = fontTitle
	}
	// Templates leave authors too ("Erin Espriu" in IEEE's): trust the info dictionary when
	// the first page names one of its authors.
	d.Authors = splitAuthors(metaAuthor)
	if !slices.ContainsFunc(d.Authors, func(a string) bool { return onFirstPage(pages, a) }) {
		d.Authors = guessAuthors(pages, titleLines)
	}
	isTitle := map[int]bool{}
	for _, i := range titleLines {
		isTitle[i] = true
	}

	h := headings{body: body}
	marks := matchOutline(pages, toc, d.Title)
	var (
		section []string
		blocks  []chunk.Block
	)
	for _, p := range pages {
		leading := p.leading()
		var para []string
		var prev *line
		firstOnPage := true
		flush := func() {
			if len(para) == 0 {
				return
			}
			if firstOnPage {
				para = carryWord(vocab, blocks, para, p.number)
			}
			firstOnPage = false
			if len(para) > 0 {
				blocks = append(blocks, chunk.Block{Text: vocab.joinLines(para), Section: section, PageStart: p.number, PageEnd: p.number})
			}
			para = para[:0]
		}
		for i := 0; i < len(p.lines); i++ {
			l := &p.lines[i]
			if l.drop {
				continue
			}
			if !(p.number == 1 && isTitle[i]) {
				name, level, ok := h.detect(*l)
				if lvl, marked := marks[[2]int{p.number, i}]; marked {
					name, level, ok = headingName(l.text), lvl, true
					h.observe(name)
				}
				if ok {
					// A long heading wraps onto lines in the same style right below it.
					for last := *l; i+1 < len(p.lines) && continues(last, p.lines[i+1]); i++ {
						last = p.lines[i+1]
						name += " " + last.text
					}
					flush()
					firstOnPage = false
					section = append(append([]string(nil), section[:min(level-1, len(section))]...), name)
					blocks = append(blocks, chunk.Block{Text: name, Section: section, Heading: true, PageStart: p.number, PageEnd: p.number})
					prev = nil
					continue
				}
			}
			if prev != nil && p.breaks(*prev, *l, nextKept(p.lines, i), leading) {
				flush()
			}
			para = append(para, l.text)
			prev = l
		}
		flush()
	}
	for _, b := range blocks {
		d.Append(b)
	}
	return d
}

// carryWord mends a word broken across a page: when the last paragraph of the previous page
// ends in "frag-" and para, the first on page, starts with the rest of the word, the rest
// moves back so that the word is whole (and searchable) in one block.
func carryWord(vocab vocabulary, blocks []chunk.Block, para []string, page int) []string {
	if len(blocks) == 0 || len(para) == 0 {
		return para
	}
	last := &blocks[len(blocks)-1]
	if last.Heading || last.PageEnd != page-1 || !hyphenBreak(last.Text, para[0]) {
		return para
	}
	first, _ := utf8.DecodeRuneInString(para[0])
	if !unicode.IsLower(first) {
		return para
	}
	word, rest, _ := strings.Cut(para[0], " ")
	if vocab.keepHyphen(last.Text, para[0]) {
		last.Text += word
	} else {
		last.Text = last.Text[:len(last.Text)-1] + word
	}
	if rest = strings.TrimSpace(rest); rest == "" {
		return para[1:]
	}
	para[0] = rest
	return para
}

// outline is an entry of the PDF's outline (bookmarks): a heading's title, level and place.
type outline struct {
	level int
	title string
	page  int     // 1-based
	top   float64 // points from the top of the page
}

// matchOutline finds the lines the outline entries point at and returns their levels by
// {page, line index}. LaTeX's hyperref writes an outline for every numbered heading, so a
// match catches headings whose fonts do not stand out. Entries whose text is not found near
// their destination are ignored. An entry for the paper's own title, above all the others,
// is dropped and the levels below it promoted.
func matchOutline(pages []page, toc []outline, title string) map[[2]int]int {
	if len(toc) > 1 && lettersOnly(toc[0].title) == lettersOnly(title) {
		deeper := true
		for _, e := range toc[1:] {
			deeper = deeper && e.level > toc[0].level
		}
		if deeper {
			toc = toc[1:]
		}
	}
	minLevel := 0
	for _, e := range toc {
		if minLevel == 0 || e.level < minLevel {
			minLevel = e.level
		}
	}
	marks := map[[2]int]int{}
	for _, e := range toc {
		want := lettersOnly(e.title)
		if e.page < 1 || e.page > len(pages) || len(want) < 3 {
			continue
		}
		p := pages[e.page-1]
		best, bestDist := -1, 40.0
		for i, l := range p.lines {
			if l.drop {
				continue
			}
			got := lettersOnly(l.text)
			if m := reNumbered.FindStringSubmatch(l.text); m != nil {
				got = lettersOnly(m[2])
			}
			if got != want && lettersOnly(l.text) != want && !(len(got) >= 8 && strings.HasPrefix(want, got)) {
				continue
			}
			if d := math.Abs(l.top - e.top); d < bestDist {
				best, bestDist = i, d
			}
		}
		if best >= 0 {
			marks[[2]int{e.page, best}] = e.level - minLevel + 1
		}
	}
	return marks
}

// continues reports whether next carries on heading line h.
func continues(h, next line) bool {
	dy := next.top - h.top
	return !next.drop && dy > 0 && dy <= 1.8*h.size && math.Abs(next.size-h.size) < 0.5 &&
		next.bold() == h.bold() && next.chars <= 70 && letters(next.text) >= 2 &&
		!reNumbered.MatchString(next.text) && !strings.HasSuffix(h.text, ".") &&
		(strings.ToUpper(h.text) == h.text) == (strings.ToUpper(next.text) == next.text)
}

// onFirstPage reports whether the first page's text contains title, ignoring case, spaces
// and punctuation.
func onFirstPage(pages []page, title string) bool {
	if len(pages) == 0 {
		return false
	}
	var b strings.Builder
	for _, l := range pages[0].lines {
		b.WriteString(l.text)
	}
	return strings.Contains(lettersOnly(b.String()), lettersOnly(title))
}

func lettersOnly(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}

func nextKept(lines []line, i int) *line {
	for j := i + 1; j < len(lines); j++ {
		if !lines[j].drop {
			return &lines[j]
		}
	}
	return nil
}

// dropRunning marks arXiv stamps, bare page numbers and lines that repeat near the top or
// bottom of many pages (running headers and footers).
func dropRunning(pages []page) {
	zone := func(p page, l line) bool { return l.top < 0.1*p.height || l.top > 0.9*p.height }
	key := func(l line) string {
		return strings.ToLower(reDigits.ReplaceAllString(l.text, "#"))
	}
	seen := map[string]map[int]bool{}
	for _, p := range pages {
		for _, l := range p.lines {
			if zone(p, l) {
				k := key(l)
				if seen[k] == nil {
					seen[k] = map[int]bool{}
				}
				seen[k][p.number] = true
			}
		}
	}
	n := len(pages)
	need := 2
	if n > 3 {
		need = max(3, int(math.Ceil(0.25*float64(n))))
	}
	for pi := range pages {
		p := &pages[pi]
		for i := range p.lines {
			l := &p.lines[i]
			switch {
			case reStamp.MatchString(l.text):
				l.drop = true
			case zone(*p, *l) && rePageNo.MatchString(l.text):
				l.drop = true
			case zone(*p, *l) && len(seen[key(*l)]) >= need:
				l.drop = true
			}
		}
	}
}

// bodySize is the font size most characters are set in.
func bodySize(pages []page) float64 {
	count := map[float64]int{}
	for _, p := range pages {
		for _, l := range p.lines {
			if !l.drop {
				count[l.size] += l.chars
			}
		}
	}
	best, size := -1, 10.0
	for s, n := range count {
		if n > best || (n == best && s < size) {
			best, size = n, s
		}
	}
	return size
}

// leading is the usual distance between consecutive lines of a paragraph on the page.
func (p page) leading() float64 {
	var ds []float64
	for i := 1; i < len(p.lines); i++ {
		a, b := p.lines[i-1], p.lines[i]
		if a.drop || b.drop || math.Abs(a.size-b.size) > 0.5 {
			continue
		}
		if d := b.top - a.top; d > 0.5*a.size && d < 3*a.size {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return 0
	}
	sort.Float64s(ds)
	return ds[len(ds)/2]
}

// breaks reports whether l starts a new paragraph after prev.
func (p page) breaks(prev, l line, next *line, leading float64) bool {
	if math.Abs(prev.size-l.size) > 1 {
		return true // a caption, footnote or table in another size
	}
	// A sentence running on in lower case continues its paragraph across a column break,
	// a float or a display equation.
	first, _ := utf8.DecodeRuneInString(l.text)
	runsOn := unicode.IsLower(first) && !endsSentence(prev.text)
	dy := l.top - prev.top
	if dy < -0.5*l.size {
		return !runsOn // up: the next column or a float
	}
	if p.twoColumn && (prev.left >= p.splitX-1) != (l.left >= p.splitX-1) {
		return !runsOn
	}
	if leading <= 0 {
		leading = 1.2 * l.size
	}
	if dy > 1.45*leading+1 {
		return !runsOn
	}
	// A first-line indent: this line starts further right than the lines around it.
	if next != nil && l.left > prev.left+0.6*l.size && l.left < prev.left+5*l.size && math.Abs(next.left-prev.left) < 2 && next.top > l.top {
		return true
	}
	return false
}

// endsSentence reports whether s ends with a full stop, question or exclamation mark,
// possibly followed by closing quotes or brackets.
func endsSentence(s string) bool {
	s = strings.TrimRight(s, `"')]”’ `)
	return strings.HasSuffix(s, ".") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "!")
}

// titleCandidates returns the indexes of page 1's lines set in its largest font in the
// upper part of the page: the title, possibly over several lines.
func titleCandidates(pages []page, body float64) []int {
	if len(pages) == 0 {
		return nil
	}
	p := pages[0]
	ok := func(l line) bool {
		return !l.drop && l.top < 0.6*p.height && letters(l.text) >= 3
	}
	maxSize := 0.0
	for _, l := range p.lines {
		if ok(l) {
			maxSize = max(maxSize, l.size)
		}
	}
	if maxSize < body+1 {
		return nil // nothing stands out; no guess is better than a wrong one
	}
	var out []int
	for i, l := range p.lines {
		if !ok(l) || math.Abs(l.size-maxSize) > 0.6 {
			if len(out) > 0 {
				break
			}
			continue
		}
		if len(out) > 0 {
			last := p.lines[out[len(out)-1]]
			if l.top-last.top > 2.5*maxSize || l.top < last.top {
				break
			}
		}
		out = append(out, i)
	}
	return out
}

func goodTitle(t string) bool {
	return letters(t) >= 4 && strings.Contains(t, " ") && !reJunkTitle.MatchString(t)
}

func letters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}

// splitAuthors splits an info Author entry: "A. One, B. Two and C. Three" or "One; Two".
func splitAuthors(s string) []string {
	if letters(s) < 2 {
		return nil
	}
	s = reMarks.ReplaceAllString(s, ",")
	s = strings.NewReplacer(" and ", ",", ";", ",", " & ", ",").Replace(s)
	var out []string
	for a := range strings.SplitSeq(s, ",") {
		if a = strings.TrimSpace(a); letters(a) >= 2 {
			out = append(out, a)
		}
	}
	return out
}

// headings detects section headings line by line, keeping the numbering seen so far to
// reject numbered lines that cannot be headings where they stand.
type headings struct {
	body     float64
	top      int  // last top-level section number
	letter   rune // last appendix letter
	appendix bool // references or an appendix seen: lettered sections allowed
}

// headingName is a heading line as shown in section paths: "3.1. Foo:" becomes "3.1 Foo".
func headingName(text string) string {
	text = strings.TrimRight(strings.TrimSpace(text), ".: ")
	if m := reNumbered.FindStringSubmatch(text); m != nil {
		return m[1] + " " + m[2]
	}
	return text
}

// observe records a heading found otherwise (in the outline), so that numbering checks
// continue from it.
func (h *headings) observe(name string) {
	lower := strings.ToLower(name)
	if strings.Contains(lower, "references") || strings.Contains(lower, "appendi") || strings.Contains(lower, "bibliography") {
		h.appendix = true
	}
	m := reNumbered.FindStringSubmatch(name)
	if m == nil {
		return
	}
	first, _, _ := strings.Cut(m[1], ".")
	if n, err := strconv.Atoi(first); err == nil {
		h.top = n
		return
	}
	h.letter, h.appendix = []rune(first)[0], true
}

// detect returns the heading's display name and level when l is a heading.
func (h *headings) detect(l line) (string, int, bool) {
	text := strings.TrimSpace(l.text)
	words := len(strings.Fields(text))
	if l.chars > 110 || words > 16 || letters(text) < 3 {
		return "", 0, false
	}
	upper := letters(text) >= 4 && strings.ToUpper(text) == text
	bigger := l.size >= h.body+0.9
	// Bold throughout (a bold run-in sentence followed by plain text is a paragraph), larger
	// than the body, or small capitals.
	styled := l.boldChars*10 >= l.chars*9 || bigger || upper && l.maxSize >= h.body-0.5

	if m := reKnown.FindStringSubmatch(text); m != nil {
		name := strings.TrimRight(text, ".: ")
		lower := strings.ToLower(name)
		special := lower == "abstract" || lower == "references" || lower == "bibliography" ||
			strings.HasPrefix(lower, "acknowledg") || strings.HasPrefix(lower, "appendi") || strings.HasPrefix(lower, "supplementary")
		// "Model" or "Method" in bold is as likely a table header as a heading.
		if !(special && (styled || upper) || bigger || upper && letters(text) >= 5) {
			return "", 0, false
		}
		if lower == "references" || lower == "bibliography" || strings.HasPrefix(lower, "appendi") {
			h.appendix = true
		}
		return name, 1, true
	}

	m := reNumbered.FindStringSubmatch(text)
	if m == nil || !styled || l.firstSize > 0 && l.firstSize < l.maxSize-1.5 {
		return "", 0, false // a superscript number marks an affiliation or a footnote
	}
	num, rest := m[1], m[2]
	first := []rune(rest)[0]
	if !unicode.IsUpper(first) || letters(rest) < 3 || strings.HasSuffix(rest, ".") || strings.HasSuffix(rest, ",") || hasSentenceEnd(rest) {
		return "", 0, false
	}
	parts := strings.Split(num, ".")
	level := len(parts)
	name := num + " " + rest
	if reKnown.MatchString(rest) {
		lower := strings.ToLower(rest)
		if strings.HasPrefix(lower, "references") || strings.HasPrefix(lower, "appendi") {
			h.appendix = true
		}
	}
	if n, err := strconv.Atoi(parts[0]); err == nil {
		switch {
		case level == 1 && n > h.top && n <= h.top+2:
			h.top = n
		case level > 1 && (n == h.top || n == h.top+1):
			h.top = n
		default:
			return "", 0, false
		}
		return name, level, true
	}
	letter := []rune(parts[0])[0]
	if !h.appendix && h.top < 2 {
		return "", 0, false
	}
	switch {
	case level == 1 && (letter == h.letter+1 || h.letter == 0 && letter == 'A'):
	case level > 1 && (letter == h.letter || letter == h.letter+1 || h.letter == 0 && letter == 'A'):
	default:
		return "", 0, false
	}
	h.letter = letter
	h.appendix = true
	return name, level, true
}

// hasSentenceEnd reports whether s holds a full stop followed by another sentence, which
// a heading does not ("3 QLoRA vs. Standard Finetuning" does not count).
func hasSentenceEnd(s string) bool {
	for _, m := range reSentence.FindAllStringSubmatch(s, -1) {
		switch strings.ToLower(m[1]) {
		case "vs", "al", "e.g", "i.e", "etc", "cf", "fig", "eq", "no":
		default:
			return true
		}
	}
	return false
}

var (
	// Words that make a line an affiliation, an address or a note rather than names.
	reAffiliation = regexp.MustCompile(`(?i)\b(universit\w*|institut\w*|school|college|department|dept|laborator\w*|lab|labs|research|inc|corp|corporation|company|cent(er|re)|google|microsoft|facebook|meta|openai|deepmind|brain|ai|academy|foundation|hospital|faculty|preprint|review|conference|proceedings|workshop|arxiv|equal|contribution|correspondence|work done|copyright|licen[cs]e|abstract|introduction|science|engineering|hugging|york|street|avenue|road)\b`)
	// Footnote marks and superscript numbers that follow author names.
	reMarks   = regexp.MustCompile(`[∗*†‡§¶♠♣♥♦⋆✝✉#]+|\d+|[()]`)
	particles = map[string]bool{"van": true, "von": true, "de": true, "der": true, "den": true, "la": true, "le": true, "di": true, "da": true, "del": true, "du": true, "bin": true, "al": true}
)

// guessAuthors reads names from the first page between the title and the first heading
// (usually the abstract), for PDFs whose info dictionary has no author. Lines that look
// like affiliations, addresses or notes are skipped; a line of four or more capitalised
// words without separators is read as first-last pairs.
func guessAuthors(pages []page, titleLines []int) []string {
	if len(pages) == 0 || len(titleLines) == 0 {
		return nil
	}
	p := pages[0]
	var out []string
	seen := map[string]bool{}
	for i := titleLines[len(titleLines)-1] + 1; i < len(p.lines) && i <= titleLines[len(titleLines)-1]+40; i++ {
		l := p.lines[i]
		if l.drop {
			continue
		}
		text := strings.TrimSpace(l.text)
		if reKnown.MatchString(text) || reNumbered.MatchString(text) && strings.Contains(strings.ToLower(text), "introduction") ||
			len(strings.Fields(text)) > 16 || strings.HasPrefix(strings.ToLower(text), "abstract") {
			break
		}
		if strings.ContainsAny(text, "@/:") || reAffiliation.MatchString(text) {
			continue
		}
		text = reMarks.ReplaceAllString(text, ",")
		text = strings.NewReplacer(" and ", ",", ";", ",", " & ", ",", ", and ", ",").Replace(text)
		for part := range strings.SplitSeq(text, ",") {
			for _, name := range names(strings.Fields(part)) {
				if !seen[name] {
					seen[name] = true
					out = append(out, name)
				}
			}
		}
		if len(out) >= 40 {
			break
		}
	}
	return out
}

// names returns the person names in words: one name of two to four words, or pairs when
// several names ran together ("Jacob Devlin Ming-Wei Chang").
func names(words []string) []string {
	if len(words) < 2 {
		return nil
	}
	for _, w := range words {
		r, _ := utf8.DecodeRuneInString(w)
		if !unicode.IsUpper(r) && !particles[w] || letters(w) == 0 {
			return nil
		}
	}
	if len(words) <= 4 && !(len(words) == 4 && noInitials(words)) {
		return []string{strings.Join(words, " ")}
	}
	if !noInitials(words) || len(words)%2 != 0 {
		return nil
	}
	var out []string
	for i := 0; i < len(words); i += 2 {
		out = append(out, words[i]+" "+words[i+1])
	}
	return out
}

func noInitials(words []string) bool {
	for _, w := range words {
		if strings.HasSuffix(w, ".") || letters(w) < 2 || particles[w] {
			return false
		}
	}
	return true
}
