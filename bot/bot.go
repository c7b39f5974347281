// Package bot is footnote's platform-neutral conversation core. Adapters (Slack, Discord, the
// HTTP API) translate platform events into Requests and Actions, and render the neutral Reply
// it returns. bot owns conversations (thread key -> history), answer records that make
// buttons work after a restart, feedback, exactly-once event handling, rate and concurrency
// limits and the query log. It is the only package that decides what a user reads.
package bot

import "time"

// Request is one question from a platform.
type Request struct {
	ID       string // request id that follows the question through the logs; filled when empty
	Platform string // "slack", "discord", "http", "cli"
	Tenant   string // Slack team / Discord guild; "" for DMs without one
	Channel  string
	Thread   string // conversation key within Channel (Slack thread ts, Discord thread id); "" is a one-off with no history
	User     string // platform user id (the only personal data stored)
	Text     string // raw text: bot strips mentions (<@U123>, <@!123>) and markup itself
	Selected string // selected-text mode: answer about this passage only
	EventID  string // platform delivery id for exactly-once handling; "" disables dedup
	Private  bool   // the platform asked for an ephemeral answer
}

// Kind says what a Reply is, so adapters can style it.
type Kind string

const (
	KindAnswer      Kind = "answer"       // Paragraphs + Sources + Actions
	KindRefusal     Kind = "refusal"      // rag.Refusal, no sources
	KindUsage       Kind = "usage"        // how to ask (empty question)
	KindBusy        Kind = "busy"         // concurrency limit and queue full
	KindRateLimited Kind = "rate_limited" // per-user/channel limit hit
	KindError       Kind = "error"        // friendly text + ErrorRef; details are in the log
	KindSource      Kind = "source"       // full text of one source (Show source n)
	KindSources     Kind = "sources"      // more sources (More sources)
	KindNotice      Kind = "notice"       // short acknowledgement (feedback received, expired id …)
	KindDuplicate   Kind = "duplicate"    // event already handled: adapters post nothing
)

// Source is one numbered source as shown to a user.
type Source struct {
	N       int      `json:"n"`
	ChunkID string   `json:"chunk_id"`
	Title   string   `json:"title"`
	Name    string   `json:"name"` // file name without extension
	Section []string `json:"section,omitempty"`
	Pages   string   `json:"pages,omitempty"` // "3" or "3–4"; for text files "lines 10–42"
	Score   float64  `json:"score"`           // relevance in [0, 1]
	Excerpt string   `json:"excerpt"`
	Text    string   `json:"text,omitempty"` // full chunk text: only in KindSource replies
	Cited   bool     `json:"cited"`

	// Where the source lies, for page pictures and links (Config.Figure, Config.PageURL).
	DocID      string `json:"doc_id,omitempty"`
	PageStart  int    `json:"page_start,omitempty"`
	PageEnd    int    `json:"page_end,omitempty"`
	LineStart  int    `json:"line_start,omitempty"`
	LineEnd    int    `json:"line_end,omitempty"`
	PageBreaks []int  `json:"page_breaks,omitempty"` // byte offsets into Text where later pages begin
	// Link is a URL of the cited page's picture (Config.PageURL); "" when there is none.
	Link string `json:"link,omitempty"`
}

// Attachment is a file a reply carries, such as the picture of a cited page.
type Attachment struct {
	Name    string `json:"name"`     // file name, e.g. "1706.03762-p3.png"
	MIME    string `json:"mime"`     // "image/png"
	Title   string `json:"title"`    // shown above the file
	AltText string `json:"alt_text"` // for screen readers
	Data    []byte `json:"-"`
	Width   int    `json:"width,omitempty"`
	Height  int    `json:"height,omitempty"`
}

// ActionKind is a button a reply offers.
type ActionKind string

const (
	ActShowSource   ActionKind = "src"  // Source: the source number
	ActMoreSources  ActionKind = "more" // the next candidates
	ActFeedbackUp   ActionKind = "up"
	ActFeedbackDown ActionKind = "down"  // adapters may collect a Comment first
	ActShare        ActionKind = "share" // post a private answer to the channel
)

// Action is a button on a reply, or a click on one. Encode gives a compact string for
// Slack action values and Discord custom_ids (well under 100 chars); Decode reverses it.
type Action struct {
	Kind     ActionKind `json:"kind"`
	AnswerID string     `json:"answer_id"`
	Source   int        `json:"source,omitempty"`
	Label    string     `json:"label,omitempty"` // suggested button text; adapters may shorten it
}

// Reply is the neutral message model adapters render.
type Reply struct {
	Kind       Kind          `json:"kind"`
	AnswerID   string        `json:"answer_id,omitempty"` // record id of an answer; actions refer to it
	RequestID  string        `json:"request_id"`
	Question   string        `json:"question,omitempty"`   // the cleaned question
	Paragraphs []string      `json:"paragraphs,omitempty"` // Markdown with [n] markers
	Sources    []Source      `json:"sources,omitempty"`
	Actions    []Action      `json:"actions,omitempty"`
	Note       string        `json:"note,omitempty"`      // degraded-mode remark to show small
	ErrorRef   string        `json:"error_ref,omitempty"` // KindError: id under which the error was logged
	Private    bool          `json:"private,omitempty"`   // render ephemerally where possible
	Confidence float64       `json:"confidence,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns,omitempty"`
	// Attachments are files to upload with the reply (KindSource: the cited page).
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Click is a user pressing a button (or submitting the feedback comment) on a reply.
type Click struct {
	Action   Action
	Platform string
	Tenant   string
	Channel  string
	User     string
	Comment  string // optional feedback comment
	EventID  string // for exactly-once handling; "" disables dedup
}

// The adapters call these methods of *Bot; keep their signatures stable:
//
//	func (b *Bot) Ask(ctx context.Context, req Request, onDelta func(text string)) Reply
//	    answers a question; never fails: errors become KindError replies. onDelta (may be
//	    nil) receives the answer text so far as it is generated, for progressive display.
//	func (b *Bot) Act(ctx context.Context, c Click) Reply
//	    handles a button; unknown or expired answer ids give a polite KindNotice.
//	func (b *Bot) Following(ctx context.Context, platform, channel, thread string) bool
//	    reports whether footnote holds a conversation in that thread, so adapters can treat
//	    untagged messages there as follow-ups.
//	func (b *Bot) Claim(ctx context.Context, key string) bool
//	    records a platform delivery id once; false when it was already claimed (by this or
//	    another process sharing the state store).
//	func (b *Bot) Documents(ctx context.Context) int
//	    how many documents the default corpus holds, for "Searching 12 papers…".
