package bot

import (
	"context"
	"errors"
	"time"

	"github.com/footnote-dev/footnote/rag"
)

// Record adds a question that was answered outside Ask — by the JSON API or the terminal,
// which call the pipeline directly to return its full Answer — to the query log, so that
// `footnote stats` and GET /stats count every question wherever it was asked.
func (b *Bot) Record(ctx context.Context, platform, user string, q rag.Question, ans rag.Answer, err error) {
	b.record(ctx, newID("r-", 10), platform, user, q, ans, err, ans.Timings.Total)
}

// record writes the query log row of a question answered with a full rag.Answer and
// returns the kind it was logged as.
func (b *Bot) record(ctx context.Context, id, platform, user string, q rag.Question, ans rag.Answer, err error, elapsed time.Duration) Kind {
	ql := queryLog{At: b.cfg.Now(), RequestID: id, Platform: platform, User: user,
		Question: Clean(q.Text), Method: ans.Method, Generator: ans.Generator, Confid: ans.Confidence,
		Timings: ans.Timings, Elapsed: elapsed}
	switch {
	case err != nil && !errors.Is(err, rag.ErrNoEvidence):
		text, reason := explain(err)
		ql.Kind, ql.ErrorRef, ql.Answer = KindError, newID("e-", 8), text
		b.m.errors.WithLabelValues(reason).Inc()
		b.log.Error("question failed", logRequestID, id, logErrorRef, ql.ErrorRef, logReason, reason, logPlatform, platform, logErr, err)
	case err != nil || ans.Refused:
		ql.Kind, ql.Refused, ql.Answer = KindRefusal, true, rag.Refusal
		b.m.refusals.WithLabelValues(platform).Inc()
	default:
		ql.Kind, ql.Answer = KindAnswer, ans.Text
		for _, s := range ans.Sources {
			ql.SourceIDs = append(ql.SourceIDs, s.Chunk.ID)
		}
	}
	b.logQuery(context.WithoutCancel(ctx), b.log, ql)
	return ql.Kind
}
