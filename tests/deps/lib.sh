# shellcheck shell=bash
# Common helpers for the dependency scripts; sourced, not run.

# Pinned versions. NATS comes from go.mod (the module the project requires).
DYNALITE_VERSION=4.0.0
CH_NODE_CLIENT_VERSION=1.23.1
CHDB_VERSION=26.5.3
HEY_VERSION=v0.1.5
GOLANGCI_LINT_VERSION=v2.15.0

WH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WH_CACHE_DIR="${WH_CACHE_DIR:-$HOME/.cache/wavehouse}"
WH_DEPS_DIR="${WH_DEPS_DIR:-${TMPDIR:-/tmp}/wavehouse-deps}"
CHDB_LIB_DEFAULT="$WH_CACHE_DIR/chdb/$CHDB_VERSION/libchdb.so"
DYNALITE_BIN_DEFAULT="$WH_CACHE_DIR/dynalite/node_modules/.bin/dynalite"
NATS_BIN_DEFAULT="$WH_ROOT/bin/nats-server"
# NODE_MODULES_PARENT holds node_modules with the Node packages the tests run (@clickhouse/client).
NODE_MODULES_PARENT="$WH_CACHE_DIR/node-clients"

say() { printf '%s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# as_root runs a command as root (directly, or through sudo).
as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1; then sudo "$@"
	else die "need root (or sudo) to run: $*"
	fi
}

# find_clickhouse_server prints the clickhouse-server path, if installed.
find_clickhouse_server() {
	if [ -n "${WH_CLICKHOUSE_SERVER_BIN:-}" ]; then echo "$WH_CLICKHOUSE_SERVER_BIN"; return; fi
	for c in /usr/sbin/clickhouse-server /usr/bin/clickhouse-server "$(command -v clickhouse-server 2>/dev/null || true)"; do
		if [ -n "$c" ] && [ -x "$c" ]; then echo "$c"; return; fi
	done
	return 1
}

# ZOOKEEPER_JARS are the jars (under $WH_ZOOKEEPER_JARS, default /usr/share/java) a standalone
# ZooKeeper needs; the same list as internal/testutil/testsvc/zookeeper.go.
ZOOKEEPER_JARS="zookeeper.jar zookeeper-jute.jar slf4j-api.jar slf4j-simple.jar metrics-core.jar
netty-handler.jar netty-common.jar netty-buffer.jar netty-transport.jar netty-codec.jar
netty-resolver.jar netty-transport-native-epoll.jar netty-transport-native-unix-common.jar"

# zookeeper_classpath prints the class path of the packaged ZooKeeper server, if installed
# (Debian's zookeeper package, which brings a Java runtime).
zookeeper_classpath() {
	local dir="${WH_ZOOKEEPER_JARS:-/usr/share/java}" cp="" j
	command -v "${WH_JAVA_BIN:-java}" >/dev/null 2>&1 || return 1
	for j in $ZOOKEEPER_JARS; do
		[ -f "$dir/$j" ] || return 1
		cp="${cp:+$cp:}$dir/$j"
	done
	echo "$cp"
}

# find_redis_server prints the redis-server path, if installed.
find_redis_server() {
	if [ -n "${WH_REDIS_SERVER_BIN:-}" ]; then echo "$WH_REDIS_SERVER_BIN"; return; fi
	for c in /usr/bin/redis-server "$(command -v redis-server 2>/dev/null || true)"; do
		if [ -n "$c" ] && [ -x "$c" ]; then echo "$c"; return; fi
	done
	return 1
}

# find_nats_server prints the nats-server path the tests use, if present.
find_nats_server() {
	if [ -n "${WH_NATS_SERVER_BIN:-}" ]; then echo "$WH_NATS_SERVER_BIN"; return; fi
	if [ -x "$NATS_BIN_DEFAULT" ]; then echo "$NATS_BIN_DEFAULT"; return; fi
	return 1
}

# find_dynalite prints the dynalite path, if installed.
find_dynalite() {
	if [ -n "${WH_DYNALITE_BIN:-}" ]; then echo "$WH_DYNALITE_BIN"; return; fi
	if [ -x "$DYNALITE_BIN_DEFAULT" ]; then echo "$DYNALITE_BIN_DEFAULT"; return; fi
	return 1
}

# port_in_use reports whether something accepts TCP connections on the port.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port prints a loopback port nobody listens on, avoiding the ports
# named in its arguments. A race with another process is handled by the
# caller retrying the start.
free_port() {
	local p i
	for i in $(seq 1 200); do
		p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 )) # below the kernel's ephemeral range
		case " $* " in *" $p "*) continue ;; esac
		if ! port_in_use "$p"; then echo "$p"; return; fi
	done
	die "no free port found"
}

# http_ok URL [WANT] succeeds when GET URL answers 200 (and contains WANT).
http_ok() {
	local body
	body="$(curl -sf -m 2 "$1" 2>/dev/null)" || return 1
	[ -z "${2:-}" ] || [[ "$body" == *"$2"* ]]
}

# pid_alive succeeds when the process exists and is not a zombie (an exited
# child whose new parent has not reaped it still answers kill -0).
pid_alive() {
	kill -0 "$1" 2>/dev/null || return 1
	local stat
	stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
	stat="${stat##*) }"
	[ "${stat%% *}" != Z ]
}
