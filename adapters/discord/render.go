package discord

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/footnote-dev/footnote/bot"
)

// Message limits (Discord's message, embed and component references; PLATFORMS.md).
const (
	maxContent          = 2000 // chars of message content
	maxEmbeds           = 10   // embeds per message
	maxEmbedTitle       = 256
	maxEmbedDescription = 4096
	maxFields           = 25 // fields per embed
	maxFieldName        = 256
	maxFieldValue       = 1024
	maxFooter           = 2048
	maxEmbedTotal       = 6000 // chars of all embeds of one message together
	maxRows             = 5    // action rows per message
	maxButtonsPerRow    = 5
	maxButtonLabel      = 80
	maxCustomID         = 100
	maxThreadName       = 100
	maxExcerpt          = 300 // chars of a source excerpt under an answer
	maxSourceRows       = maxRows - 1
)

// Embed colours.
const (
	colorAnswer  = 0x5865F2 // Discord blurple
	colorSources = 0x4F545C
	colorError   = 0xED4245
)

// message is one Discord message: what footnote posts, edits or sends as an interaction
// response.
type message struct {
	Content    string                       `json:"content,omitempty"`
	Embeds     []*discordgo.MessageEmbed    `json:"embeds,omitempty"`
	Components []discordgo.MessageComponent `json:"components,omitempty"`
}

// render turns a neutral reply into one or more Discord messages, in posting order. Long
// answers are split between embeds and messages at paragraph, line or word boundaries, never
// mid-word; sources and buttons come last.
func render(r bot.Reply) []message {
	var msgs []message
	switch r.Kind {
	case bot.KindAnswer, bot.KindSource, bot.KindSources:
		msgs = packEmbeds(replyEmbeds(r))
		if len(msgs) == 0 {
			msgs = textMessages(replyText(r))
		}
	default:
		msgs = textMessages(replyText(r))
	}
	if rows := actionRows(r.Actions); len(rows) > 0 {
		msgs[len(msgs)-1].Components = rows
	}
	return msgs
}

// replyText is the Markdown content of a reply shown without embeds (refusals, errors,
// notices).
func replyText(r bot.Reply) string {
	var parts []string
	for _, p := range r.Paragraphs {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, Markdown(p))
		}
	}
	if len(parts) == 0 {
		switch r.Kind {
		case bot.KindError:
			parts = append(parts, "Sorry, something went wrong.")
		case bot.KindSources:
			parts = append(parts, "No further sources.")
		default:
			parts = append(parts, "…")
		}
	}
	if r.Note != "" {
		parts = append(parts, "-# "+escapeMarkdown(oneLine(r.Note)))
	}
	if r.Kind == bot.KindError && r.ErrorRef != "" {
		parts = append(parts, "-# Reference: `"+strings.ReplaceAll(r.ErrorRef, "`", "")+"`")
	}
	return strings.Join(parts, "\n\n")
}

func textMessages(s string) []message {
	var msgs []message
	for _, part := range bot.SplitText(s, maxContent, nil) {
		msgs = append(msgs, message{Content: part})
	}
	if len(msgs) == 0 {
		msgs = append(msgs, message{Content: "…"})
	}
	return msgs
}

