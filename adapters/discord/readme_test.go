package discord

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestReadme keeps the setup guide in step with the code: the permission integer and invite
// URL, and the environment variables cmd/footnote reads.
func TestReadme(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	if Permissions != 311385212928 {
		t.Errorf("Permissions = %d; update the README if the set changed", Permissions)
	}
	for _, want := range []string{
		InviteURL("YOUR_APP_ID"),
		"**" + strconv.FormatInt(Permissions, 10) + "**",
		"FOOTNOTE_DISCORD_TOKEN", "FOOTNOTE_DISCORD_APP_ID", "FOOTNOTE_DISCORD_PUBLIC_KEY",
		"FOOTNOTE_DISCORD_GUILD_ID", "FOOTNOTE_DISCORD_API_URL", "FOOTNOTE_DISCORD_FOLLOW_THREADS",
		"Message Content Intent", "applications.commands",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README lacks %q", want)
		}
	}
}
