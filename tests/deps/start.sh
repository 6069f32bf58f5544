#!/usr/bin/env bash
# start.sh — start one shared ClickHouse, NATS (JetStream), Redis and dynalite
# on free loopback ports under a state directory, wait until each is ready,
# and write STATE/env.sh exporting the variables the tests read:
#
#   WH_TEST_CLICKHOUSE_ADDR WH_TEST_CLICKHOUSE_HTTP_ADDR WH_TEST_NATS_URL
#   WH_TEST_REDIS_ADDR WH_TEST_DYNAMODB_ENDPOINT CHDB_LIB_PATH WH_NATS_SERVER_BIN
#
# STATE is $WH_DEPS_DIR, default ${TMPDIR:-/tmp}/wavehouse-deps. When the
# servers recorded there are all still running, nothing is started. Missing
# binaries are installed with install.sh first. Stop them with stop.sh.
# Prints the path of env.sh on stdout:  . "$(tests/deps/start.sh)"
set -euo pipefail
# shellcheck source=tests/deps/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

READY_TIMEOUT="${WH_DEPS_READY_TIMEOUT:-60}"
STATE="$WH_DEPS_DIR"
SERVICES=(clickhouse nats redis dynalite)

# alive NAME succeeds when STATE/NAME.pid names a live process.
alive() {
	local pidf="$STATE/$1.pid"
	[ -f "$pidf" ] && pid_alive "$(cat "$pidf")"
}

# launch NAME LOG CMD... starts CMD detached (its own session, stdin closed,
# output to LOG) and records its pid.
launch() {
	local name="$1" log="$2"
	shift 2
	# Close the lock descriptor (9) so the server does not hold the lock.
	setsid "$@" >"$log" 2>&1 </dev/null 9>&- &
	echo "$!" >"$STATE/$name.pid"
}

# wait_ready NAME LOG PROBE... polls PROBE until it succeeds, the process
# dies or READY_TIMEOUT passes; on failure prints the log tail.
wait_ready() {
	local name="$1" log="$2"
	shift 2
	local deadline=$(( $(date +%s) + READY_TIMEOUT ))
	while ! "$@"; do
		if ! alive "$name"; then
			say "$name exited before it was ready; tail of $log:"
			tail -n 30 "$log" >&2 || true
			return 2
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			say "$name not ready after ${READY_TIMEOUT}s; tail of $log:"
			tail -n 30 "$log" >&2 || true
			return 1
		fi
		sleep 0.1
	done
}

ch_ready() { http_ok "http://127.0.0.1:$CH_HTTP/ping" "Ok." && port_in_use "$CH_TCP"; }
nats_ready() { http_ok "http://127.0.0.1:$NATS_MON/healthz?js-enabled-only=true"; }
redis_ready() {
	local reply
	reply="$({ exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT" && printf 'PING\r\n' >&3 && timeout 2 head -c 7 <&3; } 2>/dev/null)" || return 1
	[ "${reply%$'\r'}" = "+PONG" ]
}
dyn_ready() { http_ok "http://127.0.0.1:$DYN_PORT/"; }

start_clickhouse() {
	local bin dir="$STATE/clickhouse"
	bin="$(find_clickhouse_server)"
	CH_HTTP="$(free_port)"
	CH_TCP="$(free_port "$CH_HTTP")"
	rm -rf "$dir" # shared servers start empty; their data is throwaway
	mkdir -p "$dir/data" "$dir/log"
	cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>$dir/log/clickhouse-server.log</log>
        <errorlog>$dir/log/clickhouse-server.err.log</errorlog>
        <size>100M</size>
        <count>2</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>$CH_HTTP</http_port>
    <tcp_port>$CH_TCP</tcp_port>
    <max_connections>4096</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>200</max_concurrent_queries>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mark_cache_size>268435456</mark_cache_size>
    <path>$dir/data/</path>
    <tmp_path>$dir/data/tmp/</tmp_path>
    <user_files_path>$dir/data/user_files/</user_files_path>
    <format_schema_path>$dir/data/format_schemas/</format_schema_path>
    <users_config>/etc/clickhouse-server/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
</yandex>
XML
	launch clickhouse "$dir/stdout.log" "$bin" --config-file="$dir/config.xml"
	wait_ready clickhouse "$dir/stdout.log" ch_ready
}

