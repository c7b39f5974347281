package rag

import (
	"slices"
	"strings"
	"testing"
)

var (
	attrDSI = Chunk{ID: "dsi", DocID: "dsi", Title: "Transformer Memory as a Differentiable Search Index",
		Text: "DSI models are trained on NQ320K with the Adafactor optimizer and a learning rate of 0.001 for 1M steps."}
	attrDSIb = Chunk{ID: "dsib", DocID: "dsi", Title: "Transformer Memory as a Differentiable Search Index",
		Text: "We index documents with semantic identifiers built by hierarchical k-means over BERT embeddings of DSI documents."}
	attrQLoRA = Chunk{ID: "qlora", DocID: "qlora", Title: "QLoRA: Efficient Finetuning of Quantized LLMs",
		Text: "We use a LoRA dropout of 0.1 for models up to 13B and 0.05 for the 33B and 65B models, and a max grad norm of 0.3."}
	attrQLoRAb = Chunk{ID: "qlorab", DocID: "qlora", Title: "QLoRA: Efficient Finetuning of Quantized LLMs",
		Text: "LoRA computes Y = XW + sXL1L2 where L1 and L2 are the low-rank projections."}
	attrT5 = Chunk{ID: "t5bleu", DocID: "t5", Title: "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer",
		Text: "BLEU is computed with SacreBLEU with exp smoothing and intl tokenization for T5."}
	attrTransformer = Chunk{ID: "tls", DocID: "transformer", Title: "Attention Is All You Need",
		Text: "During training, the Transformer employed label smoothing of value 0.1."}
	attrPdrop = Chunk{ID: "pdrop", DocID: "transformer", Title: "Attention Is All You Need",
		Text: "We apply a rate of P_drop = 0.1 to the output of each sub-layer of the Transformer."}
)

// TestGateUnstatedAttribute: a question about a training setting the paper never reports is
// refused naming it; one the paper reports, even in a passage not kept, is answered.
func TestGateUnstatedAttribute(t *testing.T) {
	corpus := []Chunk{attrDSI, attrDSIb, attrQLoRA, attrQLoRAb, attrT5, attrTransformer, attrPdrop}
	p := gatePipeline(t, corpus)
	runGateCases(t, p, corpus, []gateCase{
		{"setting the paper never states", "What dropout rate did the DSI models use during training?", []Chunk{attrDSI}, []string{"dropout"}, "dropout"},
		// Another paper's dropout beside it does not answer for DSI.
		{"another kept paper states it", "What dropout rate did the DSI models use during training?", []Chunk{attrDSI, attrQLoRA}, []string{"dropout"}, "dropout"},
		{"stated in the kept passage", "Which learning rate did the DSI models use?", []Chunk{attrDSI}, nil, ""},
		{"stated elsewhere in the paper", "Which optimizer trains DSI's semantic identifiers?", []Chunk{attrDSIb}, nil, ""},
		{"spelled differently", "What dropout did the Transformer use?", []Chunk{attrPdrop}, nil, ""},
		{"BLEU smoothing is not label smoothing", "What label smoothing did T5 use?", []Chunk{attrT5}, []string{"label smoothing"}, "label smoothing"},
		{"label smoothing stated", "What label smoothing did the Transformer use?", []Chunk{attrTransformer}, nil, ""},
		{"grad norm found elsewhere in the paper", "What max grad norm did QLoRA use?", []Chunk{attrQLoRAb}, nil, ""},
		// QLoRA's L2 is a matrix, not an L2 penalty.
		{"a matrix named L2 is not weight decay", "What weight decay did QLoRA use?", []Chunk{attrQLoRAb}, []string{"weight decay"}, "weight decay"},
		{"no setting asked", "How are DSI's semantic identifiers built?", []Chunk{attrDSIb}, nil, ""},
		{"a seed the paper never states", "Which random seed did the DSI authors fix?", []Chunk{attrDSI}, []string{"random seed"}, "random seed"},
		// "top-p" is a sampling setting; "top" alone is not.
		{"top-p the paper never states", "What top-p did the DSI models decode with?", []Chunk{attrDSI}, []string{"top-p"}, "top-p"},
		{"a model on top is no sampling setting", "Which learning rate did the DSI models use with a classifier on top?", []Chunk{attrDSI}, nil, ""},
	})
}

// TestEvidenceIndexPossessive: the question's tokenizer drops a possessive, so the
// evidence must too, with either apostrophe.
func TestEvidenceIndexPossessive(t *testing.T) {
	items := questionItems("What accuracy does GPT-2 get on the Children's Book Test?")
	i := slices.IndexFunc(items, func(it keyItem) bool { return it.hard && strings.HasPrefix(it.text, "Children") })
	if i < 0 {
		t.Fatalf("items %+v lack the benchmark's name", items)
	}
	for _, text := range []string{"On the Children’s Book Test, GPT-2 improves.", "On the Children's Book Test, GPT-2 improves."} {
		if !newEvidenceIndex(text).covers(items[i]) {
			t.Errorf("%q does not cover %q", text, items[i].text)
		}
	}
}
