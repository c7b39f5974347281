package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// run executes the CLI with env as its whole environment and returns its exit status and
// output.
func run(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{out: &out, errOut: &errOut, getenv: func(k string) string { return env[k] }}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(t.Context())
	a.close()
	code := 0
	if err != nil {
		code = 1
		if ee, ok := err.(exitError); ok {
			code = ee.code
		} else {
			fmt.Fprintf(&errOut, "footnote: %v\n", err)
		}
	}
	return code, out.String(), errOut.String()
}

// docsFolder writes a few Markdown and text documents with known content.
func docsFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"transformer.md": "# The Transformer\n\n## Encoder\n\nThe encoder is a stack of six identical layers. Each layer has two sub-layers: " +
			"a multi-head self-attention mechanism and a position-wise feed-forward network. A residual connection surrounds each sub-layer, " +
			"followed by layer normalization.\n\n## Decoder\n\nThe decoder inserts a third sub-layer that performs multi-head attention over the encoder output.\n",
		"bm25.txt": "BM25 is a ranking function used by search engines. It scores documents by term frequency saturation and document length normalisation.\n" +
			"The parameters k1 and b control saturation and length normalisation respectively.\n",
		"notes/lora.md": "# LoRA\n\nLow-rank adaptation freezes the pretrained weights and injects trainable rank decomposition matrices into each layer.\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// bm25Env runs on the embedded store without models, so these tests need no downloads.
func bm25Env(t *testing.T) map[string]string {
	return map[string]string{
		"FOOTNOTE_DATA_DIR":   t.TempDir(),
		"FOOTNOTE_MODELS_DIR": t.TempDir(),
		"FOOTNOTE_EMBEDDERS":  "none",
		"FOOTNOTE_RERANKER":   "none",
	}
}

func TestCLIIndexSearchAsk(t *testing.T) {
	env := bm25Env(t)
	dir := docsFolder(t)

	code, out, errOut := run(t, env, "index", dir, "--json")
	if code != 0 {
		t.Fatalf("index: exit %d\n%s%s", code, out, errOut)
	}
	var sum struct{ Files, Indexed, Chunks int }
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("index --json: %v\n%s", err, out)
	}
	if sum.Files != 3 || sum.Indexed != 3 || sum.Chunks < 3 {
		t.Errorf("index summary = %+v, want 3 files indexed", sum)
	}
	// A second run finds nothing to do.
	_, out, _ = run(t, env, "index", dir, "--json")
	if !strings.Contains(out, `"unchanged": 3`) {
		t.Errorf("re-index did not skip unchanged files:\n%s", out)
	}

	code, out, errOut = run(t, env, "search", "how many sub-layers does each encoder layer have", "--method", "bm25", "--json")
	if code != 0 {
		t.Fatalf("search: exit %d\n%s", code, errOut)
	}
	var res struct {
		Hits []struct {
			Chunk struct {
				Name    string   `json:"name"`
				Section []string `json:"section"`
			} `json:"chunk"`
		} `json:"hits"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Chunk.Name != "transformer" {
		t.Fatalf("top hit = %+v, want the transformer document", res.Hits)
	}

	code, out, errOut = run(t, env, "ask", "What are the two sub-layers of an encoder layer?", "--json")
	if code != 0 {
		t.Fatalf("ask: exit %d\n%s", code, errOut)
	}
	var ans struct {
		Answer  string `json:"answer"`
		Refused bool   `json:"refused"`
		Sources []struct {
			N     int `json:"n"`
			Chunk struct {
				Name string `json:"name"`
			} `json:"chunk"`
		} `json:"sources"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Refused || !strings.Contains(ans.Answer, "[1]") || len(ans.Sources) == 0 || ans.Sources[0].Chunk.Name != "transformer" {
		t.Errorf("ask = %+v, want a cited answer from the transformer document", ans)
	}

	// The question was logged for `footnote stats`.
	_, out, _ = run(t, env, "stats", "--json")
	if !strings.Contains(out, `"questions": 1`) {
		t.Errorf("stats did not count the question:\n%s", out)
	}

	// Without models, dense retrieval explains how to install them.
	code, _, errOut = run(t, env, "search", "encoder", "--method", "dense")
	if code == 0 || !strings.Contains(errOut, "footnote models pull") {
		t.Errorf("dense search without models: exit %d, stderr %q; want an error naming `footnote models pull`", code, errOut)
	}
}

