package pdf

import (
	"fmt"
	"os"
	"testing"
)

func TestDump(t *testing.T) {
	path := os.Getenv("DUMP_PDF")
	if path == "" {
		t.Skip("DUMP_PDF not set")
	}
	d, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("TITLE %q AUTHORS %q PAGES %d\n", d.Title, d.Authors, d.Pages)
	for _, b := range d.Blocks {
		if b.Heading {
			fmt.Printf("== p%d %q\n", b.PageStart, b.Section)
			continue
		}
		if os.Getenv("DUMP_ALL") != "" {
			fmt.Printf("  p%d %s\n", b.PageStart, b.Text)
		}
	}
}
