package rag

import (
	"context"
	"slices"
	"strings"
	"testing"
)

var (
	attrDSI = Chunk{ID: "dsi", DocID: "dsi", Title: "Transformer Memory as a Differentiable Search Index",
		Text: "DSI models are trained on NQ320K with the Adafactor optimizer and a learning rate of 0.001 for 1M steps."}
	attrDSI2 = Chunk{ID: "dsi2", DocID: "dsi", Title: "Transformer Memory as a Differentiable Search Index",
		Text: "Table 2: DSI models trained with a learning rate of 0.001 reach 40.4 Hits@1."}
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
	attrClips = Chunk{ID: "clips", DocID: "gpt2", Title: "Language Models are Unsupervised Multitask Learners",
		Text: "GPT-2 continues the article: a DVD containing the four clips that were released earlier."}
	attrBatch = Chunk{ID: "batch", DocID: "gpt2", Title: "Language Models are Unsupervised Multitask Learners",
		Text: "The vocabulary is expanded to 50,257 and a larger batchsize of 512 is used for GPT-2."}
	attrPdrop = Chunk{ID: "pdrop", DocID: "transformer", Title: "Attention Is All You Need",
		Text: "We apply a rate of P_drop = 0.1 to the output of each sub-layer of the Transformer."}
	attrLRDecay = Chunk{ID: "lrdecay", DocID: "t5", Title: "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer",
		Text: "T5 uses a constant learning rate for the first steps and then exponentially decays the learning rate; the averaged weights use an EMA decay of 0.999."}
	attrInit = Chunk{ID: "init", DocID: "qlora", Title: "QLoRA: Efficient Finetuning of Quantized LLMs",
		Text: "The LoRA matrix L2 is initialized to zero, so the model starts unchanged."}
	attrMemory = Chunk{ID: "mem", DocID: "qlora", Title: "QLoRA: Efficient Finetuning of Quantized LLMs",
		Text: "For a 7B LLaMA model finetuned on FLAN v2 with 1 example per step, the LoRA input gradients take 567 MB of memory."}
	attrEncoder = Chunk{ID: "ep", DocID: "dpr", Title: "Dense Passage Retrieval for Open-Domain Question Answering",
		Text: "DPR's dense encoder EP(·) maps each passage to 768 dimensions and is trained with Adam."}
	attrGPT2 = Chunk{ID: "gpt2", DocID: "gpt2", Title: "Language Models are Unsupervised Multitask Learners",
		Text: "The largest GPT-2 has 48 layers and a width of 1600; the head of the department answered."}
	attrHeads = Chunk{ID: "heads", DocID: "transformer", Title: "Attention Is All You Need",
		Text: "In this work we employ h = 8 parallel attention layers, or heads."}
	attrWD = Chunk{ID: "wd", DocID: "bert", Title: "BERT: Pre-training of Deep Bidirectional Transformers",
		Text: "We train BERT with Adam, a learning rate of 1e-4 and an L2 weight decay of 0.01."}
)

