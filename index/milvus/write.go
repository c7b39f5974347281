package milvus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/milvus-io/milvus-sdk-go/v2/client"
	"github.com/milvus-io/milvus-sdk-go/v2/entity"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/rag"
)

// Batch sizes: rows per upsert (a 384-dim chunk row is ~4 KB; Milvus accepts requests up to
// 64 MB) and ids per `in [...]` expression.
const (
	upsertBatch = 256
	exprBatch   = 512
	scanBatch   = 1000
	dfBatch     = 4096 // document-frequency rows are 3 small fields; a 50-chunk paper touches ~3,000 terms
)

// sparseIndex folds a term hash into the range Milvus accepts for sparse indices
// ([0, 2^32-2]), as rag/bm25.Hash already does; kept here so a foreign encoder cannot
// make a write fail.
func sparseIndex(i uint32) uint32 {
	if i == math.MaxUint32 {
		return math.MaxUint32 - 1
	}
	return i
}

// A chunk without BM25 terms (only punctuation, say) still needs a sparse vector: Milvus
// Lite rejects rows whose sparse vector has no nonzero weight. It gets one entry of the
// smallest positive float32 at the top index, which adds nothing measurable to any score
// and is dropped again when rows are read back.
const emptyMark = math.MaxUint32 - 1

var emptyWeight = float32(math.SmallestNonzeroFloat32)

// sparseEmbedding converts v for the SDK without touching v (the SDK sorts in place).
// Zero weights are dropped: Milvus Lite rejects them and they never change an inner
// product. stored marks a row's vector (see emptyMark) as opposed to a query's.
func sparseEmbedding(v rag.SparseVector, stored bool) (entity.SparseEmbedding, error) {
	pos := make([]uint32, 0, len(v.Indices))
	val := make([]float32, 0, len(v.Values))
	if len(v.Indices) != len(v.Values) {
		return nil, fmt.Errorf("sparse vector has %d indices and %d values", len(v.Indices), len(v.Values))
	}
	for i, p := range v.Indices {
		if v.Values[i] == 0 {
			continue
		}
		if math.IsNaN(float64(v.Values[i])) || math.IsInf(float64(v.Values[i]), 0) {
			return nil, fmt.Errorf("sparse vector has a non-finite weight at index %d", p)
		}
		pos = append(pos, sparseIndex(p))
		val = append(val, v.Values[i])
	}
	if len(pos) == 0 && stored {
		pos, val = []uint32{emptyMark}, []float32{emptyWeight}
	}
	e, err := entity.NewSliceSparseEmbedding(pos, val)
	if err != nil {
		return nil, fmt.Errorf("sparse vector: %s", plain(err))
	}
	return e, nil
}

