package bot

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Stats summarises the query log for `footnote stats` and GET /stats.
type Stats struct {
	Questions    int           `json:"questions"` // every logged question, whatever the outcome
	Answered     int           `json:"answered"`  // answers with sources
	Refusals     int           `json:"refusals"`  // "Not found in indexed documents."
	Errors       int           `json:"errors"`    // error replies
	Busy         int           `json:"busy"`      // turned away: concurrency limit and queue full
	RateLimited  int           `json:"rate_limited"`
	FeedbackUp   int           `json:"feedback_up"`
	FeedbackDown int           `json:"feedback_down"`
	Comments     int           `json:"comments"`       // feedback with a comment
	LatencyP50   time.Duration `json:"latency_p50_ns"` // over answers and refusals, queueing included
	LatencyP95   time.Duration `json:"latency_p95_ns"`
	Since        time.Time     `json:"since,omitzero"` // the oldest logged question
}

// statsWindow bounds how many recent questions the latency percentiles read.
const statsWindow = 100000

// Stats reads the query log and feedback.
func (b *Bot) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	rows, err := b.state.rd.QueryContext(ctx, `SELECT kind, COUNT(*) FROM queries GROUP BY kind`)
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	for rows.Next() {
		var kind string
		var n int
		if err := rows.Scan(&kind, &n); err != nil {
			rows.Close()
			return Stats{}, fmt.Errorf("stats: %w", err)
		}
		st.Questions += n
		switch Kind(kind) {
		case KindAnswer:
			st.Answered = n
		case KindRefusal:
			st.Refusals = n
		case KindError:
			st.Errors = n
		case KindBusy:
			st.Busy = n
		case KindRateLimited:
			st.RateLimited = n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}

	var since *int64
	err = b.state.rd.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM feedback WHERE vote > 0),
		(SELECT COUNT(*) FROM feedback WHERE vote < 0),
		(SELECT COUNT(*) FROM feedback WHERE comment != ''),
		(SELECT MIN(at) FROM queries)`).Scan(&st.FeedbackUp, &st.FeedbackDown, &st.Comments, &since)
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	if since != nil {
		st.Since = time.Unix(0, *since).UTC()
	}

	rows, err = b.state.rd.QueryContext(ctx, `SELECT elapsed_ns FROM queries
		WHERE kind IN (?, ?) ORDER BY id DESC LIMIT ?`, string(KindAnswer), string(KindRefusal), statsWindow)
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	defer rows.Close()
	var lat []time.Duration
	for rows.Next() {
		var ns int64
		if err := rows.Scan(&ns); err != nil {
			return Stats{}, fmt.Errorf("stats: %w", err)
		}
		lat = append(lat, time.Duration(ns))
	}
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	slices.Sort(lat)
	st.LatencyP50 = Percentile(lat, 0.50)
	st.LatencyP95 = Percentile(lat, 0.95)
	return st, nil
}

// Percentile returns the p-quantile (nearest rank) of sorted durations; 0 when empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(float64(len(sorted))*p)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
