package generate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/footnote-dev/footnote/rag"
	"github.com/footnote-dev/footnote/rag/generate"
	"github.com/footnote-dev/footnote/rag/generate/generatetest"
)

// benchPrompt asks for a longer answer so decoding dominates; the repeated prompt sits in
// the server's prompt cache after the first call, as footnote's system prompt does.
var benchPrompt = []rag.Message{
	{Role: "system", Content: "You are a helpful assistant."},
	{Role: "user", Content: "Explain in a paragraph how a Transformer encoder layer works."},
}

const benchTokens = 64

type streamStats struct {
	deltas       int
	first, total time.Duration
}

// directClient opens a connection per request: llama.cpp's server drops a kept-alive
// connection left idle while another one streams, and a POST is not retried. A loopback
// connect costs well under a millisecond, and the decode rate excludes it anyway.
var directClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// direct streams the same request straight from the server's SSE endpoint with net/http,
// footnote's floor: no SDK, no callbacks, no watchdog.
func direct(ctx context.Context, base string) (streamStats, error) {
	body, _ := json.Marshal(map[string]any{"messages": benchPrompt, "max_tokens": benchTokens, "temperature": generate.DefaultTemperature, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := directClient.Do(req)
	if err != nil {
		return streamStats{}, err
	}
	defer resp.Body.Close()
	var s streamStats
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && len(ev.Choices) > 0 && ev.Choices[0].Delta.Content != "" {
			if s.deltas == 0 {
				s.first = time.Since(start)
			}
			s.deltas++
		}
	}
	s.total = time.Since(start)
	return s, sc.Err()
}

func throughFootnote(ctx context.Context, g rag.Generator) (streamStats, error) {
	var s streamStats
	start := time.Now()
	err := g.Generate(ctx, rag.GenerateRequest{Messages: benchPrompt, MaxTokens: benchTokens}, func(string) error {
		if s.deltas == 0 {
			s.first = time.Since(start)
		}
		s.deltas++
		return nil
	})
	s.total = time.Since(start)
	return s, err
}

// BenchmarkRealServerOverhead compares decoding speed (tokens after the first over the
// time after the first) of the local server called directly and through footnote's
// OpenAI-compatible generator, interleaved in one run so both see the same load. The
// ratio footnote/direct is footnote's overhead (1.0 = none).
//
//	bash deploy/llm.sh start 18181
//	FOOTNOTE_LLM_TEST_URL=http://127.0.0.1:18181/v1 go test -run '^$' -bench RealServerOverhead -benchtime 6x ./rag/generate/
func BenchmarkRealServerOverhead(b *testing.B) {
	base := generatetest.RealServer(b)
	g, err := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: base})
	if err != nil {
		b.Fatal(err)
	}
	rate := func(s streamStats) float64 {
		return float64(s.deltas-1) / (s.total - s.first).Seconds()
	}
	var d, f streamStats
	var dRate, fRate float64
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither always follows the other's warm cache.
		order := []bool{i%2 == 0, i%2 != 0}
		for _, viaFootnote := range order {
			var s streamStats
			var err error
			if viaFootnote {
				s, err = throughFootnote(b.Context(), g)
			} else {
				s, err = direct(b.Context(), base)
			}
			if err != nil {
				b.Fatal(err)
			}
			if s.deltas < 2 {
				b.Fatalf("only %d tokens streamed", s.deltas)
			}
			if viaFootnote {
				f.deltas += s.deltas
				f.first += s.first
				fRate += rate(s)
			} else {
				d.deltas += s.deltas
				d.first += s.first
				dRate += rate(s)
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(dRate/n, "direct-tok/s")
	b.ReportMetric(fRate/n, "footnote-tok/s")
	b.ReportMetric((fRate/n)/(dRate/n), "footnote/direct")
	b.ReportMetric(float64(d.first.Milliseconds())/n, "direct-first-ms")
	b.ReportMetric(float64(f.first.Milliseconds())/n, "footnote-first-ms")
}

// BenchmarkClientCeiling streams 1,000 one-token deltas from the local protocol fake
// through each generator: how many tokens per second footnote's side can take at most,
// next to the tens per second a CPU model writes (BenchmarkRealServerOverhead).
func BenchmarkClientCeiling(b *testing.B) {
	deltas := make([]string, 1000)
	for i := range deltas {
		deltas[i] = " tok"
	}
	srv := generatetest.New(b, generatetest.Static(generatetest.Reply{Deltas: deltas}))
	ol, _ := generate.NewOllama(generate.OllamaConfig{Host: srv.URL, Model: "m"})
	oa, _ := generate.NewOpenAI(generate.OpenAIConfig{BaseURL: srv.OpenAIBaseURL(), Model: "m"})
	for _, g := range []rag.Generator{oa, ol} {
		b.Run(strings.Split(g.Name(), ":")[0], func(b *testing.B) {
			n := 0
			start := time.Now()
			for b.Loop() {
				if err := g.Generate(b.Context(), request, func(string) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "tok/s")
		})
	}
}
