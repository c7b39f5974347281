// Package milvustest gives tests a Milvus to talk to: the shared server named by
// FOOTNOTE_MILVUS_TEST_ADDR (which deploy/test.sh starts with deploy/milvus-lite.sh), or a
// private server a test starts, stops and restarts itself through the same script (the C++
// engine unless FOOTNOTE_MILVUS_ENGINE=python).
// Without a server a test skips with the reason, except under CI (CI=true), where that is a
// failure.
package milvustest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// EnvAddr names the variable holding the shared test server's address.
const EnvAddr = "FOOTNOTE_MILVUS_TEST_ADDR"

// EnvAddrLite3 optionally names a second shared server running Milvus Lite 3.x (the
// pure-Python engine), for suites that also run against it (deploy/test.sh starts one
// with FOOTNOTE_MILVUS_TEST_LITE3=1).
const EnvAddrLite3 = "FOOTNOTE_MILVUS_TEST_ADDR_LITE3"

// Addr returns the shared test server's address, or skips (fails under CI) without one.
func Addr(tb testing.TB) string {
	tb.Helper()
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		if ci() {
			tb.Fatalf("%s is not set under CI: deploy/test.sh must start Milvus (deploy/milvus-lite.sh start DIR PORT) and export it", EnvAddr)
		}
		tb.Skipf("skipping: %s not set (start one with `deploy/milvus-lite.sh start DIR PORT` and export %s=127.0.0.1:PORT)", EnvAddr, EnvAddr)
	}
	return addr
}

// Corpus returns a corpus name unique to this test run, so tests sharing a server never
// see each other's collections.
func Corpus(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(tb.Name(), "_"))
	if len(name) > 40 {
		name = name[:40]
	}
	return "t_" + name + "_" + hex.EncodeToString(b)
}

// Script is the path of deploy/milvus-lite.sh in this repository.
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "milvus-lite.sh")
}

// Server is a private Milvus server run through deploy/milvus-lite.sh.
type Server struct {
	tb   testing.TB
	dir  string
	port int
	env  []string
}

// EnvEngine selects the engine private servers run (deploy/milvus-lite.sh's
// FOOTNOTE_MILVUS_ENGINE): "cpp" (the default, Milvus' C++ engine) or "python" (Milvus
// Lite 3.x).
const EnvEngine = "FOOTNOTE_MILVUS_ENGINE"

// Engine is the engine private servers run.
func Engine() string {
	if e := os.Getenv(EnvEngine); e != "" {
		return e
	}
	return "cpp"
}

// Start starts a private server on a free 127.0.0.1 port with its data in a temporary
// directory, and stops it when the test ends. It needs the engine installed
// (`deploy/milvus-lite.sh install`); without it the test skips, or fails under CI.
func Start(tb testing.TB) *Server {
	tb.Helper()
	venv := filepath.Join(toolsDir(), "milvus-engine-venv", ".footnote-installed")
	if Engine() == "python" {
		venv = filepath.Join(toolsDir(), "milvus-venv", "bin", "milvus-lite")
	}
	if _, err := os.Stat(venv); err != nil {
		if ci() {
			tb.Fatalf("Milvus (%s engine) is not installed under CI (%s missing): run `deploy/milvus-lite.sh install` first", Engine(), venv)
		}
		tb.Skipf("skipping: Milvus (%s engine) not installed (%s missing); run `deploy/milvus-lite.sh install`", Engine(), venv)
	}
	s := &Server{tb: tb, dir: filepath.Join(tb.TempDir(), "milvus"), port: freePort(tb)}
	s.Restart()
	tb.Cleanup(func() { s.run("stop", s.dir) })
	return s
}

// Addr is the server's address.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// Stop stops the server; its data stays.
func (s *Server) Stop() {
	s.tb.Helper()
	if out, err := s.run("stop", s.dir); err != nil {
		s.tb.Fatalf("stop milvus-lite: %v\n%s", err, out)
	}
}

// Restart starts the server again (or for the first time) on the same port and data.
func (s *Server) Restart() {
	s.tb.Helper()
	// The port may linger briefly after a stop; the script refuses a port in use.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := s.run("start", s.dir, fmt.Sprint(s.port))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("start milvus-lite: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *Server) run(args ...string) ([]byte, error) {
	cmd := exec.Command("bash", append([]string{Script()}, args...)...)
	cmd.Env = os.Environ()
	return cmd.CombinedOutput()
}

func toolsDir() string {
	if d := os.Getenv("FOOTNOTE_TOOLS_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "footnote")
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func ci() bool { return os.Getenv("CI") == "true" }
