package deptest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/footnote-dev/footnote"

// owners names the packages allowed to import each SDK directly: one each, except the
// Ollama and OpenAI clients, which embedding (rag/remote) and generation (rag/generate) use
// for different jobs.
var owners = map[string][]string{
	"github.com/gen2brain/go-fitz":          {mod + "/index/pdf"},
	"github.com/yalue/onnxruntime_go":       {mod + "/rag/onnx"},
	"github.com/sugarme/tokenizer":          {mod + "/rag/onnx/hftok"},
	"github.com/milvus-io/milvus-sdk-go/v2": {mod + "/index/milvus"},
	"github.com/slack-go/slack":             {mod + "/adapters/slack"},
	"github.com/bwmarrin/discordgo":         {mod + "/adapters/discord"},
	"github.com/ollama/ollama/api":          {mod + "/rag/remote", mod + "/rag/generate"},
	"github.com/sashabaranov/go-openai":     {mod + "/rag/remote", mod + "/rag/generate"},
}

// forbidden lists, per package prefix, what it must not depend on even transitively.
var forbidden = []struct {
	pkg  string
	deps []string
}{
	{mod + "/rag", []string{mod + "/index", mod + "/bot", mod + "/adapters", mod + "/cmd",
		"github.com/slack-go/", "github.com/bwmarrin/discordgo", "github.com/milvus-io/", "github.com/gen2brain/go-fitz"}},
	{mod + "/bot", []string{mod + "/index", mod + "/adapters", mod + "/cmd", "github.com/slack-go/",
		"github.com/bwmarrin/discordgo", "github.com/milvus-io/", "github.com/gen2brain/go-fitz", "github.com/yalue/onnxruntime_go"}},
	{mod + "/adapters/slack", []string{mod + "/adapters/discord", mod + "/adapters/httpapi", mod + "/index", mod + "/cmd",
		"github.com/bwmarrin/discordgo", "github.com/milvus-io/", "github.com/gen2brain/go-fitz", "github.com/yalue/onnxruntime_go"}},
	{mod + "/adapters/discord", []string{mod + "/adapters/slack", mod + "/adapters/httpapi", mod + "/index", mod + "/cmd",
		"github.com/slack-go/", "github.com/milvus-io/", "github.com/gen2brain/go-fitz", "github.com/yalue/onnxruntime_go"}},
	{mod + "/adapters/httpapi", []string{mod + "/adapters/slack", mod + "/adapters/discord", mod + "/index", mod + "/cmd",
		"github.com/slack-go/", "github.com/bwmarrin/discordgo", "github.com/milvus-io/", "github.com/gen2brain/go-fitz", "github.com/yalue/onnxruntime_go"}},
	{mod + "/index", []string{mod + "/bot", mod + "/adapters", mod + "/cmd", "github.com/slack-go/", "github.com/bwmarrin/discordgo"}},
}

// list runs `go list` over the module with a template printing the package path, then fields.
func list(t *testing.T, field string) map[string][]string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("skipping: the go tool is not on PATH")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .`+field+`}} {{.}}{{end}}`, mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkgs[f[0]] = f[1:]
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; the module is not where the test expects it", len(pkgs))
	}
	return pkgs
}

func TestSDKsHaveOneOwner(t *testing.T) {
	for pkg, imports := range list(t, "Imports") {
		for _, imp := range imports {
			for sdk, allowed := range owners {
				if imp != sdk && !strings.HasPrefix(imp, sdk+"/") {
					continue
				}
				if !slices.Contains(allowed, pkg) {
					t.Errorf("%s imports %s; only %v may", pkg, imp, allowed)
				}
			}
		}
	}
}

func TestDependencyDirection(t *testing.T) {
	deps := list(t, "Deps")
	for pkg, ds := range deps {
		for _, rule := range forbidden {
			if pkg != rule.pkg && !strings.HasPrefix(pkg, rule.pkg+"/") {
				continue
			}
			for _, d := range ds {
				for _, bad := range rule.deps {
					if strings.HasPrefix(d, bad) && !strings.HasPrefix(d, pkg) {
						t.Errorf("%s depends on %s", pkg, d)
					}
				}
			}
		}
	}
	// The rule must have something to check: a broken go list would pass vacuously.
	for _, rule := range forbidden {
		if _, ok := deps[rule.pkg]; !ok {
			t.Errorf("package %s not found by go list", rule.pkg)
		}
	}
}
