package bot

import "sync"

// Link is the state of an adapter's connection to its platform, for GET /health: adapters
// set it as they connect, fail and retry, and serve reads it.
type Link struct {
	mu     sync.Mutex
	ok     bool
	reason string
}

// Up records a working connection.
func (l *Link) Up() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ok, l.reason = true, ""
}

// Down records a failed or lost connection and why (shown in /health; no secrets).
func (l *Link) Down(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ok, l.reason = false, reason
}

// State is "ok", or "degraded: " and the reason ("connecting" before the first attempt).
func (l *Link) State() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.ok:
		return "ok"
	case l.reason == "":
		return "degraded: connecting"
	}
	return "degraded: " + l.reason
}
