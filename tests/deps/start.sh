#!/usr/bin/env bash
# start.sh — start one shared ClickHouse, NATS (JetStream), Redis, dynalite,
# ZooKeeper and a ClickHouse cluster (four servers: 2 shards × 2 replicas) on
# free loopback ports under a state directory, wait until each is ready, and
# write STATE/env.sh exporting the variables the tests read:
#
#   WH_TEST_CLICKHOUSE_ADDR WH_TEST_CLICKHOUSE_HTTP_ADDR WH_TEST_NATS_URL
#   WH_TEST_REDIS_ADDR WH_TEST_DYNAMODB_ENDPOINT CHDB_LIB_PATH WH_NATS_SERVER_BIN
#   WH_TEST_ZOOKEEPER_ADDR WH_TEST_CH_CLUSTER_NAME WH_TEST_CH_CLUSTER_ADDRS
#   WH_TEST_CH_CLUSTER_HTTP_ADDRS WH_TEST_NODE_MODULES
#
# The cluster's address lists are native (resp. HTTP) host:port of each node,
# shard by shard: s1r1,s1r2,s2r1,s2r2. Every node has remote_servers
# wh_cluster (internal_replication) and the macros shard (1, 2) and replica
# (s1r1, …), so ReplicatedMergeTree and ON CLUSTER DDL work.
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
SERVICES=(clickhouse nats redis dynalite zookeeper ch_cluster)
CLUSTER_NAME=wh_cluster

# alive NAME succeeds when STATE/NAME.pid names live processes (one per line;
# the cluster has four).
alive() {
	local pidf="$STATE/$1.pid" pid
	[ -s "$pidf" ] || return 1
	while read -r pid; do
		pid_alive "$pid" || return 1
	done <"$pidf"
}

