// Package retrievalbench measures footnote's whole retrieval path on the real research-paper
// corpus with the installed local models: `go test -bench Retrieve` benchmarks each method
// stage by stage, and TestQuality runs the evaluation questions through rag/eval and
// prints the report. It holds only tests. It lives outside rag because it builds an index
// with the index packages, which rag must never import.
//
// Without the corpus or the models the tests skip (they fail under CI=true; see
// internal/corpustest). The index is built once per test process in a temporary folder.
package retrievalbench
