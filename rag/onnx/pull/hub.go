package pull

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Hub is a Hugging Face model repository pinned at one commit. Files of a component with
// a Hub are fetched from <HubURL>/<Repo>/resolve/<Revision>/<File.From>.
type Hub struct {
	Repo     string // e.g. "cross-encoder/ms-marco-MiniLM-L6-v2"
	Revision string // a 40-hex commit, never a branch
	License  string
}

// ErrHubUnreachable reports that the model hub could not be contacted at all (no DNS, no
// route, refused, timed out). Run treats it as "not available here", not as a failure.
var ErrHubUnreachable = errors.New("model hub unreachable")

// installHub downloads a hub component into a staging folder, verifies every file against
// what the hub reports for it and against the pins, and swaps the folder in.
func installHub(ctx context.Context, opts Options, log *slog.Logger, name string, c Component) (int64, error) {
	tmp, err := os.MkdirTemp(opts.Dir, ".pull-"+name+"-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	stage := filepath.Join(tmp, name)
	if err := os.Mkdir(stage, 0o755); err != nil {
		return 0, err
	}
	m := c.Manifest
	m.Name = name
	m.Files = map[string]FileSum{}
	var total int64
	for _, f := range c.Files {
		if strings.ContainsAny(f.To, `/\`) || f.To == "" || f.To == "." || f.To == ".." {
			return total, fmt.Errorf("bad destination name %q", f.To)
		}
		u := strings.TrimSuffix(opts.HubURL, "/") + "/" + c.Hub.Repo + "/resolve/" + c.Hub.Revision + "/" + f.From
		log.Info("downloading", "model", name, "url", u)
		sum, err := hubDownload(ctx, opts, name, u, c.Hub.Revision, f, filepath.Join(stage, f.To))
		total += sum.Size
		if err != nil {
			return total, err
		}
		m.Files[f.To] = sum
	}
	up, ml := m.Source.Upstream, m.Source.ModelLicense
	m.Source = Source{Registry: "huggingface", Package: c.Hub.Repo, Version: c.Hub.Revision, License: c.Hub.License, Upstream: up, ModelLicense: ml}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return total, err
	}
	if err := os.WriteFile(filepath.Join(stage, ManifestFile), append(b, '\n'), 0o644); err != nil {
		return total, err
	}
	return total, swapIn(opts.Dir, name, stage, tmp)
}

// hubDownload fetches one file. The resolve URL answers either with the file (a file kept
// in git: ETag is its git blob sha1) or with a redirect to storage (an LFS file:
// X-Linked-Etag is its sha256, X-Linked-Size its size); both carry X-Repo-Commit, which must
// be the pinned revision. The content is hashed as it is written and must match what the
// hub reported and what is pinned.
func hubDownload(ctx context.Context, opts Options, name, u, revision string, f File, dest string) (FileSum, error) {
	noFollow := *opts.HTTPClient
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := get(ctx, &noFollow, u)
	if err != nil {
		return FileSum{}, err
	}
	defer resp.Body.Close()
	if commit := resp.Header.Get("X-Repo-Commit"); commit != revision {
		return FileSum{}, fmt.Errorf("%s: hub answered for commit %q, pinned %s", f.From, commit, revision)
	}
	var wantSHA256, wantBlob string
	size := f.Size
	if linked := etag(resp.Header.Get("X-Linked-Etag")); linked != "" {
		wantSHA256 = linked
		if n, err := strconv.ParseInt(resp.Header.Get("X-Linked-Size"), 10, 64); err == nil && size == 0 {
			size = n
		}
	} else if resp.StatusCode == http.StatusOK {
		wantBlob = etag(resp.Header.Get("ETag"))
	}
	if wantSHA256 == "" && wantBlob == "" {
		return FileSum{}, fmt.Errorf("%s: hub reported no checksum (status %s)", f.From, resp.Status)
	}
	if wantSHA256 != "" && f.SHA256 != "" && wantSHA256 != f.SHA256 {
		return FileSum{}, fmt.Errorf("%s: hub reports sha256 %s, pinned %s", f.From, wantSHA256, f.SHA256)
	}
	body := resp
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		loc, err := resp.Location()
		if err != nil {
			return FileSum{}, fmt.Errorf("%s: redirect without location: %w", f.From, err)
		}
		body, err = get(ctx, opts.HTTPClient, loc.String())
		if err != nil {
			return FileSum{}, err
		}
		defer body.Body.Close()
	}
	if body.StatusCode != http.StatusOK {
		return FileSum{}, fmt.Errorf("download %s: %s", u, body.Status)
	}
	if size == 0 {
		size = body.ContentLength
	}
	out, err := os.Create(dest)
	if err != nil {
		return FileSum{}, err
	}
	defer out.Close()
	h256 := sha256.New()
	var blob hash.Hash
	w := io.MultiWriter(out, h256)
	if wantBlob != "" {
		if size <= 0 {
			return FileSum{}, fmt.Errorf("%s: size unknown, cannot check its git blob id", f.From)
		}
		blob = sha1.New()
		fmt.Fprintf(blob, "blob %d\x00", size)
		w = io.MultiWriter(w, blob)
	}
	if opts.Progress != nil {
		w = io.MultiWriter(w, &progress{fn: opts.Progress, name: name, total: size})
	}
	src := io.Reader(body.Body)
	if size > 0 {
		src = io.LimitReader(body.Body, size+1)
	}
	n, err := io.Copy(w, src)
	if err != nil {
		return FileSum{Size: n}, fmt.Errorf("download %s: %w", f.From, err)
	}
	if err := out.Close(); err != nil {
		return FileSum{Size: n}, err
	}
	if size > 0 && n != size {
		return FileSum{Size: n}, fmt.Errorf("%s: got %d bytes, want %d", f.From, n, size)
	}
	got := hex.EncodeToString(h256.Sum(nil))
	switch {
	case wantSHA256 != "" && got != wantSHA256:
		return FileSum{Size: n}, fmt.Errorf("%s: sha256 mismatch: got %s, hub reports %s", f.From, got, wantSHA256)
	case blob != nil && hex.EncodeToString(blob.Sum(nil)) != wantBlob:
		return FileSum{Size: n}, fmt.Errorf("%s: git blob id mismatch: got %x, hub reports %s", f.From, blob.Sum(nil), wantBlob)
	case f.SHA256 != "" && got != f.SHA256:
		return FileSum{Size: n}, fmt.Errorf("%s: sha256 mismatch: got %s, pinned %s", f.From, got, f.SHA256)
	}
	return FileSum{SHA256: got, Size: n}, nil
}

func get(ctx context.Context, client *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		var ne net.Error
		var dns *net.DNSError
		var op *net.OpError
		if ctx.Err() == nil && (errors.As(err, &dns) || errors.As(err, &op) || (errors.As(err, &ne) && ne.Timeout())) {
			host, cause := u, err
			if pu, perr := url.Parse(u); perr == nil {
				host = pu.Host
			}
			var ue *url.Error
			if errors.As(err, &ue) {
				cause = ue.Err // the URL is long and says nothing the host does not
			}
			return nil, fmt.Errorf("%w: %s: %v", ErrHubUnreachable, host, cause)
		}
		return nil, err
	}
	return resp, nil
}

// etag strips the weak prefix and quotes of an ETag value.
func etag(v string) string {
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(v), "W/"), `"`)
}

// swapIn moves stage to dir/name, replacing any previous copy; tmp is a scratch folder on
// the same file system.
func swapIn(dir, name, stage, tmp string) error {
	dest := filepath.Join(dir, name)
	old := filepath.Join(tmp, "old")
	if _, err := os.Stat(dest); err == nil {
		if err := os.Rename(dest, old); err != nil {
			return err
		}
	}
	if err := os.Rename(stage, dest); err != nil {
		if _, serr := os.Stat(old); serr == nil {
			_ = os.Rename(old, dest)
		}
		return err
	}
	return nil
}
