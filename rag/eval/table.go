package eval

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"
)

// WriteTable prints the report as aligned text: a quality table and a latency table with
// one row per method, and an answer table when answers were measured.
func (r Report) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	// tabwriter aligns every column right; padding the method names to one width keeps
	// them reading left-aligned.
	width := len("method")
	for _, m := range r.Methods {
		width = max(width, len(m.Method))
	}
	name := func(s string) string { return fmt.Sprintf("%-*s", width, s) }
	fmt.Fprintf(ew, "%d questions (%d answerable, %d unanswerable), k = %d\n\n", r.Questions, r.Answerable, r.Unanswerable, r.K)

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tP@%d\tR@%d\tMRR\tnDCG@10\t|\tpage P@%d\tpage R@%d\tpage MRR\tpage nDCG@10\t|\trefused\tfalse refusals\tkept\tkept prec.\t\n", name("method"), r.K, r.K, r.K, r.K)
	for _, m := range r.Methods {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t|\t%.3f\t%.3f\t%.3f\t%.3f\t|\t%d/%d %.2f\t%d/%d\t%.1f\t%.3f\t\n",
			name(m.Method), m.Source.Precision, m.Source.Recall, m.Source.MRR, m.Source.NDCG10,
			m.Page.Precision, m.Page.Recall, m.Page.MRR, m.Page.NDCG10,
			m.Refusal.Refused, m.Refusal.Unanswerable, m.Refusal.Accuracy,
			m.Refusal.FalseRefusals, r.Answerable, m.Kept, m.KeptPrecision)
	}
	tw.Flush()

	fmt.Fprintf(ew, "\nlatency, p50 / p95\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tembed\tsearch\trerank\ttotal\t\n", name("method"))
	for _, m := range r.Methods {
		l := m.Latency
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", name(m.Method), pct(l.Embed), pct(l.Search), pct(l.Rerank), pct(l.Total))
	}
	tw.Flush()

	answers := false
	for _, m := range r.Methods {
		answers = answers || m.Answers != nil
	}
	if answers {
		fmt.Fprintf(ew, "\nanswers\n")
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%s\tcitation validity\trefusal acc.\tfalse refusals\tcites expected\tcites page\tpage prec.\tsupported\tkey concepts\tgenerate\ttotal\t\n", name("method"))
		for _, m := range r.Methods {
			a := m.Answers
			if a == nil {
				continue
			}
			supported := "-"
			if a.Checked > 0 {
				supported = fmt.Sprintf("%.3f (%d/%d)", a.SupportedRate, a.Supported, a.Checked)
			}
			fmt.Fprintf(tw, "%s\t%.3f (%d/%d)\t%.2f\t%d/%d\t%.3f\t%.3f\t%.3f\t%s\t%.3f\t%s\t%s\t\n", name(m.Method),
				a.CitationValidity, a.Citations, a.Citations+a.InvalidCitations, a.RefusalAccuracy,
				a.FalseRefusals, r.Answerable, a.CitedExpected, a.CitedExpectedPage, a.PagePrecision, supported,
				a.KeyConcepts, pct(a.Generate), pct(a.Total))
		}
		tw.Flush()
	}
	if len(r.Categories) > 1 {
		for _, m := range r.Methods {
			writeCategories(ew, r.K, m)
		}
	}
	fmt.Fprintf(ew, "\nP/R/MRR/nDCG: answerable questions, ranked candidates before the cut; page: chunk on an expected page.\n")
	if len(r.Categories) > 1 {
		fmt.Fprintf(ew, "By category: paper/page@k = an expected paper/page among the first k candidates; refused = unanswerable refused by\n"+
			"the cut; cites paper/page = answered answerable turns citing an expected paper/page, page prec. = cited sources on an\n"+
			"expected page, supported = grounding-supported / checked citation markers.\n")
	}
	return ew.err
}

// writeCategories prints one method's metrics per question category.
func writeCategories(w io.Writer, k int, m MethodReport) {
	width := len("category")
	for _, c := range m.Categories {
		width = max(width, len(c.Category))
	}
	fmt.Fprintf(w, "\n%s by category\n", m.Method)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tn\tpaper@%d\tpage@%d\tMRR\tpage MRR\trefused\tfalse ref.", width, "category", k, k)
	if m.Answers != nil {
		fmt.Fprintf(tw, "\t|\tans. refused\tans. false ref.\tcites paper\tcites page\tpage prec.\tsupported\tvalidity")
	}
	fmt.Fprintf(tw, "\t\n")
	for _, c := range m.Categories {
		ranks := "-\t-\t-\t-"
		if c.Answerable > 0 {
			ranks = fmt.Sprintf("%.3f\t%.3f\t%.3f\t%.3f", c.Source.Hit, c.Page.Hit, c.Source.MRR, c.Page.MRR)
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%s\t%s", width, c.Category, c.Questions, ranks,
			ratio(c.Refusal.Refused, c.Unanswerable), ratio(c.Refusal.FalseRefusals, c.Answerable))
		if a := c.Answers; a != nil {
			refused := int(math.Round(a.RefusalAccuracy * float64(c.Unanswerable)))
			cites := "-\t-\t-"
			if a.Answered > 0 {
				cites = fmt.Sprintf("%.3f\t%.3f\t%.3f", a.CitedExpected, a.CitedExpectedPage, a.PagePrecision)
			}
			supported := "-"
			if a.Checked > 0 {
				supported = fmt.Sprintf("%.3f (%d/%d)", a.SupportedRate, a.Supported, a.Checked)
			}
			fmt.Fprintf(tw, "\t|\t%s\t%s\t%s\t%s\t%.3f", ratio(refused, c.Unanswerable), ratio(a.FalseRefusals, c.Answerable),
				cites, supported, a.CitationValidity)
		}
		fmt.Fprintf(tw, "\t\n")
	}
	tw.Flush()
}

// ratio prints n of total with its fraction, or "-" when there is nothing to count.
func ratio(n, total int) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d %.2f", n, total, float64(n)/float64(total))
}

func pct(p Percentiles) string {
	if p.P50 == 0 && p.P95 == 0 {
		return "-"
	}
	return ms(p.P50) + " / " + ms(p.P95)
}

// ms formats a duration in milliseconds with precision suited to its size.
func ms(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f < 10:
		return fmt.Sprintf("%.2fms", f)
	case f < 100:
		return fmt.Sprintf("%.1fms", f)
	}
	return fmt.Sprintf("%.0fms", f)
}

// errWriter remembers the first write error so the table code can ignore them.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