// TestGateUnstatedAttribute: a question about a training setting the paper never reports is
// refused naming it; one the paper reports, even in a passage not kept, is answered.
func TestGateUnstatedAttribute(t *testing.T) {
	corpus := []Chunk{attrDSI, attrDSIb, attrQLoRA, attrQLoRAb, attrT5, attrTransformer, attrPdrop, attrClips, attrBatch, attrLRDecay, attrWD, attrInit, attrInitState, attrMemory, attrEncoder, attrGPT2, attrHeads}
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
		// An n-gram model's smoothing is no label smoothing: nothing kept needs to name labels.
		{"an n-gram model's smoothing", "What kind of smoothing did the n-gram model of T5's BLEU use?", []Chunk{attrT5}, nil, ""},
		{"grad norm found elsewhere in the paper", "What max grad norm did QLoRA use?", []Chunk{attrQLoRAb}, nil, ""},
		{"batch size written as one word", "What batch size did GPT-2 use?", []Chunk{attrBatch}, nil, ""},
		// A sample's video clips are no gradient clipping.
		{"clips are not clipping", "What gradient clipping threshold did GPT-2 use?", []Chunk{attrClips}, []string{"gradient clipping"}, "gradient clipping"},
		// QLoRA's L2 is a matrix, not an L2 penalty.
		{"a matrix named L2 is not weight decay", "What weight decay did QLoRA use?", []Chunk{attrQLoRAb}, []string{"weight decay"}, "weight decay"},
		// A learning rate that decays is no weight decay, and a decay rate asks for none.
		{"a decaying learning rate is not weight decay", "What weight decay did T5 use?", []Chunk{attrLRDecay}, []string{"weight decay"}, "weight decay"},
		{"weight decay stated", "What weight decay did BERT use?", []Chunk{attrWD}, nil, ""},
		{"a decay rate is not weight decay", "What decay rate did T5's weight average use?", []Chunk{attrLRDecay}, nil, ""},
		{"an initialisation the paper never states", "How were the DSI models' weights initialized?", []Chunk{attrDSI}, []string{"weight initialization"}, "weight initialization"},
		{"initialisation stated elsewhere in the paper", "How were the LoRA matrices initialized in QLoRA?", []Chunk{attrQLoRAb}, nil, ""},
		// DPR: "The question encoder's initial state is taken from a DPR model".
		{"an initial state is an initialisation", "What were DPR's jointly trained encoders initialized from?", []Chunk{attrInitState}, nil, ""},
		{"no setting asked", "How are DSI's semantic identifiers built?", []Chunk{attrDSIb}, nil, ""},
		{"a seed the paper never states", "Which random seed did the DSI authors fix?", []Chunk{attrDSI}, []string{"random seed"}, "random seed"},
		// "top-p" is a sampling setting; "top" alone is not.
		{"top-p the paper never states", "What top-p did the DSI models decode with?", []Chunk{attrDSI}, []string{"top-p"}, "top-p"},
		{"a model on top is no sampling setting", "Which learning rate did the DSI models use with a classifier on top?", []Chunk{attrDSI}, nil, ""},
		// The question gives the batch size; it asks how long training took.
		{"a setting given with its figure is a premise", "With batch size 1, how much memory do the LoRA input gradients of a 7B LLaMA take?", []Chunk{attrMemory}, nil, ""},
		{"a figure given before the setting is a premise", "Which learning rate did the DSI models use when trained for 2 epochs?", []Chunk{attrDSI2}, nil, ""},
		{"a setting asked without a figure", "How many epochs did the DSI models train for?", []Chunk{attrDSI}, []string{"epochs"}, "epochs"},
		// "download" as a verb asks where a model is, not how often it was fetched.
		{"a download count the paper never gives", "How many times were the DSI checkpoints downloaded?", []Chunk{attrDSI}, []string{"download counts"}, "download counts"},
		{"a model to download is no count", "Which of the DSI checkpoints can I just download?", []Chunk{attrDSI}, nil, ""},
		{"an encoder's symbol is no epsilon", "Which epsilon did DPR set for Adam?", []Chunk{attrEncoder}, []string{"epsilon"}, "epsilon"},
		{"heads a paper never gives", "How many attention heads does each layer of GPT-2 use?", []Chunk{attrGPT2}, []string{"attention heads"}, "attention heads"},
		{"heads a paper gives", "How many heads does the Transformer's attention use?", []Chunk{attrHeads}, nil, ""},
		{"a classifier's heads are no attention heads", "How does GPT-2 know the task without task-specific heads?", []Chunk{attrGPT2}, nil, ""},
		{"a setting asked beside a name with a digit", "Which batch size did T5 use?", []Chunk{attrT5}, []string{"batch size"}, "batch size"},
		// "How many" asks for a count of what it names, which a paper that counts it names.
		{"a count of what the paper never names", "How many different subreddits did GPT-2's web scrape draw on?", []Chunk{attrGPT2}, []string{"subreddits"}, "subreddits"},
		{"a count of what the paper names", "How many documents did the DSI models index?", []Chunk{attrDSIb}, nil, ""},
		{"a count the paper gives", "How many layers does the largest GPT-2 have?", []Chunk{attrGPT2}, nil, ""},
		{"a count given in words", "How many parallel attention layers does the Transformer run?", []Chunk{attrHeads}, nil, ""},
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

var (
	measDSI = Chunk{ID: "mdsi", DocID: "dsi", Title: "Transformer Memory as a Differentiable Search Index",
		Text: "DSI retrieves by decoding docids with beam search, so no index of document vectors is kept and the model is trained for 1M steps."}
	measDSIb = Chunk{ID: "mdsib", DocID: "dsi", Title: "Transformer Memory as a Differentiable Search Index",
		Text: "The training time and the speed of retrieval grow with the number of documents DSI memorizes."}
	measLLaMA = Chunk{ID: "mllama", DocID: "llama", Title: "LLaMA: Open and Efficient Foundation Language Models",
		Text: "When training a 65B-parameter model, our code processes around 380 tokens/sec/GPU on 2048 A100 GPUs with 80GB of RAM."}
	measLLaMAb = Chunk{ID: "mllamab", DocID: "llama", Title: "LLaMA: Open and Efficient Foundation Language Models",
		Text: "Training over our dataset containing 1.4T tokens takes approximately 21 days, and the cost of inference matters at scale."}
	measQLoRA = Chunk{ID: "mqlora", DocID: "qlora", Title: "QLoRA: Efficient Finetuning of Quantized LLMs",
		Text: "The human evaluation of Guanaco cost $528 with Amazon Mechanical Turk workers, who were paid fairly."}
	measLoRA = Chunk{ID: "mlora", DocID: "lora", Title: "LoRA: Low-Rank Adaptation of Large Language Models",
		Text: "Table 1: Inference latency of a single forward pass in GPT-2 medium measured in milliseconds, averaged over 100 trials."}
	measRAG = Chunk{ID: "mrag", DocID: "rag", Title: "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks",
		Text: "Table 7: Number of instances per split. 13714 26849 MS-MARCO. We train RAG models on 8 V100 GPUs with mixed precision."}
	measGPT = Chunk{ID: "mgpt", DocID: "instruct", Title: "Training language models to follow instructions",
		Text: "Labelers of InstructGPT outputs were paid for their time and worked through the comparisons in batches."}
)

// TestGateReportedMeasures: a time, a sum of money or an amount of memory is reported as
// a figure with its unit; a question asking for one of a paper that gives none is refused
// naming it, and answered when the paper gives one anywhere. A word alone ("training
// time", "paid", "cost") reports nothing, and a question using such a word in another
// sense ("how long … to converge", "latency", "cost of inference") asks for no measure.
func TestGateReportedMeasures(t *testing.T) {
	corpus := []Chunk{measDSI, measDSIb, measLLaMA, measLLaMAb, measQLoRA, measGPT, measLoRA, measRAG, measDistil}
	p := gatePipeline(t, corpus)
	runGateCases(t, p, corpus, []gateCase{
		{"no time in the paper", "How many milliseconds does DSI take to retrieve documents for one query?", []Chunk{measDSI}, []string{"timings"}, "timings"},
		{"seconds", "How many seconds does DSI's retrieval take per query?", []Chunk{measDSIb}, []string{"timings"}, "timings"},
		{"a table's unit", "How many milliseconds does a forward pass of GPT-2 medium with LoRA take?", []Chunk{measLoRA}, nil, ""},
		{"a count before a dataset's name is no time", "How many hours did training the RAG models take on the V100 GPUs?", []Chunk{measRAG}, []string{"timings"}, "timings"},
		// Answered in steps, or by the paper's reasoning about speed: no figure asked.
		{"how long, in steps", "How long does DSI take to converge?", []Chunk{measDSI}, nil, ""},
		{"latency, of reasoning", "Why does DSI's retrieval latency grow with the number of documents?", []Chunk{measDSIb}, nil, ""},
		{"a time elsewhere in the paper", "How many days did it take to train the 65B LLaMA?", []Chunk{measLLaMA}, nil, ""},
		// Days of training are no latency, and a latency no training time.
		{"a training time is no latency", "How many milliseconds does the 65B LLaMA take per generated token?", []Chunk{measLLaMA}, []string{"timings"}, "timings"},
		{"a latency is no training time", "How many hours did it take to train GPT-2 medium with LoRA?", []Chunk{measLoRA}, []string{"timings"}, "timings"},
		{"a table header's unit", "How many seconds does DistilBERT take for a pass over STS-B?", []Chunk{measDistil}, nil, ""},
		{"how long, of a length", "How long are the docids DSI decodes with beam search?", []Chunk{measDSI}, nil, ""},
		{"no sum of money", "How much did it cost to train LLaMA on the 1.4T tokens?", []Chunk{measLLaMAb}, []string{"costs in money"}, "costs in money"},
		{"paid, with no sum", "How much were the InstructGPT labelers paid per hour?", []Chunk{measGPT}, []string{"costs in money"}, "costs in money"},
		{"a sum in dollars", "How much did Guanaco's human evaluation cost?", []Chunk{measQLoRA}, nil, ""},
		{"cost, not money", "What is the cost of inference for LLaMA?", []Chunk{measLLaMAb}, nil, ""},
		{"memory in gigabytes", "How much memory does LLaMA need in training?", []Chunk{measLLaMAb}, nil, ""},
		{"no memory figure", "How much memory does DSI's model need?", []Chunk{measDSIb}, []string{"memory sizes"}, "memory sizes"},
		{"a license never named", "Under what license was DSI released?", []Chunk{measDSI}, []string{"a license"}, "a license"},
	})
}

var measDistil = Chunk{ID: "mdistil", DocID: "distilbert", Title: "DistilBERT, a distilled version of BERT",
	Text: "Table 3: Inference time of a full pass of GLUE task STS-B on CPU. Model # param. (Millions) Inf. time (seconds) ELMo 180 895 BERT-base 110 668 DistilBERT 66 410"}

var (
	vocabELECTRA = Chunk{ID: "velectra", DocID: "electra", Title: "ELECTRA: Pre-training Text Encoders as Discriminators Rather Than Generators",
		Text: "ELECTRA uses BERT's WordPiece tokenizer. The loss sums over the unmasked tokens x∈vocab (1 − pmask) pdata(x|c) log D(x, c)."}
	vocabT5 = Chunk{ID: "vt5", DocID: "t5", Title: "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer",
		Text: "T5 uses SentencePiece to encode text as WordPiece tokens. For all experiments, we use a vocabulary of 32,000 wordpieces."}
	vocabBERT = Chunk{ID: "vbert", DocID: "bert", Title: "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
		Text: "We use WordPiece embeddings (Wu et al., 2016) with a 30,000 token vocabulary."}
	vocabGPT2 = Chunk{ID: "vgpt2", DocID: "gpt2", Title: "Language Models are Unsupervised Multitask Learners",
		Text: "GPT-2 works on byte sequences, so no character is ever outside its vocabulary. The vocabulary is expanded to 50,257."}
)

var attrInitState = Chunk{ID: "initstate", DocID: "dpr", Title: "Dense Passage Retrieval for Open-Domain Question Answering",
	Text: "In DPR's joint training, the question encoder's initial state is taken from a DPR model trained on NQ, and the jointly trained reader's is BERT-base."}

var attrAdamEps = Chunk{ID: "adameps", DocID: "transformer", Title: "Attention Is All You Need",
	Text: "We used the Adam optimizer with β1 = 0.9, β2 = 0.98 and ϵ = 10−9."}

// TestGateAdamEpsilon: a paper writes Adam's epsilon as "ϵ" beside the optimizer, where
// the search for the setting must look.
func TestGateAdamEpsilon(t *testing.T) {
	corpus := []Chunk{attrTransformer, attrAdamEps, attrDSI}
	p := gateSearchPipeline(t, corpus, func(enc *idfEncoder) Searcher { return termSearcher{gateSearcher{corpus}, enc} }, nil)
	runGateCases(t, p, corpus, []gateCase{
		{"epsilon in the optimizer's passage", "What label smoothing epsilon did the Transformer use during training?", []Chunk{attrTransformer}, nil, ""},
		{"no epsilon in the paper", "What epsilon did the DSI models use with Adafactor?", []Chunk{attrDSI}, []string{"epsilon"}, "epsilon"},
	})
}

// termSearcher finds, for a BM25 query, only the passages that hold one of its terms, as
// BM25 does: gateSearcher finds every passage of the documents asked.
type termSearcher struct {
	gateSearcher
	enc *idfEncoder
}

func (s termSearcher) Search(ctx context.Context, req SearchRequest) ([]Hit, error) {
	hits, err := s.gateSearcher.Search(ctx, req)
	if err != nil || req.Sparse == nil {
		return hits, err
	}
	var out []Hit
	for _, h := range hits {
		for term := range termSet(h.Chunk.Text) {
			if id, ok := s.enc.id[term]; ok && slices.Contains(req.Sparse.Indices, id) {
				out = append(out, h)
				break
			}
		}
	}
	return out, nil
}

// TestGateVocabularySize: a vocabulary's size is stated as a number beside the word; a
// paper that names its tokenizer, or counts its training tokens, states none.
func TestGateVocabularySize(t *testing.T) {
	corpus := []Chunk{vocabELECTRA, vocabT5, vocabBERT, vocabGPT2, measLLaMAb}
	p := gatePipeline(t, corpus)
	runGateCases(t, p, corpus, []gateCase{
		{"a tokenizer named, no size", "How big is the WordPiece vocabulary used by the ELECTRA models?", []Chunk{vocabELECTRA}, []string{"a vocabulary size"}, "a vocabulary size"},
		{"training tokens are no vocabulary", "How many tokens are in LLaMA's vocabulary?", []Chunk{measLLaMAb}, []string{"a vocabulary size"}, "a vocabulary size"},
		{"size after the word", "How big is T5's WordPiece vocabulary?", []Chunk{vocabT5}, nil, ""},
		{"size before the word", "What vocabulary size did BERT use?", []Chunk{vocabBERT}, nil, ""},
		{"size in the next clause", "How large is GPT-2's vocabulary?", []Chunk{vocabGPT2}, nil, ""},
		{"no size asked", "What does GPT-2 do about characters outside its vocabulary?", []Chunk{vocabGPT2}, nil, ""},
	})
}

// TestGateSettingFigure: a question asking for a setting's figure is answered only where
// the paper gives one beside the setting's name, in any of its spellings; a question
// about how it was set or scheduled still passes on the name alone.
func TestGateSettingFigure(t *testing.T) {
	distil := Chunk{ID: "distil", DocID: "distilbert", Title: "DistilBERT, a distilled version of BERT",
		Text: "Following Hinton et al. we used a softmax-temperature: the same temperature T is applied to the student and the teacher at training time."}
	gpt := Chunk{ID: "gpt", DocID: "gpt", Title: "Improving Language Understanding by Generative Pre-Training",
		Text: "We used a bytepair encoding vocabulary with 40,000 merges [53] and residual, embedding, and attention dropouts with a rate of 0.1 for regularization. " +
			"We add dropout to the classifier of the fine-tuned model, as described in section 3."}
	wsj := Chunk{ID: "wsj", DocID: "transformer", Title: "Attention Is All You Need",
		Text: "For parsing with the Transformer we performed only a small number of experiments to select the dropout, both attention and residual (section 5.4), learning rates and beam size on the Section 22 development set."}
	sbert := Chunk{ID: "sbert", DocID: "sbert", Title: "Sentence-BERT",
		Text: "We fine-tune SBERT with the Adam optimizer and a linear learning rate warm-up over 10% of the training data."}
	sbertNoFigure := Chunk{ID: "sbert2", DocID: "sbert2", Title: "Sentence-BERT",
		Text: "We fine-tune SBERT with the Adam optimizer and a linear learning rate warm-up, as in BERT (Devlin et al., 2019)."}
	accum := Chunk{ID: "accum", DocID: "distilbert2", Title: "DistilBERT, a distilled version of BERT",
		Text: "DistilBERT is distilled on very large batches leveraging gradient accumulation (up to 4K examples per batch) using dynamic masking."}
	corpus := []Chunk{distil, gpt, wsj, sbert, sbertNoFigure, accum}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"a temperature without a figure", "What softmax temperature T did DistilBERT use in the distillation loss?", []Chunk{distil}, []string{"temperature"}, "temperature"},
		{"the figure is beside the plural", "What dropout rate did the original GPT use during pre-training?", []Chunk{gpt}, nil, ""},
		// A section's number and a citation's year are no setting's figure.
		{"a section number is no figure", "What dropout did the Transformer use for parsing?", []Chunk{wsj}, []string{"dropout"}, "dropout"},
		{"the setting asked how, not how much", "Why did the Transformer select the dropout on the development set?", []Chunk{wsj}, nil, ""},
		{"a warm-up figure", "How many warm-up steps did SBERT use?", []Chunk{sbert}, nil, ""},
		{"no warm-up figure", "How many warm-up steps did SBERT use?", []Chunk{sbertNoFigure}, []string{"warmup"}, "warmup"},
		// "What warm-up" asks what kind: "a linear warm-up" answers it.
		{"the kind of warm-up", "What warm-up did SBERT use?", []Chunk{sbertNoFigure}, nil, ""},
		// The question's own figure is its premise: "4K" is the batch, not the steps.
		{"the question's own figure", "How many gradient accumulation steps did DistilBERT use to reach its 4K-example batches?", []Chunk{accum}, []string{"gradient accumulation"}, "gradient accumulation"},
		{"a figure beside the setting", "How many gradient accumulation steps did DistilBERT use?", []Chunk{accum}, nil, ""},
	})
}

