package wordpiece_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/footnote-dev/footnote/internal/corpustest"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
	"github.com/footnote-dev/footnote/rag/onnx/wordpiece"
)

type reference struct {
	Tokenizer map[string][]struct {
		Text        string  `json:"text"`
		IDs         []int32 `json:"ids"`
		WithSpecial []int32 `json:"with_special"`
		Truncated   []int32 `json:"truncated"`
		MaxLength   int     `json:"max_length"`
	} `json:"tokenizer"`
	Pairs []struct {
		A     string  `json:"a"`
		B     string  `json:"b"`
		IDs   []int32 `json:"ids"`
		Types []int32 `json:"types"`
	} `json:"pairs"`
}

func loadReference(t *testing.T) reference {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r reference
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func load(t *testing.T, model string) *wordpiece.Tokenizer {
	t.Helper()
	path := filepath.Join(corpustest.Models(t), model, "tokenizer.json")
	// Default models must be there under CI; optional ones are tested when installed.
	if _, err := os.Stat(path); err != nil && (!corpustest.CI() || !slices.Contains(pull.DefaultNames, model)) {
		t.Skipf("skipping: model %s not installed", model)
	}
	tok, err := wordpiece.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestMatchesReference compares with ids from Hugging Face tokenizers (testdata/make_fixtures.py).
func TestMatchesReference(t *testing.T) {
	ref := loadReference(t)
	for model, cases := range ref.Tokenizer {
		t.Run(model, func(t *testing.T) {
			tok := load(t, model)
			for _, c := range cases {
				name := c.Text
				if len(name) > 40 {
					name = name[:40]
				}
				t.Run(name, func(t *testing.T) {
					if diff := cmp.Diff(c.IDs, tok.Tokenize(c.Text), cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("Tokenize mismatch (-want +got):\n%s", diff)
					}
					if diff := cmp.Diff(c.WithSpecial, tok.Encode(c.Text, 0)); diff != "" {
						t.Errorf("Encode mismatch (-want +got):\n%s", diff)
					}
					if diff := cmp.Diff(c.Truncated, tok.Encode(c.Text, c.MaxLength)); diff != "" {
						t.Errorf("Encode(max %d) mismatch (-want +got):\n%s", c.MaxLength, diff)
					}
					if got, want := tok.Count(c.Text), len(c.IDs); got != want {
						t.Errorf("Count = %d, want %d", got, want)
					}
				})
			}
		})
	}
	tok := load(t, "bge_small_en_v1_5")
	for _, p := range ref.Pairs {
		ids, types := tok.EncodePair(p.A, p.B, 512)
		if diff := cmp.Diff(p.IDs, ids); diff != "" {
			t.Errorf("EncodePair(%q, %q) ids (-want +got):\n%s", p.A, p.B, diff)
		}
		if diff := cmp.Diff(p.Types, types); diff != "" {
			t.Errorf("EncodePair(%q, %q) types (-want +got):\n%s", p.A, p.B, diff)
		}
	}
}

// A tiny vocabulary exercises the algorithm without the installed models.
const tinyJSON = `{
 "added_tokens": [{"id": 1, "content": "[CLS]", "special": true, "normalized": false},
                  {"id": 2, "content": "[SEP]", "special": true, "normalized": false}],
 "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
 "pre_tokenizer": {"type": "BertPreTokenizer"},
 "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 10,
   "vocab": {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[UNK]": 3, "cafe": 4, "un": 5, "##aff": 6, "##able": 7, ",": 8, "a": 9, "b": 10, "中": 11}}
}`

func TestTiny(t *testing.T) {
	tok, err := wordpiece.Parse([]byte(tinyJSON))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		text string
		want []int32
	}{
		{"accents stripped when strip_accents is null and lowercase", "CAFÉ", []int32{4}},
		{"subwords", "unaffable", []int32{5, 6, 7}},
		{"unknown piece makes the whole word unknown", "unaffablex", []int32{3}},
		{"punctuation splits", "cafe,cafe", []int32{4, 8, 4}},
		{"long word is unknown", "aaaaaaaaaaa", []int32{3}},
		{"cjk padded", "a中b", []int32{9, 11, 10}},
		{"control characters dropped", "ca\u0000fe\u200b", []int32{4}},
		{"special token kept", "a[SEP]b", []int32{9, 2, 10}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tok.Tokenize(tt.text), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Tokenize(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestPairTruncation(t *testing.T) {
	tok, err := wordpiece.Parse([]byte(tinyJSON))
	if err != nil {
		t.Fatal(err)
	}
	a := []int32{9, 9}
	b := make([]int32, 20)
	for i := range b {
		b[i] = 10
	}
	tests := []struct {
		name   string
		a, b   []int32
		maxLen int
		wantA  int
		wantB  int
	}{
		{"fits", a, b[:3], 10, 2, 3},
		{"longer side cut", a, b, 10, 2, 5},
		{"both cut evenly", b[:8], b[:9], 9, 3, 3},
		{"no limit", a, b, 0, 2, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, types := tok.PairIDs(tt.a, tt.b, tt.maxLen)
			if len(ids) != len(types) {
				t.Fatalf("len(ids) = %d, len(types) = %d", len(ids), len(types))
			}
			if tt.maxLen > 0 && len(ids) > tt.maxLen {
				t.Errorf("len = %d exceeds %d", len(ids), tt.maxLen)
			}
			var na, nb int
			for i, ty := range types {
				if ids[i] == tok.CLS() || ids[i] == tok.SEP() {
					continue
				}
				if ty == 0 {
					na++
				} else {
					nb++
				}
			}
			if na != tt.wantA || nb != tt.wantB {
				t.Errorf("segments = %d, %d; want %d, %d", na, nb, tt.wantA, tt.wantB)
			}
			if ids[0] != tok.CLS() || ids[len(ids)-1] != tok.SEP() || ids[na+1] != tok.SEP() {
				t.Errorf("special tokens misplaced: %v", ids)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := wordpiece.Parse([]byte(strings.Replace(tinyJSON, `"WordPiece"`, `"BPE"`, 1))); err == nil {
		t.Error("BPE model accepted")
	}
	if _, err := wordpiece.Load(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("missing file accepted")
	}
}

func BenchmarkTokenize(b *testing.B) {
	tok, err := wordpiece.Load(filepath.Join(corpustest.Models(b), "bge_small_en_v1_5", "tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("The Transformer follows this overall architecture using stacked self-attention and point-wise, fully connected layers. ", 20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Tokenize(text)
	}
}