// newVersion names one Replace: 16 random hex digits.
func newVersion() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Replace stores doc and its chunks, replacing every chunk of an earlier version. See the
// package comment for what a reader sees meanwhile and after a crash.
func (s *Store) Replace(ctx context.Context, doc rag.Document, chunks []index.EncodedChunk) error {
	if doc.ID == "" {
		return errors.New("replace: document has no id")
	}
	if err := s.validate(doc, chunks); err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.dirty.Store(true)
	if err := s.repairIfPending(ctx); err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}

	cur, found, err := s.record(ctx, doc.ID)
	if err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}
	// Without a record there are no rows of this document but leftovers of a crashed write,
	// and those left a pending flag for Repair: skip the scan (most of a new document's cost
	// on Milvus Lite).
	var existing []storedChunk
	if found {
		if existing, err = s.docChunks(ctx, doc.ID); err != nil {
			return fmt.Errorf("replace %s: %w", doc.ID, err)
		}
	}

	// 1. Flag the document pending before the first write, so a crash from here on is
	// found and repaired by the next writer.
	mark := cur
	if !found {
		mark = docRecord{doc: rag.Document{ID: doc.ID, Source: doc.Source}, deleted: true}
	}
	mark.pending = true
	if err := s.putRecords(ctx, []docRecord{mark}); err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}

	// 2. Write the new chunks under a new version: invisible until step 3.
	version := newVersion()
	for start := 0; start < len(chunks); start += upsertBatch {
		cols, err := s.chunkColumns(doc, version, chunks[start:min(start+upsertBatch, len(chunks))])
		if err != nil {
			return fmt.Errorf("replace %s: %w", doc.ID, err)
		}
		if err := s.do(ctx, "upsert chunks", func(ctx context.Context) error {
			_, err := s.c.Upsert(ctx, s.coll, "", cols...)
			return err
		}); err != nil {
			return fmt.Errorf("replace %s: %w", doc.ID, err)
		}
	}

	// 3. Switch the document record: the new version becomes visible, the old invisible.
	var terms int64
	for _, c := range chunks {
		terms += int64(c.Terms)
	}
	doc.Chunks = len(chunks)
	next := docRecord{doc: doc, version: version, hash: doc.Hash, chunks: len(chunks), terms: terms, pending: true}
	if err := s.putRecords(ctx, []docRecord{next}); err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}

	// 4. BM25 statistics: remove the old version's document frequencies, add the new.
	delta := map[uint32]int{}
	for _, c := range existing {
		if found && cur.visible(c.version) {
			for _, t := range c.terms {
				delta[t]--
			}
		}
	}
	for _, c := range chunks {
		for _, t := range termSet(c.Sparse) {
			delta[t]++
		}
	}
	tot := totals{docs: 1, chunks: len(chunks), terms: terms}
	if found && !cur.deleted {
		tot = totals{chunks: len(chunks) - cur.chunks, terms: terms - cur.terms}
	}
	next.pending = false
	if s.statsBatch > 1 {
		// 5. Delete the rows of earlier versions; 6. statistics and the pending flag go
		// with the batch (applyBatch).
		if err := s.deleteChunks(ctx, chunkPKs(existing)); err != nil {
			return fmt.Errorf("replace %s: %w", doc.ID, err)
		}
		if err := s.merge(ctx, delta, tot, doc.ID, &next); err != nil {
			return fmt.Errorf("replace %s: %w", doc.ID, err)
		}
		return nil
	}
	if err := s.applyDF(ctx, delta); err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}
	if err := s.addTotals(ctx, tot); err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}

	// 5. Delete the rows of earlier versions.
	if err := s.deleteChunks(ctx, chunkPKs(existing)); err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}

	// 6. Done.
	if err := s.putRecords(ctx, []docRecord{next}); err != nil {
		return fmt.Errorf("replace %s: %w", doc.ID, err)
	}
	return nil
}

func chunkPKs(cs []storedChunk) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.pk)
	}
	return out
}

// Delete removes a document and its chunks; an unknown id is not an error.
func (s *Store) Delete(ctx context.Context, docID string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.dirty.Store(true)
	if err := s.repairIfPending(ctx); err != nil {
		return fmt.Errorf("delete %s: %w", docID, err)
	}
	cur, found, err := s.record(ctx, docID)
	if err != nil {
		return fmt.Errorf("delete %s: %w", docID, err)
	}
	existing, err := s.docChunks(ctx, docID)
	if err != nil {
		return fmt.Errorf("delete %s: %w", docID, err)
	}
	if !found && len(existing) == 0 {
		return nil
	}
	// A pending tombstone hides every chunk at once and survives a crash.
	tomb := docRecord{doc: rag.Document{ID: docID, Source: cur.doc.Source}, deleted: true, pending: true}
	if err := s.putRecords(ctx, []docRecord{tomb}); err != nil {
		return fmt.Errorf("delete %s: %w", docID, err)
	}
	delta := map[uint32]int{}
	pks := make([]string, 0, len(existing))
	for _, c := range existing {
		pks = append(pks, c.pk)
		if found && cur.visible(c.version) {
			for _, t := range c.terms {
				delta[t]--
			}
		}
	}
	if s.statsBatch > 1 {
		var tot totals
		if found && !cur.deleted {
			tot = totals{docs: -1, chunks: -cur.chunks, terms: -cur.terms}
		}
		if err := s.deleteChunks(ctx, pks); err != nil {
			return fmt.Errorf("delete %s: %w", docID, err)
		}
		// The tombstone is deleted with the batch, after the statistics.
		if err := s.merge(ctx, delta, tot, docID, nil); err != nil {
			return fmt.Errorf("delete %s: %w", docID, err)
		}
		return nil
	}
	if err := s.applyDF(ctx, delta); err != nil {
		return fmt.Errorf("delete %s: %w", docID, err)
	}
	if found && !cur.deleted {
		if err := s.addTotals(ctx, totals{docs: -1, chunks: -cur.chunks, terms: -cur.terms}); err != nil {
			return fmt.Errorf("delete %s: %w", docID, err)
		}
	}
	if err := s.deleteChunks(ctx, pks); err != nil {
		return fmt.Errorf("delete %s: %w", docID, err)
	}
	if err := s.deleteRecords(ctx, []string{docID}); err != nil {
		return fmt.Errorf("delete %s: %w", docID, err)
	}
	return nil
}

