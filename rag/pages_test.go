package rag

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestSentenceSpanOffsets checks that each sentence's offset points at its first character
// in the text before normalisation, across line breaks, hyphenation, bullets and blank
// lines (which normalisation rewrites), by comparing the non-space runes from there on.
func TestSentenceSpanOffsets(t *testing.T) {
	text := "  Self-\nattention relates positions.   It is fast.\n\n\n• Bullets\tare items here. " +
		"Über-models\r\nwork too!\n● Last  one?  Yes. \u00a0Trailing words"
	spans := sentenceSpans(text)
	if len(spans) < 6 {
		t.Fatalf("%d sentences: %+v", len(spans), spans)
	}
	if !slices.Equal(texts(spans), splitSentences(text)) {
		t.Fatalf("sentenceSpans and splitSentences disagree: %q vs %q", texts(spans), splitSentences(text))
	}
	for _, s := range spans {
		got := nonSpace(text[s.off:])
		want := nonSpace(s.text)
		if !strings.HasPrefix(got, want) {
			t.Errorf("sentence %q at offset %d reads %q", s.text, s.off, text[s.off:min(len(text), s.off+20)])
		}
	}
}

func texts(spans []sentenceSpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.text)
	}
	return out
}

func nonSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || isBullet(r) {
			return -1
		}
		return r
	}, s)
}

func TestPageAt(t *testing.T) {
	c := Chunk{PageStart: 3, PageEnd: 5, PageBreaks: []int{10, 20}}
	for off, want := range map[int]int{0: 3, 9: 3, 10: 4, 19: 4, 20: 5, 99: 5} {
		if got := c.PageAt(off); got != want {
			t.Errorf("PageAt(%d) = %d, want %d", off, got, want)
		}
	}
	if got := (Chunk{PageStart: 7, PageEnd: 8}).PageAt(50); got != 7 {
		t.Errorf("without breaks (an old store): page %d, want the first page 7", got)
	}
	if got := (Chunk{LineStart: 1, LineEnd: 9}).PageAt(5); got != 0 {
		t.Errorf("line-based chunk: page %d, want 0", got)
	}
}

// TestExtractiveCitesSentencePage: the answering sentence lies on the second page of a
// chunk spanning pages 3-4, so the quoted source cites page 4 only; a chunk from an old
// store (no breaks) falls back to its first page.
func TestExtractiveCitesSentencePage(t *testing.T) {
	page3 := "The encoder maps an input sequence to a sequence of continuous representations. It is built from stacked layers of identical structure."
	page4 := "In this work we employ h = 8 parallel attention layers, or heads. Each head uses a reduced dimension of sixty-four."
	c := Chunk{ID: "c", Name: "1706.03762", Text: page3 + "\n\n" + page4, PageStart: 3, PageEnd: 4, PageBreaks: []int{len(page3) + 2}}
	query := "How many parallel attention heads does the model employ?"
	for name, cfg := range map[string]Config{"overlap": {}, "embedder": {Embedders: []Embedder{bowEmbedder{}}}} {
		t.Run(name, func(t *testing.T) {
			p := testPipeline(t, cfg)
			sources := sourcesOf(c)
			got := p.extractive(t.Context(), query, sources)
			if !strings.Contains(got, "h = 8 parallel attention layers") {
				t.Fatalf("answer %q lacks the page-4 sentence", got)
			}
			if strings.Contains(got, "continuous representations") {
				if !slices.Equal(sources[0].Pages, []int{3, 4}) {
					t.Errorf("quoted pages 3 and 4, Pages = %v", sources[0].Pages)
				}
				return
			}
			if !slices.Equal(sources[0].Pages, []int{4}) {
				t.Errorf("quoted only page 4, Pages = %v", sources[0].Pages)
			}
		})
	}
	old := c
	old.PageBreaks = nil
	sources := sourcesOf(old)
	testPipeline(t, Config{}).extractive(t.Context(), query, sources)
	if !slices.Equal(sources[0].Pages, []int{3}) {
		t.Errorf("without page breaks Pages = %v, want the first page [3]", sources[0].Pages)
	}
}