# launch NAME LOG CMD... starts CMD detached (its own session, stdin closed,
# output to LOG) and adds its pid to STATE/NAME.pid (the start_ function
# empties it first).
launch() {
	local name="$1" log="$2"
	shift 2
	# Close the lock descriptor (9) so the server does not hold the lock.
	setsid "$@" >"$log" 2>&1 </dev/null 9>&- &
	echo "$!" >>"$STATE/$name.pid"
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
zk_ready() {
	local reply
	reply="$({ exec 3<>"/dev/tcp/127.0.0.1/$ZK_PORT" && printf ruok >&3 && timeout 2 cat <&3; } 2>/dev/null)" || return 1
	[ "$reply" = imok ]
}
# ch_cluster_ready wants every node to answer /ping and to read ZooKeeper.
ch_cluster_ready() {
	local i
	for i in 0 1 2 3; do
		http_ok "http://127.0.0.1:${CL_HTTP[$i]}/ping" "Ok." && port_in_use "${CL_TCP[$i]}" || return 1
		curl -sf -m 2 "http://127.0.0.1:${CL_HTTP[$i]}/" \
			--data-binary "SELECT count() FROM system.zookeeper WHERE path = '/'" >/dev/null 2>&1 || return 1
	done
}

# ch_config DIR HTTP TCP USERS_XML UNCOMPRESSED_CACHE MARK_CACHE EXTRA prints a minimal server
# config (the same as internal/testutil/testsvc's): everything under DIR, loopback only, no query
# or part logs; EXTRA (cluster sections) goes before the end.
ch_config() {
	local dir="$1" http="$2" tcp="$3" users="$4" uncompressed="$5" mark="$6" extra="$7"
	cat <<XML
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
    <http_port>$http</http_port>
    <tcp_port>$tcp</tcp_port>
    <max_connections>4096</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>200</max_concurrent_queries>
    <uncompressed_cache_size>$uncompressed</uncompressed_cache_size>
    <mark_cache_size>$mark</mark_cache_size>
    <path>$dir/data/</path>
    <tmp_path>$dir/data/tmp/</tmp_path>
    <user_files_path>$dir/data/user_files/</user_files_path>
    <format_schema_path>$dir/data/format_schemas/</format_schema_path>
    <users_config>$users</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
$extra
</yandex>
XML
}

start_clickhouse() {
	local bin dir="$STATE/clickhouse"
	bin="$(find_clickhouse_server)"
	CH_HTTP="$(free_port)"
	CH_TCP="$(free_port "$CH_HTTP")"
	rm -rf "$dir" # shared servers start empty; their data is throwaway
	mkdir -p "$dir/data" "$dir/log"
	ch_config "$dir" "$CH_HTTP" "$CH_TCP" /etc/clickhouse-server/users.xml 268435456 268435456 "" >"$dir/config.xml"
	rm -f "$STATE/clickhouse.pid"
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
	rm -f "$STATE/nats.pid"
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
	rm -f "$STATE/redis.pid"
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
	rm -f "$STATE/dynalite.pid"
	# The guard keeps dynalite up when a client dies mid-request (see the file).
	launch dynalite "$dir/dynalite.log" env NODE_OPTIONS="--require=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/dynalite-guard.cjs" \
		"$bin" --host 127.0.0.1 --port "$DYN_PORT" \
		--createTableMs 0 --deleteTableMs 0 --updateTableMs 0
	wait_ready dynalite "$dir/dynalite.log" dyn_ready
}

start_zookeeper() {
	local cp dir="$STATE/zookeeper"
	cp="$(zookeeper_classpath)"
	ZK_PORT="$(free_port)"
	rm -rf "$dir"
	mkdir -p "$dir/data"
	cat >"$dir/zoo.cfg" <<CFG
tickTime=2000
dataDir=$dir/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,mntr
maxClientCnxns=0
CFG
	rm -f "$STATE/zookeeper.pid"
	# A small JVM (the server keeps a few MB of test metadata); a short class path starts it in ~1 s.
	launch zookeeper "$dir/zookeeper.log" "${WH_JAVA_BIN:-java}" -Xmx96m -Xms16m -XX:+UseSerialGC \
		-XX:TieredStopAtLevel=1 -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg"
	wait_ready zookeeper "$dir/zookeeper.log" zk_ready
}

# start_ch_cluster starts four clickhouse-server processes (shard s, replica r
# in STATE/ch_cluster/sSrR) sharing ZooKeeper, each with HTTP, native and
# interserver ports. Sized for a small machine: 16 MiB mark cache, no
# uncompressed cache, four background merge threads per server.
start_ch_cluster() {
	local bin root="$STATE/ch_cluster" used="" i s r
	bin="$(find_clickhouse_server)"
	CL_HTTP=() CL_TCP=() CL_INTER=()
	for i in 0 1 2 3; do
		CL_HTTP[i]="$(free_port $used)"; used="$used ${CL_HTTP[i]}"
		CL_TCP[i]="$(free_port $used)"; used="$used ${CL_TCP[i]}"
		CL_INTER[i]="$(free_port $used)"; used="$used ${CL_INTER[i]}"
	done
	rm -rf "$root"
	mkdir -p "$root"
	cp "$WH_ROOT/internal/testutil/testsvc/cluster-users.xml" "$root/users.xml"
	local remote="<remote_servers><$CLUSTER_NAME>"
	for s in 0 1; do
		remote="$remote<shard><internal_replication>true</internal_replication>"
		for r in 0 1; do
			remote="$remote<replica><host>127.0.0.1</host><port>${CL_TCP[s * 2 + r]}</port></replica>"
		done
		remote="$remote</shard>"
	done
	remote="$remote</$CLUSTER_NAME></remote_servers>"
	rm -f "$STATE/ch_cluster.pid"
	for s in 0 1; do
		for r in 0 1; do
			i=$((s * 2 + r))
			local dir="$root/s$((s + 1))r$((r + 1))"
			mkdir -p "$dir/data" "$dir/log"
			ch_config "$dir" "${CL_HTTP[i]}" "${CL_TCP[i]}" "$root/users.xml" 0 16777216 "\
    <interserver_http_port>${CL_INTER[i]}</interserver_http_port>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <zookeeper><node><host>127.0.0.1</host><port>$ZK_PORT</port></node></zookeeper>
    <macros><shard>$((s + 1))</shard><replica>s$((s + 1))r$((r + 1))</replica></macros>
    <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
    $remote" >"$dir/config.xml"
			launch ch_cluster "$dir/stdout.log" "$bin" --config-file="$dir/config.xml"
		done
	done
	wait_ready ch_cluster "$root/s1r1/stdout.log" ch_cluster_ready
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
	zookeeper_classpath >/dev/null || missing+=(zookeeper)
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
	local node_modules="${WH_TEST_NODE_MODULES:-$NODE_MODULES_PARENT/node_modules}"
	[ -d "$node_modules/@clickhouse/client" ] \
		|| say "warning: $node_modules/@clickhouse/client is missing; tests/chclients will skip (run tests/deps/install.sh chclient)"
	cat >"$STATE/env.sh.tmp" <<ENV
# Written by tests/deps/start.sh; source it to run tests against the shared servers.
export WH_TEST_CLICKHOUSE_ADDR=127.0.0.1:$CH_TCP
export WH_TEST_CLICKHOUSE_HTTP_ADDR=127.0.0.1:$CH_HTTP
export WH_TEST_NATS_URL=nats://127.0.0.1:$NATS_PORT
export WH_TEST_REDIS_ADDR=127.0.0.1:$REDIS_PORT
export WH_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:$DYN_PORT
export CHDB_LIB_PATH=$chdb
export WH_NATS_SERVER_BIN=$NATS_BIN
export WH_TEST_NODE_MODULES=$node_modules
export WH_TEST_ZOOKEEPER_ADDR=127.0.0.1:$ZK_PORT
export WH_TEST_CH_CLUSTER_NAME=$CLUSTER_NAME
export WH_TEST_CH_CLUSTER_ADDRS=$(printf '127.0.0.1:%s,' "${CL_TCP[@]}" | sed 's/,$//')
export WH_TEST_CH_CLUSTER_HTTP_ADDRS=$(printf '127.0.0.1:%s,' "${CL_HTTP[@]}" | sed 's/,$//')
ENV
	mv "$STATE/env.sh.tmp" "$STATE/env.sh"
	echo "$STATE/env.sh"
}

main "$@"