// chunk is a passage of paper doc, titled.
func chunk(id, doc, title, text string) Chunk {
	return Chunk{ID: id, DocID: doc, Title: title, Text: text}
}

// TestGateSettingQualifier: a figure asked for something the paper is not itself about
// (its parser, a dataset it fine-tunes on) must stand where the paper names that thing;
// the paper's figure for its translation models does not answer for its parser.
func TestGateSettingQualifier(t *testing.T) {
	const aiayn, sbert, loraTitle = "Attention Is All You Need", "Sentence-BERT", "LoRA: Low-Rank Adaptation of Large Language Models"
	mt := chunk("mt", "transformer", aiayn, "For the Transformer base model we use a rate of P_drop = 0.1 on every sub-layer.")
	wsj := chunk("wsj", "transformer", aiayn, "We trained a 4-layer Transformer on the WSJ portion of the Penn Treebank and selected the dropout on the development set.")
	wsjStated := chunk("wsj2", "transformer2", aiayn, "We trained a 4-layer Transformer on the WSJ portion of the Penn Treebank with a dropout of 0.3.")
	nli := chunk("nli", "sbert", sbert, "We fine-tune SBERT on the union of SNLI and MultiNLI with a batch size of 16.")
	nliIntro := chunk("nlii", "sbert", sbert, "SBERT is trained on NLI data.")
	lora := chunk("lora", "lora", loraTitle, "For GPT-3 we train with a batch size of 128 and a learning rate of 2e-4.")
	loraIntro := chunk("lorai", "lora", loraTitle, "We scale LoRA up to GPT-3 175B.")
	lora2 := chunk("lora2", "lora2", loraTitle, "For RoBERTa we train with a batch size of 16 and a learning rate of 4e-4.")
	lora2Intro := chunk("lora2i", "lora2", loraTitle, "We scale LoRA up to GPT-3 175B.")
	dpr := chunk("dpr", "dpr", "Dense Passage Retrieval for Open-Domain Question Answering", "We trained the question and passage encoders for up to 40 epochs with a batch size of 128.")
	dprReader := chunk("dprr", "dprr", "Dense Passage Retrieval for Open-Domain Question Answering", "For the reader we use a batch size of 16.")
	// The stage is a part as well: pre-training's figures are not fine-tuning's.
	realm := chunk("realm", "realm", "REALM: Retrieval-Augmented Language Model Pre-Training", "We pre-train REALM for 200k steps with a learning rate of 3e-5.")
	realmFT := chunk("realmft", "realmft", "REALM: Retrieval-Augmented Language Model Pre-Training", "When fine-tuning on Open-QA we use a learning rate of 1e-5.")
	corpus := []Chunk{mt, wsj, wsjStated, nli, nliIntro, lora, loraIntro, lora2, lora2Intro, dpr, dprReader, realm, realmFT}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"the figure is for other models", "What dropout rate did the Transformer use for WSJ parsing?", []Chunk{mt, wsj}, []string{"dropout"}, "The papers give dropout, but not for WSJ."},
		{"the figure is for the parser", "What dropout rate did the Transformer use for WSJ parsing?", []Chunk{wsjStated}, nil, ""},
		{"no qualifier", "What dropout rate did the Transformer base model use?", []Chunk{mt, wsj}, nil, ""},
		// "NLI" is part of the paper's "SNLI" and "MultiNLI"; a model's size is no qualifier.
		{"an acronym inside a word", "What batch size did SBERT use when fine-tuning on NLI?", []Chunk{nliIntro, nli}, nil, ""},
		{"a size is no qualifier", "What batch size did LoRA use on GPT-3 175B?", []Chunk{loraIntro, lora}, nil, ""},
		{"the figure is for another model", "What batch size did LoRA use on GPT-3 175B?", []Chunk{lora2Intro, lora2}, []string{"batch size"}, "The papers give batch size, but not for GPT-3."},
		// A part of a system is asked of separately: the encoders' figures are not the reader's.
		{"the figure is for the encoders", "For how many epochs did they train the DPR reader?", []Chunk{dpr, dprReader}, []string{"epochs"}, `The papers give epochs, but not for "reader".`},
		{"the figure is for the reader", "What batch size did they use to train the DPR reader?", []Chunk{dpr, dprReader}, nil, ""},
		{"the encoders asked", "For how many epochs did they train the DPR encoders?", []Chunk{dpr, dprReader}, nil, ""},
		{"the figure is for pre-training", "What learning rate did they use when fine-tuning REALM?", []Chunk{realm}, []string{"learning rate"}, `The papers give learning rate, but not for "fine-tuning".`},
		{"the figure is for fine-tuning", "What learning rate did they use when fine-tuning REALM?", []Chunk{realmFT}, nil, ""},
		{"pre-training asked", "What learning rate did they use to pre-train REALM?", []Chunk{realm}, nil, ""},
	})
}

