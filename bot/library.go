package bot

import (
	"context"
	"time"
)

// DocSummary is one indexed document as chat surfaces list it (Slack App Home, Discord
// /footnote docs).
type DocSummary struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Title     string    `json:"title"`
	Kind      string    `json:"kind"`
	Pages     int       `json:"pages,omitempty"`
	Lines     int       `json:"lines,omitempty"`
	IndexedAt time.Time `json:"indexed_at"`
}

// Overview is the corpus and usage summary behind App Home and /footnote stats.
type Overview struct {
	Documents []DocSummary
	Chunks    int
	Stats     Stats
}

// Library describes the corpus to adapters; `footnote serve` implements it over the store
// and the bot's query log.
type Library interface {
	Overview(ctx context.Context) (Overview, error)
}

// LibraryFunc adapts a function to Library.
type LibraryFunc func(ctx context.Context) (Overview, error)

// Overview calls f.
func (f LibraryFunc) Overview(ctx context.Context) (Overview, error) { return f(ctx) }