type pgSearcher struct{ hits []Hit }

func (s pgSearcher) Search(context.Context, SearchRequest) ([]Hit, error) { return s.hits, nil }
func (pgSearcher) Chunks(context.Context, []string) ([]Chunk, error)      { return nil, nil }

// TestAskCarriesQuotedPages: the page an extractive sentence is quoted from reaches the
// answer's cited source, and uncited sources keep their chunk's pages.
func TestAskCarriesQuotedPages(t *testing.T) {
	page3 := "The encoder maps an input sequence to a sequence of continuous representations for the decoder."
	page4 := "In this work we employ h = 8 parallel attention layers, or heads."
	c := Chunk{ID: "c", Name: "1706.03762", Text: page3 + "\n\n" + page4, PageStart: 3, PageEnd: 4, PageBreaks: []int{len(page3) + 2}}
	other := Chunk{ID: "o", Name: "1810.04805", Text: "BERT is pre-trained with a masked language model objective on unlabeled text.", PageStart: 2, PageEnd: 3, PageBreaks: []int{10}}
	p := testPipeline(t, Config{Searcher: pgSearcher{hits: []Hit{{Chunk: c, Score: 1}, {Chunk: other, Score: 0.5}}}, Sparse: func(context.Context) (SparseEncoder, error) { return bm25Stub{}, nil }})
	ans, err := p.Ask(t.Context(), Question{Text: "How many parallel attention heads does the model employ?", Method: MethodBM25}, nil)
	if err != nil || ans.Refused || len(ans.Sources) == 0 {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	if first := ans.Sources[0]; !first.Cited || first.Chunk.ID != "c" {
		t.Fatalf("first source %s (cited %v), want chunk c cited: %q", first.Chunk.ID, first.Cited, ans.Text)
	}
	for _, s := range ans.Sources {
		switch {
		case s.Cited && s.Chunk.ID == "c" && !slices.Equal(s.Pages, []int{4}):
			t.Errorf("cited source pages %v, want [4] (answer %q)", s.Pages, ans.Text)
		case !s.Cited && s.Pages != nil:
			t.Errorf("uncited source %s has quoted pages %v", s.Chunk.ID, s.Pages)
		}
	}
}

type bm25Stub struct{}

func (bm25Stub) EncodeQuery(string) SparseVector {
	return SparseVector{Indices: []uint32{1}, Values: []float32{1}}
}

// TestExtractiveShortlist: only Config.SentenceCandidates sentences reach the costly
// scorer, and the one sharing the question's terms is among them even when it comes last.
func TestExtractiveShortlist(t *testing.T) {
	var filler []string
	for i := range 30 {
		filler = append(filler, fmt.Sprintf("Filler sentence number %d talks about unrelated matters entirely.", i))
	}
	answer := "The model employs eight parallel attention heads in every layer."
	c := Chunk{ID: "c", Text: strings.Join(filler, " ") + " " + answer, PageStart: 1, PageEnd: 1}
	var scored []string
	r := fnReranker(func(q string, passages []string) []float64 {
		scored = passages
		return overlapScores(q, passages)
	})
	p := testPipeline(t, Config{Reranker: r, SentenceCandidates: 5})
	got := p.extractive(t.Context(), "How many parallel attention heads does the model employ?", sourcesOf(c))
	if len(scored) != 5 {
		t.Errorf("scorer saw %d sentences, want the shortlist of 5", len(scored))
	}
	if !strings.Contains(got, "eight parallel attention heads") {
		t.Errorf("answer %q lacks the answering sentence; scored %q", got, scored)
	}
	scored = nil
	p = testPipeline(t, Config{Reranker: r, SentenceCandidates: -1})
	p.extractive(t.Context(), "How many parallel attention heads?", sourcesOf(c))
	if len(scored) != 31 {
		t.Errorf("negative SentenceCandidates: scorer saw %d sentences, want all 31", len(scored))
	}
}
