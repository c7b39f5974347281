// Package answerbench checks footnote's answers on the real research-paper corpus: a few
// papers are indexed into an embedded store with the installed ONNX models, and the
// extractive answers to the evaluation questions are checked for grounding (the cited
// sources come from the expected papers), form (short, every sentence cited, no
// extraction noise) and content (the key concepts they mention). It has only tests; they
// skip without the corpus and models, and fail for their absence under CI.
package answerbench