// replyEmbeds builds the embeds of an answer, a source or more sources, each within the
// per-embed limits.
func replyEmbeds(r bot.Reply) []*discordgo.MessageEmbed {
	var embeds []*discordgo.MessageEmbed
	switch r.Kind {
	case bot.KindAnswer:
		var body []string
		for _, p := range r.Paragraphs {
			if p = strings.TrimSpace(p); p != "" {
				body = append(body, Markdown(p))
			}
		}
		for i, part := range bot.SplitText(strings.Join(body, "\n\n"), maxEmbedDescription, nil) {
			e := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Description: part, Color: colorAnswer}
			if i == 0 && strings.TrimSpace(r.Question) != "" {
				e.Title = truncateWords(oneLine(r.Question), maxEmbedTitle)
			}
			embeds = append(embeds, e)
		}
		if r.Note != "" && len(embeds) > 0 {
			embeds[len(embeds)-1].Footer = &discordgo.MessageEmbedFooter{Text: truncate(oneLine(r.Note), maxFooter)}
		}
		embeds = append(embeds, sourceEmbeds("Sources", r.Sources, true)...)
	case bot.KindSources:
		embeds = sourceEmbeds("More sources", r.Sources, false)
	case bot.KindSource:
		for _, s := range r.Sources {
			text := strings.TrimSpace(s.Text)
			if text == "" {
				text = strings.TrimSpace(s.Excerpt)
			}
			body := escapeMarkdown(text)
			if s.LineStart > 0 && s.Text != "" {
				// Text, Markdown and code files: the cited line range, as written.
				body = "```\n" + strings.ReplaceAll(text, "```", "``​`") + "\n```"
			}
			parts := bot.SplitText(body, maxEmbedDescription, nil)
			if len(parts) == 0 {
				parts = []string{"(no text)"}
			}
			for i, part := range parts {
				e := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Description: part, Color: colorSources}
				if i == 0 {
					e.Title = truncate(fmt.Sprintf("[%d] %s", s.N, sourceTitle(s)), maxEmbedTitle)
					e.URL = s.Link // the page picture, when footnote has a public URL
				}
				if i == len(parts)-1 {
					e.Footer = &discordgo.MessageEmbedFooter{Text: truncate(sourceMeta(s), maxFooter)}
				}
				embeds = append(embeds, e)
			}
		}
	}
	return embeds
}

// sourceEmbeds lists sources as embed fields: "[n] Title" → "section · p. 3–4 · relevance
// 0.87" and a short excerpt; more than 25 fields continue in another embed.
func sourceEmbeds(title string, sources []bot.Source, answer bool) []*discordgo.MessageEmbed {
	var embeds []*discordgo.MessageEmbed
	var cur *discordgo.MessageEmbed
	for _, s := range sources {
		if cur == nil || len(cur.Fields) == maxFields || embedSize(cur)+fieldBudget > maxEmbedTotal {
			cur = &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Color: colorSources}
			if len(embeds) == 0 {
				cur.Title = title
			}
			embeds = append(embeds, cur)
		}
		meta := sourceMeta(s)
		if answer && !s.Cited {
			meta += " · *also retrieved*"
		}
		value := meta
		if ex := strings.TrimSpace(s.Excerpt); ex != "" {
			value += "\n> " + strings.ReplaceAll(escapeMarkdown(truncateWords(oneLine(ex), maxExcerpt)), "\n", " ")
		}
		cur.Fields = append(cur.Fields, &discordgo.MessageEmbedField{
			Name:  truncate(fmt.Sprintf("[%d] %s", s.N, sourceTitle(s)), maxFieldName),
			Value: truncate(value, maxFieldValue),
		})
	}
	return embeds
}

// fieldBudget is the most one source field can add to an embed.
const fieldBudget = maxFieldName + maxFieldValue

// sourceMeta is "section path · p. 3–4 · relevance 0.87".
func sourceMeta(s bot.Source) string {
	var parts []string
	if len(s.Section) > 0 {
		parts = append(parts, escapeMarkdown(strings.Join(s.Section, " › ")))
	}
	if s.Pages != "" {
		if s.Pages[0] >= '0' && s.Pages[0] <= '9' {
			parts = append(parts, "p. "+s.Pages)
		} else {
			parts = append(parts, s.Pages)
		}
	}
	parts = append(parts, "relevance "+strconv.FormatFloat(s.Score, 'f', 2, 64))
	return strings.Join(parts, " · ")
}

func sourceTitle(s bot.Source) string {
	if t := strings.TrimSpace(s.Title); t != "" {
		return oneLine(t)
	}
	if s.Name != "" {
		return s.Name
	}
	return "Untitled"
}

// embedSize counts the characters Discord counts towards the 6,000 per message.
func embedSize(e *discordgo.MessageEmbed) int {
	n := utf8.RuneCountInString(e.Title) + utf8.RuneCountInString(e.Description)
	if e.Footer != nil {
		n += utf8.RuneCountInString(e.Footer.Text)
	}
	if e.Author != nil {
		n += utf8.RuneCountInString(e.Author.Name)
	}
	for _, f := range e.Fields {
		n += utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.Value)
	}
	return n
}