func (s *Store) validate(doc rag.Document, chunks []index.EncodedChunk) error {
	switch {
	case len(doc.ID) > maxID:
		return fmt.Errorf("document id longer than %d bytes", maxID)
	case len(doc.Hash) > maxHash:
		return fmt.Errorf("content hash longer than %d bytes", maxHash)
	}
	seen := make(map[string]bool, len(chunks))
	for i, c := range chunks {
		switch {
		case c.ID == "":
			return fmt.Errorf("chunk %d has no id", i)
		case len(c.ID) > maxID:
			return fmt.Errorf("chunk %s: id longer than %d bytes", c.ID, maxID)
		case seen[c.ID]:
			return fmt.Errorf("chunk id %s appears twice", c.ID)
		case c.DocID != "" && c.DocID != doc.ID:
			return fmt.Errorf("chunk %s belongs to document %s", c.ID, c.DocID)
		case len(c.Text) > maxText:
			return fmt.Errorf("chunk %s: text is %d bytes, Milvus' VARCHAR limit is %d", c.ID, len(c.Text), maxText)
		}
		seen[c.ID] = true
		for name, v := range c.Dense {
			m, ok := s.byName[name]
			if !ok {
				return fmt.Errorf("chunk %s has a vector for model %s, which collection %s does not hold", c.ID, name, s.coll)
			}
			if err := checkDense(m, v); err != nil {
				return fmt.Errorf("chunk %s: %w", c.ID, err)
			}
		}
	}
	return nil
}

func checkDense(m rag.ModelInfo, v []float32) error {
	if len(v) != m.Dim {
		return fmt.Errorf("%s vector has %d dimensions, want %d", m.Name, len(v), m.Dim)
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%s vector has a non-finite value", m.Name)
		}
	}
	return nil
}

// placeholder stands in for a vector a chunk does not have yet; has_<model> is false
// beside it and searches skip the row. It is a unit vector so that cosine stays defined.
func placeholder(dim int) []float32 {
	v := make([]float32, dim)
	v[0] = 1
	return v
}

// chunkColumns lays chunks out as the chunk collection's columns, written under version.
func (s *Store) chunkColumns(doc rag.Document, version string, chunks []index.EncodedChunk) ([]entity.Column, error) {
	n := len(chunks)
	str := func() []string { return make([]string, 0, n) }
	num := func() []int64 { return make([]int64, 0, n) }
	pks, ids, docIDs, versions, texts, sections, section0s, sources, names, titles, breaks := str(), str(), str(), str(), str(), str(), str(), str(), str(), str(), str()
	idx, tokens, terms, ps, pe, ls, le, cs, ce := num(), num(), num(), num(), num(), num(), num(), num(), num()
	sparse := make([]entity.SparseEmbedding, 0, n)
	dense := make(map[string][][]float32, len(s.models))
	has := make(map[string][]bool, len(s.models))
	for _, c := range chunks {
		sec, err := json.Marshal(c.Section)
		if err != nil {
			return nil, fmt.Errorf("chunk %s section: %v", c.ID, err)
		}
		if len(sec) > maxSection {
			return nil, fmt.Errorf("chunk %s: section path is %d bytes of JSON, limit %d", c.ID, len(sec), maxSection)
		}
		br, err := json.Marshal(c.PageBreaks)
		if err != nil {
			return nil, fmt.Errorf("chunk %s page breaks: %v", c.ID, err)
		}
		if len(br) > maxSection {
			return nil, fmt.Errorf("chunk %s: page breaks are %d bytes of JSON, limit %d", c.ID, len(br), maxSection)
		}
		breaks = append(breaks, string(br))
		var first string
		if len(c.Section) > 0 {
			first = truncate(c.Section[0], maxPath)
		}
		pks = append(pks, c.ID+"@"+version)
		ids = append(ids, c.ID)
		docIDs = append(docIDs, doc.ID)
		versions = append(versions, version)
		texts = append(texts, c.Text)
		sections = append(sections, string(sec))
		section0s = append(section0s, first)
		// Source, name and title are denormalised for display; over-long ones are cut.
		sources = append(sources, truncate(orDefault(c.Source, doc.Source), maxPath))
		names = append(names, truncate(orDefault(c.Name, doc.Name), maxName))
		titles = append(titles, truncate(orDefault(c.Title, doc.Title), maxPath))
		idx = append(idx, int64(c.Index))
		tokens = append(tokens, int64(c.Tokens))
		terms = append(terms, int64(c.Terms))
		ps = append(ps, int64(c.PageStart))
		pe = append(pe, int64(c.PageEnd))
		ls = append(ls, int64(c.LineStart))
		le = append(le, int64(c.LineEnd))
		cs = append(cs, int64(c.CharStart))
		ce = append(ce, int64(c.CharEnd))
		e, err := sparseEmbedding(c.Sparse, true)
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", c.ID, err)
		}
		sparse = append(sparse, e)
		for _, m := range s.models {
			v, ok := c.Dense[m.Name]
			if !ok {
				v = placeholder(m.Dim)
			}
			dense[m.Name] = append(dense[m.Name], v)
			has[m.Name] = append(has[m.Name], ok)
		}
	}
	cols := []entity.Column{
		entity.NewColumnVarChar(fPK, pks),
		entity.NewColumnVarChar(fChunkID, ids),
		entity.NewColumnVarChar(fDocID, docIDs),
		entity.NewColumnVarChar(fVersion, versions),
		entity.NewColumnInt64(fIndex, idx),
		entity.NewColumnVarChar(fText, texts),
		entity.NewColumnInt64(fTokens, tokens),
		entity.NewColumnInt64(fTerms, terms),
		entity.NewColumnInt64(fPageStart, ps),
		entity.NewColumnInt64(fPageEnd, pe),
		entity.NewColumnInt64(fLineStart, ls),
		entity.NewColumnInt64(fLineEnd, le),
		entity.NewColumnVarChar(fSection, sections),
		entity.NewColumnVarChar(fSection0, section0s),
		entity.NewColumnInt64(fCharStart, cs),
		entity.NewColumnInt64(fCharEnd, ce),
		entity.NewColumnVarChar(fSource, sources),
		entity.NewColumnVarChar(fName, names),
		entity.NewColumnVarChar(fTitle, titles),
		entity.NewColumnSparseVectors(fBM25, sparse),
	}
	if s.pageBreaks {
		cols = append(cols, entity.NewColumnVarChar(fBreaks, breaks))
	}
	for _, m := range s.models {
		cols = append(cols, entity.NewColumnFloatVector(m.Name, m.Dim, dense[m.Name]),
			entity.NewColumnBool(hasPrefix+m.Name, has[m.Name]))
	}
	return cols, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// termSet is the distinct sparse indices of a BM25 document vector, as stored.