func TestCLIIndexReportsBadFiles(t *testing.T) {
	env := bm25Env(t)
	dir := docsFolder(t)
	if err := os.WriteFile(filepath.Join(dir, "broken.pdf"), []byte("%PDF-1.4\nthis is not a pdf"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.pdf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, env, "index", dir)
	if code != 3 {
		t.Fatalf("index with bad files: exit %d, want 3\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"broken.pdf", "empty.pdf", "Indexed 3 of 5 files"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, env, "docs", "--json")
	if code != 0 || strings.Count(out, `"doc_id"`) != 3 {
		t.Errorf("docs after a partial index: exit %d, want the 3 good documents:\n%s", code, out)
	}
	code, _, errOut = run(t, env, "index", filepath.Join(dir, "missing"))
	if code != 1 || !strings.Contains(errOut, "missing") {
		t.Errorf("index of a missing path: exit %d, stderr %q", code, errOut)
	}
}

func TestConfigPrecedence(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(data, "custom.yaml")
	if err := os.WriteFile(file, []byte("corpus: fromfile\ntop_k: 7\nhttp_addr: 127.0.0.1:9999\nllm: extractive\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FOOTNOTE_DATA_DIR": data, "FOOTNOTE_CONFIG": file, "FOOTNOTE_TOP_K": "9", "FOOTNOTE_SLACK_BOT_TOKEN": "xoxb-secret-token", "FOOTNOTE_SLACK_APP_TOKEN": "xapp-1"}
	a := &app{out: io.Discard, errOut: io.Discard, getenv: func(k string) string { return env[k] }}
	root := a.rootCommand()
	var got Config
	root.AddCommand(&cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error { got = a.cfg; return nil }})
	root.SetArgs([]string{"probe", "--corpus", "fromflag"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got.Corpus != "fromflag" {
		t.Errorf("corpus = %q: a flag must beat the file", got.Corpus)
	}
	if got.TopK != 9 {
		t.Errorf("top_k = %d: the environment must beat the file", got.TopK)
	}
	if got.HTTPAddr != "127.0.0.1:9999" {
		t.Errorf("http_addr = %q: the file must beat the default", got.HTTPAddr)
	}
	if got.MaxGap != Defaults().MaxGap {
		t.Errorf("max_gap = %g: unset values keep their default", got.MaxGap)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", got.LogAttrs()...)
	if strings.Contains(logged.String(), "secret-token") || !strings.Contains(logged.String(), "[redacted]") {
		t.Errorf("the logged config leaks or loses the secret: %s", logged.String())
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"FOOTNOTE_LLM": "gpt"}, "FOOTNOTE_LLM"},
		{map[string]string{"FOOTNOTE_TOP_K": "many"}, "FOOTNOTE_TOP_K"},
		{map[string]string{"FOOTNOTE_TOP_K": "0"}, "FOOTNOTE_TOP_K"},
		{map[string]string{"FOOTNOTE_SLACK_BOT_TOKEN": "xoxb-1"}, "FOOTNOTE_SLACK_APP_TOKEN"},
		{map[string]string{"FOOTNOTE_SLACK_BOT_TOKEN": "xoxp-1", "FOOTNOTE_SLACK_APP_TOKEN": "xapp-1"}, "FOOTNOTE_SLACK_BOT_TOKEN"},
		{map[string]string{"FOOTNOTE_DISCORD_TOKEN": "t"}, "FOOTNOTE_DISCORD_APP_ID"},
		{map[string]string{"FOOTNOTE_LLM_TIMEOUT": "soon"}, "FOOTNOTE_LLM_TIMEOUT"},
		{map[string]string{"FOOTNOTE_CONFIG": "/nonexistent/footnote.yaml"}, "config file"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			env := bm25Env(t)
			for k, v := range tt.env {
				env[k] = v
			}
			code, _, errOut := run(t, env, "docs")
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want an error naming %s", code, errOut, tt.want)
			}
			if strings.Contains(errOut, "xoxb-1") {
				t.Errorf("error leaks a token: %s", errOut)
			}
		})
	}
}

// TestServe starts the whole service on port 0 over a small corpus and talks to it over
// HTTP: the JSON API, /metrics, and a graceful stop.
func TestServe(t *testing.T) {
	env := bm25Env(t)
	if code, out, errOut := run(t, env, "index", docsFolder(t)); code != 0 {
		t.Fatalf("index: %d\n%s%s", code, out, errOut)
	}
	env["FOOTNOTE_HTTP_ADDR"] = "127.0.0.1:0"
	a := &app{out: io.Discard, errOut: io.Discard, getenv: func(k string) string { return env[k] }}
	root := a.rootCommand()
	var m *Main
	root.AddCommand(&cobra.Command{Use: "probe", RunE: func(cmd *cobra.Command, _ []string) (err error) {
		m, err = a.newMain(cmd.Context())
		return err
	}})
	root.SetArgs([]string{"probe"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer a.close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	base := "http://" + m.Addr()

	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/health"); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Errorf("/health: %d %s", code, body)
	}
	if code, body := get("/documents"); code != 200 || !strings.Contains(body, `"count": 3`) {
		t.Errorf("/documents: %d %s", code, body)
	}
	resp, err := http.Post(base+"/query", "application/json", strings.NewReader(`{"question":"What does LoRA freeze?"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"name": "lora"`) {
		t.Errorf("/query: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Post(base+"/query", "application/json", strings.NewReader(`{"top_k":3}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"field": "question"`) {
		t.Errorf("/query without a question: %d %s", resp.StatusCode, b)
	}
	if code, body := get("/stats"); code != 200 || !strings.Contains(body, `"questions": 1`) {
		t.Errorf("/stats: %d %s", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of cancel")
	}
}

// TestEvalRefusesEmptyCorpus: eval on a corpus nothing was indexed into says so instead of
// reporting every question refused and every figure 0.
func TestEvalRefusesEmptyCorpus(t *testing.T) {
	env := bm25Env(t)
	q := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(q, []byte(`{"id":"a","question":"How many layers does the encoder have?","answerable":true,"expected_sources":["transformer"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, env, "eval", "--questions", q, "--methods", "bm25")
	if code == 0 || !strings.Contains(errOut, "holds no documents") || !strings.Contains(errOut, "footnote index") {
		t.Fatalf("eval on an empty corpus: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, env, "index", docsFolder(t)); code != 0 {
		t.Fatalf("index: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, env, "eval", "--questions", q, "--methods", "bm25"); code != 0 {
		t.Fatalf("eval after indexing: exit %d\n%s%s", code, out, errOut)
	}
}
