package bot

import (
	"context"
	"errors"

	"github.com/footnote-dev/footnote/rag"
)

// Record adds a question that was answered outside Ask — by the JSON API or the terminal,
// which call the pipeline directly to return its full Answer — to the query log, so that
// `footnote stats` and GET /stats count every question wherever it was asked.
func (b *Bot) Record(ctx context.Context, platform, user string, q rag.Question, ans rag.Answer, err error) {
	ql := queryLog{At: b.cfg.Now(), RequestID: newID("r-", 10), Platform: platform, User: user,
		Question: Clean(q.Text), Method: ans.Method, Generator: ans.Generator, Confid: ans.Confidence,
		Timings: ans.Timings, Elapsed: ans.Timings.Total}
	switch {
	case err != nil && !errors.Is(err, rag.ErrNoEvidence):
		text, reason := explain(err)
		ql.Kind, ql.ErrorRef, ql.Answer = KindError, newID("e-", 8), text
		b.log.Error("question failed", logErrorRef, ql.ErrorRef, logReason, reason, logPlatform, platform, logErr, err)
	case err != nil || ans.Refused:
		ql.Kind, ql.Refused, ql.Answer = KindRefusal, true, rag.Refusal
	default:
		ql.Kind, ql.Answer = KindAnswer, ans.Text
		for _, s := range ans.Sources {
			ql.SourceIDs = append(ql.SourceIDs, s.Chunk.ID)
		}
	}
	b.logQuery(context.WithoutCancel(ctx), b.log, ql)
}
