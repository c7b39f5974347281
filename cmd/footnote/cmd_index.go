package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/footnote-dev/footnote/index"
)

func (a *app) indexCommand() *cobra.Command {
	var (
		opt     index.Options
		asJSON  bool
		rebuild bool
	)
	cmd := &cobra.Command{
		Use:   "index PATH...",
		Short: "Index PDFs, Markdown, text and code files (folders are scanned recursively)",
		Long: `Parses each file, cuts section-aware chunks, encodes them (BM25, plus every configured dense
model) and stores them. Unchanged files are skipped by content hash; a changed file replaces
its chunks all-or-nothing; Ctrl-C never leaves a half-indexed document. Files that cannot be
read (encrypted, corrupt, image-only PDFs …) are reported and skipped.

Exit status: 0 all indexed, 3 some files were skipped with an error, 1 nothing could be done.`,
		Example: `  footnote index ./papers
  footnote index ../shared/corpus/papers --prune
  footnote index notes.md src/ --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			for _, p := range args {
				if _, err := os.Stat(p); err != nil {
					return fmt.Errorf("index %s: %w", p, err)
				}
			}
			ix, err := a.indexer(ctx, !asJSON && isTerminal(a.errOut), rebuild)
			if err != nil {
				return err
			}
			sum, err := ix.Index(ctx, args, opt)
			a.finishProgress()
			if err != nil {
				return err
			}
			// A model configured after earlier runs has no vectors for the unchanged
			// documents: fill them in without re-parsing.
			for _, e := range a.comp.embedders {
				n, err := ix.Backfill(ctx, e.Info().Name)
				if err != nil {
					return fmt.Errorf("back-fill %s: %w", e.Info().Name, err)
				}
				if n > 0 && !asJSON {
					fmt.Fprintf(a.out, "Back-filled %d chunks with %s\n", n, e.Info().Name)
				}
			}
			if asJSON {
				if err := writeJSON(a.out, sum); err != nil {
					return err
				}
			} else {
				printSummary(a, sum)
			}
			if sum.Failed {
				return exitError{3}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opt.Prune, "prune", false, "forget indexed files under the given folders that no longer exist")
	cmd.Flags().BoolVar(&opt.Force, "force", false, "re-index files even when unchanged")
	cmd.Flags().BoolVar(&rebuild, "rebuild", false, "empty the corpus first (needed after changing the set of dense models on Milvus)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

func printSummary(a *app, s index.Summary) {
	fmt.Fprintf(a.out, "Indexed %d of %d files (%d unchanged, %d removed): %d pages, %d chunks in %s\n",
		s.Indexed, s.Files, s.Unchanged, s.Removed, s.Pages, s.Chunks, s.Elapsed.Round(time.Millisecond))
	if len(s.Skipped) > 0 {
		fmt.Fprintf(a.out, "Skipped %d:\n", len(s.Skipped))
		for _, sk := range s.Skipped {
			fmt.Fprintf(a.out, "  %s: %s\n", sk.Path, sk.Reason)
		}
	}
}

// progress draws a bar on a terminal from the indexer's events.
type progress struct {
	bar *progressbar.ProgressBar
}

func (a *app) newProgress() func(index.Event) {
	p := &progress{}
	a.progress = p
	return func(e index.Event) {
		if e.Kind == index.EventFound && e.Files > 0 && p.bar == nil {
			p.bar = progressbar.NewOptions(e.Files,
				progressbar.OptionSetWriter(a.errOut),
				progressbar.OptionSetDescription("indexing"),
				progressbar.OptionShowCount(),
				progressbar.OptionSetElapsedTime(true),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionClearOnFinish(),
			)
		}
		if p.bar == nil {
			return
		}
		if e.Path != "" {
			p.bar.Describe(excerpt(filepath.Base(e.Path), 30))
		}
		if e.Done > 0 {
			p.bar.Set(e.Done)
		}
	}
}

func (a *app) finishProgress() {
	if a.progress != nil && a.progress.bar != nil {
		a.progress.bar.Finish()
	}
}

func (a *app) docsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "docs",
		Short: "List indexed documents with pages, chunks and when they were indexed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			docs, err := st.Documents(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.out, docs)
			}
			if len(docs) == 0 {
				fmt.Fprintln(a.out, "No documents indexed yet. Run: footnote index PATH")
				return nil
			}
			tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTITLE\tPAGES\tCHUNKS\tINDEXED")
			for _, d := range docs {
				pages := fmt.Sprint(d.Pages)
				if d.Pages == 0 && d.Lines > 0 {
					pages = fmt.Sprintf("%d lines", d.Lines)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", d.Name, excerpt(d.Title, 60), pages, d.Chunks, d.IndexedAt.Local().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) showCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show CHUNK_ID",
		Short: "Show one chunk in full with its metadata",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			cs, err := st.Chunks(ctx, args)
			if err != nil {
				return err
			}
			c := cs[0]
			if asJSON {
				return writeJSON(a.out, c)
			}
			fmt.Fprintf(a.out, "%s — %s\n%s · %s · chunk %d · %d tokens · chars %d–%d\n%s\n\n%s\n",
				c.Title, c.Name, sectionOf(c), pagesOf(c), c.Index, c.Tokens, c.CharStart, c.CharEnd, c.Source, strings.TrimSpace(c.Text))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
