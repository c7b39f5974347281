package bot

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/footnote-dev/footnote/rag"
)

// metrics are the bot's Prometheus series, all prefixed footnote_bot_.
type metrics struct {
	requests    *prometheus.CounterVec   // platform, kind
	refusals    *prometheus.CounterVec   // platform
	errors      *prometheus.CounterVec   // reason
	rateLimited *prometheus.CounterVec   // scope: user, channel
	actions     *prometheus.CounterVec   // action, result
	feedback    *prometheus.CounterVec   // vote
	latency     *prometheus.HistogramVec // platform, kind: end to end, queueing included
	stages      *prometheus.HistogramVec // stage, from rag.Timings

	busy                *prometheus.CounterVec   // platform: turned away with a busy reply
	dropped             *prometheus.CounterVec   // platform: notices that could not even be sent
	redeliveries        *prometheus.CounterVec   // platform, result: ignored, answered
	resumed             *prometheus.CounterVec   // platform, outcome: answered, apology
	platformErrors      *prometheus.CounterVec   // platform, status: 429, 5xx, 4xx, network
	platformRateLimited *prometheus.CounterVec   // platform
	deliveries          *prometheus.CounterVec   // platform, outcome
	deliveryLatency     *prometheus.HistogramVec // platform, outcome: event received → reply posted
}

// latencyBuckets span an extractive answer (tens of ms) to a slow language model (a minute).
var latencyBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120}

func newMetrics(reg prometheus.Registerer, g *gate) (*metrics, error) {
	const ns, sub = "footnote", "bot"
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "requests_total", Help: "Questions handled, by platform and reply kind."},
			[]string{"platform", "kind"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "refusals_total", Help: "Questions answered with the not-found refusal."},
			[]string{"platform"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "errors_total", Help: "Questions that ended in an error reply, by reason."},
			[]string{"reason"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "rate_limited_total", Help: "Questions refused by a rate limit, by scope."},
			[]string{"scope"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "actions_total", Help: "Button clicks, by action and result."},
			[]string{"action", "result"}),
		feedback: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "feedback_total", Help: "Feedback votes received."},
			[]string{"vote"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "request_duration_seconds", Help: "Time to reply to a question, queueing included.",
			Buckets: latencyBuckets}, []string{"platform", "kind"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "stage_duration_seconds", Help: "Pipeline time per stage of answered questions.",
			Buckets: latencyBuckets}, []string{"stage"}),
		busy: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "busy_total", Help: "Questions and clicks turned away with a busy reply because the core was full."},
			[]string{"platform"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "dropped_replies_total", Help: "Busy or failure notices dropped because too many were being sent."},
			[]string{"platform"}),
		redeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "redeliveries_total", Help: "Platform redeliveries of a known question, by result."},
			[]string{"platform", "result"}),
		resumed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "resumed_total", Help: "Unfinished questions taken up again after their attempt died, by outcome."},
			[]string{"platform", "outcome"}),
		platformErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "platform_api_errors_total", Help: "Failed Slack/Discord API calls, by status class."},
			[]string{"platform", "status"}),
		platformRateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "platform_rate_limited_total", Help: "Slack/Discord API calls answered 429."},
			[]string{"platform"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "deliveries_total", Help: "Questions whose reply was delivered (or found undeliverable), by outcome."},
			[]string{"platform", "outcome"}),
		deliveryLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "delivery_duration_seconds", Help: "Time from receiving a question to posting its reply.",
			Buckets: latencyBuckets}, []string{"platform", "outcome"}),
	}
	if reg == nil {
		return m, nil
	}
	queue := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
		Name: "queue_depth", Help: "Questions waiting for a free answering slot."},
		func() float64 { return float64(g.waiting()) })
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
		Name: "in_flight", Help: "Questions being answered now."},
		func() float64 { return float64(g.active.Load()) })
	for _, c := range []prometheus.Collector{m.requests, m.refusals, m.errors, m.rateLimited,
		m.actions, m.feedback, m.latency, m.stages, queue, inflight, m.busy, m.dropped, m.redeliveries,
		m.resumed, m.platformErrors, m.platformRateLimited, m.deliveries, m.deliveryLatency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observeTimings(t rag.Timings) {
	for _, s := range []struct {
		name string
		d    time.Duration
	}{
		{"condense", t.Condense}, {"embed", t.Embed}, {"search", t.Search},
		{"rerank", t.Rerank}, {"generate", t.Generate}, {"total", t.Total},
	} {
		if s.d > 0 {
			m.stages.WithLabelValues(s.name).Observe(s.d.Seconds())
		}
	}
}
