package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Gateway close codes that reconnecting cannot fix (Discord's opcodes and status codes
// reference).
var fatalClose = map[int]string{
	4004: "Discord rejected the bot token (gateway close code 4004 Authentication failed): copy a fresh token from the Developer Portal (your application → Bot → Reset Token) into FOOTNOTE_DISCORD_TOKEN",
	4010: "Discord rejected the shard (gateway close code 4010 Invalid shard)",
	4011: "Discord requires sharding for this bot (gateway close code 4011 Sharding required)",
	4012: "Discord rejected the gateway version (gateway close code 4012 Invalid API version): upgrade discordgo",
	4013: "Discord rejected the requested intents (gateway close code 4013 Invalid intents)",
	4014: "Discord refused the Message Content intent (gateway close code 4014 Disallowed intents): enable Message Content Intent in the Developer Portal (your application → Bot → Privileged Gateway Intents), or unset FOOTNOTE_DISCORD_FOLLOW_THREADS so follow-ups need a mention",
}

// ErrBadToken reports a bot token Discord does not accept.
var ErrBadToken = errors.New("discord: bad bot token")

// Run checks the token, registers /ask, opens the gateway and answers events until ctx ends.
// It reconnects (resuming the session when Discord allows) after a lost connection, retries
// a start-up that fails (Discord unreachable) with a doubling delay up to 2 minutes, and
// returns an error naming the fix for a rejected token or intent. Health says how the
// connection is.
func (a *Adapter) Run(ctx context.Context) error {
	delay := a.cfg.ReconnectDelay
	for {
		err := a.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		a.link.Down(err.Error())
		var fatal *fatalError
		if errors.Is(err, ErrBadToken) || errors.As(err, &fatal) {
			return err
		}
		a.log.Warn("discord unavailable; retrying", logErr, err, "delay", delay)
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

// Health is "ok" or "degraded: " and why, for GET /health.
func (a *Adapter) Health() string { return a.link.State() }

func (a *Adapter) runOnce(ctx context.Context) error {
	me, err := a.s.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		if e, ok := restError(err); ok && e.status == http.StatusUnauthorized {
			return fmt.Errorf("%w: Discord answered 401 Unauthorized on /users/@me: copy a fresh token from the Developer Portal (your application → Bot → Reset Token) into FOOTNOTE_DISCORD_TOKEN", ErrBadToken)
		}
		return fmt.Errorf("discord: check token: %w", err)
	}
	a.setSelf(me.ID)
	a.log.Info("discord bot user", "user", me.ID, "name", me.Username, "invite_url", InviteURL(a.cfg.AppID))
	a.register(ctx)

	lost := make(chan struct{}, 1)
	remove := a.s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
		select {
		case lost <- struct{}{}:
		default:
		}
	})
	defer remove()

	if err := a.open(); err != nil {
		return err
	}
	a.link.Up()
	a.log.Info("discord gateway connected", "intents", a.s.Identify.Intents)
	delay := a.cfg.ReconnectDelay
	for {
		select {
		case <-ctx.Done():
			// Close emits one more Disconnect: lost is buffered, nothing waits for it.
			if err := a.s.Close(); err != nil {
				a.log.Warn("close gateway", logErr, err)
			}
			return nil
		case <-lost:
		}
		if ctx.Err() != nil {
			continue
		}
		a.link.Down("gateway connection lost; reconnecting")
		a.log.Warn("discord gateway connection lost; reconnecting", "delay", delay)
		for {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			err := a.open()
			if err == nil || errors.Is(err, discordgo.ErrWSAlreadyOpen) {
				a.link.Up()
				a.log.Info("discord gateway reconnected")
				delay = a.cfg.ReconnectDelay
				break
			}
			var fatal *fatalError
			if errors.As(err, &fatal) {
				return err
			}
			a.log.Warn("discord gateway reconnect", logErr, err)
			delay = min(2*delay, 2*time.Minute)
		}
		// A Disconnect emitted by the failed attempts is stale.
		select {
		case <-lost:
		default:
		}
	}
}

// fatalError is a gateway close code reconnecting cannot fix.
type fatalError struct {
	code int
	msg  string
}

func (e *fatalError) Error() string { return "discord: " + e.msg }

// open connects the gateway: IDENTIFY the first time, RESUME with the session id and
// sequence afterwards (discordgo keeps both across Close).
func (a *Adapter) open() error {
	err := a.s.Open()
	if err == nil {
		return nil
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		if msg, ok := fatalClose[ce.Code]; ok {
			if ce.Code == 4004 {
				return fmt.Errorf("%w: %s", ErrBadToken, msg)
			}
			return &fatalError{code: ce.Code, msg: msg}
		}
	}
	return fmt.Errorf("discord: open gateway: %w", err)
}

// askCommand is /ask question:<string>.
var askCommand = &discordgo.ApplicationCommand{
	Name:        "ask",
	Description: "Ask footnote a question about the indexed papers",
	Options: []*discordgo.ApplicationCommandOption{{
		Type:        discordgo.ApplicationCommandOptionString,
		Name:        "question",
		Description: "Your question, e.g. what are the two sub-layers of a Transformer encoder layer?",
		Required:    true,
		MaxLength:   1000,
	}},
}

// register puts /ask in place with a bulk overwrite, which is idempotent: running it at
// every start changes nothing when the command is unchanged. Guild commands apply at once,
// global ones may take a while to reach every client. A failure is logged: mentions and
// DMs work without the command.
func (a *Adapter) register(ctx context.Context) {
	err := a.call(ctx, "register commands", func(opts ...discordgo.RequestOption) error {
		_, err := a.s.ApplicationCommandBulkOverwrite(a.cfg.AppID, a.cfg.GuildID, commands(), opts...) // hook (native, #14): commands()
		return err
	})
	if err != nil {
		a.log.Error("register /ask failed; mentions and DMs still work. Invite footnote with the applications.commands scope (see adapters/discord/README.md)",
			logGuild, a.cfg.GuildID, logErr, err)
		return
	}
	a.log.Info("registered /ask", logGuild, a.cfg.GuildID)
}

// onGatewayEvent receives every gateway dispatch as raw JSON (on the gateway goroutine,
// SyncEvents), so gateway and HTTP interactions share one decoder. It must not block.
func (a *Adapter) onGatewayEvent(_ *discordgo.Session, e *discordgo.Event) {
	ctx := context.Background()
	switch e.Type {
	case "READY":
		var r struct {
			User struct {
				ID string `json:"id"`
			} `json:"user"`
		}
		if err := json.Unmarshal(e.RawData, &r); err == nil && r.User.ID != "" {
			a.setSelf(r.User.ID)
		}
	case "INTERACTION_CREATE":
		in, err := parseInteraction(e.RawData)
		if err != nil {
			a.log.Warn("unparsable interaction", logErr, err)
			return
		}
		// Recorded and admitted here; the acknowledgement (a REST call) and the work run in
		// the background: the gateway goroutine never waits for either.
		a.interaction(ctx, in, e.RawData, time.Now(), nil)
	case "MESSAGE_CREATE":
		var m discordgo.Message
		if err := json.Unmarshal(e.RawData, &m); err != nil {
			a.log.Warn("unparsable message", logErr, err)
			return
		}
		a.onMessage(ctx, &m, e.RawData)
	}
}
