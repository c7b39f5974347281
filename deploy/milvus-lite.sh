#!/usr/bin/env bash
# Milvus for development and CI, in a private Python venv, served on 127.0.0.1 only.
#
#   deploy/milvus-lite.sh install          install the selected engine, pinned (idempotent)
#   deploy/milvus-lite.sh start DIR PORT   serve data directory DIR on 127.0.0.1:PORT in the background
#                                          (installs first when needed; waits until the port answers)
#   deploy/milvus-lite.sh stop DIR         stop the server started for DIR (no-op when none runs)
#   deploy/milvus-lite.sh status DIR       exit 0 when the server started for DIR is running
#
# Engines (FOOTNOTE_MILVUS_ENGINE):
#   cpp     (default) the real Milvus engine: Milvus' own C++ `milvus` binary (segcore,
#           knowhere) as shipped in the Milvus Lite 2.5.1 wheel, sha256-pinned (Linux x86_64
#           and aarch64). The data lives in DIR/milvus.db.
#   python  Milvus Lite 3.x, a pure-Python re-implementation of the gRPC API on faiss.
#
# Environment:
#   FOOTNOTE_TOOLS_DIR         where the venvs live (default ~/.cache/footnote)
#   MILVUS_LITE_PYTHON         the Python (>= 3.10) that creates the venv (default python3)
#   MILVUS_LITE_START_TIMEOUT  seconds start waits for the port (default 60)
#
# The server's pid file and log sit next to the data directory: DIR.pid and DIR.log, so a
# crash leaves its reason readable and DIR holds only Milvus' own files. Stop works for
# either engine (by pid).
set -euo pipefail

# Pinned versions. milvus-lite 3.x is the pure-Python engine with `milvus-lite server`; it
# imports pymilvus (its gRPC stubs) without declaring it, so pymilvus is pinned here too.
MILVUS_LITE_VERSION=3.2.2
PYMILVUS_VERSION=2.6.17
CONSTRAINTS="
milvus-lite==${MILVUS_LITE_VERSION}
pymilvus==${PYMILVUS_VERSION}
faiss-cpu==1.15.1
pyarrow==26.0.1
numpy==2.4.6
grpcio==1.85.1
protobuf==7.36.2
"

# The C++ engine: only the wheel is needed (its one dependency, tqdm, is for the Python
# client's progress bars, which this script does not use), installed with --no-deps and
# --require-hashes. Hashes from `pip download --no-deps milvus-lite==2.5.1` + `pip hash`.
ENGINE_VERSION=2.5.1
ENGINE_SHA256_x86_64=25ce13f4b8d46876dd2b7ac8563d7d8306da7ff3999bb0d14b116b30f71d706c
ENGINE_SHA256_aarch64=a13277e9bacc6933dea172e42231f7e6135bd3bdb073dd2688ee180418abd8d9

tools="${FOOTNOTE_TOOLS_DIR:-$HOME/.cache/footnote}"
engine="${FOOTNOTE_MILVUS_ENGINE:-cpp}"
case "$engine" in
cpp) venv="$tools/milvus-engine-venv"; want_stamp="milvus-lite==${ENGINE_VERSION} (C++ engine)" ;;
python) venv="$tools/milvus-venv"; want_stamp="milvus-lite==${MILVUS_LITE_VERSION} pymilvus==${PYMILVUS_VERSION}" ;;
*) echo "milvus-lite.sh: FOOTNOTE_MILVUS_ENGINE=$engine: want cpp or python" >&2; exit 2 ;;
esac
stamp="$venv/.footnote-installed"

die() { echo "milvus-lite.sh: $*" >&2; exit 1; }

# engine_lib prints the directory holding the C++ `milvus` binary and its libraries.
engine_lib() {
	"$venv/bin/python" -c 'import milvus_lite.server as s; print(s.BIN_PATH)'
}

installed() {
	[[ -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]] || return 1
	if [[ $engine == cpp ]]; then
		local lib
		lib="$(engine_lib 2>/dev/null)" && [[ -x "$lib/milvus" ]]
		return
	fi
	[[ -x "$venv/bin/milvus-lite" ]] && "$venv/bin/python" -c 'import milvus_lite, pymilvus.grpc_gen' 2>/dev/null
}

