package discord

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies enforces the dependency rule (STYLE.md): the Discord adapter imports bot
// and discordgo, never another adapter, the ingestion side or a heavy native SDK.
func TestDependencies(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{
		"github.com/footnote-dev/footnote/adapters/",
		"github.com/footnote-dev/footnote/cmd",
		"github.com/footnote-dev/footnote/index",
		"github.com/slack-go/slack",
		"github.com/gen2brain/go-fitz",
		"github.com/yalue/onnxruntime_go",
		"github.com/milvus-io/",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) && dep != "github.com/footnote-dev/footnote/adapters/discord" {
				t.Errorf("adapters/discord depends on %s", dep)
			}
		}
	}
}
