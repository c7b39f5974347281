#!/usr/bin/env bash
# Runs every test: unit tests, the real-corpus tests (../shared when present) with the real
# models, and the Milvus integration tests against the real Milvus engine this script starts
# on 127.0.0.1 and stops again. Idempotent set-up: models and Milvus are installed only
# when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

export FOOTNOTE_MODELS_DIR="${FOOTNOTE_MODELS_DIR:-$HOME/.local/share/footnote/models}"
tools="${FOOTNOTE_TOOLS_DIR:-$HOME/.cache/footnote}"

echo "== models ($FOOTNOTE_MODELS_DIR)"
go run ./cmd/footnote models pull --models-dir "$FOOTNOTE_MODELS_DIR"

# --- Milvus (owner: index/milvus) ---------------------------------------------------------
# The real C++ engine (Milvus Lite 2.5.1's `milvus` binary) serves the Milvus tests; the
# reconnect test starts its own through the same script. FOOTNOTE_MILVUS_TEST_LITE3=1 also
# runs the conformance suite against the pure-Python Milvus Lite 3.x.
echo "== Milvus (C++ engine)"
bash deploy/milvus-lite.sh install
mdir="$(mktemp -d)"
port="${FOOTNOTE_MILVUS_TEST_PORT:-19531}"
mdirs=("$mdir")
stop_milvus() {
	for d in "${mdirs[@]}"; do
		bash deploy/milvus-lite.sh stop "$d" || true
		if [[ -s "$d.log" ]]; then echo "last lines of the Milvus log $d.log:"; tail -n 20 "$d.log"; fi
		rm -rf "$d" "$d.log" "$d.pid"
	done
}
trap stop_milvus EXIT
bash deploy/milvus-lite.sh start "$mdir" "$port"
export FOOTNOTE_MILVUS_TEST_ADDR="127.0.0.1:$port"
if [[ "${FOOTNOTE_MILVUS_TEST_LITE3:-}" == 1 ]]; then
	echo "== Milvus Lite 3.x (Python)"
	ldir="$(mktemp -d)"
	mdirs+=("$ldir")
	FOOTNOTE_MILVUS_ENGINE=python bash deploy/milvus-lite.sh start "$ldir" "$((port + 1))"
	export FOOTNOTE_MILVUS_TEST_ADDR_LITE3="127.0.0.1:$((port + 1))"
fi
# --- end Milvus ---------------------------------------------------------------------------

# ---- LLM (deploy/llm.sh): llama.cpp server with SmolLM2-135M for the generation tests ----
echo "== local language model"
llm_port="${FOOTNOTE_LLM_TEST_PORT:-18181}"
bash deploy/llm.sh start "$llm_port"
llm_stop() { bash deploy/llm.sh stop "$llm_port" || true; }
# Every server started here is stopped on exit, whatever failed.
trap 'llm_stop; stop_milvus' EXIT
export FOOTNOTE_LLM_TEST_URL="http://127.0.0.1:$llm_port/v1"
# ---- end LLM ----

echo "== go vet"
go vet ./...
echo "== go test"
# The floors test (internal/retrievalbench) answers every reporting set under the race
# detector: 1,526 s on an idle two-core machine with 81 sets, 2,631 s with 85 sets while
# other work shared the machine. Each round adds four sets, so 45 minutes left too little
# margin; the whole run still fits CI's 90.
go test -race -count=1 -timeout 70m ./... "$@"
