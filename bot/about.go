package bot

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/footnote-dev/footnote/rag"
)

// "Ask about this message" answers from the message itself (selected-text mode). When the
// message names an indexed paper (its arXiv id in a link, or its title), the answer also
// draws on that paper: the question is asked a second time over that paper alone and its
// cited passages follow the message's, numbered after them.

// PaperRefs finds the indexed documents a text refers to; it returns their ids.
type PaperRefs func(ctx context.Context, text string) []string

// WithPapers wraps asker so selected-text questions also use the papers refs finds in the
// selected text. Other questions pass through unchanged.
func WithPapers(asker Asker, refs PaperRefs) Asker {
	if refs == nil {
		return asker
	}
	return AskerFunc(func(ctx context.Context, q rag.Question, fn func(string) error) (rag.Answer, error) {
		if strings.TrimSpace(q.Selected) == "" {
			return asker.Ask(ctx, q, fn)
		}
		ids := refs(ctx, q.Selected)
		// Links are references, not content: the selected-text answerer refuses passages
		// whose sentences are cut up by a URL's dots and slashes.
		q.Selected = stripLinks(q.Selected)
		sel, err := asker.Ask(ctx, q, fn)
		if len(ids) == 0 || err != nil && !errors.Is(err, rag.ErrNoEvidence) || ctx.Err() != nil {
			return sel, err
		}
		pq := rag.Question{Text: q.Text, History: q.History, Method: q.Method, Filter: rag.Filter{DocIDs: ids}}
		paper, perr := asker.Ask(ctx, pq, nil)
		if perr != nil || paper.Refused || len(paper.Sources) == 0 {
			return sel, err
		}
		if err != nil || sel.Refused {
			// The message itself does not answer; the paper it names does.
			paper.Note = strings.TrimSpace(paper.Note + " Answered from the paper the message refers to.")
			return paper, nil
		}
		return mergeAnswers(sel, paper), nil
	})
}

var reMarker = regexp.MustCompile(`\[(\d+)\]`)

// mergeAnswers appends b's text and sources to a's, renumbering b's citations after a's.
func mergeAnswers(a, b rag.Answer) rag.Answer {
	off := len(a.Sources)
	for _, s := range a.Sources {
		off = max(off, s.N)
	}
	text := reMarker.ReplaceAllStringFunc(b.Text, func(m string) string {
		n, _ := strconv.Atoi(m[1 : len(m)-1])
		return "[" + strconv.Itoa(n+off) + "]"
	})
	out := a
	out.Text = strings.TrimSpace(a.Text) + "\n\n" + strings.TrimSpace(text)
	out.Sources = append([]rag.Source(nil), a.Sources...)
	for _, s := range b.Sources {
		s.N += off
		out.Sources = append(out.Sources, s)
	}
	out.More = append(append([]rag.Source(nil), a.More...), b.More...)
	out.Confidence = max(a.Confidence, b.Confidence)
	out.Citations += b.Citations
	if b.Note != "" {
		out.Note = strings.TrimSpace(a.Note + " " + b.Note)
	}
	return out
}

// DocRefs returns a PaperRefs over a document list: a document is referred to when the
// text holds its name (an arXiv id such as 1706.03762, as in an arxiv.org link) or its
// full title, ignoring case.
func DocRefs(docs func(ctx context.Context) []DocSummary) PaperRefs {
	return func(ctx context.Context, text string) []string {
		low := strings.ToLower(text)
		var ids []string
		for _, d := range docs(ctx) {
			name, title := strings.ToLower(d.Name), strings.ToLower(strings.TrimSpace(d.Title))
			if len(name) >= 6 && containsWord(low, name) || len(title) >= 12 && strings.Contains(low, title) {
				ids = append(ids, d.ID)
			}
		}
		return ids
	}
}

// containsWord reports whether s holds w not glued to further letters or digits, so
// "1706.03762" does not match "1706.037621".
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(w)
		if (start == 0 || !alnum(s[start-1])) && (end == len(s) || !alnum(s[end])) {
			return true
		}
		i = start + 1
	}
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// reAnyLink is a URL, bare or in Slack's <url|label> and Markdown's [label](url) forms.
var reAnyLink = regexp.MustCompile(`\[([^\]]*)\]\((https?://[^)\s]+)\)|<(https?://[^|>\s]+)(?:\|([^>]*))?>|\(?https?://[^\s)>]+\)?`)

// stripLinks replaces links by their labels (or nothing), keeping the text around them.
func stripLinks(s string) string {
	out := reAnyLink.ReplaceAllStringFunc(s, func(m string) string {
		sub := reAnyLink.FindStringSubmatch(m)
		switch {
		case sub[1] != "":
			return sub[1]
		case sub[4] != "":
			return sub[4]
		}
		return ""
	})
	out = strings.Join(strings.Fields(out), " ")
	return strings.NewReplacer(" .", ".", " ,", ",").Replace(out)
}
