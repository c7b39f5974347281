package pdf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/index/chunk"
	"github.com/footnote-dev/footnote/internal/corpustest"
)

// TestFastRenderingMatches checks that rendering pages without images gives the same
// document as go-fitz's HTML, on the corpus.
func TestFastRenderingMatches(t *testing.T) {
	papers := corpustest.Papers(t)
	for _, name := range []string{"1706.03762.pdf", "1810.04805.pdf", "1704.00051.pdf", "2203.02155.pdf"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(papers, name))
			if err != nil {
				t.Fatal(err)
			}
			parseWith := func(slow bool) *chunk.Document {
				slowHTML = slow
				defer func() { slowHTML = false }()
				d, err := parse(t.Context(), data, Options{MaxPages: DefaultMaxPages})
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			fast, slow := parseWith(false), parseWith(true)
			if diff := cmp.Diff(slow, fast, cmp.AllowUnexported(chunk.Document{}), cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == ".buf"
			}, cmp.Ignore())); diff != "" {
				t.Errorf("documents differ (-go-fitz HTML +direct):\n%s", diff)
			}
		})
	}
}
