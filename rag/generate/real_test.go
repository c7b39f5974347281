package generate_test

// Tests against a real language-model server: the local llama.cpp server with
// SmolLM2-135M that deploy/test.sh starts (FOOTNOTE_LLM_TEST_URL). They keep answers short
// (CI has two cores) and check the protocol and footnote's handling, not the model's
// wisdom.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/generate"
	"github.com/footnote-dev/footnote/rag/generate/generatetest"
)

var shortRequest = rag.GenerateRequest{
	Messages: []rag.Message{
		{Role: "system", Content: "You answer in one short sentence."},
		{Role: "user", Content: "Sources: [1] The encoder of the Transformer is a stack of six identical layers [1].\n\nQuestion: How many layers does the encoder have?"},
	},
	MaxTokens: 24,
}

func realOpenAI(t *testing.T, cfg generate.OpenAIConfig) *generate.OpenAI {
	t.Helper()
	cfg.BaseURL = generatetest.RealServer(t)
	g, err := generate.NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// The answer streams through go-openai in several deltas; with no model configured the
// generator adopts the one the server lists, and it reports the server's limits.
func TestRealServerStreams(t *testing.T) {
	g := realOpenAI(t, generate.OpenAIConfig{FirstTokenTimeout: 2 * time.Minute})
	lim := g.Limits(t.Context())
	if lim.ContextTokens <= 0 {
		t.Errorf("Limits().ContextTokens = %d, want the server's context window", lim.ContextTokens)
	}
	var deltas []string
	start := time.Now()
	var first time.Duration
	err := g.Generate(t.Context(), shortRequest, func(d string) error {
		if first == 0 {
			first = time.Since(start)
		}
		deltas = append(deltas, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(deltas, "")
	t.Logf("%d deltas, first after %s, all in %s: %q", len(deltas), first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), text)
	if len(deltas) < 2 || strings.TrimSpace(text) == "" {
		t.Fatalf("got %d deltas %q, want a streamed answer in pieces", len(deltas), text)
	}
	if name := g.Name(); name == "openai:gpt-4o-mini" || !strings.HasPrefix(name, "openai:") {
		t.Errorf("Name() = %q, want the model the server lists", name)
	}
	// The server has now read a prompt, so its measured speed is known.
	if lim := g.Limits(t.Context()); lim.ContextTokens <= 0 {
		t.Errorf("Limits() after a generation = %+v", lim)
	}
}

// Cancelling mid-stream returns the caller's cancellation at once, and the server stops
// that generation rather than finishing an answer nobody reads.
func TestRealServerCancelMidStream(t *testing.T) {
	g := realOpenAI(t, generate.OpenAIConfig{FirstTokenTimeout: 2 * time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := shortRequest
	req.MaxTokens = 400
	req.Messages = []rag.Message{{Role: "user", Content: "Write a long story about a lighthouse keeper, with many chapters."}}
	slotsURL := strings.TrimSuffix(generatetest.RealServer(t), "/v1") + "/slots"
	n, task := 0, -1
	var slotsErr error
	err := g.Generate(ctx, req, func(string) error {
		n++
		if n == 3 {
			// Our request is the one the server processes now (other test packages may
			// queue behind it on the one slot); note its task before cancelling.
			task, slotsErr = processingTask(slotsURL)
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate after cancel = %v, want context.Canceled", err)
	}
	if n > 20 {
		t.Errorf("%d deltas arrived after the cancellation at the third", n-3)
	}
	if slotsErr != nil || task < 0 {
		t.Skipf("the server does not show its slots: %v", slotsErr)
	}
	// The task ends once the server notices the closed connection.
	deadline := time.Now().Add(20 * time.Second)
	for {
		cur, err := processingTask(slotsURL)
		if err != nil {
			t.Fatal(err)
		}
		if cur != task {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still generates task %d 20 s after the client cancelled", task)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// processingTask is the task the server's busy slot works on, -1 when all are idle.
func processingTask(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return -1, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return -1, errors.New(resp.Status)
	}
	var slots []struct {
		IsProcessing bool `json:"is_processing"`
		IDTask       int  `json:"id_task"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&slots); err != nil {
		return -1, err
	}
	for _, s := range slots {
		if s.IsProcessing {
			return s.IDTask, nil
		}
	}
	return -1, nil
}

// A prompt longer than the server's context window is refused by the server before any
// text: an *HTTPError with its status and message, which rag turns into the extractive
// fallback with a note.
func TestRealServerPromptOverContext(t *testing.T) {
	g := realOpenAI(t, generate.OpenAIConfig{})
	lim := g.Limits(t.Context())
	if lim.ContextTokens <= 0 {
		t.Fatalf("the server does not report its context window: %+v", lim)
	}
	req := shortRequest
	// About one token per word; twice the window is over it whatever the tokenizer.
	req.Messages = []rag.Message{{Role: "user", Content: strings.Repeat("attention ", 2*lim.ContextTokens)}}
	called := false
	err := g.Generate(t.Context(), req, func(string) error { called = true; return nil })
	var he *generate.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusBadRequest || !strings.Contains(he.Message, "context") {
		t.Fatalf("Generate = %v, want HTTP 400 naming the context size", err)
	}
	if called {
		t.Error("text was streamed for a refused prompt")
	}
}

// The first-token limit cancels a generation whose prompt the server is still reading;
// the error says which limit and wraps context.DeadlineExceeded (rag: "timeout").
func TestRealServerFirstTokenTimeout(t *testing.T) {
	g := realOpenAI(t, generate.OpenAIConfig{FirstTokenTimeout: time.Millisecond})
	err := g.Generate(t.Context(), shortRequest, func(string) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "first token") {
		t.Fatalf("Generate = %v, want the first-token timeout", err)
	}
	if t.Context().Err() != nil {
		t.Fatal("the test's own context ended")
	}
}
