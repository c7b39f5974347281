// Package deptest holds the test that enforces footnote's dependency rule for the whole
// module (STYLE.md): each third-party SDK is imported by exactly one package, and packages
// depend only in the direction cmd → adapters → bot → rag ← rag/<impl>, cmd → index → rag.
package deptest
