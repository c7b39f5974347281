// Command footnote indexes research papers and answers questions about them with cited
// sources, on the terminal, over a JSON HTTP API, and in Slack and Discord (`footnote serve`).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Execute(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries an exit status without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Execute runs the CLI and returns the process exit status: 0 success, 1 an error,
// 2 a usage error, 3 partial success (some inputs failed but the rest were processed).
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{out: stdout, errOut: stderr, getenv: os.Getenv}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	a.close()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "footnote: interrupted")
		return 130
	}
	fmt.Fprintf(stderr, "footnote: %v\n", err)
	if strings.Contains(err.Error(), "unknown command") || strings.Contains(err.Error(), "flag") {
		return 2
	}
	return 1
}

// app holds the configuration and the components opened for one command.
type app struct {
	out, errOut io.Writer
	getenv      func(string) string

	cfg        Config
	configPath string
	log        *slog.Logger

	closers  []func() error
	progress *progress
	comp     *components
}

func (a *app) rootCommand() *cobra.Command {
	a.cfg = Defaults()
	root := &cobra.Command{
		Use:   "footnote",
		Short: "Ask questions of your research papers and get cited answers",
		Long: `footnote indexes PDFs, Markdown, text and code, and answers questions about them with
inline citations ([1], [2] …) and the sources they point at — on the terminal, over a JSON HTTP
API, and in Slack and Discord. When the documents do not hold the answer it says so.

Configuration: flags > FOOTNOTE_* environment > config file > defaults.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.configPath, "config", "", "config file (YAML; default $FOOTNOTE_CONFIG or DATA_DIR/config.yaml)")
	pf.StringVar(&a.cfg.DataDir, "data-dir", a.cfg.DataDir, "embedded store and state ($FOOTNOTE_DATA_DIR)")
	pf.StringVar(&a.cfg.ModelsDir, "models-dir", a.cfg.ModelsDir, "ONNX Runtime library and models ($FOOTNOTE_MODELS_DIR; default DATA_DIR/models)")
	pf.StringVar(&a.cfg.Corpus, "corpus", a.cfg.Corpus, "corpus (collection) to use ($FOOTNOTE_CORPUS)")
	pf.StringVar(&a.cfg.MilvusAddr, "milvus", a.cfg.MilvusAddr, "Milvus address host:port; empty uses the embedded store ($FOOTNOTE_MILVUS_ADDR)")
	pf.StringVar(&a.cfg.Embedders, "embedders", a.cfg.Embedders, `dense models: "onnx", "openai[:model]", "ollama[:model]" or "none" ($FOOTNOTE_EMBEDDERS)`)
	pf.StringVar(&a.cfg.LogLevel, "log-level", a.cfg.LogLevel, "debug, info, warn or error ($FOOTNOTE_LOG_LEVEL; default warn, info for serve)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return a.configure(cmd) }

	root.AddCommand(
		a.indexCommand(),
		a.docsCommand(),
		a.showCommand(),
		a.searchCommand(),
		a.compareCommand(),
		a.askCommand(),
		a.evalCommand(),
		a.statsCommand(),
		a.serveCommand(),
		a.modelsCommand(),
		a.llmCommand(),
	)
	return root
}

// configure applies file and environment under the flags the user set explicitly.
func (a *app) configure(cmd *cobra.Command) error {
	flags := a.cfg // values as parsed: defaults, or what the user passed
	cfg := Defaults()
	path, explicit := a.configPath, a.configPath != ""
	if !explicit {
		if p := a.getenv("FOOTNOTE_CONFIG"); p != "" {
			path, explicit = p, true
		}
	}
	if !explicit {
		data := cfg.DataDir
		if d := a.getenv("FOOTNOTE_DATA_DIR"); d != "" {
			data = d
		}
		if cmd.Flags().Changed("data-dir") {
			data = flags.DataDir
		}
		path = filepath.Join(data, "config.yaml")
	}
	if err := cfg.LoadFile(path, explicit); err != nil {
		return err
	}
	if err := cfg.LoadEnv(a.getenv); err != nil {
		return err
	}
	// Flags win. Only flags the user set override: the rest keep file/env values.
	set := func(name string, dst *string, v string) {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			*dst = v
		}
	}
	set("data-dir", &cfg.DataDir, flags.DataDir)
	set("models-dir", &cfg.ModelsDir, flags.ModelsDir)
	set("corpus", &cfg.Corpus, flags.Corpus)
	set("milvus", &cfg.MilvusAddr, flags.MilvusAddr)
	set("embedders", &cfg.Embedders, flags.Embedders)
	set("log-level", &cfg.LogLevel, flags.LogLevel)
	a.cfg = cfg
	if err := a.cfg.Validate(); err != nil {
		return err
	}
	level := a.cfg.LogLevel
	if level == "" {
		// A terminal command shows its result, not the lifecycle; the service logs it.
		level = "warn"
		if cmd.Name() == "serve" {
			level = "info"
		}
	}
	a.log = newLogger(a.errOut, level, a.cfg.LogFormat)
	slog.SetDefault(a.log)
	return nil
}

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "text"
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func (a *app) onClose(f func() error) { a.closers = append(a.closers, f) }

func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil && a.log != nil {
			a.log.Warn("close", "err", err)
		}
	}
	a.closers = nil
}

// isTerminal reports whether w is an interactive terminal (progress bars, tables).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
