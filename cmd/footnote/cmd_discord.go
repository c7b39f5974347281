package main

import (
	"errors"
	"net/http"

	"github.com/footnote-dev/footnote/bot"
)

func (a *app) addDiscord(m *Main, mux *http.ServeMux, b *bot.Bot) error {
	if a.cfg.DiscordToken == "" && a.cfg.DiscordPublicKey == "" {
		return nil
	}
	return errors.New("discord adapter: wiring pending")
}
