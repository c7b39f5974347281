package pdf

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/footnote-dev/footnote/index/chunk"
)

// workerEnv marks a child process started by Parse to extract one PDF.
const workerEnv = "FOOTNOTE_PDF_WORKER"

// A parse request travels to the child as a gob-encoded request followed by nothing else;
// the answer comes back as a gob-encoded response on stdout.
type request struct {
	Data     []byte
	MaxPages int
}

type response struct {
	Doc  *chunk.Document
	Kind string // sentinel name when Err is set; see sentinels
	Err  string
}

var sentinels = map[string]error{
	"empty": ErrEmpty, "corrupt": ErrCorrupt, "encrypted": ErrEncrypted,
	"notext": ErrNoText, "toomany": ErrTooManyPages,
}

// workerError is an error from the child, rebuilt around its sentinel.
type workerError struct {
	sentinel error
	msg      string
}

func (e *workerError) Error() string { return e.msg }
func (e *workerError) Unwrap() error { return e.sentinel }

func init() {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(serveWorker(os.Stdin, os.Stdout))
	}
}

// serveWorker parses one request from r and writes the response to w.
func serveWorker(r io.Reader, w io.Writer) int {
	var req request
	if err := gob.NewDecoder(r).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "pdf worker: read request:", err)
		return 2
	}
	doc, err := parse(context.Background(), req.Data, Options{MaxPages: req.MaxPages, InProcess: true})
	resp := response{Doc: doc}
	if err != nil {
		resp.Doc, resp.Err = nil, err.Error()
		for name, s := range sentinels {
			if errors.Is(err, s) {
				resp.Kind = name
			}
		}
	}
	if err := gob.NewEncoder(w).Encode(&resp); err != nil {
		fmt.Fprintln(os.Stderr, "pdf worker: write response:", err)
		return 2
	}
	return 0
}

// parseInChild runs parse in a child process. ok is false when no child could be started,
// and the caller should parse in process instead.
func parseInChild(ctx context.Context, data []byte, opt Options) (doc *chunk.Document, err error, ok bool) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, false
	}
	var in bytes.Buffer
	if err := gob.NewEncoder(&in).Encode(&request{Data: data, MaxPages: opt.MaxPages}); err != nil {
		return nil, nil, false
	}
	var out bytes.Buffer
	stderr := &tail{max: 2048}
	tctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, exe)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, &out, stderr
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err(), true
		}
		if tctx.Err() != nil {
			return nil, fmt.Errorf("%w: parsing took longer than %v", ErrCorrupt, opt.Timeout), true
		}
		return nil, nil, false
	}
	runErr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err(), true
	}
	if tctx.Err() != nil {
		return nil, fmt.Errorf("%w: parsing took longer than %v", ErrCorrupt, opt.Timeout), true
	}
	var resp response
	if decErr := gob.NewDecoder(&out).Decode(&resp); decErr != nil || runErr != nil {
		// MuPDF aborted (or the child died otherwise): the file is what broke it.
		why := lastLine(stderr.String())
		if why == "" && runErr != nil {
			why = runErr.Error()
		}
		return nil, fmt.Errorf("%w: the PDF library crashed on it (%s)", ErrCorrupt, why), true
	}
	if resp.Err != "" {
		return nil, &workerError{sentinel: sentinels[resp.Kind], msg: resp.Err}, true
	}
	return resp.Doc, nil, true
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.buf) }

// lastLine returns the last non-empty line of s that says something about an error.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "warning:") && !strings.HasPrefix(l, "aborting process") {
			return l
		}
	}
	return ""
}
