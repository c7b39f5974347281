package slack

import (
	"bytes"
	"context"

	"github.com/slack-go/slack"

	"github.com/footnote-dev/footnote/bot"
)

// maxUpload bounds one uploaded file. Slack accepts up to 1 GB, but a page picture that
// large means something went wrong; bot's renderer stays far below it.
const maxUpload = 20 << 20

// upload shares a reply's attachments (the cited page of Show source n) in the thread with
// files.uploadV2 (files.getUploadURLExternal, the upload, files.completeUploadExternal).
// Files cannot be ephemeral, so private replies keep their text only. A failed upload is
// logged and said in the thread: the source's text is already there.
func (a *Adapter) upload(ctx context.Context, t target, r bot.Reply) {
	if len(r.Attachments) == 0 || t.ephemeral || r.Private {
		return
	}
	for _, att := range r.Attachments {
		if len(att.Data) == 0 || len(att.Data) > maxUpload {
			a.log.Warn("attachment not uploaded", "name", att.Name, "bytes", len(att.Data))
			continue
		}
		err := a.retry(ctx, "files.uploadV2", func() error {
			_, err := a.api.UploadFileContext(ctx, slack.UploadFileParameters{
				Reader:          bytes.NewReader(att.Data),
				FileSize:        len(att.Data),
				Filename:        att.Name,
				Title:           truncate(att.Title, 250),
				AltTxt:          truncate(att.AltText, 1000),
				Channel:         t.channel,
				ThreadTimestamp: t.thread,
			})
			return err
		})
		if err != nil {
			a.logAPI(err, t.channel, "step", "upload page image", "request_id", r.RequestID)
			_, _ = a.post(ctx, t.channel, t.thread, textMessage("_I couldn't upload the picture of this page; the text above is the source._", "Picture not uploaded"))
		}
	}
}