func termSet(v rag.SparseVector) []uint32 {
	out := make([]uint32, 0, len(v.Indices))
	for i, p := range v.Indices {
		if v.Values[i] != 0 {
			out = append(out, sparseIndex(p))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// storedChunk is what Replace, Delete and Repair need of a stored chunk row.
type storedChunk struct {
	pk, doc, version string
	terms            []uint32
}

var storedFields = []string{fPK, fDocID, fVersion, fBM25}

func (s *Store) docChunks(ctx context.Context, docID string) ([]storedChunk, error) {
	// One query suffices unless a document has more rows than Milvus returns at once.
	const window = 16384 // Milvus' maximum query result window
	expr := fDocID + " == " + quote(docID)
	var rs client.ResultSet
	if err := s.do(ctx, "read chunks of "+docID, func(ctx context.Context) (err error) {
		rs, err = s.query(ctx, s.coll, nil, expr, storedFields, client.WithLimit(window))
		return err
	}); err != nil {
		return nil, fmt.Errorf("read chunks: %w", err)
	}
	if rs.Len() < window {
		return readStored(rs)
	}
	var out []storedChunk
	err := s.each(ctx, s.coll, expr, storedFields, scanBatch, func(rs client.ResultSet) error {
		st, err := readStored(rs)
		out = append(out, st...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read chunks: %w", err)
	}
	return out, nil
}

func readStored(rs client.ResultSet) ([]storedChunk, error) {
	r := newRows(rs)
	out := make([]storedChunk, r.n)
	for i := range out {
		out[i] = storedChunk{
			pk:      r.str(fPK, i),
			doc:     r.str(fDocID, i),
			version: r.str(fVersion, i),
			terms:   r.sparse(fBM25, i).Indices,
		}
	}
	return out, r.err
}

func (s *Store) deleteChunks(ctx context.Context, ids []string) error {
	for start := 0; start < len(ids); start += exprBatch {
		part := ids[start:min(start+exprBatch, len(ids))]
		if err := s.do(ctx, "delete chunks", func(ctx context.Context) error {
			return s.c.DeleteByPks(ctx, s.coll, "", entity.NewColumnVarChar(fPK, part))
		}); err != nil {
			return err
		}
	}
	return nil
}

// record reads one document record, tombstones included.
func (s *Store) record(ctx context.Context, docID string) (docRecord, bool, error) {
	recs, err := s.records(ctx, []string{docID})
	if err != nil {
		return docRecord{}, false, err
	}
	r, ok := recs[docID]
	return r, ok, nil
}

var recordFields = []string{fDocID, fSource, fHash, fVersion, fChunks, fTerms, fPending, fDeleted, fDoc}

// records reads the document records of ids, tombstones included.
func (s *Store) records(ctx context.Context, ids []string) (map[string]docRecord, error) {
	out := make(map[string]docRecord, len(ids))
	for start := 0; start < len(ids); start += exprBatch {
		part := ids[start:min(start+exprBatch, len(ids))]
		var rs client.ResultSet
		if err := s.do(ctx, "read documents", func(ctx context.Context) (err error) {
			rs, err = s.query(ctx, s.docs, nil, fDocID+" in "+quoteList(part), recordFields)
			return err
		}); err != nil {
			return nil, err
		}
		r := newRows(rs)
		for i := 0; i < r.n; i++ {
			d := r.docRecord(i)
			out[d.doc.ID] = d
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	return out, nil
}

func (s *Store) putRecords(ctx context.Context, recs []docRecord) error {
	n := len(recs)
	ids, sources, hashes, versions, docs := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	chunks, terms := make([]int64, 0, n), make([]int64, 0, n)
	pending, deleted := make([]bool, 0, n), make([]bool, 0, n)
	vecs := make([][]float32, 0, n)
	for _, r := range recs {
		js, err := json.Marshal(r.doc)
		if err != nil {
			return fmt.Errorf("encode document %s: %v", r.doc.ID, err)
		}
		if len(js) > maxText {
			return fmt.Errorf("document %s: record is %d bytes of JSON, limit %d", r.doc.ID, len(js), maxText)
		}
		ids = append(ids, r.doc.ID)
		sources = append(sources, truncate(r.doc.Source, maxPath))
		hashes = append(hashes, r.hash)
		versions = append(versions, r.version)
		docs = append(docs, string(js))
		chunks = append(chunks, int64(r.chunks))
		terms = append(terms, r.terms)
		pending = append(pending, r.pending)
		deleted = append(deleted, r.deleted)
		vecs = append(vecs, []float32{0, 0})
	}
	return s.do(ctx, "write document records", func(ctx context.Context) error {
		_, err := s.c.Upsert(ctx, s.docs, "",
			entity.NewColumnVarChar(fDocID, ids),
			entity.NewColumnVarChar(fSource, sources),
			entity.NewColumnVarChar(fHash, hashes),
			entity.NewColumnVarChar(fVersion, versions),
			entity.NewColumnInt64(fChunks, chunks),
			entity.NewColumnInt64(fTerms, terms),
			entity.NewColumnBool(fPending, pending),
			entity.NewColumnBool(fDeleted, deleted),
			entity.NewColumnVarChar(fDoc, docs),
			entity.NewColumnFloatVector(fDummy, 2, vecs),
		)
		return err
	})
}

func (s *Store) deleteRecords(ctx context.Context, ids []string) error {
	for start := 0; start < len(ids); start += exprBatch {
		part := ids[start:min(start+exprBatch, len(ids))]
		if err := s.do(ctx, "delete document records", func(ctx context.Context) error {
			return s.c.DeleteByPks(ctx, s.docs, "", entity.NewColumnVarChar(fDocID, part))
		}); err != nil {
			return err
		}
	}
	return nil
}

// applyDF adds delta to the stored document frequencies, deleting terms that reach zero.
func (s *Store) applyDF(ctx context.Context, delta map[uint32]int) error {
	terms := make([]int64, 0, len(delta))
	for t, d := range delta {
		if d != 0 {
			terms = append(terms, int64(t))
		}
	}
	slices.Sort(terms)
	for start := 0; start < len(terms); start += dfBatch {
		part := terms[start:min(start+dfBatch, len(terms))]
		cur, err := s.readDF(ctx, fTerm+" in "+intList(part))
		if err != nil {
			return err
		}
		var put, del []int64
		var vals []int64
		for _, t := range part {
			v := cur[uint32(t)] + delta[uint32(t)]
			if v <= 0 {
				if _, ok := cur[uint32(t)]; ok {
					del = append(del, t)
				}
				continue
			}
			put = append(put, t)
			vals = append(vals, int64(v))
		}
		if err := s.writeDF(ctx, put, vals); err != nil {
			return err
		}
		if err := s.deleteDF(ctx, del); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) readDF(ctx context.Context, expr string) (map[uint32]int, error) {
	out := map[uint32]int{}
	var rs client.ResultSet
	if err := s.do(ctx, "read document frequencies", func(ctx context.Context) (err error) {
		rs, err = s.query(ctx, s.df, nil, expr, []string{fTerm, fDF})
		return err
	}); err != nil {
		return nil, err
	}
	r := newRows(rs)
	for i := 0; i < r.n; i++ {
		out[uint32(r.int(fTerm, i))] = r.int(fDF, i)
	}
	return out, r.err
}

func (s *Store) writeDF(ctx context.Context, terms, dfs []int64) error {
	for start := 0; start < len(terms); start += dfBatch {
		end := min(start+dfBatch, len(terms))
		vecs := make([][]float32, end-start)
		for i := range vecs {
			vecs[i] = []float32{0, 0}
		}
		if err := s.do(ctx, "write document frequencies", func(ctx context.Context) error {
			_, err := s.c.Upsert(ctx, s.df, "",
				entity.NewColumnInt64(fTerm, terms[start:end]),
				entity.NewColumnInt64(fDF, dfs[start:end]),
				entity.NewColumnFloatVector(fDummy, 2, vecs))
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) deleteDF(ctx context.Context, terms []int64) error {
	for start := 0; start < len(terms); start += dfBatch {
		part := terms[start:min(start+dfBatch, len(terms))]
		if err := s.do(ctx, "delete document frequencies", func(ctx context.Context) error {
			return s.c.DeleteByPks(ctx, s.df, "", entity.NewColumnInt64(fTerm, part))
		}); err != nil {
			return err
		}
	}
	return nil
}

// allRecords reads every document record, tombstones included.
func (s *Store) allRecords(ctx context.Context, fields []string) ([]docRecord, error) {
	var out []docRecord
	err := s.each(ctx, s.docs, "", fields, scanBatch, func(rs client.ResultSet) error {
		r := newRows(rs)
		for i := 0; i < r.n; i++ {
			out = append(out, r.docRecord(i))
		}
		return r.err
	})
	return out, err
}

// repairIfPending runs Repair when an earlier write did not finish.
func (s *Store) repairIfPending(ctx context.Context) error {
	var rs client.ResultSet
	if err := s.do(ctx, "check pending writes", func(ctx context.Context) (err error) {
		rs, err = s.query(ctx, s.docs, nil, s.foreignPending(), []string{fDocID}, client.WithLimit(1))
		return err
	}); err != nil {
		return err
	}
	if rs.Len() == 0 {
		return nil
	}
	s.log.Warn("an earlier write did not finish; repairing", "doc", newRows(rs).str(fDocID, 0))
	return s.repair(ctx)
}

// Repair makes the collections consistent after an interrupted write: it deletes chunks
// no document record makes visible, recomputes every BM25 document frequency from the
// visible chunks, and clears pending flags and tombstones. It scans the whole corpus.
// Writes call it by themselves when they find an unfinished one; it is exported for
// `footnote index --repair`.
func (s *Store) Repair(ctx context.Context) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.dirty.Store(true)
	return s.repair(ctx)
}

func (s *Store) repair(ctx context.Context) error {
	// Repair recomputes everything the batch would write from the visible chunks; the
	// batch's records stay pending until it has, so a failed repair is retried.
	s.batch = statsDelta{}
	s.unapplied.Store(false)
	recs, err := s.allRecords(ctx, recordFields)
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	byID := make(map[string]docRecord, len(recs))
	for _, r := range recs {
		byID[r.doc.ID] = r
	}
	df := map[uint32]int{}
	var invisible []string
	err = s.each(ctx, s.coll, "", storedFields, scanBatch, func(rs client.ResultSet) error {
		rows, err := readStored(rs)
		for _, c := range rows {
			r, ok := byID[c.doc]
			if !ok || !r.visible(c.version) {
				invisible = append(invisible, c.pk)
				continue
			}
			for _, t := range c.terms {
				df[t]++
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	if err := s.deleteChunks(ctx, invisible); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	stored := map[uint32]int{}
	err = s.each(ctx, s.df, dfOnly, []string{fTerm, fDF}, scanBatch*10, func(rs client.ResultSet) error {
		r := newRows(rs)
		for i := 0; i < r.n; i++ {
			stored[uint32(r.int(fTerm, i))] = r.int(fDF, i)
		}
		return r.err
	})
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	var put, vals, del []int64
	for t, v := range df {
		if stored[t] != v {
			put = append(put, int64(t))
			vals = append(vals, int64(v))
		}
	}
	for t := range stored {
		if _, ok := df[t]; !ok {
			del = append(del, int64(t))
		}
	}
	if err := s.writeDF(ctx, put, vals); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	if err := s.deleteDF(ctx, del); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	var tot totals
	for _, r := range recs {
		if !r.deleted {
			tot.docs++
			tot.chunks += r.chunks
			tot.terms += r.terms
		}
	}
	if err := s.writeTotals(ctx, tot); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	var tombs []string
	var clear []docRecord
	for _, r := range recs {
		switch {
		case r.deleted:
			tombs = append(tombs, r.doc.ID)
		case r.pending:
			r.pending = false
			clear = append(clear, r)
		}
	}
	for start := 0; start < len(clear); start += upsertBatch {
		if err := s.putRecords(ctx, clear[start:min(start+upsertBatch, len(clear))]); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
	}
	if err := s.deleteRecords(ctx, tombs); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	s.log.Info("repaired", "invisible_chunks_deleted", len(invisible), "df_terms_fixed", len(put)+len(del),
		"tombstones", len(tombs), "pending_cleared", len(clear))
	return nil
}

// Stats returns the corpus statistics: counts from the document records (so they always
// match what searches see) and document frequencies from the df collection.
func (s *Store) Stats(ctx context.Context) (index.Stats, error) {
	if err := s.settle(ctx); err != nil {
		return index.Stats{}, fmt.Errorf("stats: %w", err)
	}
	recs, err := s.allRecords(ctx, []string{fDocID, fChunks, fTerms, fPending, fDeleted})
	if err != nil {
		return index.Stats{}, fmt.Errorf("stats: %w", err)
	}
	st := index.Stats{DF: map[uint32]int{}}
	pending := 0
	for _, r := range recs {
		if r.pending {
			pending++
		}
		if r.deleted {
			continue
		}
		st.Documents++
		st.Chunks += r.chunks
		st.Terms += r.terms
	}
	if pending > 0 {
		s.log.Warn("statistics may be off: a write is in progress or did not finish", "pending_documents", pending)
	}
	err = s.each(ctx, s.df, dfOnly, []string{fTerm, fDF}, scanBatch*10, func(rs client.ResultSet) error {
		r := newRows(rs)
		for i := 0; i < r.n; i++ {
			st.DF[uint32(r.int(fTerm, i))] = r.int(fDF, i)
		}
		return r.err
	})
	if err != nil {
		return index.Stats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// DocFreq returns the stored document frequencies of the given term hashes; terms no chunk
// contains are absent. Stats reads the whole vocabulary, which at millions of chunks takes
// seconds and hundreds of megabytes per replica; a query encoder can look up just its
// query's terms with this instead.
func (s *Store) DocFreq(ctx context.Context, terms []uint32) (map[uint32]int, error) {
	if err := s.settle(ctx); err != nil {
		return nil, fmt.Errorf("document frequencies: %w", err)
	}
	out := make(map[uint32]int, len(terms))
	for start := 0; start < len(terms); start += dfBatch {
		part := terms[start:min(start+dfBatch, len(terms))]
		ids := make([]int64, len(part))
		for i, t := range part {
			ids[i] = int64(sparseIndex(t))
		}
		got, err := s.readDF(ctx, fTerm+" in "+intList(ids))
		if err != nil {
			return nil, fmt.Errorf("document frequencies: %w", err)
		}
		for _, t := range part {
			if n, ok := got[sparseIndex(t)]; ok {
				out[t] = n
			}
		}
	}
	return out, nil
}

// Document returns one document; an unknown id wraps rag.ErrNotFound.
func (s *Store) Document(ctx context.Context, id string) (rag.Document, error) {
	r, ok, err := s.record(ctx, id)
	if err != nil {
		return rag.Document{}, fmt.Errorf("document %s: %w", id, err)
	}
	if !ok || r.deleted {
		return rag.Document{}, fmt.Errorf("document %s: %w", id, rag.ErrNotFound)
	}
	return r.doc, nil
}

// Documents lists every document, ordered by source.
func (s *Store) Documents(ctx context.Context) ([]rag.Document, error) {
	recs, err := s.allRecords(ctx, recordFields)
	if err != nil {
		return nil, fmt.Errorf("documents: %w", err)
	}
	out := make([]rag.Document, 0, len(recs))
	for _, r := range recs {
		if !r.deleted {
			out = append(out, r.doc)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Source != out[j].Source {
			return out[i].Source < out[j].Source
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// MissingDense lists up to limit (zero: all) chunks that have no vector for model yet.
// A model the collection does not hold is an error that says to rebuild: Milvus (2.4 and
// Lite) cannot add a vector field to an existing collection.
func (s *Store) MissingDense(ctx context.Context, model string, limit int) ([]rag.Chunk, error) {
	if _, ok := s.byName[model]; !ok {
		return nil, s.unknownModel(model)
	}
	var out []rag.Chunk
	err := s.each(ctx, s.coll, hasPrefix+model+" == false", s.scalars(), scanBatch, func(rs client.ResultSet) error {
		r := newRows(rs)
		vis, err := s.visibleRows(ctx, r)
		if err != nil {
			return err
		}
		for i := 0; i < r.n; i++ {
			if vis[i] && (limit <= 0 || len(out) < limit) {
				out = append(out, r.chunk(i))
			}
		}
		if limit > 0 && len(out) >= limit {
			return errStop
		}
		return r.err
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("missing %s vectors: %w", model, err)
	}
	return out, nil
}

var errStop = errors.New("stop")

func (s *Store) unknownModel(model string) error {
	return fmt.Errorf("%w: collection %s holds no field for model %s (it holds %s); run `footnote index --rebuild` "+
		"to re-create it with that model", ErrSchemaMismatch, s.coll, model, describeModels(s.models))
}

// PutDense stores the model's vectors of the given chunks (their current versions). Milvus
// 2.4 upserts whole rows, so each row is read back in full and rewritten; an unknown chunk
// id fails the call before anything is written.
func (s *Store) PutDense(ctx context.Context, model string, ids []string, vectors [][]float32) error {
	m, ok := s.byName[model]
	if !ok {
		return s.unknownModel(model)
	}
	if len(ids) != len(vectors) {
		return fmt.Errorf("put dense: %d ids and %d vectors", len(ids), len(vectors))
	}
	for i, v := range vectors {
		if err := checkDense(m, v); err != nil {
			return fmt.Errorf("put dense %s: %w", ids[i], err)
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.dirty.Store(true)
	fields := append(s.scalars(), fTerms, fSection0, fBM25)
	for _, mm := range s.models {
		fields = append(fields, mm.Name, hasPrefix+mm.Name)
	}
	type row struct {
		ec      index.EncodedChunk
		version string
	}
	rowsByID := map[string]row{}
	for start := 0; start < len(ids); start += exprBatch {
		part := ids[start:min(start+exprBatch, len(ids))]
		var rs client.ResultSet
		if err := s.do(ctx, "read chunks", func(ctx context.Context) (err error) {
			rs, err = s.query(ctx, s.coll, nil, fChunkID+" in "+quoteList(part), fields)
			return err
		}); err != nil {
			return fmt.Errorf("put dense: %w", err)
		}
		r := newRows(rs)
		vis, err := s.visibleRows(ctx, r)
		if err != nil {
			return fmt.Errorf("put dense: %w", err)
		}
		for i := 0; i < r.n; i++ {
			if !vis[i] {
				continue
			}
			ec := index.EncodedChunk{Chunk: r.chunk(i), Sparse: r.sparse(fBM25, i), Terms: r.int(fTerms, i), Dense: map[string][]float32{}}
			for _, mm := range s.models {
				if r.bool(hasPrefix+mm.Name, i) {
					ec.Dense[mm.Name] = r.dense(mm.Name, i)
				}
			}
			rowsByID[ec.ID] = row{ec, r.str(fVersion, i)}
		}
		if r.err != nil {
			return fmt.Errorf("put dense: %w", r.err)
		}
	}
	for _, id := range ids {
		if _, ok := rowsByID[id]; !ok {
			return fmt.Errorf("put dense: chunk %s: %w", id, rag.ErrNotFound)
		}
	}
	for i, id := range ids {
		rowsByID[id].ec.Dense[model] = vectors[i]
	}
	// Rows are written per document version, as chunkColumns lays them out.
	type key struct{ doc, version string }
	groups := map[key][]index.EncodedChunk{}
	var order []key
	for _, id := range ids {
		r := rowsByID[id]
		k := key{r.ec.DocID, r.version}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		if !slices.ContainsFunc(groups[k], func(e index.EncodedChunk) bool { return e.ID == id }) {
			groups[k] = append(groups[k], r.ec)
		}
	}
	for _, k := range order {
		g := groups[k]
		for start := 0; start < len(g); start += upsertBatch {
			cols, err := s.chunkColumns(rag.Document{ID: k.doc}, k.version, g[start:min(start+upsertBatch, len(g))])
			if err != nil {
				return fmt.Errorf("put dense: %w", err)
			}
			if err := s.do(ctx, "upsert chunks", func(ctx context.Context) error {
				_, err := s.c.Upsert(ctx, s.coll, "", cols...)
				return err
			}); err != nil {
				return fmt.Errorf("put dense: %w", err)
			}
		}
	}
	return nil
}
