package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/footnote-dev/footnote/bot"
	"github.com/footnote-dev/footnote/rag"
)

func (a *app) statsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Corpus size and the query log: questions, refusals, feedback, latency",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.store(ctx)
			if err != nil {
				return err
			}
			s, err := st.Stats(ctx)
			if err != nil {
				return err
			}
			// Reading the log needs no pipeline: this core never answers.
			b, err := a.newBot(bot.AskerFunc(func(context.Context, rag.Question, func(string) error) (rag.Answer, error) {
				return rag.Answer{}, errors.New("stats: not answering")
			}), nil)
			if err != nil {
				return err
			}
			q, err := b.Stats(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.out, map[string]any{"documents": s.Documents, "chunks": s.Chunks, "queries": q})
			}
			fmt.Fprintf(a.out, "corpus %q: %d documents, %d chunks\n", a.cfg.Corpus, s.Documents, s.Chunks)
			fmt.Fprintf(a.out, "questions %d: %d answered, %d refused, %d errors, %d busy, %d rate-limited\n",
				q.Questions, q.Answered, q.Refusals, q.Errors, q.Busy, q.RateLimited)
			fmt.Fprintf(a.out, "feedback: %d 👍, %d 👎 (%d comments)\n", q.FeedbackUp, q.FeedbackDown, q.Comments)
			fmt.Fprintf(a.out, "latency p50 %s, p95 %s\n", q.LatencyP50.Round(time.Millisecond), q.LatencyP95.Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
