package slack

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

type manifest struct {
	Features struct {
		Shortcuts []struct {
			Type       string `yaml:"type"`
			CallbackID string `yaml:"callback_id"`
		} `yaml:"shortcuts"`
		Assistant struct {
			Description string `yaml:"assistant_description"`
		} `yaml:"assistant_view"`
		AppHome struct {
			HomeTab             bool `yaml:"home_tab_enabled"`
			MessagesTab         bool `yaml:"messages_tab_enabled"`
			MessagesTabReadOnly bool `yaml:"messages_tab_read_only_enabled"`
		} `yaml:"app_home"`
		SlashCommands []struct {
			Command string `yaml:"command"`
			URL     string `yaml:"url"`
		} `yaml:"slash_commands"`
	} `yaml:"features"`
	OAuth struct {
		Scopes struct {
			Bot []string `yaml:"bot"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		Events struct {
			RequestURL string   `yaml:"request_url"`
			BotEvents  []string `yaml:"bot_events"`
		} `yaml:"event_subscriptions"`
		Interactivity struct {
			Enabled    bool   `yaml:"is_enabled"`
			RequestURL string `yaml:"request_url"`
		} `yaml:"interactivity"`
		SocketMode bool `yaml:"socket_mode_enabled"`
	} `yaml:"settings"`
}

// TestManifests checks the app manifests ask for exactly the scopes the adapter uses and
// subscribe to the events it handles; HTTP mode URLs must be routes Handler serves.
func TestManifests(t *testing.T) {
	// The scope each event needs (Slack's Events API reference).
	eventScope := map[string]string{
		"app_mention":      "app_mentions:read",
		"message.channels": "channels:history",
		"message.groups":   "groups:history",
		"message.im":       "im:history",
		// The AI-app side panel (native.go).
		"assistant_thread_started":         "assistant:write",
		"assistant_thread_context_changed": "assistant:write",
		"app_home_opened":                  "",
	}
	// chat:write for chat.postMessage/update/postEphemeral/delete, commands for /ask.
	// assistant:write for assistant.threads.*, files:write for files.uploadV2 (Show source's page).
	wantScopes := []string{"app_mentions:read", "assistant:write", "channels:history", "chat:write", "commands", "files:write", "groups:history", "im:history"}
	for _, tt := range []struct {
		file   string
		socket bool
	}{{"manifest.yaml", true}, {"manifest-http.yaml", false}} {
		t.Run(tt.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "slack", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var m manifest
			if err := yaml.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			scopes := slices.Sorted(slices.Values(m.OAuth.Scopes.Bot))
			if diff := cmp.Diff(wantScopes, scopes); diff != "" {
				t.Errorf("bot scopes (-want +got):\n%s", diff)
			}
			events := slices.Sorted(slices.Values(m.Settings.Events.BotEvents))
			if diff := cmp.Diff([]string{"app_home_opened", "app_mention", "assistant_thread_context_changed", "assistant_thread_started", "message.channels", "message.groups", "message.im"}, events); diff != "" {
				t.Errorf("bot events (-want +got):\n%s", diff)
			}
			for _, e := range events {
				if eventScope[e] != "" && !slices.Contains(scopes, eventScope[e]) {
					t.Errorf("event %s needs scope %s", e, eventScope[e])
				}
			}
			if len(m.Features.Shortcuts) != 1 || m.Features.Shortcuts[0].Type != "message" || m.Features.Shortcuts[0].CallbackID != askMessageCallbackID {
				t.Errorf("shortcuts %+v, want the message shortcut with callback_id %s", m.Features.Shortcuts, askMessageCallbackID)
			}
			if !m.Features.AppHome.HomeTab || m.Features.Assistant.Description == "" {
				t.Error("App Home and the assistant view must be enabled")
			}
			if len(m.Features.SlashCommands) != 1 || m.Features.SlashCommands[0].Command != "/ask" {
				t.Errorf("slash commands %+v, want /ask", m.Features.SlashCommands)
			}
			if !m.Settings.Interactivity.Enabled {
				t.Error("interactivity disabled: buttons would not work")
			}
			if !m.Features.AppHome.MessagesTab || m.Features.AppHome.MessagesTabReadOnly {
				t.Error("the Messages tab must be enabled and writable for DMs")
			}
			if m.Settings.SocketMode != tt.socket {
				t.Errorf("socket_mode_enabled = %v, want %v", m.Settings.SocketMode, tt.socket)
			}
			if tt.socket {
				return
			}
			a, err := New(Config{BotToken: "xoxb-test", Core: newFakeCore(), SigningSecret: "s"})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{m.Settings.Events.RequestURL, m.Features.SlashCommands[0].URL, m.Settings.Interactivity.RequestURL} {
				pu, err := url.Parse(u)
				if err != nil || pu.Scheme != "https" {
					t.Errorf("request URL %q is not https", u)
					continue
				}
				// Unsigned requests to a served route get 401, unknown routes 404.
				rec := httptest.NewRecorder()
				a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, pu.Path, nil))
				if rec.Code != http.StatusUnauthorized {
					t.Errorf("POST %s: status %d, want 401 from a served route", pu.Path, rec.Code)
				}
			}
		})
	}
}

func TestConfigLogValueRedacts(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("config", "slack", Config{BotToken: "xoxb-secret-1", AppToken: "xapp-secret-2", SigningSecret: "secret-3"})
	for _, secret := range []string{"xoxb-secret-1", "xapp-secret-2", "secret-3"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("log leaks %q: %s", secret, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "[redacted]") {
		t.Errorf("log %s, want [redacted] fields", buf.String())
	}
}
