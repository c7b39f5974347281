// Command pybench is the Go half of rag/onnx/testdata/pybench/pybench.py, which compares
// footnote's embedder and cross-encoder with Python onnxruntime on the same model file, the
// same token id runs and the same thread count, interleaving the two in one run.
//
// It prints one JSON line describing the runs footnote will execute (so Python feeds ONNX
// Runtime exactly those), then for every "embed" or "score" line on stdin runs the workload
// once and prints the elapsed seconds and the outputs.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/footnote-dev/footnote/rag/onnx"
)

// cpuSeconds is the process's user+system CPU time: on a machine shared with other work it
// measures the cost of a run better than wall time does.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func main() {
	models := flag.String("models", "", "models folder (for the runtime)")
	dir := flag.String("dir", "", "model folder")
	kind := flag.String("kind", "embed", "embed or score")
	threads := flag.Int("threads", 2, "intra-op threads")
	texts := flag.String("texts", "", "JSON file: a list of texts (embed) or {query, passages} (score)")
	flag.Parse()
	if err := onnx.InitModels(*models); err != nil {
		log.Fatal(err)
	}
	raw, err := os.ReadFile(*texts)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	out := json.NewEncoder(os.Stdout)
	var run func() (any, error)
	switch *kind {
	case "embed":
		var docs []string
		if err := json.Unmarshal(raw, &docs); err != nil {
			log.Fatal(err)
		}
		e, err := onnx.NewEmbedder(onnx.EmbedderConfig{Dir: *dir, Threads: *threads, Sessions: 1, CacheSize: -1})
		if err != nil {
			log.Fatal(err)
		}
		defer e.Close()
		out.Encode(map[string]any{"ids": e.Batches(docs), "pad": 0})
		run = func() (any, error) { return e.EmbedDocuments(ctx, docs) }
	case "score":
		var in struct {
			Query    string   `json:"query"`
			Passages []string `json:"passages"`
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			log.Fatal(err)
		}
		r, err := onnx.NewReranker(onnx.RerankerConfig{Dir: *dir, Threads: *threads, Sessions: 1})
		if err != nil {
			log.Fatal(err)
		}
		defer r.Close()
		ids, types := r.Batches(in.Query, in.Passages)
		out.Encode(map[string]any{"ids": ids, "types": types, "pad": r.Pad()})
		run = func() (any, error) { return r.Score(ctx, in.Query, in.Passages) }
	default:
		log.Fatalf("kind %q", *kind)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		cpu0 := cpuSeconds()
		start := time.Now()
		res, err := run()
		if err != nil {
			log.Fatal(err)
		}
		wall, cpu := time.Since(start).Seconds(), cpuSeconds()-cpu0
		if err := out.Encode(map[string]any{"seconds": wall, "cpu": cpu, "out": res}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
	}
}
