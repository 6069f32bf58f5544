#!/usr/bin/env bash
# compare.sh — the side-by-side runs of docs/benchmarks.md: `wavehouse bench ingest` against two
# builds of the gateway, alternated on one ClickHouse server, every run on a fresh data
# directory and one gateway at a time, with the gateway's peak RSS (VmRSS sampled every second).
#
#   tests/bench/compare.sh [-n PAIRS] [-c CONFIG_TEMPLATE] [-m MEMORY_LIMIT_BYTES] OLD NEW -- BENCH_ARGS...
#
# OLD and NEW are git revisions (a commit, a tag, HEAD) or paths of built binaries. A revision is
# built with `go build ./cmd/wavehouse` in a detached git worktree under $WH_BENCH_DIR (default
# ${TMPDIR:-/tmp}/wavehouse-bench); the load tool is the current checkout's build in every run,
# so both sides are measured the same way. Runs go OLD, NEW, OLD, NEW, … (PAIRS pairs, default 2).
#
# ClickHouse: $WH_TEST_CLICKHOUSE_ADDR (native) and $WH_TEST_CLICKHOUSE_HTTP_ADDR when set, else
# the shared server of tests/deps/start.sh (started if needed; tests/deps/stop.sh stops it).
# The database is wh. The gateway config is CONFIG_TEMPLATE (default gateway.yaml.tmpl next to
# this script: store clickhouse, embedded queue with sync: always, local cache, dedupe and
# coord), with @API@, @OPS@, @DATA@, @CH_ADDR@, @CH_HTTP@ and @MEMORY@ replaced per run.
#
# The script adds --url, --ops-url, --database, --clickhouse-http, --operator-key-file and
# --quiet to BENCH_ARGS, for example:
#
#   tests/bench/compare.sh eda5966 HEAD -- --create --table s1 --clients 64 --rows 1 --duration 15s --settle 60s
#
# Every run's report goes to stdout, followed by a summary, one line per phase and run. The exit
# status is 1 when any run failed its own checks.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/deps/lib.sh
. "$here/../deps/lib.sh"

pairs=2
template="$here/gateway.yaml.tmpl"
memory=0
while getopts "n:c:m:" opt; do
	case "$opt" in
	n) pairs="$OPTARG" ;;
	c) template="$OPTARG" ;;
	m) memory="$OPTARG" ;;
	*) die "usage: $0 [-n PAIRS] [-c CONFIG_TEMPLATE] [-m MEMORY_LIMIT_BYTES] OLD NEW -- BENCH_ARGS..." ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || die "usage: $0 [-n PAIRS] [-c CONFIG_TEMPLATE] [-m MEMORY_LIMIT_BYTES] OLD NEW -- BENCH_ARGS..."
old="$1" new="$2"
shift 2
[ "${1:-}" != "--" ] || shift
[[ "$pairs" =~ ^[1-9][0-9]*$ ]] || die "-n $pairs: want a positive number of pairs"
[[ "$memory" =~ ^[0-9]+$ ]] || die "-m $memory: want a number of bytes"
[ -r "$template" ] || die "config template $template not readable"

work="${WH_BENCH_DIR:-${TMPDIR:-/tmp}/wavehouse-bench}"
mkdir -p "$work"

# binary REV prints the path of the gateway built at REV (or REV itself when it is a file).
binary() {
	if [ -f "$1" ] && [ -x "$1" ]; then echo "$1"; return; fi
	local sha dir
	sha="$(git -C "$WH_ROOT" rev-parse --verify --quiet "$1^{commit}")" || die "$1: neither a binary nor a git revision"
	dir="$work/src-$sha"
	if [ ! -x "$work/wavehouse-$sha" ]; then
		[ -d "$dir" ] || git -C "$WH_ROOT" worktree add --detach --quiet "$dir" "$sha"
		say "building $1 ($sha)"
		(cd "$dir" && go build -o "$work/wavehouse-$sha" ./cmd/wavehouse)
		git -C "$WH_ROOT" worktree remove --force "$dir"
	fi
	echo "$work/wavehouse-$sha"
}

old_bin="$(binary "$old")"
new_bin="$(binary "$new")"
say "building the load tool from $WH_ROOT"
(cd "$WH_ROOT" && go build -o "$work/wavehouse-load" ./cmd/wavehouse)

if [ -z "${WH_TEST_CLICKHOUSE_ADDR:-}" ] || [ -z "${WH_TEST_CLICKHOUSE_HTTP_ADDR:-}" ]; then
	set -a
	# shellcheck disable=SC1090
	. "$("$here/../deps/start.sh")"
	set +a
fi
curl -sf "http://$WH_TEST_CLICKHOUSE_HTTP_ADDR/" --data-binary "CREATE DATABASE IF NOT EXISTS wh" >/dev/null ||
	die "ClickHouse at $WH_TEST_CLICKHOUSE_HTTP_ADDR refused CREATE DATABASE"

summary="$work/summary.$$"
: >"$summary"
failed=0