// TestGateFigureOfAnotherSetting: a figure with another setting named between it and the
// one asked is the other's; the warm-up asked "how many steps" of a "schedule" is still a
// figure asked.
func TestGateFigureOfAnotherSetting(t *testing.T) {
	dpr := Chunk{ID: "dprwu", DocID: "dpr", Title: "Dense Passage Retrieval for Open-Domain Question Answering",
		Text: "We train with a learning rate of 1e-5 using Adam, linear scheduling with warm-up and dropout rate 0.1."}
	bert := Chunk{ID: "bertwu", DocID: "bert", Title: "BERT: Pre-training of Deep Bidirectional Transformers",
		Text: "BERT uses learning rate warmup over the first 10,000 steps, and linear decay of the learning rate."}
	corpus := []Chunk{dpr, bert, gateFill}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"the dropout's figure", "How many warmup steps were in DPR's linear learning-rate schedule?", []Chunk{dpr}, []string{"warmup"}, "warmup"},
		{"its own figure", "How many warmup steps were in BERT's linear learning-rate schedule?", []Chunk{bert}, nil, ""},
		{"a figure not asked", "What warmup schedule did DPR use?", []Chunk{dpr}, nil, ""},
		{"a setting's own figure beside another", "What dropout rate did DPR use?", []Chunk{dpr}, nil, ""},
	})
}

