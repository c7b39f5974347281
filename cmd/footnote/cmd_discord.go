package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/footnote-dev/footnote/adapters/discord"
	"github.com/footnote-dev/footnote/bot"
)

// addDiscord enables the Discord adapter when a token and an application id are set: the
// gateway for mentions and /ask, and POST /discord/interactions when a public key is set.
func (a *app) addDiscord(m *Main, mux *http.ServeMux, b *bot.Bot) error {
	if a.cfg.DiscordToken == "" {
		if a.cfg.DiscordPublicKey != "" {
			return errors.New("FOOTNOTE_DISCORD_PUBLIC_KEY is set but FOOTNOTE_DISCORD_TOKEN is not: the token is needed to post answers")
		}
		return nil
	}
	d, err := discord.New(discord.Config{
		Token:         string(a.cfg.DiscordToken),
		AppID:         a.cfg.DiscordAppID,
		PublicKey:     a.cfg.DiscordPublicKey,
		GuildID:       a.cfg.DiscordGuildID,
		APIURL:        a.cfg.DiscordAPIURL,
		FollowThreads: a.cfg.DiscordFollow,
		Core:          b,
		Policy: func(guild, channel string) discord.Policy {
			r := b.Route(discord.Platform, guild, channel)
			return discord.Policy{Private: r.Private, RequireMention: r.RequireMention}
		},
		Native: discord.NativeConfig{Library: a.library(b)}, // hook (native, #14)
		Logger: a.log,
	})
	if err != nil {
		return fmt.Errorf("discord: %w", err)
	}
	mux.Handle("/discord/", d.Handler())
	m.runners = append(m.runners, d.Run)
	m.waiters = append(m.waiters, d.Wait)
	m.health["discord"] = func(context.Context) string { return d.Health() }
	return nil
}
