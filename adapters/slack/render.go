package slack

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/footnote-dev/footnote/bot"
)

// Block Kit limits (Slack's Block Kit reference, see PLATFORMS.md).
const (
	maxBlocks          = 50                 // blocks per message
	maxSectionText     = 3000               // chars of a section's text
	maxContextElements = 10                 // elements of a context block
	maxActionElements  = 25                 // elements of an actions block
	maxButtonText      = 75                 // chars of a button's text
	maxValue           = 2000               // chars of a button or option value
	maxActionID        = 255                // chars of an action_id
	maxOptions         = 100                // options of a static select
	maxOptionText      = 75                 // chars of an option's text
	maxMessageText     = 40000              // Slack truncates message text past this
	maxMessageBlocks   = 12000              // JSON bytes of one message's blocks: Slack rejects ~13k chars with msg_blocks_too_long
	maxExcerpt         = 300                // chars of a source excerpt under an answer
	maxSourceButtons   = 5                  // more Show source actions become a static select
	sectionBudget      = maxSectionText - 4 // room for a re-opened code fence
)

// message is one Slack message: its blocks and the text Slack shows in notifications and
// clients without Block Kit.
type message struct {
	Text   string        `json:"text"`
	Blocks []slack.Block `json:"blocks"`
}

// blockGroup is blocks that must stay in the same message (a source line and its excerpt).
type blockGroup struct {
	blocks []slack.Block
	text   string // fallback text contribution
	label  string // fallback text of a message without body text
	size   int
}

func newGroup(text string, blocks ...slack.Block) blockGroup {
	size := 0
	for _, b := range blocks {
		raw, _ := json.Marshal(b)
		size += len(raw)
	}
	return blockGroup{blocks: blocks, text: text, size: size}
}

// render turns a neutral reply into one or more Slack messages, in posting order. Long answers
// are split between sections and messages at paragraph, line or word boundaries, never
// mid-word; sources and buttons come last.
func render(r bot.Reply) []message {
	var groups []blockGroup
	body := replyBody(r)
	for _, part := range bot.SplitText(body, sectionBudget, outsideToken) {
		groups = append(groups, newGroup(part, mrkdwnSection(part)))
	}
	if r.Note != "" {
		groups = append(groups, newGroup("", slack.NewContextBlock("", mrkdwnText(truncate("_"+escapeText(r.Note)+"_", maxSectionText)))))
	}
	if r.Kind == bot.KindError && r.ErrorRef != "" {
		groups = append(groups, newGroup("", slack.NewContextBlock("", mrkdwnText("Reference: `"+escapeText(r.ErrorRef)+"`"))))
	}
	if len(r.Sources) > 0 && r.Kind != bot.KindSource {
		heading := "*Sources*"
		if r.Kind == bot.KindSources {
			heading = "*More sources*"
		}
		g := newGroup("", mrkdwnSection(heading))
		g.label = strings.Trim(heading, "*")
		groups = append(groups, g)
		for _, s := range r.Sources {
			line := sourceLine(s)
			if r.Kind == bot.KindAnswer && !s.Cited {
				line += " · _also retrieved_"
			}
			blocks := []slack.Block{mrkdwnSection(line)}
			if ex := strings.TrimSpace(s.Excerpt); ex != "" {
				blocks = append(blocks, slack.NewContextBlock("", mrkdwnText(escapeText(truncateWords(ex, maxExcerpt)))))
			}
			g := newGroup("", blocks...)
			g.label = strings.Trim(heading, "*")
			groups = append(groups, g)
		}
	}
	for _, ab := range actionBlocks(r.Actions) {
		groups = append(groups, newGroup("", ab))
	}
	return pack(groups, fallbackText(r))
}

