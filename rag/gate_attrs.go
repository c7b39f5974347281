package rag

import (
	"context"
	"slices"
	"strings"
)

// A question about a training setting the paper never reports ("What dropout rate did
// the DSI authors use?") retrieves the paper's passages on training, which are similar
// to the question and name the paper, so neither the score cut nor the name check
// refuses it. Users of a research-paper bot ask such questions often, and the answer is
// then a confident quote about something else. The gate therefore knows the settings
// papers report about training and refuses a question about one when no kept paper
// mentions it anywhere. It is deliberately lenient: any mention
// in the paper passes, whether or not the passage states a value, so a question the paper
// does answer is not refused for its wording.
//
// The list is the standard vocabulary of training hyperparameters, not names from the
// corpus; each setting lists the words a question asks it by and the words a paper
// reports it with.
type attribute struct {
	name   string    // as the refusal names it
	asked  []keyItem // a question asks about the setting with one of these
	stated []keyItem // a paper that reports the setting uses one of these
	query  string    // the BM25 query for the stated words
}

func attr(name string, asked, stated []string) attribute {
	return attribute{name: name, asked: phraseItems(asked), stated: phraseItems(stated), query: strings.Join(stated, " ")}
}

var attributes = []attribute{
	attr("learning rate", []string{"learning rate", "learning-rate"}, []string{"learning rate", "lr", "step size"}),
	attr("batch size", []string{"batch size", "batch sizes"}, []string{"batch", "minibatch"}),
	attr("dropout", []string{"dropout"}, []string{"dropout", "p drop"}),
	attr("weight decay", []string{"weight decay", "decay"}, []string{"decay", "l2 regularization", "l2 penalty"}),
	attr("label smoothing", []string{"smoothing"}, []string{"label smoothing"}),
	attr("warmup", []string{"warmup", "warm up"}, []string{"warmup", "warm up"}),
	attr("gradient clipping", []string{"clip", "clipping", "gradient norm", "grad norm", "max norm"}, []string{"clip", "clipping", "gradient norm", "grad norm", "max norm", "maxnorm"}),
	attr("temperature", []string{"temperature"}, []string{"temperature"}),
	attr("momentum", []string{"momentum"}, []string{"momentum"}),
	attr("epsilon", []string{"epsilon"}, []string{"epsilon", "eps"}),
	attr("epochs", []string{"epoch", "epochs"}, []string{"epoch"}),
	attr("optimizer", []string{"optimizer", "optimiser"}, []string{"optimizer", "optimiser", "adam", "adamw", "adafactor", "sgd", "gradient descent", "lamb", "rmsprop"}),
	attr("beam size", []string{"beam size", "beam width"}, []string{"beam"}),
	attr("random seed", []string{"seed", "seeds"}, []string{"seed", "seeds"}),
	attr("top-p", []string{"top-p", "top p", "nucleus"}, []string{"top-p", "top p", "nucleus"}),
	attr("gradient accumulation", []string{"gradient accumulation", "accumulation steps"}, []string{"accumulation", "accumulate", "accumulated", "accumulating"}),
	attr("Adam betas", []string{"beta1", "beta2", "β1", "β2", "betas"}, []string{"beta1", "beta2", "β1", "β2", "betas", "β"}),
}

// attributeHits bounds the passages of the kept papers searched for a setting.
const attributeHits = 40

// phraseItems turns phrases into items the evidence index can look up: a word by its stem
// (so "epochs" finds "epoch") and by its letters ("warm-up" finds "warmup"). A hyphenated
// phrase is looked up by its letters only: the stem of "top-p" is "top", which "on top"
// and "top 5" would match.
func phraseItems(phrases []string) []keyItem {
	var out []keyItem
	for _, ph := range phrases {
		out = append(out, keyItem{text: ph, key: squeeze(ph), hard: true})
		if ts := terms(ph); len(ts) == 1 && !strings.ContainsAny(ph, " -") {
			out = append(out, keyItem{text: ph, key: squeeze(ph), stem: ts[0]})
		}
	}
	return out
}

func coversAny(ix *evidenceIndex, items []keyItem) bool {
	for _, it := range items {
		if ix.covers(it) {
			return true
		}
	}
	return false
}

// unstatedAttributes returns the training settings the question asks about that no kept
// paper mentions (see attribute). Without BM25 it cannot look through the papers and
// returns none.
func (p *Pipeline) unstatedAttributes(ctx context.Context, question string, kept []Chunk, enc SparseEncoder) []keyItem {
	if enc == nil {
		return nil
	}
	q := newEvidenceIndex(question)
	var keptIx []*evidenceIndex // built on the first setting asked
	var missing []keyItem
	for _, a := range attributes {
		if !coversAny(q, a.asked) {
			continue
		}
		if keptIx == nil {
			for _, c := range kept {
				keptIx = append(keptIx, newEvidenceIndex(withoutReferences(c.Text)))
			}
		}
		if slices.ContainsFunc(keptIx, func(ix *evidenceIndex) bool { return coversAny(ix, a.stated) }) {
			continue
		}
		// A paper's text is searched whole: a two-column page interleaves its body with
		// its reference list, which the reference filter would drop with it. A common
		// word like "learning" fills the first hits with other passages, hence the depth.
		n := p.docPassages(ctx, a.query, attributeHits, func(text string) bool {
			return coversAny(newEvidenceIndex(text), a.stated)
		}, kept, enc)
		if n != nil && len(n) == 0 {
			missing = append(missing, keyItem{text: a.name, key: squeeze(a.name)})
		}
	}
	return missing
}

// subjectPapers keeps the passages of the papers the question is about: those rated
// highest by the names of the question they hold (gateResult.holders). A question on DSI's
// dropout is about DSI even when a QLoRA passage on dropout was kept beside it.
func subjectPapers(kept []Chunk, holders []int) []Chunk {
	best := 0
	for _, h := range holders {
		best = max(best, h)
	}
	if best == 0 || len(holders) != len(kept) {
		return kept
	}
	docs := map[string]bool{}
	for i, h := range holders {
		if h == best {
			docs[kept[i].DocID] = true
		}
	}
	var out []Chunk
	for _, c := range kept {
		if docs[c.DocID] {
			out = append(out, c)
		}
	}
	return out
}
