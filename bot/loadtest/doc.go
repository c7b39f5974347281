// Package loadtest drives the bot core with the real question pipeline (BM25 retrieval,
// extractive answers) over the shared research-paper corpus, as many users at once. It holds
// only tests; they skip when the corpus is absent and fail under CI.
package loadtest