make_venv() {
	local py="${MILVUS_LITE_PYTHON:-python3}"
	command -v "$py" >/dev/null || die "$py not found: install Python >= 3.10 (apt-get install python3 python3-venv)"
	"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
		die "$py is $("$py" --version 2>&1); Milvus Lite needs Python >= 3.10 (set MILVUS_LITE_PYTHON)"
	rm -rf "$venv"
	mkdir -p "$tools"
	"$py" -m venv "$venv" || die "cannot create a venv with $py (apt-get install python3-venv)"
}

install_engine() {
	if installed; then
		echo "Milvus engine (milvus-lite ${ENGINE_VERSION}) already installed in $venv"
		return 0
	fi
	[[ "$(uname -s)" == Linux ]] || die "the pinned C++ engine wheel is for Linux; on $(uname -s) use FOOTNOTE_MILVUS_ENGINE=python or a Milvus server"
	local arch sha
	arch="$(uname -m)"
	case "$arch" in
	x86_64) sha=$ENGINE_SHA256_x86_64 ;;
	aarch64 | arm64) sha=$ENGINE_SHA256_aarch64 ;;
	*) die "no pinned Milvus engine wheel for $arch; use FOOTNOTE_MILVUS_ENGINE=python" ;;
	esac
	local start=$SECONDS
	make_venv
	local req ok=0
	req="$(mktemp)"
	echo "milvus-lite==${ENGINE_VERSION} --hash=sha256:${sha}" >"$req"
	for attempt in 1 2; do
		if "$venv/bin/pip" install --disable-pip-version-check --quiet --no-deps --only-binary=:all: \
			--require-hashes -r "$req"; then
			ok=1
			break
		fi
		echo "milvus-lite.sh: pip install failed (attempt $attempt)" >&2
		sleep 3
	done
	rm -f "$req"
	[[ $ok == 1 ]] || die "pip install of milvus-lite ${ENGINE_VERSION} (sha256 ${sha}) failed"
	local lib
	lib="$(engine_lib)" && [[ -x "$lib/milvus" ]] || die "milvus-lite ${ENGINE_VERSION} is installed but carries no milvus binary"
	echo "$want_stamp" >"$stamp"
	echo "installed the Milvus engine (milvus-lite ${ENGINE_VERSION}, $arch) in $venv in $((SECONDS - start))s"
}

cmd_install() {
	if [[ $engine == cpp ]]; then
		install_engine
		return
	fi
	if installed; then
		echo "milvus-lite ${MILVUS_LITE_VERSION} already installed in $venv"
		return 0
	fi
	local start=$SECONDS
	make_venv
	local cons
	cons="$(mktemp)"
	printf '%s\n' "$CONSTRAINTS" >"$cons"
	# Retried once: a registry hiccup on a fresh CI machine should not fail the whole run.
	local ok=0
	for attempt in 1 2; do
		if "$venv/bin/pip" install --disable-pip-version-check --quiet \
			-c "$cons" "milvus-lite==${MILVUS_LITE_VERSION}" "pymilvus==${PYMILVUS_VERSION}"; then
			ok=1
			break
		fi
		echo "milvus-lite.sh: pip install failed (attempt $attempt)" >&2
		sleep 3
	done
	rm -f "$cons"
	[[ $ok == 1 ]] || die "pip install of milvus-lite ${MILVUS_LITE_VERSION} failed"
	"$venv/bin/milvus-lite" server --help >/dev/null || die "milvus-lite is installed but does not run"
	echo "$want_stamp" >"$stamp"
	echo "installed milvus-lite ${MILVUS_LITE_VERSION} (pymilvus ${PYMILVUS_VERSION}) in $venv in $((SECONDS - start))s"
}

