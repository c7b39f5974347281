package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// Run connects over Socket Mode (it needs AppToken) and handles events until ctx ends; it
// returns nil then, or an error when the connection cannot be (re-)established. Each envelope
// is acknowledged by its envelope_id before any work starts.
func (a *Adapter) Run(ctx context.Context) error {
	if a.cfg.AppToken == "" {
		return errors.New("slack: socket mode needs an app-level token (xapp-…)")
	}
	client := socketmode.New(a.api,
		socketmode.OptionLog(sdkLogger{a.log}),
		socketmode.OptionDebug(a.log.Enabled(ctx, slog.LevelDebug)),
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- client.RunContext(ctx) }()
	a.log.Info("slack socket mode starting")
	for {
		select {
		case <-ctx.Done():
			<-errc
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("slack socket mode: %w", err)
		case evt := <-client.Events:
			a.onSocketEvent(ctx, client, evt)
		}
	}
}

func (a *Adapter) onSocketEvent(ctx context.Context, client *socketmode.Client, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeConnected:
		a.log.Info("slack socket mode connected")
	case socketmode.EventTypeConnecting, socketmode.EventTypeHello:
		a.log.Debug("slack socket mode", "event", evt.Type)
	case socketmode.EventTypeConnectionError, socketmode.EventTypeIncomingError, socketmode.EventTypeErrorBadMessage, socketmode.EventTypeErrorWriteFailed:
		a.log.Warn("slack socket mode", "event", evt.Type, "data", fmt.Sprint(evt.Data))
	case socketmode.EventTypeInvalidAuth:
		a.log.Error("slack socket mode: invalid app token")
	case socketmode.EventTypeDisconnect:
		a.log.Info("slack asked to reconnect")
	case socketmode.EventTypeEventsAPI:
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		done := a.begin()
		if !a.ack(client, evt) || !ok {
			done()
			return
		}
		if evt.Request.RetryAttempt > 0 {
			a.log.Info("slack retried an event", "retry_num", evt.Request.RetryAttempt, "retry_reason", evt.Request.RetryReason)
		}
		a.run(ctx, done, workEvent, func(ctx context.Context) { a.onEvent(ctx, ev) })
	case socketmode.EventTypeSlashCommand:
		cmd, ok := evt.Data.(slack.SlashCommand)
		done := a.begin()
		if !a.ack(client, evt) || !ok {
			done()
			return
		}
		a.run(ctx, done, workCommand, func(ctx context.Context) { a.onCommand(ctx, cmd) })
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slack.InteractionCallback)
		done := a.begin()
		if !a.ack(client, evt) || !ok {
			done()
			return
		}
		a.run(ctx, done, workInteraction, func(ctx context.Context) { a.onInteraction(ctx, cb) })
	}
}

// ack acknowledges an envelope with an empty payload (which also closes a submitted modal).
func (a *Adapter) ack(client *socketmode.Client, evt socketmode.Event) bool {
	if evt.Request == nil {
		return false
	}
	if err := client.Ack(*evt.Request); err != nil {
		a.log.Error("slack ack", "envelope_id", evt.Request.EnvelopeID, logErr, err)
		return false
	}
	return true
}