// TestGateSpreadCoefficientMaskingCasing: four more settings users ask of a paper that
// never gives them (LoRA's Gaussian spread, LLaMA's loss coefficients, DistilBERT's masking
// rate, SBERT's casing), each refused by name and answered where a paper does give it.
func TestGateSpreadCoefficientMaskingCasing(t *testing.T) {
	lora := chunk("lora", "lora", "LoRA: Low-Rank Adaptation of Large Language Models",
		"We use a random Gaussian initialization for A and zero for B. Due to the high training cost, we only report the typical standard deviation for a given task over random seeds.")
	gpt := chunk("gpt", "gpt", "Improving Language Understanding by Generative Pre-Training",
		"Since layernorm is used extensively throughout the model, a simple weight initialization of N(0, 0.02) was sufficient.")
	llama := chunk("llama", "llama", "LLaMA: Open and Efficient Foundation Language Models",
		"We use a weight decay of 0.1 and gradient clipping of 1.0, and normalize the input of each transformer sub-layer.")
	igpt := chunk("igpt", "instructgpt", "Training language models to follow instructions with human feedback",
		"We find that even by increasing the KL reward coefficient to 2.0, the regressions on DROP and SQuAD remain.")
	sbertSTS := chunk("sts", "sbert", "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks",
		"We compute the Spearman's rank correlation coefficient between the cosine similarity of the sentence embeddings and the gold labels of STS: 77.03 for SBERT-NLI-base.")
	distil := chunk("distil", "distilbert", "DistilBERT, a distilled version of BERT",
		"DistilBERT is distilled on very large batches leveraging gradient accumulation using dynamic masking for the masked language modeling loss and without the next sentence prediction objective.")
	bert := chunk("bert", "bert", "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
		"In all of our experiments, we mask 15% of all WordPiece tokens in each sequence at random.")
	dpr := chunk("dpr", "dpr", "Dense Passage Retrieval for Open-Domain Question Answering",
		"We use two independent BERT networks (base, uncased) and take the representation at the [CLS] token as the output.")
	corpus := []Chunk{lora, gpt, llama, igpt, sbertSTS, distil, bert, dpr}
	runGateCases(t, gatePipeline(t, corpus), corpus, []gateCase{
		{"a spread of results is no initialisation's", "What standard deviation did Hu et al. use for the Gaussian that initializes A?", []Chunk{lora}, []string{"standard deviation"}, "standard deviation"},
		{"a spread written as N(0, σ)", "What standard deviation did the original GPT use to initialize its weights?", []Chunk{gpt}, nil, ""},
		{"no coefficient named", "What z-loss coefficient did Meta add when pre-training LLaMA?", []Chunk{llama}, []string{"a loss coefficient"}, "a loss coefficient"},
		{"a coefficient with its figure", "What KL reward coefficient did Ouyang et al. use?", []Chunk{igpt}, nil, ""},
		{"a correlation coefficient is a result", "What Spearman correlation coefficient does SBERT-NLI-base reach on STS?", []Chunk{sbertSTS}, nil, ""},
		{"masking without a rate", "What percentage of input tokens did DistilBERT mask for the masked language modeling loss?", []Chunk{distil}, []string{"a masking rate"}, "a masking rate"},
		{"a masking rate", "What percentage of tokens does BERT mask during pre-training?", []Chunk{bert}, nil, ""},
		{"a learning rate for masked LM asks no masking rate", "What learning rate did DistilBERT use for the masked language modeling loss?", []Chunk{distil}, []string{"learning rate"}, "learning rate"},
		{"casing never said", "Is SBERT built on the cased or the uncased BERT?", []Chunk{sbertSTS}, []string{"casing"}, "casing"},
		{"casing said", "Is DPR's BERT cased or uncased?", []Chunk{dpr}, nil, ""},
	})
}
