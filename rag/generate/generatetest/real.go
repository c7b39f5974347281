package generatetest

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/internal/corpustest"
)

// RealURLEnv names the OpenAI-compatible base URL (with /v1) of a real language-model
// server for integration tests; deploy/test.sh starts the local llama.cpp server
// (deploy/llm.sh) and sets it.
const RealURLEnv = "FOOTNOTE_LLM_TEST_URL"

// RealServer returns the base URL of the real server after checking that it is ready, or
// skips the test with the reason — and fails it under CI, where deploy/test.sh provides
// the server.
func RealServer(tb testing.TB) string {
	tb.Helper()
	url := strings.TrimRight(os.Getenv(RealURLEnv), "/")
	if url == "" {
		skipOrFail(tb, RealURLEnv+" is not set: start a server with `bash deploy/llm.sh start 18181` and export "+RealURLEnv+"=http://127.0.0.1:18181/v1")
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/v1")+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		skipOrFail(tb, "the language-model server at "+url+" does not answer: "+err.Error())
		return ""
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		skipOrFail(tb, "the language-model server at "+url+" is not ready: "+resp.Status)
	}
	return url
}

func skipOrFail(tb testing.TB, why string) {
	tb.Helper()
	if corpustest.CI() {
		tb.Fatal(why + " (CI provides it through deploy/test.sh)")
	}
	tb.Skip(why)
}