# The processes and directory of the run in progress, stopped and removed by stop_run when the
# script is interrupted (Ctrl-C, SIGTERM) or exits early, so no gateway is left running.
run_pids=()
run_dir=""
stop_run() {
	local pid
	for pid in "${run_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${run_pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	run_pids=()
	[ -z "$run_dir" ] || rm -rf "$run_dir"
	run_dir=""
}
trap 'stop_run; rm -f "$summary"' EXIT
trap 'say "interrupted: stopping the run in progress"; exit 130' INT TERM

# one_run LABEL BIN ARGS...: one gateway on a fresh data directory, one load, then stop.
one_run() {
	local label="$1" bin="$2"
	shift 2
	local dir api ops gw sampler report rss_kb=0 rc=0
	dir="$(mktemp -d "$work/run.XXXXXX")"
	run_dir="$dir"
	api="$(free_port)"
	ops="$(free_port "$api")"
	sed -e "s#@API@#127.0.0.1:$api#g" -e "s#@OPS@#127.0.0.1:$ops#g" -e "s#@DATA@#$dir/data#g" \
		-e "s#@CH_ADDR@#$WH_TEST_CLICKHOUSE_ADDR#g" -e "s#@CH_HTTP@#$WH_TEST_CLICKHOUSE_HTTP_ADDR#g" \
		-e "s#@MEMORY@#$memory#g" "$template" >"$dir/gateway.yaml"
	# The gateway refuses WH_ variables it does not know; WH_BENCH_DIR is this script's.
	env -u WH_BENCH_DIR "$bin" serve --config "$dir/gateway.yaml" >"$dir/gateway.log" 2>&1 &
	gw=$!
	run_pids=("$gw")
	local i
	for i in $(seq 1 120); do
		http_ok "http://127.0.0.1:$ops/readyz" && break
		pid_alive "$gw" || break
		sleep 0.5
	done
	if ! http_ok "http://127.0.0.1:$ops/readyz"; then
		say "$label: the gateway did not become ready; tail of its log:"
		tail -n 20 "$dir/gateway.log" >&2
		kill "$gw" 2>/dev/null || true
		wait "$gw" 2>/dev/null || true
		run_pids=() run_dir="" # the directory is kept, with the gateway's log
		return 1
	fi
	(while pid_alive "$gw"; do
		awk '/^VmRSS:/ {print $2}' "/proc/$gw/status" 2>/dev/null || true
		sleep 1
	done) >"$dir/rss" &
	sampler=$!
	run_pids+=("$sampler")
	report="$dir/report"
	"$work/wavehouse-load" bench ingest --url "http://127.0.0.1:$api" --ops-url "http://127.0.0.1:$ops" \
		--database wh --clickhouse-http "$WH_TEST_CLICKHOUSE_HTTP_ADDR" \
		--operator-key-file "$dir/data/operator.key" --quiet "$@" >"$report" 2>&1 &
	# In the background and waited for, so that an interrupt runs the trap at once (bash runs
	# a trap only after its foreground command ends).
	run_pids+=("$!")
	wait "$!" || rc=$?
	kill "$gw" 2>/dev/null || true
	wait "$gw" 2>/dev/null || true
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	rss_kb="$(sort -n "$dir/rss" | tail -n 1)"
	echo "== $label: $bin, exit status $rc, RSS peak $(( ${rss_kb:-0} / 1000 )) MB (VmRSS ${rss_kb:-0} kB)"
	cat "$report"
	# A phase row is the target ("gateway", "gateway keyed", "direct http", …), then numbers:
	# req, failed, ok req/s, rows/s, p50, p95, p99, max, ok, queryable, e2e rows/s, …; the
	# phase's line below the table ("<target> (table t): …") ends with the gateway's CPU.
	awk -v label="$label" -v rss="$(( ${rss_kb:-0} / 1000 ))" '
		/^ +[a-z][a-z -]*[a-z] +[0-9]+ +[0-9]+ +[0-9]/ {
			t = $1; f = 2
			while (f <= NF && $f !~ /^[0-9]+$/) { t = t " " $f; f++ }
			n++; name[n] = t
			row[n] = sprintf("%-8s %-16s ok req/s %9s  rows/s %10s  p99 %9s  e2e rows/s %10s", label, t, $(f+2), $(f+3), $(f+6), $(f+10))
		}
		/^[a-z][a-z -]*[a-z] \(table .*gateway CPU / {
			t = $0; sub(/ \(table .*/, "", t)
			c = $0; sub(/.*gateway CPU [0-9.]+ cores, /, "", c); sub(/ .*/, "", c)
			cpu[t] = c
		}
		END {
			for (i = 1; i <= n; i++) {
				printf "%s  RSS peak %5s MB  CPU µs/req %5s\n", row[i], rss, (name[i] in cpu) ? cpu[name[i]] : "?"
			}
		}' "$report" >>"$summary"
	rm -rf "$dir"
	run_pids=() run_dir=""
	return "$rc"
}

for p in $(seq 1 "$pairs"); do
	one_run "old-$p" "$old_bin" "$@" || failed=1
	one_run "new-$p" "$new_bin" "$@" || failed=1
done
echo "== summary (old $old, new $new)"
cat "$summary"
rm -f "$summary"
exit "$failed"
