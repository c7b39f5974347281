// Command models installs footnote's local models (ONNX Runtime library and embedding
// models) into a models folder, like `footnote models pull`, for CI and machines where the
// footnote binary is not built yet:
//
//	go run ./deploy/models [-dir DIR] [-model NAME]... [-all] [-verify] [-force]
//	go run ./deploy/models [-dir DIR] -import-model M.onnx -import-tokenizer T.json [-import-name N]
//
// DIR defaults to $FOOTNOTE_MODELS_DIR, else ~/.local/share/footnote/models.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

func main() {
	var models names
	dir := flag.String("dir", defaultDir(), "models folder")
	flag.Var(&models, "model", "component to install (repeatable; default: "+strings.Join(pull.DefaultNames, ", ")+")")
	all := flag.Bool("all", false, "install every known component: "+strings.Join(pull.AllNames(), ", "))
	verify := flag.Bool("verify", false, "only verify what is installed")
	force := flag.Bool("force", false, "download again even when installed")
	impModel := flag.String("import-model", "", "install a local cross-encoder: path of its .onnx file")
	impTok := flag.String("import-tokenizer", "", "with -import-model: path of its tokenizer.json")
	impName := flag.String("import-name", pull.CrossEncoder, "with -import-model: folder name")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *all {
		models = pull.AllNames()
	}
	if *impModel != "" {
		m, err := pull.Import(pull.ImportOptions{Dir: *dir, Name: *impName, Kind: pull.KindCrossEncoder,
			Model: *impModel, Tokenizer: *impTok})
		if err != nil {
			log.Error("import", "err", err)
			os.Exit(1)
		}
		fmt.Printf("installed %s (%s) in %s\n", m.Name, m.Kind, pull.ModelDir(*dir, m.Name))
		return
	}
	if *verify {
		problems := pull.Verify(*dir, models...)
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, p)
		}
		if len(problems) > 0 {
			os.Exit(1)
		}
		fmt.Println("models verified in", *dir)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := pull.Run(ctx, pull.Options{Dir: *dir, Names: models, Logger: log, Force: *force})
	if err != nil {
		log.Error("pull", "err", err)
		os.Exit(1)
	}
	for _, r := range res {
		fmt.Printf("%-20s skipped=%v downloaded=%dB took=%s\n", r.Name, r.Skipped, r.Downloaded, r.Took)
	}
}

func defaultDir() string {
	if d := os.Getenv("FOOTNOTE_MODELS_DIR"); d != "" {
		return d
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "footnote", "models")
	}
	return "models"
}