# answers HOST PORT: true when something accepts TCP connections there.
answers() {
	(exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

pidfile() { echo "${1%/}.pid"; }
logfile() { echo "${1%/}.log"; }

running_pid() {
	local pf
	pf="$(pidfile "$1")"
	[[ -f "$pf" ]] || return 1
	local pid
	pid="$(cat "$pf")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
	# A killed server not yet reaped by its (re)parent is a zombie: not running.
	[[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != "Z" ]] || return 1
	echo "$pid"
}

cmd_start() {
	local dir="${1:-}" port="${2:-}"
	[[ -n "$dir" && -n "$port" ]] || die "usage: $0 start DIR PORT"
	[[ "$port" =~ ^[0-9]+$ ]] || die "port must be a number, got $port"
	installed || cmd_install
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	local pid
	if pid="$(running_pid "$dir")"; then
		if answers 127.0.0.1 "$port"; then
			echo "milvus-lite already running for $dir (pid $pid) on 127.0.0.1:$port"
			return 0
		fi
		die "milvus-lite already runs for $dir (pid $pid) but 127.0.0.1:$port does not answer; stop it first"
	fi
	if answers 127.0.0.1 "$port"; then
		die "127.0.0.1:$port is already in use by another process"
	fi
	local log
	log="$(logfile "$dir")"
	# setsid: the server outlives this script and ignores the caller's terminal signals; it
	# binds 127.0.0.1 only (neither engine has auth).
	if [[ $engine == cpp ]]; then
		# What milvus_lite.server.Server(db, address=...).start() runs, without the Python
		# parent: the pid is the engine's own, so stop signals the engine itself.
		local lib
		lib="$(engine_lib)"
		(cd "$dir" && LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec setsid "$lib/milvus" \
			"$dir/milvus.db" "127.0.0.1:$port" "${MILVUS_LOG_LEVEL:-ERROR}") >"$log" 2>&1 </dev/null &
	else
		setsid "$venv/bin/milvus-lite" server --data-dir "$dir" --port "$port" --host 127.0.0.1 \
			>"$log" 2>&1 </dev/null &
	fi
	pid=$!
	echo "$pid" >"$(pidfile "$dir")"
	local limit="${MILVUS_LITE_START_TIMEOUT:-60}" waited=0
	while ! answers 127.0.0.1 "$port"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$(pidfile "$dir")"
			echo "milvus-lite exited during start-up; last log lines:" >&2
			tail -n 30 "$log" >&2 || true
			exit 1
		fi
		if ((waited >= limit * 10)); then
			kill "$pid" 2>/dev/null || true
			rm -f "$(pidfile "$dir")"
			tail -n 30 "$log" >&2 || true
			die "milvus-lite did not answer on 127.0.0.1:$port within ${limit}s"
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	echo "milvus-lite ($engine engine) running for $dir (pid $pid) on 127.0.0.1:$port after $((waited / 10)).$((waited % 10))s; log $log"
}

cmd_stop() {
	local dir="${1:-}"
	[[ -n "$dir" ]] || die "usage: $0 stop DIR"
	dir="${dir%/}"
	[[ -d "$dir" ]] && dir="$(cd "$dir" && pwd)"
	local pid
	if ! pid="$(running_pid "$dir")"; then
		rm -f "$(pidfile "$dir")"
		echo "milvus-lite not running for $dir"
		return 0
	fi
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "milvus-lite (pid $pid) ignored SIGTERM for 10s; killing it" >&2
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$(pidfile "$dir")"
	echo "milvus-lite stopped for $dir (pid $pid)"
}

cmd_status() {
	local dir="${1:-}"
	[[ -n "$dir" ]] || die "usage: $0 status DIR"
	[[ -d "$dir" ]] && dir="$(cd "$dir" && pwd)"
	local pid
	pid="$(running_pid "$dir")" || { echo "milvus-lite not running for $dir"; return 1; }
	echo "milvus-lite ($engine engine) running for $dir (pid $pid)"
}

case "${1:-}" in
install) cmd_install ;;
start) shift; cmd_start "$@" ;;
stop) shift; cmd_stop "$@" ;;
status) shift; cmd_status "$@" ;;
*)
	sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