start_nats() {
	local dir="$STATE/nats"
	NATS_PORT="$(free_port)"
	NATS_MON="$(free_port "$NATS_PORT")"
	rm -rf "$dir"
	mkdir -p "$dir"
	# Every test over the shared server creates streams with their own max_bytes (1 GiB per
	# partition by default) and leaves them; JetStream reserves those bytes against its file
	# store limit (75% of the free disk unless set), so a long suite ran out of reservations
	# ("insufficient storage resources") while using a few MB. The limit is raised well above
	# the sum of reservations; what the tests actually write stays small.
	cat >"$dir/nats.conf" <<CONF
jetstream {
  store_dir: "$dir/js"
  max_file_store: 10T
}
CONF
	launch nats "$dir/nats-server.log" "$NATS_BIN" -c "$dir/nats.conf" -a 127.0.0.1 \
		-p "$NATS_PORT" -m "$NATS_MON" -n wavehouse-deps
	wait_ready nats "$dir/nats-server.log" nats_ready
}

start_redis() {
	local bin dir="$STATE/redis"
	bin="$(find_redis_server)"
	REDIS_PORT="$(free_port)"
	rm -rf "$dir"
	mkdir -p "$dir"
	launch redis "$dir/redis-server.log" "$bin" --port "$REDIS_PORT" --bind 127.0.0.1 \
		--save '' --appendonly no --dir "$dir"
	wait_ready redis "$dir/redis-server.log" redis_ready
}

start_dynalite() {
	local bin dir="$STATE/dynalite"
	bin="$(find_dynalite)"
	DYN_PORT="$(free_port)"
	rm -rf "$dir"
	mkdir -p "$dir"
	launch dynalite "$dir/dynalite.log" "$bin" --host 127.0.0.1 --port "$DYN_PORT" \
		--createTableMs 0 --deleteTableMs 0 --updateTableMs 0
	wait_ready dynalite "$dir/dynalite.log" dyn_ready
}

# start_with_retry NAME tries a start three times: a port chosen free can be
# taken by another process before the server binds it.
start_with_retry() {
	local name="$1" attempt rc
	for attempt in 1 2 3; do
		rc=0
		"start_$name" || rc=$?
		[ "$rc" -eq 0 ] && return 0
		"$(dirname "${BASH_SOURCE[0]}")/stop.sh" "$name" >/dev/null 2>&1 || true
		[ "$rc" -eq 2 ] || break # only an early exit (likely a bind race) is retried
		say "$name: start attempt $attempt failed; retrying on new ports"
	done
	return 1
}

main() {
	command -v curl >/dev/null 2>&1 || die "curl not found: run tests/deps/install.sh"
	mkdir -p "$STATE"
	exec 9>"$STATE/.lock"
	flock 9
	if [ -f "$STATE/env.sh" ]; then
		local all=1 s
		for s in "${SERVICES[@]}"; do alive "$s" || all=0; done
		if [ "$all" -eq 1 ]; then
			say "dependencies already running (state in $STATE)"
			echo "$STATE/env.sh"
			return 0
		fi
		say "some recorded dependencies are gone: restarting all"
		flock -u 9
		"$(dirname "${BASH_SOURCE[0]}")/stop.sh" >&2
		flock 9
	fi

	local missing=()
	find_clickhouse_server >/dev/null || missing+=(clickhouse)
	find_redis_server >/dev/null || missing+=(redis)
	find_nats_server >/dev/null || missing+=(nats)
	find_dynalite >/dev/null || missing+=(dynalite)
	if [ "${#missing[@]}" -gt 0 ]; then
		"$(dirname "${BASH_SOURCE[0]}")/install.sh" "${missing[@]}" >&2
	fi
	NATS_BIN="$(find_nats_server)" || die "nats-server not found after install"

	local s t0
	for s in "${SERVICES[@]}"; do
		t0="$(date +%s.%N)"
		if ! start_with_retry "$s"; then
			"$(dirname "${BASH_SOURCE[0]}")/stop.sh" >&2 || true
			die "could not start $s"
		fi
		say "$(printf '%-11s ready (%ss)' "$s:" "$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')")"
	done

	local chdb="${CHDB_LIB_PATH:-$CHDB_LIB_DEFAULT}"
	[ -s "$chdb" ] || say "warning: $chdb is missing; chDB tests will skip (run tests/deps/install.sh chdb)"
	cat >"$STATE/env.sh.tmp" <<ENV
# Written by tests/deps/start.sh; source it to run tests against the shared servers.
export WH_TEST_CLICKHOUSE_ADDR=127.0.0.1:$CH_TCP
export WH_TEST_CLICKHOUSE_HTTP_ADDR=127.0.0.1:$CH_HTTP
export WH_TEST_NATS_URL=nats://127.0.0.1:$NATS_PORT
export WH_TEST_REDIS_ADDR=127.0.0.1:$REDIS_PORT
export WH_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:$DYN_PORT
export CHDB_LIB_PATH=$chdb
export WH_NATS_SERVER_BIN=$NATS_BIN
ENV
	mv "$STATE/env.sh.tmp" "$STATE/env.sh"
	echo "$STATE/env.sh"
}

main "$@"
