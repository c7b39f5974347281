package rag

import "time"

// Turn is one earlier question and answer of a conversation, oldest first in a history.
type Turn struct {
	Question string   `json:"question"`
	Answer   string   `json:"answer"`
	Sources  []Source `json:"sources,omitempty"` // the sources that answer cited or retrieved
}

// Question is what a caller asks the pipeline.
type Question struct {
	Text     string `json:"question"`
	History  []Turn `json:"history,omitempty"`  // earlier turns of the thread, oldest first
	Selected string `json:"selected,omitempty"` // selected-text mode: answer from this passage only, no retrieval
	Method   string `json:"method,omitempty"`   // "hybrid" (default), "bm25" or "dense:<model>"
	TopK     int    `json:"top_k,omitempty"`    // sources to keep after rerank; zero means the configured default (5)
	Filter   Filter `json:"filter,omitempty"`
}

// Source is one numbered piece of evidence of an answer. N is the number the answer text
// cites as [N].
type Source struct {
	N       int     `json:"n"`
	Chunk   Chunk   `json:"chunk"`
	Score   float64 `json:"score"`   // reranker probability when reranked, else the retrieval score
	Excerpt string  `json:"excerpt"` // a short passage for display, never cut mid-word
	Cited   bool    `json:"cited"`   // false: "also retrieved"
	// Pages are the pages of the text the answer quotes from this source, ascending, when
	// known: an extractive answer quotes whole sentences and cites each on its own page
	// (Chunk.PageAt), not the chunk's first page. Empty means the chunk's pages
	// (PageStart–PageEnd), as for generated answers and uncited sources.
	Pages []int `json:"pages,omitempty"`
}

// Grounding is the outcome of checking an answer's citations against their sources.
type Grounding struct {
	Checked     int `json:"checked"`     // markers checked
	Supported   int `json:"supported"`   // markers whose source supports the sentence
	Unsupported int `json:"unsupported"` // markers removed for lack of support
	Dropped     int `json:"dropped"`     // sentences dropped because no source supported them
}

// Timings is the processing time of each stage of one question.
type Timings struct {
	Condense time.Duration `json:"condense_ns"`
	Embed    time.Duration `json:"embed_ns"`
	Search   time.Duration `json:"search_ns"`
	Rerank   time.Duration `json:"rerank_ns"`
	Generate time.Duration `json:"generate_ns"`
	Total    time.Duration `json:"total_ns"`
}

// Answer is the pipeline's result. A refusal has Refused set, no Sources, and Text starting
// with Refusal: exactly Refusal, or followed by what the evidence-sufficiency gate found
// missing ("Not found in indexed documents. The papers mention GPT-3, but not GPT-4."),
// in which case More still lists the closest passages.
type Answer struct {
	Question         string   `json:"question"`
	Query            string   `json:"query"` // the standalone query used for retrieval
	Text             string   `json:"answer"`
	Refused          bool     `json:"refused"`
	Sources          []Source `json:"sources"`           // cited first, in citation order, then "also retrieved"
	More             []Source `json:"more,omitempty"`    // further candidates below the cut (all of them after a gate refusal), for "More sources"
	Confidence       float64  `json:"confidence"`        // in [0, 1]
	Generator        string   `json:"generator"`         // "extractive", "ollama:<model>", "openai:<model>"
	Method           string   `json:"method"`            // retrieval method used
	Note             string   `json:"note,omitempty"`    // e.g. "the language model timed out; extractive answer"
	InvalidCitations int      `json:"invalid_citations"` // markers removed because they pointed at no source
	Citations        int      `json:"citations"`         // valid markers kept
	// Grounding counts the citation markers checked against their sources: Supported were
	// kept, Unsupported were removed (and sentences left with no support dropped).
	Grounding Grounding `json:"grounding"`
	// Missing names what the question hinges on that the evidence does not cover, when the
	// evidence-sufficiency gate refused ("GPT-4"); empty otherwise.
	Missing []string `json:"missing,omitempty"`
	Timings Timings  `json:"timings"`
}
