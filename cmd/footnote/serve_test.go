package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// startServe builds serve's Main from env and runs it until the test ends.
func startServe(t *testing.T, env map[string]string) *Main {
	t.Helper()
	a := &app{out: io.Discard, errOut: io.Discard, getenv: func(k string) string { return env[k] }}
	root := a.rootCommand()
	var m *Main
	root.AddCommand(&cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) (err error) {
		m, err = a.newMain(cmd.Context())
		return err
	}})
	root.SetArgs([]string{"probe"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
		a.close()
	})
	return m
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestServeWithPlatformsUnreachable: Slack and Discord cannot be reached at start-up; serve
// keeps the API answering, keeps retrying, and /health names both problems without
// answering 503 (the API can still answer).
func TestServeWithPlatformsUnreachable(t *testing.T) {
	env := bm25Env(t)
	if code, out, errOut := run(t, env, "index", docsFolder(t)); code != 0 {
		t.Fatalf("index: %d\n%s%s", code, out, errOut)
	}
	down := closedPort(t)
	env["FOOTNOTE_HTTP_ADDR"] = "127.0.0.1:0"
	env["FOOTNOTE_SLACK_BOT_TOKEN"] = "xoxb-test"
	env["FOOTNOTE_SLACK_APP_TOKEN"] = "xapp-1-test"
	env["FOOTNOTE_SLACK_API_URL"] = "http://" + down + "/api/"
	env["FOOTNOTE_DISCORD_TOKEN"] = "test-token"
	env["FOOTNOTE_DISCORD_APP_ID"] = "1300000000000000001"
	env["FOOTNOTE_DISCORD_API_URL"] = "http://" + down + "/api/"
	m := startServe(t, env)
	base := "http://" + m.Addr()

	var health struct {
		Status     string            `json:"status"`
		Components map[string]string `json:"components"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("/health %d %+v; want 200 while the API can answer", resp.StatusCode, health)
		}
		if strings.Contains(health.Components["slack"], "cannot connect") && strings.Contains(health.Components["discord"], "degraded") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health never named the platforms' problems: %+v", health.Components)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if health.Status != "degraded" || health.Components["store"] != "ok" {
		t.Errorf("/health %+v; want degraded overall with the store ok", health)
	}
	// The README's example: curl sends a form content type.
	resp, err := http.Post(base+"/query", "application/x-www-form-urlencoded", strings.NewReader(`{"question":"What does LoRA freeze?"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"name": "lora"`) {
		t.Errorf("/query while the platforms are down: %d %s", resp.StatusCode, b)
	}
}

// TestServeToken: FOOTNOTE_API_TOKEN protects the API (and /metrics on its address), and an
// address off loopback without a token is a configuration error.
func TestServeToken(t *testing.T) {
	env := bm25Env(t)
	env["FOOTNOTE_HTTP_ADDR"] = "0.0.0.0:0"
	if code, _, errOut := run(t, env, "serve"); code == 0 || !strings.Contains(errOut, "FOOTNOTE_API_TOKEN") {
		t.Errorf("serve on 0.0.0.0 without a token: exit %d, %q; want a configuration error naming FOOTNOTE_API_TOKEN", code, errOut)
	}
	if code, out, errOut := run(t, env, "index", docsFolder(t)); code != 0 {
		t.Fatalf("index: %d\n%s%s", code, out, errOut)
	}
	env["FOOTNOTE_HTTP_ADDR"] = "127.0.0.1:0"
	env["FOOTNOTE_API_TOKEN"] = "tok-123"
	m := startServe(t, env)
	base := "http://" + m.Addr()
	for _, path := range []string{"/documents", "/metrics"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d; want 401", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", base+"/documents", nil)
	req.Header.Set("Authorization", "Bearer tok-123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/documents with the token: %d", resp.StatusCode)
	}
}

// TestServeMetricsAddr: with FOOTNOTE_METRICS_ADDR, /metrics moves to its own listener and
// the API address no longer serves it.
func TestServeMetricsAddr(t *testing.T) {
	env := bm25Env(t)
	if code, out, errOut := run(t, env, "index", docsFolder(t)); code != 0 {
		t.Fatalf("index: %d\n%s%s", code, out, errOut)
	}
	env["FOOTNOTE_HTTP_ADDR"] = "127.0.0.1:0"
	env["FOOTNOTE_METRICS_ADDR"] = "127.0.0.1:0"
	m := startServe(t, env)
	resp, err := http.Get("http://" + m.metricLn.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "footnote_bot_busy_total") && !strings.Contains(string(b), "go_goroutines") {
		t.Errorf("metrics listener: %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + m.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the API address: %d; want 404 when FOOTNOTE_METRICS_ADDR is set", resp.StatusCode)
	}
}
