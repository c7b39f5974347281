package textfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/index/chunk"
)

type tblock struct {
	Text       string
	Section    []string
	Heading    bool
	Start, End int
}

func blocks(d *chunk.Document) []tblock {
	var out []tblock
	for _, b := range d.Blocks {
		out = append(out, tblock{b.Text, b.Section, b.Heading, b.LineStart, b.LineEnd})
	}
	return out
}

func TestMarkdown(t *testing.T) {
	src := "# Guide\n" +
		"\n" +
		"Intro paragraph\n" +
		"over two lines.\n" +
		"\n" +
		"## Install\n" +
		"\n" +
		"```sh\n" +
		"# not a heading\n" +
		"\n" +
		"go install ./...\n" +
		"```\n" +
		"\n" +
		"Usage\n" +
		"-----\n" +
		"Run it.\n" +
		"### Flags ###\n" +
		"Top Level\n" +
		"=========\n" +
		"Last words.\n"
	d, err := Parse("docs/guide.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []tblock{
		{"# Guide", []string{"Guide"}, true, 1, 1},
		{"Intro paragraph\nover two lines.", []string{"Guide"}, false, 3, 4},
		{"## Install", []string{"Guide", "Install"}, true, 6, 6},
		{"```sh\n# not a heading\n\ngo install ./...\n```", []string{"Guide", "Install"}, false, 8, 12},
		{"Usage\n-----", []string{"Guide", "Usage"}, true, 14, 15},
		{"Run it.", []string{"Guide", "Usage"}, false, 16, 16},
		{"### Flags ###", []string{"Guide", "Usage", "Flags"}, true, 17, 17},
		{"Top Level\n=========", []string{"Top Level"}, true, 18, 19},
		{"Last words.", []string{"Top Level"}, false, 20, 20},
	}
	if diff := cmp.Diff(want, blocks(d)); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if d.Title != "Guide" || d.Kind != chunk.KindMarkdown || d.Lines != 20 {
		t.Errorf("title %q kind %q lines %d", d.Title, d.Kind, d.Lines)
	}
	for _, b := range d.Blocks {
		if d.Text[b.CharStart:b.CharEnd] != b.Text {
			t.Errorf("offsets of %q wrong", b.Text)
		}
	}
}

func TestCodeAndText(t *testing.T) {
	src := "package main\r\n\r\nimport \"fmt\"\r\n\r\nfunc main() {\r\n\tfmt.Println(\"hi\")\r\n}\r\n"
	d, err := Parse("cmd/main.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []tblock{
		{"package main", nil, false, 1, 1},
		{"import \"fmt\"", nil, false, 3, 3},
		{"func main() {\n\tfmt.Println(\"hi\")\n}", nil, false, 5, 7},
	}
	if diff := cmp.Diff(want, blocks(d)); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if d.Kind != chunk.KindCode || d.Title != "main" {
		t.Errorf("kind %q title %q", d.Kind, d.Title)
	}

	// Chunks of a text file carry line ranges, no pages.
	var lines []string
	for i := range 200 {
		lines = append(lines, "This is line number "+strings.Repeat("x", i%7)+" of a plain text file.")
		if i%10 == 9 {
			lines = append(lines, "")
		}
	}
	text := strings.Join(lines, "\n")
	d, err = Parse("notes.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	chunks := chunk.Split(d, chunk.Meta{Hash: "h"}, chunk.Options{Max: 120, Window: 100, Min: 20})
	if len(chunks) < 3 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	all := strings.Split(text, "\n")
	for _, c := range chunks {
		if c.PageStart != 0 || c.LineStart == 0 {
			t.Errorf("chunk %d: pages %d, lines %d-%d", c.Index, c.PageStart, c.LineStart, c.LineEnd)
			continue
		}
		want := strings.TrimSpace(strings.Join(all[c.LineStart-1:c.LineEnd], "\n"))
		if c.Text != want {
			t.Errorf("chunk %d text differs from lines %d-%d", c.Index, c.LineStart, c.LineEnd)
		}
	}
}

func TestReject(t *testing.T) {
	cases := []struct {
		name, path string
		data       []byte
		want       error
	}{
		{"nul bytes", "a.txt", []byte("abc\x00def"), ErrBinary},
		{"mostly invalid utf-8", "a.md", []byte("\xff\xfe\xfa\xfb\xfc ok \xc0\xc1\xf5\xf6"), ErrBinary},
		{"empty", "a.txt", nil, ErrEmpty},
		{"blank", "a.py", []byte("\n  \n\t\n"), ErrEmpty},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse(c.path, c.data); !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
	if _, err := Parse("a.exe", []byte("text")); err == nil {
		t.Error("unsupported extension accepted")
	}
	// A few stray bytes in a text file are replaced, not rejected.
	d, err := Parse("a.txt", []byte("caf\xe9 is a word in a mostly valid text file"))
	if err != nil || !strings.Contains(d.Text, "\uFFFD") {
		t.Errorf("mostly valid file: %v", err)
	}
}