// replyBody is the mrkdwn body of a reply.
func replyBody(r bot.Reply) string {
	var parts []string
	if r.Kind == bot.KindSource {
		for _, s := range r.Sources {
			parts = append(parts, sourceLine(s))
			text := s.Text
			if text == "" {
				text = s.Excerpt
			}
			switch text = strings.TrimSpace(text); {
			case text == "":
			case s.LineStart > 0 && s.Text != "":
				// Text, Markdown and code files: the cited line range, as written.
				parts = append(parts, "```\n"+escapeText(strings.ReplaceAll(text, "```", "``​`"))+"\n```")
			default:
				// Chunk text is not Markdown written for display: show it verbatim.
				parts = append(parts, escapeText(text))
			}
		}
	}
	for _, p := range r.Paragraphs {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, Mrkdwn(p))
		}
	}
	if len(parts) == 0 {
		switch r.Kind {
		case bot.KindError:
			// bot always words its errors; this only guards against an empty reply.
			parts = append(parts, "Sorry, something went wrong.")
		case bot.KindSources:
			if len(r.Sources) == 0 {
				parts = append(parts, "No further sources.")
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// fallbackText is the plain notification text of a reply.
func fallbackText(r bot.Reply) string {
	if len(r.Paragraphs) > 0 {
		return r.Paragraphs[0]
	}
	switch r.Kind {
	case bot.KindSource:
		if len(r.Sources) > 0 {
			return fmt.Sprintf("Source [%d]: %s", r.Sources[0].N, sourceTitle(r.Sources[0]))
		}
	case bot.KindSources:
		return "More sources"
	}
	return "footnote"
}

// pack distributes groups over messages within the per-message block count and size limits.
func pack(groups []blockGroup, fallback string) []message {
	var msgs []message
	var cur message
	var size int
	var texts []string
	label := ""
	flush := func() {
		if len(cur.Blocks) == 0 {
			return
		}
		cur.Text = strings.Join(texts, "\n\n")
		if cur.Text == "" && len(msgs) > 0 && label != "" {
			cur.Text = label // a continuation holding only sources
		}
		if cur.Text == "" {
			cur.Text = fallback
		}
		cur.Text = truncate(cur.Text, maxMessageText)
		msgs = append(msgs, cur)
		cur, size, texts, label = message{}, 0, nil, ""
	}
	for _, g := range groups {
		if len(cur.Blocks)+len(g.blocks) > maxBlocks || size+g.size > maxMessageBlocks {
			flush()
		}
		cur.Blocks = append(cur.Blocks, g.blocks...)
		size += g.size
		if g.text != "" {
			texts = append(texts, g.text)
		}
		if label == "" {
			label = g.label
		}
	}
	flush()
	if len(msgs) == 0 {
		msgs = append(msgs, message{Text: fallback, Blocks: []slack.Block{mrkdwnSection(escapeText(fallback))}})
	}
	return msgs
}

// sourceLine is "[n] *Title* · section path · p. 3–4 · relevance 0.87".
func sourceLine(s bot.Source) string {
	parts := []string{fmt.Sprintf("[%d] *%s*", s.N, escapeText(strings.ReplaceAll(sourceTitle(s), "*", "")))}
	if len(s.Section) > 0 {
		parts = append(parts, escapeText(strings.Join(s.Section, " › ")))
	}
	if s.Pages != "" {
		if s.Pages[0] >= '0' && s.Pages[0] <= '9' {
			parts = append(parts, "p. "+escapeText(s.Pages))
		} else {
			parts = append(parts, escapeText(s.Pages))
		}
	}
	parts = append(parts, "relevance "+strconv.FormatFloat(s.Score, 'f', 2, 64))
	if s.Link != "" && !strings.ContainsAny(s.Link, "<>|") {
		parts = append(parts, "<"+s.Link+"|page image>")
	}
	return truncate(strings.Join(parts, " · "), maxSectionText)
}

func sourceTitle(s bot.Source) string {
	if t := strings.TrimSpace(s.Title); t != "" {
		return t
	}
	if s.Name != "" {
		return s.Name
	}
	return "Untitled"
}

// actionBlocks renders the reply's buttons: Show source n as buttons (a static select when
// there are many), then More sources, 👍, 👎 and Share.
func actionBlocks(actions []bot.Action) []slack.Block {
	var elems []slack.BlockElement
	var show []bot.Action
	for _, a := range actions {
		if a.Kind == bot.ActShowSource {
			show = append(show, a)
		}
	}
	if len(show) > maxSourceButtons {
		var opts []*slack.OptionBlockObject
		for _, a := range show[:min(len(show), maxOptions)] {
			opts = append(opts, slack.NewOptionBlockObject(truncate(a.Encode(), maxValue),
				plainText(truncate(fmt.Sprintf("Source %d", a.Source), maxOptionText)), nil))
		}
		elems = append(elems, slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plainText("Show source…"), "footnote_src_select", opts...))
	}
	for _, a := range actions {
		if a.Kind == bot.ActShowSource && len(show) > maxSourceButtons {
			continue
		}
		label, style := buttonLabel(a)
		btn := slack.NewButtonBlockElement(actionID(a), truncate(a.Encode(), maxValue), plainText(truncate(label, maxButtonText)))
		btn.Style = style
		elems = append(elems, btn)
	}
	var blocks []slack.Block
	for i := 0; i < len(elems); i += maxActionElements {
		blockID := "footnote_actions"
		if i > 0 {
			blockID += "_" + strconv.Itoa(i/maxActionElements)
		}
		blocks = append(blocks, slack.NewActionBlock(blockID, elems[i:min(i+maxActionElements, len(elems))]...))
	}
	return blocks
}

// actionID is unique within a message, as Slack requires of action_ids.
func actionID(a bot.Action) string {
	id := "footnote_" + string(a.Kind)
	if a.Kind == bot.ActShowSource {
		id += "_" + strconv.Itoa(a.Source)
	}
	return truncate(id, maxActionID)
}

func buttonLabel(a bot.Action) (string, slack.Style) {
	style := slack.Style("")
	if a.Kind == bot.ActShare {
		style = slack.StylePrimary
	}
	if a.Label != "" {
		return a.Label, style
	}
	switch a.Kind {
	case bot.ActShowSource:
		return fmt.Sprintf("Show source %d", a.Source), ""
	case bot.ActMoreSources:
		return "More sources", ""
	case bot.ActFeedbackUp:
		return "👍", ""
	case bot.ActFeedbackDown:
		return "👎", ""
	case bot.ActShare:
		return "Share with channel", style
	}
	return string(a.Kind), ""
}

func mrkdwnText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func plainText(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, true, false)
}

func mrkdwnSection(s string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwnText(truncate(s, maxSectionText)), nil, nil)
}

// truncate cuts s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// truncateWords cuts s to at most n runes at a word boundary, ending with "…".
func truncateWords(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	cut := string(r)
	if i := strings.LastIndexAny(cut, " \n\t"); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// outsideToken reports whether a cut after prefix falls outside Slack's <…> tokens (links,
// mentions), which must stay whole.
func outsideToken(prefix string) bool {
	return strings.LastIndexByte(prefix, '<') <= strings.LastIndexByte(prefix, '>')
}
