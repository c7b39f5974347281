package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/footnote-dev/footnote/adapters/httpapi"
	"github.com/footnote-dev/footnote/adapters/slack"
	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/index"
)

func (a *app) serveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API, /metrics and whichever chat adapters are configured",
		Long: `Starts one process with the shared core: the JSON API (/health, /query, /retrieve, /compare,
/documents, /stats), Prometheus /metrics, the Slack adapter when FOOTNOTE_SLACK_BOT_TOKEN is set
(Socket Mode with FOOTNOTE_SLACK_APP_TOKEN, HTTP mode at /slack/* with
FOOTNOTE_SLACK_SIGNING_SECRET) and the Discord adapter when FOOTNOTE_DISCORD_TOKEN is set.
Slack and Discord connect with a growing backoff and keep retrying: an outage degrades
/health but never stops the API. Only configuration errors stop serve. Questions accepted
but not answered when it stopped are answered after a restart (FOOTNOTE_RESUME_MAX_AGE).
SIGINT/SIGTERM stop it gracefully: in-flight answers get up to 30 seconds to finish.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Secrets print as [redacted] (Secret.LogValue).
			a.log.Info("configuration", a.cfg.LogAttrs()...)
			m, err := a.newMain(cmd.Context())
			if err != nil {
				return err
			}
			return m.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&a.cfg.HTTPAddr, "addr", a.cfg.HTTPAddr, "listen address ($FOOTNOTE_HTTP_ADDR)")
	return cmd
}

// Main is a running footnote service. Tests start it on port 0 with fakes behind it.
type Main struct {
	log      *slog.Logger
	ln       net.Listener
	srv      *http.Server
	metricLn net.Listener // FOOTNOTE_METRICS_ADDR, nil when /metrics is on the main server
	metrics  *http.Server
	bot      *bot.Bot
	slack    *slack.Adapter
	runners  []func(ctx context.Context) error // long-running adapters (Socket Mode, gateway)
	waiters  []func(ctx context.Context) error // drain in-flight work on shutdown
	health   map[string]func(ctx context.Context) string
	shutdown time.Duration
}

// Addr is the address the HTTP server listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// newMain opens every configured component and listens, without serving yet. Its errors
// are configuration errors: nothing it does waits for Slack or Discord.
func (a *app) newMain(ctx context.Context) (*Main, error) {
	if a.cfg.APIToken == "" && !loopback(a.cfg.HTTPAddr) {
		return nil, fmt.Errorf("FOOTNOTE_HTTP_ADDR=%s is not a loopback address: set FOOTNOTE_API_TOKEN so the JSON API is not open to anyone who can reach it", a.cfg.HTTPAddr)
	}
	p, err := a.pipeline(ctx)
	if err != nil {
		return nil, err
	}
	st := a.comp.store
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	b, err := a.newBot(p, reg)
	if err != nil {
		return nil, err
	}
	m := &Main{log: a.log, bot: b, shutdown: 30 * time.Second, health: map[string]func(context.Context) string{}}
	m.runners = append(m.runners, b.Run)
	m.health["store"] = func(ctx context.Context) string {
		if _, err := index.Counts(ctx, st); err != nil {
			return "degraded: store unreachable: " + err.Error()
		}
		return "ok"
	}
	m.health["models"] = func(context.Context) string {
		if a.comp.local == nil && len(a.comp.embedders) == 0 {
			return "degraded: no dense model: BM25 search only (footnote models pull)"
		}
		return "ok"
	}
	m.health["llm"] = a.llmHealth

	api, err := httpapi.New(httpapi.Config{
		Asker: p, Retriever: p, Catalog: st, Core: b, Token: string(a.cfg.APIToken),
		Health: m.components,
		Stats: func(ctx context.Context) (any, error) {
			s, err := index.Counts(ctx, st)
			if err != nil {
				return nil, err
			}
			q, err := b.Stats(ctx)
			if err != nil {
				return nil, err
			}
			return map[string]any{"documents": s.Documents, "chunks": s.Chunks, "queries": q}, nil
		},
		Timeout: a.cfg.RequestTimeout,
		Logger:  a.log.With("component", "httpapi"),
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	api.Register(mux)
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	if a.cfg.MetricsAddr == "" {
		mux.Handle("GET /metrics", api.Protect(metrics))
	}
	if err := a.registerPages(mux); err != nil { // hook (native, #14): GET /documents/{id}/pages/{n}.png
		return nil, err
	}

	if a.cfg.SlackBotToken != "" {
		sa, err := slack.New(slack.Config{
			BotToken:      string(a.cfg.SlackBotToken),
			AppToken:      string(a.cfg.SlackAppToken),
			SigningSecret: string(a.cfg.SlackSigningSecret),
			APIURL:        a.cfg.SlackAPIURL,
			Core:          b,
			Logger:        a.log,
			AnswerTimeout: a.cfg.RequestTimeout + time.Minute,
			Policy: func(team, ch string) slack.Policy {
				r := b.Route(slack.Platform, team, ch)
				return slack.Policy{Private: r.Private, RequireMention: r.RequireMention, MentionFollowUps: r.MentionFollowUps}
			},
			Native: slack.NativeConfig{Library: a.library(b)}, // hook (native, #14)
		})
		if err != nil {
			return nil, fmt.Errorf("slack: %w", err)
		}
		mux.Handle("/slack/", sa.Handler())
		if a.cfg.SlackAppToken != "" {
			m.runners = append(m.runners, sa.Run)
		}
		m.waiters = append(m.waiters, sa.Wait)
		m.slack = sa
		m.health["slack"] = func(context.Context) string { return sa.Health() }
	}
	if err := a.addDiscord(m, mux, b); err != nil {
		return nil, err
	}

	ln, err := net.Listen("tcp", a.cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("FOOTNOTE_HTTP_ADDR=%s: %w", a.cfg.HTTPAddr, err)
	}
	m.ln = ln
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: a.cfg.RequestTimeout + 30*time.Second, IdleTimeout: 2 * time.Minute}
	if a.cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", a.cfg.MetricsAddr)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("FOOTNOTE_METRICS_ADDR=%s: %w", a.cfg.MetricsAddr, err)
		}
		mm := http.NewServeMux()
		mm.Handle("GET /metrics", metrics)
		m.metricLn = mln
		m.metrics = &http.Server{Handler: mm, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	}
	return m, nil
}

// loopback reports whether a listen address accepts local connections only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// components is GET /health's report: each component "ok" or "degraded: reason".
func (m *Main) components(ctx context.Context) map[string]string {
	out := make(map[string]string, len(m.health))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, fn := range m.health {
		wg.Go(func() {
			v := fn(ctx)
			mu.Lock()
			out[name] = v
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// llmHealth checks that the configured language model server accepts connections; answers
// fall back to extractive ones without it, so it is never essential.
func (a *app) llmHealth(ctx context.Context) string {
	var target string
	switch a.cfg.LLM {
	case "ollama":
		target = a.cfg.OllamaHost
	case "openai":
		target = a.cfg.OpenAIBaseURL
		if target == "" {
			target = "https://api.openai.com"
		}
	default:
		return "ok"
	}
	host := strings.TrimPrefix(strings.TrimPrefix(target, "http://"), "https://")
	host, _, _ = strings.Cut(host, "/")
	if _, _, err := net.SplitHostPort(host); err != nil {
		port := "80"
		if strings.HasPrefix(target, "https://") {
			port = "443"
		}
		host = net.JoinHostPort(host, port)
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return "degraded: cannot reach the " + a.cfg.LLM + " server; answers are extractive until it is back"
	}
	c.Close()
	return "ok"
}

// newBot builds the conversation core over the pipeline, with state in the data directory.
func (a *app) newBot(asker bot.Asker, reg prometheus.Registerer) (*bot.Bot, error) {
	userRate := rate.Limit(a.cfg.UserRate / 60)
	if a.cfg.UserRate <= 0 {
		userRate = rate.Inf
	}
	// With Milvus holding the index, the data directory may not exist yet.
	if err := os.MkdirAll(a.cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("FOOTNOTE_DATA_DIR: %w", err)
	}
	cfg := bot.Config{
		Asker:             asker,
		StatePath:         filepath.Join(a.cfg.DataDir, "state.db"),
		Docs:              a.documentCount,
		UserRate:          userRate,
		MaxConcurrent:     a.cfg.MaxConcurrent,
		MaxQueue:          a.cfg.QueueSize,
		Timeout:           a.cfg.RequestTimeout,
		ResumeMaxAge:      a.cfg.ResumeMaxAge,
		Registerer:        reg,
		Logger:            a.log,
		QueryLogRetention: a.cfg.QueryLogRetention,
	}
	if err := a.nativeBot(context.Background(), &cfg); err != nil { // hook (native, #14): routes, page pictures
		return nil, err
	}
	b, err := bot.New(cfg)
	if err != nil {
		return nil, err
	}
	a.onClose(b.Close)
	return b, nil
}

func (a *app) documentCount(ctx context.Context) int {
	if a.comp == nil || a.comp.store == nil {
		return 0
	}
	s, err := index.Counts(ctx, a.comp.store)
	if err != nil {
		return 0
	}
	return s.Documents
}

// Run serves until ctx ends, then shuts down: stop accepting, let in-flight answers finish
// within the shutdown deadline, close. An adapter that fails (Slack or Discord unreachable,
// a token they reject) is logged and reported by /health; it never stops the API.
func (m *Main) Run(ctx context.Context) error {
	m.log.Info("footnote serving", "addr", m.Addr())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http server: %w", err)
		}
		return nil
	})
	if m.metrics != nil {
		m.log.Info("metrics serving", "addr", m.metricLn.Addr().String())
		g.Go(func() error {
			if err := m.metrics.Serve(m.metricLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("metrics server: %w", err)
			}
			return nil
		})
	}
	for _, run := range m.runners {
		g.Go(func() error {
			if err := run(gctx); err != nil && gctx.Err() == nil {
				m.log.Error("adapter stopped; the rest of footnote keeps serving (see /health)", "err", err)
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.shutdown)
		defer cancel()
		err := m.srv.Shutdown(sctx)
		if m.metrics != nil {
			_ = m.metrics.Shutdown(sctx)
		}
		for _, w := range m.waiters {
			if werr := w(sctx); werr != nil {
				m.log.Warn("in-flight work did not finish before the shutdown deadline", "err", werr)
			}
		}
		m.log.Info("footnote stopped")
		return err
	})
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
