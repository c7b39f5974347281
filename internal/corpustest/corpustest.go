// Package corpustest finds the shared research-paper corpus, the evaluation questions and the
// installed models for tests and benchmarks. When something is absent a test skips with the
// reason, except under CI (CI=true), where the corpus and models are provisioned and absence
// is a failure.
package corpustest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Root is the shared folder: $FOOTNOTE_SHARED, else ../shared beside the repository.
func Root() string {
	if d := os.Getenv("FOOTNOTE_SHARED"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	return filepath.Clean(filepath.Join(repo, "..", "shared"))
}

// Papers returns the corpus PDF folder or skips (fails under CI) when it is absent.
func Papers(tb testing.TB) string {
	tb.Helper()
	return need(tb, filepath.Join(Root(), "corpus", "papers"), "the research-paper corpus")
}

// Questions returns the evaluation questions file or skips (fails under CI).
func Questions(tb testing.TB) string {
	tb.Helper()
	return need(tb, filepath.Join(Root(), "eval", "questions.jsonl"), "the evaluation questions")
}

// ModelsDir is $FOOTNOTE_MODELS_DIR, else the default the CLI uses.
func ModelsDir() string {
	if d := os.Getenv("FOOTNOTE_MODELS_DIR"); d != "" {
		return d
	}
	if d, err := os.UserHomeDir(); err == nil {
		return filepath.Join(d, ".local", "share", "footnote", "models")
	}
	return "models"
}

// Models returns the models folder or skips (fails under CI) when it is absent.
func Models(tb testing.TB) string {
	tb.Helper()
	return need(tb, ModelsDir(), "the models (run `footnote models pull`)")
}

// CI reports whether the tests run in CI, where nothing may be skipped for lack of data.
func CI() bool { return os.Getenv("CI") == "true" }

func need(tb testing.TB, path, what string) string {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		if CI() {
			tb.Fatalf("%s is missing at %s under CI: %v", what, path, err)
		}
		tb.Skipf("skipping: %s not found at %s", what, path)
	}
	return path
}
