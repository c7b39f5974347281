package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/footnote-dev/footnote/rag"
)

func (a *app) searchCommand() *cobra.Command {
	var (
		k      int
		method string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "search QUESTION",
		Short: "Show the ranked, cited chunks that answer a question",
		Long: `Runs retrieval only — BM25, dense models, or hybrid fused by RRF and reranked by the
cross-encoder — and prints the chunks with score, title, section path, pages and an excerpt.`,
		Example: `  footnote search "What are the two sub-layers of a Transformer encoder layer?"
  footnote search "positional encoding" --method bm25 -k 10 --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := a.pipeline(ctx)
			if err != nil {
				return err
			}
			res, err := p.Retrieve(ctx, rag.Question{Text: strings.Join(args, " "), Method: method, TopK: k})
			noEvidence := errors.Is(err, rag.ErrNoEvidence)
			if err != nil && !noEvidence {
				return err
			}
			if asJSON {
				return writeJSON(a.out, map[string]any{"query": res.Query, "method": res.Method, "no_evidence": noEvidence, "hits": res.Hits, "timings": res.Timings})
			}
			if noEvidence {
				fmt.Fprintln(a.out, rag.Refusal)
				fmt.Fprintf(a.out, "(no passage scored above the relevance cut; %d candidates were considered)\n", len(res.Candidates))
				return nil
			}
			for i, h := range res.Hits {
				printHit(a.out, i+1, h, res.Reranked)
			}
			fmt.Fprintf(a.out, "%s · %d results · %s\n", res.Method, len(res.Hits), res.Timings.Total.Round(1e6))
			return nil
		},
	}
	cmd.Flags().IntVarP(&k, "top", "k", 0, "results to show (default: the configured top_k, 5)")
	cmd.Flags().StringVar(&method, "method", "", `retrieval method: hybrid, bm25 or dense:<model> (default hybrid)`)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printHit(w io.Writer, rank int, h rag.Scored, reranked bool) {
	c := h.Chunk
	score := fmt.Sprintf("score %.4f", h.Score)
	if reranked {
		score = fmt.Sprintf("relevance %.2f", h.Rerank)
	}
	fmt.Fprintf(w, "%d. %s — %s\n", rank, c.Title, c.Name)
	fmt.Fprintf(w, "   %s · %s · %s · %s\n", sectionOf(c), pagesOf(c), score, c.ID)
	fmt.Fprintf(w, "   %s\n\n", excerpt(c.Text, 300))
}

func sectionOf(c rag.Chunk) string {
	if len(c.Section) == 0 {
		return "(no section)"
	}
	return strings.Join(c.Section, " › ")
}

func pagesOf(c rag.Chunk) string {
	switch {
	case c.PageStart > 0 && c.PageEnd > c.PageStart:
		return fmt.Sprintf("pp. %d–%d", c.PageStart, c.PageEnd)
	case c.PageStart > 0:
		return fmt.Sprintf("p. %d", c.PageStart)
	case c.LineStart > 0:
		return fmt.Sprintf("lines %d–%d", c.LineStart, c.LineEnd)
	}
	return ""
}

// excerpt shortens s to about n bytes at a word boundary.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
	}
	return strings.TrimRight(s[:cut], ",;:") + " …"
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (a *app) compareCommand() *cobra.Command {
	var (
		methods []string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "compare QUESTION",
		Short: "Run one question through each retrieval method side by side",
		Example: `  footnote compare "How does DPR train its encoders?"
  footnote compare "What is LoRA?" --methods bm25,hybrid --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := a.pipeline(ctx)
			if err != nil {
				return err
			}
			res, err := p.Compare(ctx, rag.Question{Text: strings.Join(args, " ")}, methods)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.out, res)
			}
			tw := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "METHOD\tRANK\tDOCUMENT\tSECTION\tPAGE\tSCORE\tKEPT\tTIME")
			for _, m := range res {
				if len(m.Rows) == 0 {
					fmt.Fprintf(tw, "%s\t-\t(nothing found)\t\t\t\t\t%s\n", m.Method, m.Elapsed.Round(1e5))
				}
				for i, r := range m.Rows {
					t := ""
					if i == 0 {
						t = m.Elapsed.Round(1e5).String()
					}
					kept := ""
					if r.Kept {
						kept = "✓"
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.3f\t%s\t%s\n", m.Method, r.Rank, r.Name, excerpt(strings.Join(r.Section, " › "), 40),
						pagesOf(rag.Chunk{PageStart: r.PageStart, PageEnd: r.PageEnd, LineStart: r.LineStart, LineEnd: r.LineEnd}), r.Score, kept, t)
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringSliceVar(&methods, "methods", nil, "methods to compare (default: every configured method)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) askCommand() *cobra.Command {
	var (
		method   string
		k        int
		asJSON   bool
		selected string
	)
	cmd := &cobra.Command{
		Use:   "ask QUESTION",
		Short: "Answer a question from the indexed documents, with citations",
		Long: `Streams an answer that cites its sources as [n], then lists the numbered sources. With no
language model configured (FOOTNOTE_LLM=extractive, the default) the answer is built from the
best cited sentences. When the documents do not hold the answer, footnote says exactly:
"Not found in indexed documents."`,
		Example: `  footnote ask "What are the main components of a RAG model?"
  FOOTNOTE_LLM=ollama FOOTNOTE_LLM_MODEL=llama3.1 footnote ask "Why does BERT mask tokens?"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := a.pipeline(ctx)
			if err != nil {
				return err
			}
			q := rag.Question{Text: strings.Join(args, " "), Method: method, TopK: k, Selected: selected}
			var stream func(string) error
			var streamed strings.Builder
			if !asJSON {
				stream = func(d string) error { streamed.WriteString(d); _, err := io.WriteString(a.out, d); return err }
			}
			ans, err := p.Ask(ctx, q, stream)
			if b, berr := a.newBot(p, nil); berr == nil {
				b.Record(ctx, "cli", os.Getenv("USER"), q, ans, err)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.out, ans)
			}
			fmt.Fprintln(a.out)
			if strings.TrimSpace(streamed.String()) != strings.TrimSpace(ans.Text) {
				// A generated answer is checked against its sources after it streamed: a claim
				// without support was dropped, or nothing held and it became the refusal. The
				// checked answer is the one to read.
				fmt.Fprintf(a.out, "\nChecked against the sources:\n%s\n", ans.Text)
			}
			if ans.Note != "" {
				fmt.Fprintf(a.out, "\n(%s)\n", ans.Note)
			}
			if ans.Refused {
				return nil
			}
			fmt.Fprintln(a.out, "\nSources:")
			for _, s := range ans.Sources {
				tag := ""
				if !s.Cited {
					tag = " (also retrieved)"
				}
				fmt.Fprintf(a.out, "[%d] %s — %s · %s · relevance %.2f%s\n", s.N, s.Chunk.Title, sectionOf(s.Chunk), pagesOf(s.Chunk), s.Score, tag)
			}
			fmt.Fprintf(a.out, "\nconfidence %.2f · %s · %s\n", ans.Confidence, ans.Generator, ans.Timings.Total.Round(1e6))
			return nil
		},
	}
	cmd.Flags().StringVar(&method, "method", "", "retrieval method: hybrid, bm25 or dense:<model>")
	cmd.Flags().IntVarP(&k, "top", "k", 0, "sources to keep (default 5)")
	cmd.Flags().StringVar(&selected, "selected", "", "answer about this passage only (no retrieval)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}
