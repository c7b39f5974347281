package bm25

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrParamsChanged reports a store indexed with other BM25 parameters than configured.
var ErrParamsChanged = errors.New("BM25 parameters differ from the ones the index was built with")

// LengthNorm names the length normalisation Document applies: length divided by the
// corpus' mean chunk length at indexing time, in analysed terms.
const LengthNorm = "terms/avgdl"

// Setting is how a store records the BM25 parameters its document vectors were weighted
// with. k1, b and the length normalisation act only when a document is indexed (a query
// vector is IDF alone), so they are properties of the index, not of a query: changing
// them without re-indexing would mix differently weighted chunks in one ranking.
type Setting struct {
	K1     float64 `json:"k1"`
	B      float64 `json:"b"`
	Length string  `json:"length"`
}

// Setting is the record of p (defaults applied).
func (p Params) Setting() Setting {
	p = p.withDefaults()
	return Setting{K1: p.K1, B: p.B, Length: LengthNorm}
}

// Encode is the setting as stored (JSON).
func (s Setting) Encode() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Check compares a stored setting (Encode's output) with p. A mismatch wraps
// ErrParamsChanged and says both values and the two ways out; where names the index.
func (p Params) Check(where, stored string) error {
	var got Setting
	if err := json.Unmarshal([]byte(stored), &got); err != nil {
		return fmt.Errorf("%w: %s records unreadable BM25 parameters %q; re-index with `footnote index --rebuild`", ErrParamsChanged, where, stored)
	}
	want := p.Setting()
	if got == want {
		return nil
	}
	return fmt.Errorf("%w: %s was indexed with BM25 k1=%g b=%g (length %s) but footnote is configured with k1=%g b=%g (length %s). "+
		"BM25 weights are computed when documents are indexed, so FOOTNOTE_BM25_K1 and FOOTNOTE_BM25_B are index-time settings: "+
		"set them back to the indexed values, or re-index everything with `footnote index --rebuild`",
		ErrParamsChanged, where, got.K1, got.B, got.Length, want.K1, want.B, want.Length)
}
