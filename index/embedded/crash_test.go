package embedded

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/index"
	"github.com/footnote-dev/footnote/index/storetest"
	"github.com/footnote-dev/footnote/rag"
)

const crashDirEnv = "FOOTNOTE_EMBEDDED_CRASH_DIR"

// crashVersion is version v of the crash-test document: 200 chunks whose ids and texts
// name the version, so a mix of versions is detectable.
func crashVersion(v int) (rag.Document, []index.EncodedChunk) {
	d := storetest.Doc{ID: "doc", Source: "/crash.txt"}
	for j := range 200 {
		d.Chunks = append(d.Chunks, storetest.Chunk{
			ID:   fmt.Sprintf("v%d-%03d", v, j),
			Text: fmt.Sprintf("version%d passage %d about attention layers and term%d", v, j, j%17),
		})
	}
	return storetest.Encode(d)
}

// TestCrashHelper is the child process of TestKilledMidReplace: it replaces one document
// with new versions until it is killed.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestKilledMidReplace")
	}
	s, err := Open(context.Background(), Config{Dir: dir, Models: []rag.ModelInfo{storetest.M4}})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	for v := 0; ; v++ {
		doc, chunks := crashVersion(v)
		if err := s.Replace(context.Background(), doc, chunks); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if v == 0 {
			fmt.Println("ready")
		}
	}
}

// TestKilledMidReplace kills (SIGKILL) a process that is rewriting a document over and
// over, then checks that the store holds exactly one whole version with statistics to
// match.
func TestKilledMidReplace(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for round := range 3 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper said %q, %v", line, err)
		}
		time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()

		s := open(t, dir, storetest.M4)
		ctx := t.Context()
		var ok string
		if err := s.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("round %d: integrity_check = %q, %v", round, ok, err)
		}
		doc, err := s.Document(ctx, "doc")
		if err != nil {
			t.Fatalf("round %d: Document: %v", round, err)
		}
		// No chunk has an m4 vector, so MissingDense lists every stored chunk.
		chunks, err := s.MissingDense(ctx, storetest.M4.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) != 200 || doc.Chunks != 200 {
			t.Fatalf("round %d: %d chunks stored, document says %d; want 200", round, len(chunks), doc.Chunks)
		}
		version := strings.SplitN(chunks[0].ID, "-", 2)[0]
		for _, c := range chunks {
			if !strings.HasPrefix(c.ID, version+"-") {
				t.Fatalf("round %d: chunks of two versions: %s and %s", round, chunks[0].ID, c.ID)
			}
		}
		var v int
		fmt.Sscanf(version, "v%d", &v)
		_, want := crashVersion(v)
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantDF := map[uint32]int{}
		var terms int64
		for _, c := range want {
			terms += int64(c.Terms)
			for _, i := range c.Sparse.Indices {
				wantDF[i]++
			}
		}
		if st.Chunks != 200 || st.Documents != 1 || st.Terms != terms || len(st.DF) != len(wantDF) {
			t.Fatalf("round %d: Stats %d docs %d chunks %d terms %d df; want 1, 200, %d, %d", round, st.Documents, st.Chunks, st.Terms, len(st.DF), terms, len(wantDF))
		}
		for term, n := range wantDF {
			if st.DF[term] != n {
				t.Fatalf("round %d: df[%d] = %d, want %d", round, term, st.DF[term], n)
			}
		}
		t.Logf("round %d: killed at version %d, store intact", round, v)
	}
}
