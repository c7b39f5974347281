package rag

// PageAt returns the page on which the byte offset off of c.Text lies, from c.PageStart
// and c.PageBreaks; 0 when the chunk has no pages (line-based files). Without page breaks
// (a one-page chunk, or a store written before they were kept) it is c.PageStart.
func (c Chunk) PageAt(off int) int {
	if c.PageStart <= 0 {
		return 0
	}
	p := c.PageStart
	for _, b := range c.PageBreaks {
		if off < b {
			break
		}
		p++
	}
	return min(p, max(c.PageEnd, c.PageStart))
}
