#!/usr/bin/env bash
# stop.sh [clickhouse|nats|redis|dynalite]... — stop the shared servers that
# start.sh recorded under the state directory ($WH_DEPS_DIR, default
# ${TMPDIR:-/tmp}/wavehouse-deps): SIGTERM, then SIGKILL after a timeout
# (30 s for ClickHouse, 10 s for the others). With no argument it stops all
# of them and removes env.sh. Safe to call when nothing runs.
set -euo pipefail
# shellcheck source=tests/deps/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE="$WH_DEPS_DIR"

# expected_name prints a word the process's command line must contain, so a
# recycled pid is never signalled.
expected_name() {
	case "$1" in
	clickhouse) echo clickhouse ;;
	nats) echo nats-server ;;
	redis) echo redis-server ;;
	dynalite) echo dynalite ;;
	esac
}

stop_one() {
	local name="$1" pidf="$STATE/$1.pid" pid timeout=10 waited=0
	[ "$name" = clickhouse ] && timeout=30
	[ -f "$pidf" ] || return 0
	pid="$(cat "$pidf")"
	if ! pid_alive "$pid"; then
		rm -f "$pidf"
		return 0
	fi
	if ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$(expected_name "$name")"; then
		say "$name: pid $pid is no longer $name; not signalling it"
		rm -f "$pidf"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	while pid_alive "$pid" && [ "$waited" -lt $((timeout * 10)) ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	if pid_alive "$pid"; then
		say "$name: still running after ${timeout}s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$pidf"
	say "$(printf '%-11s stopped' "$name:")"
}

main() {
	[ -d "$STATE" ] || exit 0
	local names=("$@")
	[ "${#names[@]}" -eq 0 ] && names=(clickhouse nats redis dynalite)
	local n
	for n in "${names[@]}"; do
		case "$n" in
		clickhouse | nats | redis | dynalite) ;;
		*) die "unknown service '$n' (want clickhouse|nats|redis|dynalite)" ;;
		esac
	done
	# Stop them concurrently: ClickHouse alone can take seconds.
	for n in "${names[@]}"; do
		stop_one "$n" &
	done
	wait
	if [ "$#" -eq 0 ]; then
		rm -f "$STATE/env.sh"
	fi
}

main "$@"
