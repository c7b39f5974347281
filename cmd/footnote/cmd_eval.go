package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/footnote-dev/footnote/rag/eval"
)

func (a *app) evalCommand() *cobra.Command {
	var (
		questions string
		methods   []string
		k         int
		answers   bool
		asJSON    bool
		floors    string
	)
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure retrieval and answer quality against questions with expected sources",
		Long: `Runs every question of a JSON Lines file (the format of ../shared/eval/questions.jsonl)
through each retrieval method and reports Precision@k and Recall@k (a hit is a chunk of an
expected document; the page-level variant also needs an expected page), MRR, nDCG@10, refusal
accuracy on unanswerable questions and latency p50/p95 per stage, then the same split by
question category (refusals of near misses and off-topic questions separately, an expected
paper/page in the top k, MRR). Questions with follow-ups are asked as conversations, each
turn with the earlier ones as history. With --answers it also answers each question and
reports citation validity, answer refusals, expected paper/page cited (a citation counts at
page level when its page or the page of the sentence it quotes is expected) and the share
of citations the grounding check supported. --floors fails the command when a figure falls
below the limits of a floors file (rag/eval/testdata/floors.json).`,
		Example: `  footnote eval --questions ../shared/eval/questions.jsonl
  footnote eval --questions rag/eval/testdata/report.jsonl --methods hybrid,bm25 --answers
  footnote eval --questions rag/eval/testdata/report.jsonl --methods hybrid --answers --floors rag/eval/testdata/floors.json
  footnote eval --methods bm25,hybrid --answers --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if questions == "" {
				questions = defaultQuestions()
				if questions == "" {
					return fmt.Errorf("no questions file: pass --questions FILE.jsonl")
				}
			}
			qs, err := eval.LoadQuestionsFile(questions)
			if err != nil {
				return err
			}
			var fl eval.Floors
			if floors != "" {
				if fl, err = eval.LoadFloors(floors); err != nil {
					return err
				}
			}
			p, err := a.pipeline(ctx)
			if err != nil {
				return err
			}
			// On an empty corpus every question is "refused" and every figure is 0: a report
			// that looks like a measurement of a broken system, not of a missing index.
			if docs, err := a.comp.store.Documents(ctx); err == nil && len(docs) == 0 {
				return fmt.Errorf("corpus %q holds no documents, so every question would be refused: index the papers first (footnote index PATH)", a.cfg.Corpus)
			}
			if len(methods) == 0 {
				methods = p.Methods()
			}
			cfg := eval.Config{Retrieve: p.Retrieve, Methods: methods, K: k}
			if answers {
				cfg.Ask = p.Ask
			}
			if isTerminal(a.errOut) && !asJSON {
				cfg.Progress = func(done, total int) { fmt.Fprintf(a.errOut, "\r%d/%d", done, total) }
			}
			rep, err := eval.Run(ctx, cfg, qs)
			if cfg.Progress != nil {
				fmt.Fprint(a.errOut, "\r")
			}
			if err != nil {
				return err
			}
			if asJSON {
				err = writeJSON(a.out, rep)
			} else {
				err = rep.WriteTable(a.out)
			}
			if err != nil || floors == "" {
				return err
			}
			if broken := fl.Check(rep); len(broken) > 0 {
				for _, b := range broken {
					fmt.Fprintln(a.errOut, b)
				}
				return fmt.Errorf("%d of the limits in %s broken", len(broken), floors)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&questions, "questions", "", "questions file (JSON Lines); default ../shared/eval/questions.jsonl when present")
	cmd.Flags().StringSliceVar(&methods, "methods", nil, "methods to evaluate (default: every configured method)")
	cmd.Flags().IntVarP(&k, "k", "k", 5, "rank cut-off for Precision@k and Recall@k")
	cmd.Flags().BoolVar(&answers, "answers", false, "also generate answers and measure citations and refusals")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&floors, "floors", "", "fail when a figure breaks a limit of this floors file (JSON, see rag/eval.Floors)")
	return cmd
}

// defaultQuestions finds the shared development questions beside the working directory.
func defaultQuestions() string {
	for _, p := range []string{filepath.Join("..", "shared", "eval", "questions.jsonl"), filepath.Join("shared", "eval", "questions.jsonl")} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
