package rag

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// condensePrompt asks the generator to rewrite a follow-up as a standalone search query.
const condensePrompt = `Rewrite the user's last question as one standalone question that can be understood without the conversation: replace pronouns and references such as "it", "they", "this model" or "the second one" with what they refer to, and keep the user's wording otherwise. Reply with the rewritten question only, on one line, without quotes or explanations.`

// condenseMaxTokens bounds the rewritten query; a longer reply is not a query.
const condenseMaxTokens = 96

// condense turns a follow-up question into a standalone retrieval query. Without history
// it is the question itself. With a generator it asks the model, falling back to the rule
// when the model fails or replies with something unusable; the model's error is returned
// so the caller can skip a generator that is down.
func (p *Pipeline) condense(ctx context.Context, q Question, moves bool) (string, error) {
	text := strings.TrimSpace(q.Text)
	if len(q.History) == 0 {
		return text, nil
	}
	if p.cfg.Generator == nil {
		return condenseRule(text, q.History, moves), nil
	}
	query, err := p.condenseLLM(ctx, text, q.History)
	if err != nil {
		p.log.Warn("condense follow-up with the language model; using the rule", "generator", p.cfg.Generator.Name(), "err", err)
		return condenseRule(text, q.History, moves), err
	}
	if query == "" {
		return condenseRule(text, q.History, moves), nil
	}
	return query, nil
}

func (p *Pipeline) condenseLLM(ctx context.Context, text string, history []Turn) (string, error) {
	var b strings.Builder
	b.WriteString("Conversation:\n")
	for _, t := range recentHistory(history) {
		fmt.Fprintf(&b, "User: %s\nAssistant: %s\n", oneLine(t.Question), cutWords(oneLine(stripMarkers(t.Answer)), 300))
	}
	fmt.Fprintf(&b, "\nLast question: %s\n\nStandalone question:", oneLine(text))
	var out strings.Builder
	err := p.cfg.Generator.Generate(ctx, GenerateRequest{
		Messages: []Message{
			{Role: "system", Content: condensePrompt},
			{Role: "user", Content: b.String()},
		},
		Temperature: p.cfg.Temperature,
		MaxTokens:   condenseMaxTokens,
	}, func(delta string) error {
		out.WriteString(delta)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("condense: %w", err)
	}
	return cleanCondensed(out.String()), nil
}

// cleanCondensed keeps the first non-empty line of a model's rewrite, without a label or
// quotes; a reply too long to be a question counts as unusable ("").
func cleanCondensed(s string) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if i := strings.Index(strings.ToLower(line), "standalone question:"); i >= 0 {
			line = strings.TrimSpace(line[i+len("standalone question:"):])
		}
		line = strings.Trim(line, "\"'“”‘’`* ")
		if line == "" || len(strings.Fields(line)) > 60 {
			return ""
		}
		return line
	}
	return ""
}

// followUpLeads are first words that mark a question as depending on the conversation.
var followUpLeads = map[string]bool{
	"and": true, "but": true, "also": true, "so": true, "then": true, "or": true,
	"it": true, "its": true, "it's": true, "they": true, "their": true, "them": true,
	"this": true, "that": true, "these": true, "those": true, "he": true, "she": true,
	"his": true, "her": true, "there": true, "same": true, "why": true, "what about": true,
	"how about": true,
}

// references are words that, anywhere in a short question, point back at the conversation.
var references = map[string]bool{
	"it": true, "its": true, "they": true, "them": true, "their": true, "this": true,
	"these": true, "those": true, "he": true, "she": true, "his": true, "her": true,
	"former": true, "latter": true, "above": true, "same": true,
}

// shortQuestion is the length in words up to which a reference word anywhere in a
// question marks it as a follow-up; in longer questions such words are usually part of a
// self-contained phrase.
const shortQuestion = 12

// subjectless is the length in content words up to which a question naming no paper or
// model is taken for a follow-up.
const subjectless = 5

// maxCarried bounds the terms carried over from earlier questions.
const maxCarried = 8

// condenseRule is the deterministic follow-up rewrite: when the question leans on the
// conversation — it starts with a pronoun or connective ("and how many heads does it
// use?"), refers back with a pronoun, or has at most three content words — the key terms
// of the earlier questions (most recent first, up to maxCarried, those the question lacks)
// are appended. Otherwise the question stands alone and is returned unchanged.
func condenseRule(text string, history []Turn, moves bool) string {
	if len(history) == 0 || !isFollowUp(text) {
		return text
	}
	have := map[string]bool{}
	for _, t := range terms(text) {
		have[t] = true
	}
	// A follow-up moving on to a paper or model the thread has not seen ("And what about
	// ELECTRA?", see movesOn) keeps the topic but not the earlier names.
	var carried []string
	for i := len(history) - 1; i >= 0 && len(carried) < maxCarried; i-- {
		for _, w := range namesFirst(keyWords(history[i].Question)) {
			if moves && isNameWord(w) {
				continue
			}
			stems := terms(w)
			fresh := false
			for _, st := range stems {
				if !have[st] {
					fresh = true
				}
				have[st] = true
			}
			if !fresh {
				continue
			}
			carried = append(carried, w)
			if len(carried) == maxCarried {
				break
			}
		}
		// An earlier question that stood on its own holds the topic; stop there.
		if !isFollowUp(history[i].Question) {
			break
		}
	}
	if len(carried) == 0 {
		return text
	}
	return text + " " + strings.Join(carried, " ")
}

// namesFirst orders an earlier question's key words with its names first, each group in
// question order: a long question fills maxCarried with its opening words ("According",
// "carbon", "footprint", "table") and dropped the model it was about ("LLaMA-7B"), which
// is what steers the follow-up to its passage.
func namesFirst(ws []string) []string {
	var names, rest []string
	for _, w := range ws {
		if isNameWord(w) {
			names = append(names, w)
		} else {
			rest = append(rest, w)
		}
	}
	return append(names, rest...)
}

// isFollowUp reports whether a question depends on the conversation (see condenseRule).
func isFollowUp(text string) bool {
	ws := words(text)
	if len(ws) == 0 {
		return false
	}
	if followUpLeads[ws[0]] || (len(ws) > 1 && followUpLeads[ws[0]+" "+ws[1]]) {
		return true
	}
	if len(terms(text)) <= 3 {
		return true
	}
	// A short question that names no paper or model leans on the thread for its subject:
	// "How long did the biggest model take to train?"
	if len(terms(text)) <= subjectless && len(subjectNames(text)) == 0 {
		return true
	}
	for _, w := range ws {
		if references[w] && len(ws) <= shortQuestion {
			return true
		}
	}
	return false
}

// keyWords returns the content words of a question in their original spelling, keeping
// hyphenated words whole ("multi-head"), stopwords and question words removed.
func keyWords(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		w := strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		lw := strings.ToLower(w)
		if len([]rune(w)) < 2 || stopwords[lw] || references[lw] {
			continue
		}
		out = append(out, w)
	}
	return out
}
