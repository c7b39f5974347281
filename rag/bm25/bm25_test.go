package bm25

import (
	"errors"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/rag"
)

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"stemming", "Transformers running layers attention", []string{"transform", "run", "layer", "attent"}},
		{"stopwords", "The model is all that you need", []string{"model", "need"}},
		{"possessive stopword", "it's the Transformer's", []string{"transform"}},
		{"case", "BLEU Bleu bleu", []string{"bleu", "bleu", "bleu"}},
		{"accents", "Café naïve RÉSUMÉ", []string{"cafe", "naiv", "resum"}},
		{"ligature and full width", "ﬁne-tuning ＢＥＲＴ", []string{"fine", "tune", "bert"}},
		{"hyphens split", "state-of-the-art self-attention", []string{"state", "art", "self", "attent"}},
		{"a hyphenated name gives its initials", "Fusion-in-Decoder models", []string{"fusion", "decod", "fid", "model"}},
		{"the initials match the short name", "FiD", []string{"fid"}},
		{"lower-case and acronym compounds give none", "State-of-the-art GPT-3-175B Text-to-text", []string{"state", "art", "gpt", "3", "175b", "text", "text"}},
		{"long inner words give none", "English-Second-German", []string{"english", "second", "german"}},
		{"a count and its unit also join", "3-bit 5-shot", []string{"3", "bit", "3bit", "5", "shot", "5shot"}},
		{"a factor gives the term users type", "4× size, 3×3 grid, 2×", []string{"4", "4x", "size", "3", "3", "grid", "2", "2x"}},
		{"a version or a long unit does not join", "GPT-4 12-layers", []string{"gpt", "4", "12", "layer"}},
		{"numbers kept", "BLEU 28.4 on WMT 2014, 1706.03762", []string{"bleu", "28.4", "wmt", "2014", "1706.03762"}},
		{"alphanumeric kept unstemmed", "GPT-2 L2 v1.2", []string{"gpt", "2", "l2", "v1.2"}},
		{"punctuation dropped", "?!, — (…) [1] “quoted”", []string{"1", "quot"}},
		{"cjk ideographs", "世界 transformer", []string{"世", "界", "transform"}},
		{"greek accents folded", "Ελληνικά", []string{"ελληνικα"}},
		{"typographic apostrophe", "model’s", []string{"model"}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Analyze(tt.text)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Analyze(%q) mismatch (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestHash(t *testing.T) {
	// Reference FNV-1a 32-bit values.
	tests := map[string]uint32{
		"":  0x811c9dc5,
		"a": 0xe40c292c,
	}
	for in, want := range tests {
		if got := Hash(in); got != want {
			t.Errorf("Hash(%q) = %#x, want %#x", in, got, want)
		}
	}
}

func TestHashMatchesFNV(t *testing.T) {
	for _, term := range []string{"attent", "transform", "世", "1706.03762", "x"} {
		h := fnv.New32a()
		h.Write([]byte(term))
		if got, want := Hash(term), h.Sum32(); got != want {
			t.Errorf("Hash(%q) = %#x, want FNV-1a %#x", term, got, want)
		}
	}
	if got := foldMax(math.MaxUint32); got != math.MaxUint32-1 {
		t.Errorf("foldMax(2^32-1) = %#x, want 2^32-2", got)
	}
	if got := foldMax(12345); got != 12345 {
		t.Errorf("foldMax(12345) = %d, want unchanged", got)
	}
}

func BenchmarkAnalyze(b *testing.B) {
	text := strings.Repeat("The Transformer follows this overall architecture using stacked self-attention and point-wise, "+
		"fully connected layers for both the encoder and decoder, shown in Figure 1; BLEU 28.4 on WMT 2014. ", 20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Analyze(text)
	}
}

func TestCount(t *testing.T) {
	tf, n := Count("Cats and dogs; the cat chased a dog and another cat.")
	// Terms: cat dog cat chase dog anoth cat.
	if n != 7 {
		t.Errorf("length = %d, want 7", n)
	}
	want := map[uint32]float32{Hash("cat"): 3, Hash("dog"): 2, Hash("chase"): 1, Hash("anoth"): 1}
	if len(tf.Indices) != len(want) || len(tf.Values) != len(want) {
		t.Fatalf("got %d indices / %d values, want %d", len(tf.Indices), len(tf.Values), len(want))
	}
	if !slices.IsSorted(tf.Indices) {
		t.Errorf("indices not increasing: %v", tf.Indices)
	}
	for i, idx := range tf.Indices {
		if i > 0 && tf.Indices[i-1] == idx {
			t.Errorf("duplicate index %d", idx)
		}
		if tf.Values[i] != want[idx] {
			t.Errorf("count of %d = %v, want %v", idx, tf.Values[i], want[idx])
		}
	}
}

// TestScores checks the encoded inner product against BM25 computed by hand.
//
// Corpus (k1 = 1.5, b = 0.75), after analysis:
//
//	d1 "Cat cat dog."  → cat×2 dog×1, len 3
//	d2 "The dog, a bird." → dog×1 bird×1, len 2
//	d3 "Fish."         → fish×1, len 1
//
// N = 3, avgdl = 6/3 = 2. Query "cats and dogs" → cat, dog.
//
//	idf(cat) = ln(1 + (3−1+0.5)/(1+0.5)) = ln(8/3)
//	idf(dog) = ln(1 + (3−2+0.5)/(2+0.5)) = ln(1.6)
//	d1: K = 1.5·(0.25 + 0.75·3/2) = 2.0625
//	    w(cat) = 2·2.5/(2+2.0625) = 16/13, w(dog) = 1·2.5/(1+2.0625) = 40/49
//	    score = ln(8/3)·16/13 + ln(1.6)·40/49 ≈ 1.590851
//	d2: K = 1.5·(0.25 + 0.75·1) = 1.5, w(dog) = 2.5/2.5 = 1
//	    score = ln(1.6) ≈ 0.470004
//	d3: no shared term, score 0.
func TestScores(t *testing.T) {
	texts := []string{"Cat cat dog.", "The dog, a bird.", "Fish."}
	var p Params // defaults
	type doc struct {
		tf  rag.SparseVector
		len int
	}
	var docs []doc
	df := map[uint32]int{}
	total := 0
	for _, s := range texts {
		tf, n := Count(s)
		docs = append(docs, doc{tf, n})
		total += n
		for _, i := range tf.Indices {
			df[i]++
		}
	}
	avgdl := float64(total) / float64(len(docs))
	if avgdl != 2 {
		t.Fatalf("avgdl = %v, want 2", avgdl)
	}
	q := NewQueryEncoder(p, len(docs), df).EncodeQuery("cats and dogs")

	want := []float64{
		math.Log(8.0/3)*16/13 + math.Log(1.6)*40/49,
		math.Log(1.6),
		0,
	}
	if math.Abs(want[0]-1.590851) > 1e-6 || math.Abs(want[1]-0.470004) > 1e-6 {
		t.Fatalf("hand computation drifted: %v", want)
	}
	for i, d := range docs {
		got := q.Dot(p.Document(d.tf, d.len, avgdl))
		if math.Abs(got-want[i]) > 1e-5 {
			t.Errorf("score(d%d) = %.6f, want %.6f", i+1, got, want[i])
		}
	}
}

func TestQueryMultiplicityAndUnknownTerms(t *testing.T) {
	df := map[uint32]int{Hash("attent"): 1}
	e := NewQueryEncoder(Params{K1: 1.2, B: 0.5}, 10, df)
	q := e.EncodeQuery("attention attention zebra")
	want := map[uint32]float64{
		Hash("attent"): 2 * math.Log(1+(10-1+0.5)/(1+0.5)),
		Hash("zebra"):  math.Log(1 + (10+0.5)/0.5),
	}
	if len(q.Indices) != 2 {
		t.Fatalf("got %d terms, want 2", len(q.Indices))
	}
	for i, idx := range q.Indices {
		if math.Abs(float64(q.Values[i])-want[idx]) > 1e-5 {
			t.Errorf("weight of %d = %v, want %v", idx, q.Values[i], want[idx])
		}
	}
	if len(df) != 1 {
		t.Errorf("encoder modified df: %v", df)
	}
}

func TestDocumentParams(t *testing.T) {
	tf := rag.SparseVector{Indices: []uint32{1, 2}, Values: []float32{1, 3}}
	tests := []struct {
		name  string
		p     Params
		len   int
		avgdl float64
		want  []float32
	}{
		// K = 1.2·(1 − 0.5 + 0.5·10/5) = 1.8; w = tf·2.2/(tf+1.8)
		{"explicit", Params{K1: 1.2, B: 0.5}, 10, 5, []float32{2.2 / 2.8, 6.6 / 4.8}},
		// Defaults, len = avgdl: K = 1.5; w = tf·2.5/(tf+1.5)
		{"defaults", Params{}, 4, 4, []float32{2.5 / 2.5, 7.5 / 4.5}},
		// Empty corpus statistics: no length normalisation.
		{"zero avgdl", Params{}, 7, 0, []float32{2.5 / 2.5, 7.5 / 4.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.Document(tf, tt.len, tt.avgdl)
			if diff := cmp.Diff(tf.Indices, got.Indices); diff != "" {
				t.Errorf("indices changed: %s", diff)
			}
			for i := range tt.want {
				if math.Abs(float64(got.Values[i]-tt.want[i])) > 1e-6 {
					t.Errorf("w[%d] = %v, want %v", i, got.Values[i], tt.want[i])
				}
			}
		})
	}
}

func TestParamsCheck(t *testing.T) {
	stored := Params{}.Setting().Encode()
	if err := (Params{K1: 1.5, B: 0.75}).Check("corpus x", stored); err != nil {
		t.Errorf("defaults spelled out: %v", err)
	}
	err := Params{K1: 1.2}.Check("corpus x", stored)
	if !errors.Is(err, ErrParamsChanged) || !strings.Contains(err.Error(), "footnote index --rebuild") ||
		!strings.Contains(err.Error(), "k1=1.5") || !strings.Contains(err.Error(), "k1=1.2") {
		t.Errorf("changed k1: %v", err)
	}
	if err := (Params{}).Check("corpus x", `{"k1":1.5,"b":0.75,"length":"terms"}`); !errors.Is(err, ErrParamsChanged) {
		t.Errorf("changed length normalisation: %v", err)
	}
	if err := (Params{}).Check("corpus x", "garbage"); !errors.Is(err, ErrParamsChanged) {
		t.Errorf("unreadable setting: %v", err)
	}
}
