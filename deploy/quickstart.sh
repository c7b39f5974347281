#!/usr/bin/env bash
# One command from a fresh clone to a cited answer, on the embedded store (no server):
# builds footnote, installs the ONNX Runtime library and the models (checksummed), indexes
# a folder and asks a sample question.
#
#   bash deploy/quickstart.sh [FOLDER] [QUESTION]
#
# FOLDER defaults to ../shared/corpus/papers when present, else this repository's own
# documentation, so a fresh clone always has something to ask about.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "quickstart: Go 1.26+ is required (https://go.dev/dl/)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "quickstart: a C compiler is required (cgo: MuPDF and ONNX Runtime); on Debian: apt-get install build-essential" >&2; exit 1; }

echo "== building footnote"
mkdir -p bin
go build -o bin/footnote ./cmd/footnote

echo "== installing models (ONNX Runtime library, embedding model)"
bin/footnote models pull

folder="${1:-}"
question="${2:-}"
paths=("$folder")
if [ -z "$folder" ]; then
  if [ -d ../shared/corpus/papers ]; then
    folder=../shared/corpus/papers
    paths=("$folder")
    question="${question:-What are the two sub-layers in each encoder layer of the Transformer?}"
  else
    # This repository's own documentation, every Markdown file git knows.
    folder="this repository's documentation"
    mapfile -t paths < <(git ls-files '*.md')
    question="${question:-How do I connect footnote to Slack?}"
  fi
fi
question="${question:-What is this collection of documents about?}"

echo "== indexing $folder"
set +e
bin/footnote index "${paths[@]}"
status=$?
set -e
# 3 means some files were skipped (reported above); the rest is indexed.
[ "$status" -eq 0 ] || [ "$status" -eq 3 ] || exit "$status"
bin/footnote docs

echo
echo "== footnote ask \"$question\""
bin/footnote ask "$question"
echo
echo "Try: bin/footnote search \"...\" · bin/footnote compare \"...\" · bin/footnote serve"
