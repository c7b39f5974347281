package milvus

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/milvus-io/milvus-sdk-go/v2/client"
	"github.com/milvus-io/milvus-sdk-go/v2/entity"

	"github.com/footnote-dev/footnote/rag"
)

// rows reads a query or search result column by column. Missing columns read as zero
// values, so a reader never panics on a server that omits a field; decode reports the
// first conversion error.
type rows struct {
	cols map[string]entity.Column
	n    int
	err  error
}

func newRows(rs client.ResultSet) *rows {
	r := &rows{cols: map[string]entity.Column{}, n: rs.Len()}
	for _, c := range rs {
		r.cols[c.Name()] = c
	}
	return r
}

func (r *rows) fail(field string, err error) {
	if r.err == nil && err != nil {
		r.err = fmt.Errorf("read %s: %s", field, plain(err))
	}
}

func (r *rows) str(field string, i int) string {
	c := r.cols[field]
	if c == nil {
		return ""
	}
	v, err := c.GetAsString(i)
	r.fail(field, err)
	return v
}

func (r *rows) int(field string, i int) int {
	c := r.cols[field]
	if c == nil {
		return 0
	}
	v, err := c.GetAsInt64(i)
	r.fail(field, err)
	return int(v)
}

func (r *rows) bool(field string, i int) bool {
	c := r.cols[field]
	if c == nil {
		return false
	}
	v, err := c.GetAsBool(i)
	r.fail(field, err)
	return v
}

func (r *rows) sparse(field string, i int) rag.SparseVector {
	c, ok := r.cols[field].(*entity.ColumnSparseFloatVector)
	if !ok {
		r.fail(field, fmt.Errorf("column missing or not a sparse vector"))
		return rag.SparseVector{}
	}
	e, err := c.ValueByIdx(i)
	if err != nil {
		r.fail(field, err)
		return rag.SparseVector{}
	}
	v := rag.SparseVector{Indices: make([]uint32, 0, e.Len()), Values: make([]float32, 0, e.Len())}
	for j := 0; j < e.Len(); j++ {
		p, x, _ := e.Get(j)
		if x == 0 || p == emptyMark && x == emptyWeight {
			continue
		}
		v.Indices = append(v.Indices, p)
		v.Values = append(v.Values, x)
	}
	return v
}

func (r *rows) dense(field string, i int) []float32 {
	c, ok := r.cols[field].(*entity.ColumnFloatVector)
	if !ok {
		r.fail(field, fmt.Errorf("column missing or not a float vector"))
		return nil
	}
	data := c.Data()
	if i >= len(data) {
		r.fail(field, fmt.Errorf("row %d of %d", i, len(data)))
		return nil
	}
	return data[i]
}

// chunk decodes row i of a chunk query or search result.
func (r *rows) chunk(i int) rag.Chunk {
	c := rag.Chunk{
		ID:        r.str(fChunkID, i),
		DocID:     r.str(fDocID, i),
		Index:     r.int(fIndex, i),
		Text:      r.str(fText, i),
		Tokens:    r.int(fTokens, i),
		PageStart: r.int(fPageStart, i),
		PageEnd:   r.int(fPageEnd, i),
		LineStart: r.int(fLineStart, i),
		LineEnd:   r.int(fLineEnd, i),
		CharStart: r.int(fCharStart, i),
		CharEnd:   r.int(fCharEnd, i),
		Source:    r.str(fSource, i),
		Name:      r.str(fName, i),
		Title:     r.str(fTitle, i),
	}
	if js := r.str(fSection, i); js != "" && js != "null" {
		if err := json.Unmarshal([]byte(js), &c.Section); err != nil {
			r.fail(fSection, err)
		}
	}
	if js := r.str(fBreaks, i); js != "" && js != "null" {
		if err := json.Unmarshal([]byte(js), &c.PageBreaks); err != nil {
			r.fail(fBreaks, err)
		}
	}
	return c
}

// docRecord is one row of the documents collection.
type docRecord struct {
	doc     rag.Document
	version string
	hash    string
	chunks  int
	terms   int64
	pending bool
	deleted bool
}

func (r *rows) docRecord(i int) docRecord {
	d := docRecord{
		version: r.str(fVersion, i),
		hash:    r.str(fHash, i),
		chunks:  r.int(fChunks, i),
		terms:   int64(r.int(fTerms, i)),
		pending: r.bool(fPending, i),
		deleted: r.bool(fDeleted, i),
	}
	if js := r.str(fDoc, i); js != "" {
		if err := json.Unmarshal([]byte(js), &d.doc); err != nil {
			r.fail(fDoc, err)
		}
	}
	if d.doc.ID == "" {
		d.doc.ID = r.str(fDocID, i)
	}
	return d
}

// visible reports whether a chunk row written under version belongs to the current version
// of its document (see the package comment).
func (d docRecord) visible(version string) bool {
	return !d.deleted && d.version != "" && d.version == version
}

// quote makes s a Milvus expression string literal.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s) + `"`
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func intList(xs []int64) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// likePrefix is a `like` pattern matching strings that start with p. Milvus' LIKE treats
// % and _ as wildcards; they are escaped.
func likePrefix(p string) string {
	p = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(p)
	return quote(p + "%")
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
