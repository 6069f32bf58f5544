#!/usr/bin/env bash
# stop.sh [clickhouse|nats|redis|dynalite|zookeeper|ch_cluster]... — stop the
# shared servers that start.sh recorded under the state directory
# ($WH_DEPS_DIR, default ${TMPDIR:-/tmp}/wavehouse-deps): SIGTERM, then SIGKILL
# after a timeout (30 s for ClickHouse and the cluster, 10 s for the others).
# ZooKeeper is stopped after the cluster, which talks to it while it shuts
# down. With no argument it stops all of them and removes env.sh. Safe to
# call when nothing runs.
set -euo pipefail
# shellcheck source=tests/deps/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE="$WH_DEPS_DIR"

# expected_name prints a word the process's command line must contain, so a
# recycled pid is never signalled.
expected_name() {
	case "$1" in
	clickhouse | ch_cluster) echo clickhouse ;;
	zookeeper) echo zookeeper ;;
	nats) echo nats-server ;;
	redis) echo redis-server ;;
	dynalite) echo dynalite ;;
	esac
}

# stop_pid NAME PID TIMEOUT stops one recorded process of service NAME.
stop_pid() {
	local name="$1" pid="$2" timeout="$3" waited=0
	pid_alive "$pid" || return 0
	if ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$(expected_name "$name")"; then
		say "$name: pid $pid is no longer $name; not signalling it"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	while pid_alive "$pid" && [ "$waited" -lt $((timeout * 10)) ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	if pid_alive "$pid"; then
		say "$name: pid $pid still running after ${timeout}s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
}

# stop_one NAME stops every process STATE/NAME.pid lists (one per line), concurrently.
stop_one() {
	local name="$1" pidf="$STATE/$1.pid" pid timeout=10
	case "$name" in clickhouse | ch_cluster) timeout=30 ;; esac
	[ -f "$pidf" ] || return 0
	while read -r pid; do
		[ -n "$pid" ] && stop_pid "$name" "$pid" "$timeout" &
	done <"$pidf"
	wait
	rm -f "$pidf"
	say "$(printf '%-11s stopped' "$name:")"
}

main() {
	[ -d "$STATE" ] || exit 0
	local names=("$@")
	[ "${#names[@]}" -eq 0 ] && names=(clickhouse nats redis dynalite ch_cluster zookeeper)
	local n zk=0
	for n in "${names[@]}"; do
		case "$n" in
		zookeeper) zk=1 ;;
		clickhouse | nats | redis | dynalite | ch_cluster) ;;
		*) die "unknown service '$n' (want clickhouse|nats|redis|dynalite|zookeeper|ch_cluster)" ;;
		esac
	done
	# Stop them concurrently (ClickHouse alone can take seconds), ZooKeeper last.
	for n in "${names[@]}"; do
		[ "$n" = zookeeper ] || stop_one "$n" &
	done
	wait
	[ "$zk" -eq 0 ] || stop_one zookeeper
	if [ "$#" -eq 0 ]; then
		rm -f "$STATE/env.sh"
	fi
}

main "$@"
