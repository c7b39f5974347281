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
	"github.com/footnote-dev/footnote/rag"
)

func (a *app) serveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API, /metrics and whichever chat adapters are configured",
		Long: `Starts one process with the shared core: the JSON API (/health, /query, /retrieve, /compare,
/documents, /stats), Prometheus /metrics, the Slack adapter when FOOTNOTE_SLACK_BOT_TOKEN is set
(Socket Mode with FOOTNOTE_SLACK_APP_TOKEN, HTTP mode at /slack/* with
FOOTNOTE_SLACK_SIGNING_SECRET) and the Discord adapter when FOOTNOTE_DISCORD_TOKEN is set.
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
	bot      *bot.Bot
	slack    *slack.Adapter
	runners  []func(ctx context.Context) error // long-running adapters (Socket Mode, gateway)
	waiters  []func(ctx context.Context) error // drain in-flight work on shutdown
	shutdown time.Duration
}

// Addr is the address the HTTP server listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// newMain opens every configured component and listens, without serving yet.
func (a *app) newMain(ctx context.Context) (*Main, error) {
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
	m := &Main{log: a.log, bot: b, shutdown: 30 * time.Second}

	api, err := httpapi.New(httpapi.Config{
		Asker: p, Retriever: p, Catalog: st,
		Health: func(ctx context.Context) map[string]string {
			// The answer path degrades rather than fails without an LLM or dense models
			// (extractive answers, BM25), so only the store decides health.
			h := map[string]string{"store": "ok"}
			if _, err := index.Counts(ctx, st); err != nil {
				h["store"] = "unreachable: " + err.Error()
			}
			return h
		},
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
		OnAnswer: func(ctx context.Context, q rag.Question, ans rag.Answer, err error) {
			b.Record(ctx, "http", "", q, ans, err)
		},
		Timeout: a.cfg.RequestTimeout,
		Logger:  a.log.With("component", "httpapi"),
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	api.Register(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	if a.cfg.SlackBotToken != "" {
		sa, err := slack.New(slack.Config{
			BotToken:      string(a.cfg.SlackBotToken),
			AppToken:      string(a.cfg.SlackAppToken),
			SigningSecret: string(a.cfg.SlackSigningSecret),
			APIURL:        a.cfg.SlackAPIURL,
			Core:          b,
			Logger:        a.log,
			Policy: func(team, ch string) slack.Policy {
				r := b.Route(slack.Platform, team, ch)
				return slack.Policy{Private: r.Private, RequireMention: r.RequireMention}
			},
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
	}
	if err := a.addDiscord(m, mux, b); err != nil {
		return nil, err
	}

	ln, err := net.Listen("tcp", a.cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("FOOTNOTE_HTTP_ADDR=%s: %w", a.cfg.HTTPAddr, err)
	}
	m.ln = ln
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return m, nil
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
	b, err := bot.New(bot.Config{
		Asker:         asker,
		StatePath:     filepath.Join(a.cfg.DataDir, "state.db"),
		Docs:          a.documentCount,
		UserRate:      userRate,
		MaxConcurrent: a.cfg.MaxConcurrent,
		MaxQueue:      a.cfg.QueueSize,
		Timeout:       a.cfg.RequestTimeout,
		Registerer:    reg,
		Logger:        a.log,
	})
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
// within the shutdown deadline, close.
func (m *Main) Run(ctx context.Context) error {
	m.log.Info("footnote serving", "addr", m.Addr())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http server: %w", err)
		}
		return nil
	})
	for _, run := range m.runners {
		g.Go(func() error { return run(gctx) })
	}
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.shutdown)
		defer cancel()
		err := m.srv.Shutdown(sctx)
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