// packEmbeds distributes embeds over messages: at most 10 per message and 6,000 characters
// all together.
func packEmbeds(embeds []*discordgo.MessageEmbed) []message {
	var msgs []message
	var cur message
	size := 0
	for _, e := range embeds {
		n := embedSize(e)
		if len(cur.Embeds) > 0 && (len(cur.Embeds) == maxEmbeds || size+n > maxEmbedTotal) {
			msgs = append(msgs, cur)
			cur, size = message{}, 0
		}
		cur.Embeds = append(cur.Embeds, e)
		size += n
	}
	if len(cur.Embeds) > 0 {
		msgs = append(msgs, cur)
	}
	return msgs
}

// actionRows renders the reply's buttons: Source n (five to a row, at most four rows), then
// More sources, 👍, 👎 and Share in channel.
func actionRows(actions []bot.Action) []discordgo.MessageComponent {
	var src, rest []discordgo.MessageComponent
	for _, a := range actions {
		id := a.Encode()
		if len(id) > maxCustomID {
			continue // never produced by bot; Discord would reject the whole message
		}
		b := discordgo.Button{Label: truncate(buttonLabel(a), maxButtonLabel), Style: discordgo.SecondaryButton, CustomID: id}
		switch a.Kind {
		case bot.ActShowSource:
			if len(src) < maxSourceRows*maxButtonsPerRow {
				src = append(src, b)
			}
		case bot.ActShare:
			b.Style = discordgo.PrimaryButton
			rest = append(rest, b)
		default:
			rest = append(rest, b)
		}
	}
	var rows []discordgo.MessageComponent
	for _, group := range [][]discordgo.MessageComponent{src, rest} {
		for i := 0; i < len(group); i += maxButtonsPerRow {
			rows = append(rows, discordgo.ActionsRow{Components: group[i:min(i+maxButtonsPerRow, len(group))]})
		}
	}
	return rows[:min(len(rows), maxRows)]
}

func buttonLabel(a bot.Action) string {
	switch a.Kind {
	case bot.ActShowSource:
		return fmt.Sprintf("Source %d", a.Source)
	case bot.ActMoreSources:
		return "More sources"
	case bot.ActFeedbackUp:
		return "👍"
	case bot.ActFeedbackDown:
		return "👎"
	case bot.ActShare:
		return "Share in channel"
	}
	if a.Label != "" {
		return a.Label
	}
	return string(a.Kind)
}

var (
	reHeading = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	reBullet  = regexp.MustCompile(`^(\s*)[*+]\s+`)
)

// Markdown adapts answer Markdown to what Discord renders in messages and embeds: headings
// become bold lines and "*"/"+" bullets become "-". Bold, italics, code, quotes, lists and
// [label](url) links are Discord Markdown already; [n] markers stay as they are.
func Markdown(s string) string {
	lines := strings.Split(s, "\n")
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		if m := reHeading.FindStringSubmatch(l); m != nil {
			lines[i] = "**" + strings.ReplaceAll(strings.ReplaceAll(m[1], "**", ""), "__", "") + "**"
			continue
		}
		lines[i] = reBullet.ReplaceAllString(l, "$1- ")
	}
	out := strings.Join(lines, "\n")
	if fence {
		out += "\n```"
	}
	return out
}

var mdEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `_`, `\_`, `~`, `\~`, "`", "\\`", `|`, `\|`, `<`, `\<`, `](`, `]\(`)

// escapeMarkdown shows text from the documents verbatim: chunk text is not Markdown written
// for display.
func escapeMarkdown(s string) string {
	s = mdEscaper.Replace(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if t != "" && strings.ContainsRune("#->", rune(t[0])) {
			lines[i] = l[:len(l)-len(t)] + `\` + t
		}
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
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
	cut := string([]rune(s)[:n-1])
	if i := strings.LastIndexAny(cut, " \n\t"); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// threadName is a thread title from the question: one line, at most 100 characters.
func threadName(question string) string {
	name := truncateWords(oneLine(bot.Clean(question)), maxThreadName)
	if name == "" {
		return "footnote answer"
	}
	return name
}
