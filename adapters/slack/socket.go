package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// Run connects over Socket Mode (it needs AppToken) and handles events until ctx ends, then
// returns nil. A connection that cannot be opened or is lost is retried with a doubling
// delay (up to 2 minutes), forever: a Slack outage must not take the rest of footnote down.
// Health says how the connection is. Each question is recorded before its envelope is
// acknowledged.
func (a *Adapter) Run(ctx context.Context) error {
	if a.cfg.AppToken == "" {
		return errors.New("slack: socket mode needs an app-level token (xapp-…)")
	}
	delay := a.cfg.ReconnectDelay
	for {
		start := time.Now()
		err := a.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) > 2*time.Minute {
			delay = a.cfg.ReconnectDelay // it worked for a while: start the backoff afresh
		}
		reason := "socket mode: " + err.Error()
		if strings.Contains(err.Error(), "invalid_auth") || strings.Contains(err.Error(), "not_authed") || strings.Contains(err.Error(), "token_revoked") {
			reason = "socket mode: Slack rejected the app-level token (FOOTNOTE_SLACK_APP_TOKEN)"
		}
		a.link.Down(reason)
		a.log.Warn("slack socket mode stopped; reconnecting", logErr, err, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Minute)
	}
}

// Health is "ok" or "degraded: " and why, for GET /health. An HTTP-mode-only adapter
// (no AppToken) is ok: there is no connection to keep.
func (a *Adapter) Health() string {
	if a.cfg.AppToken == "" {
		return "ok"
	}
	return a.link.State()
}

func (a *Adapter) runOnce(ctx context.Context) error {
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
			return ctx.Err()
		case err := <-errc:
			if err == nil {
				err = errors.New("connection closed")
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
		a.link.Up()
		a.log.Info("slack socket mode connected")
	case socketmode.EventTypeConnecting, socketmode.EventTypeHello:
		a.log.Debug("slack socket mode", "event", evt.Type)
	case socketmode.EventTypeConnectionError:
		a.link.Down("socket mode: cannot connect to Slack")
		if ce, ok := evt.Data.(*slack.ConnectionErrorEvent); ok && ce.ErrorObj != nil {
			a.link.Down("socket mode: cannot connect to Slack: " + ce.ErrorObj.Error())
		}
		a.log.Warn("slack socket mode", "event", evt.Type, "data", fmt.Sprint(evt.Data))
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorBadMessage, socketmode.EventTypeErrorWriteFailed:
		a.log.Warn("slack socket mode", "event", evt.Type, "data", fmt.Sprint(evt.Data))
	case socketmode.EventTypeInvalidAuth:
		a.link.Down("socket mode: Slack rejected the app-level token (FOOTNOTE_SLACK_APP_TOKEN)")
		a.log.Error("slack socket mode: invalid app token")
	case socketmode.EventTypeDisconnect:
		a.log.Info("slack asked to reconnect")
	case socketmode.EventTypeEventsAPI:
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		if ok {
			if evt.Request != nil && evt.Request.RetryAttempt > 0 {
				a.log.Info("slack retried an event", "retry_num", evt.Request.RetryAttempt, "retry_reason", evt.Request.RetryReason)
			}
			// Record the question before acknowledging, as in HTTP mode.
			a.onEvent(withReceived(ctx, time.Now()), ev)
		}
		a.ack(client, evt, nil)
	case socketmode.EventTypeSlashCommand:
		cmd, ok := evt.Data.(slack.SlashCommand)
		var busy any
		if ok {
			if b := a.command(withReceived(ctx, time.Now()), cmd); b != nil {
				busy = b
			}
		}
		a.ack(client, evt, busy)
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slack.InteractionCallback)
		if !a.ack(client, evt, nil) || !ok {
			return
		}
		t := interactionTarget(cb)
		a.background(ctx, t.channel, t.user, t.thread, func(ctx context.Context) { a.onInteraction(ctx, cb) })
	}
}

// ack acknowledges an envelope, with an empty payload (which also closes a submitted modal)
// unless one is given.
func (a *Adapter) ack(client *socketmode.Client, evt socketmode.Event, payload any) bool {
	if evt.Request == nil {
		return false
	}
	var err error
	if payload != nil {
		err = client.Ack(*evt.Request, payload)
	} else {
		err = client.Ack(*evt.Request)
	}
	if err != nil {
		a.log.Error("slack ack", "envelope_id", evt.Request.EnvelopeID, logErr, err)
		return false
	}
	return true
}
