#!/usr/bin/env bash
# Runs every test: unit tests, the real-corpus tests (../shared when present) with the real
# models, and the Milvus integration tests against a Milvus Lite server this script starts
# on 127.0.0.1 and stops again. Idempotent set-up: models and Milvus Lite are installed
# only when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

export FOOTNOTE_MODELS_DIR="${FOOTNOTE_MODELS_DIR:-$HOME/.local/share/footnote/models}"
tools="${FOOTNOTE_TOOLS_DIR:-$HOME/.cache/footnote}"

echo "== models ($FOOTNOTE_MODELS_DIR)"
go run ./cmd/footnote models pull --models-dir "$FOOTNOTE_MODELS_DIR"

echo "== Milvus Lite"
bash deploy/milvus-lite.sh install
mdir="$(mktemp -d)"
port="${FOOTNOTE_MILVUS_TEST_PORT:-19531}"
bash deploy/milvus-lite.sh start "$mdir" "$port"
trap 'bash deploy/milvus-lite.sh stop "$mdir" || true; rm -rf "$mdir"' EXIT
export FOOTNOTE_MILVUS_TEST_ADDR="127.0.0.1:$port"

# ---- LLM (deploy/llm.sh): llama.cpp server with SmolLM2-135M for the generation tests ----
echo "== local language model"
llm_port="${FOOTNOTE_LLM_TEST_PORT:-18181}"
bash deploy/llm.sh start "$llm_port"
llm_stop() { bash deploy/llm.sh stop "$llm_port" || true; }
# Chained in front of any EXIT trap set above, so every server started here is stopped.
prev_trap="$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")"
trap "llm_stop; ${prev_trap}" EXIT
export FOOTNOTE_LLM_TEST_URL="http://127.0.0.1:$llm_port/v1"
# ---- end LLM ----

echo "== go vet"
go vet ./...
echo "== go test"
go test -race -count=1 -timeout 45m ./... "$@"
