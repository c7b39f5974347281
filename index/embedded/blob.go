package embedded

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/footnote-dev/footnote/rag"
)

// encodeSparse stores a sparse vector as (uint32 index, float32 value) pairs, little-endian.
func encodeSparse(v rag.SparseVector) []byte {
	b := make([]byte, 8*len(v.Indices))
	for i, idx := range v.Indices {
		binary.LittleEndian.PutUint32(b[8*i:], idx)
		binary.LittleEndian.PutUint32(b[8*i+4:], math.Float32bits(v.Values[i]))
	}
	return b
}

func decodeSparse(b []byte) (rag.SparseVector, error) {
	if len(b)%8 != 0 {
		return rag.SparseVector{}, fmt.Errorf("sparse vector blob of %d bytes", len(b))
	}
	n := len(b) / 8
	v := rag.SparseVector{Indices: make([]uint32, n), Values: make([]float32, n)}
	for i := range n {
		v.Indices[i] = binary.LittleEndian.Uint32(b[8*i:])
		v.Values[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[8*i+4:]))
	}
	return v, nil
}

// encodeDense stores a dense vector as float32 little-endian.
func encodeDense(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// decodeDenseInto decodes a stored vector into dst, whose length is the model's dimension.
func decodeDenseInto(dst []float32, b []byte) error {
	if len(b) != 4*len(dst) {
		return fmt.Errorf("dense vector blob of %d bytes, want %d", len(b), 4*len(dst))
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

// normalize returns v scaled to unit length (a copy); a zero vector stays zero.
func normalize(v []float32) []float32 {
	var ss float64
	for _, f := range v {
		ss += float64(f) * float64(f)
	}
	out := make([]float32, len(v))
	if ss == 0 {
		return out
	}
	inv := 1 / math.Sqrt(ss)
	for i, f := range v {
		out[i] = float32(float64(f) * inv)
	}
	return out
}
