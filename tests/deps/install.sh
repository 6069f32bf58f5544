#!/usr/bin/env bash
# install.sh [all|clickhouse|zookeeper|nats|redis|dynalite|chclient|chdb|chromium|tools|lint]...
#
# Installs what the WaveHouse tests and `make run` need, skipping whatever is
# already present; safe to run twice and from several shells at once (a lock
# serialises runs). Prints one line per component: what happened and how long
# it took.
#
#   clickhouse  Debian clickhouse-server + clickhouse-client (apt)
#   zookeeper   Debian zookeeper 3.8 with a Java runtime (apt), for the ClickHouse cluster
#   redis       Debian redis-server (apt)
#   nats        nats-server built from the module in go.mod into bin/nats-server
#   dynalite    dynalite@4.0.0 (npm) under $WH_CACHE_DIR/dynalite
#   chclient    @clickhouse/client@1.23.1 (npm) under $WH_CACHE_DIR/node-clients, for tests/chclients
#   chdb        libchdb.so from @chdb/lib-linux-x64-gnu (npm) under $WH_CACHE_DIR/chdb/<version>
#   chromium    headless Chromium (apt) for the browser EventSource test and the console suite
#   tools       wrk, hyperfine (apt) and hey (go install into bin/)
#   lint        golangci-lint into bin/ (slow: ~2 min cold; not part of all)
#   all         everything above except lint (the default)
#
# Environment: WH_CACHE_DIR (default ~/.cache/wavehouse).
set -euo pipefail
# shellcheck source=tests/deps/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

APT_UPDATED=0
# PRESENT is the status an install_<component> function returns when the
# component was already there (0 means it was installed now).
PRESENT=10

# apt_install installs Debian packages, running apt-get update first only
# when a package is unknown to the local package lists.
apt_install() {
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install $* by hand"
	local p
	if [ "$APT_UPDATED" -eq 0 ]; then
		for p in "$@"; do
			if ! apt-cache show "$p" >/dev/null 2>&1; then
				apt_update
				break
			fi
		done
	fi
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2; then
		# Stale package lists (a 404 on download): refresh once and retry.
		[ "$APT_UPDATED" -eq 0 ] || die "apt-get install $* failed"
		apt_update
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2 \
			|| die "apt-get install $* failed"
	fi
}

apt_update() {
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
	APT_UPDATED=1
}

# ensure_curl installs curl, which the start script's readiness checks use.
ensure_curl() {
	command -v curl >/dev/null 2>&1 || apt_install curl ca-certificates
}

install_clickhouse() {
	if find_clickhouse_server >/dev/null && command -v clickhouse-client >/dev/null 2>&1 \
		&& [ -f /etc/clickhouse-server/users.xml ]; then
		return "$PRESENT"
	fi
	# The package's postinst cannot start the server without systemd; that
	# is expected and harmless (start.sh and the Go helpers start it).
	apt_install clickhouse-server clickhouse-client
}

install_zookeeper() {
	zookeeper_classpath >/dev/null && return "$PRESENT"
	apt_install zookeeper
}

install_redis() {
	find_redis_server >/dev/null && return "$PRESENT"
	apt_install redis-server
}

install_nats() {
	command -v go >/dev/null 2>&1 || die "go not found: needed to build nats-server"
	local want have out
	want="$(cd "$WH_ROOT" && go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)" \
		|| die "cannot read the nats-server version from go.mod"
	out="$NATS_BIN_DEFAULT"
	if [ -x "$out" ]; then
		have="$("$out" --version 2>/dev/null | awk '{print $NF}')"
		[ "$have" = "$want" ] && return "$PRESENT"
		say "nats: bin/nats-server is $have, go.mod wants $want: rebuilding"
	fi
	mkdir -p "$(dirname "$out")"
	(cd "$WH_ROOT" && go build -o "$out.tmp.$$" github.com/nats-io/nats-server/v2) \
		|| { rm -f "$out.tmp.$$"; die "go build nats-server failed"; }
	mv -f "$out.tmp.$$" "$out"
}

# npm_install_pinned DIR PACKAGE VERSION [MIN_NODE] installs PACKAGE@VERSION (npm) into DIR
# unless DIR/node_modules already holds that version; returns PRESENT when it did.
npm_install_pinned() {
	local dir="$1" pkg="$2" version="$3" min_node="${4:-20}" have
	if [ -f "$dir/node_modules/$pkg/package.json" ]; then
		have="$(node -p "require('$dir/node_modules/$pkg/package.json').version" 2>/dev/null || true)"
		[ "$have" = "$version" ] && return "$PRESENT"
	fi
	command -v npm >/dev/null 2>&1 || die "npm not found: install Node.js ≥ $min_node with npm"
	local major
	major="$(node -p 'process.versions.node.split(".")[0]')"
	[ "$major" -ge "$min_node" ] || die "$pkg $version needs Node.js ≥ $min_node, found $(node --version)"
	# Install next to the final place and swap it in, so a half-finished
	# install is never used by a running test.
	local tmp="$dir.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	(cd "$tmp" && npm init -y >/dev/null \
		&& npm install --save-exact --no-audit --no-fund --loglevel=error "$pkg@$version" >&2) \
		|| { rm -rf "$tmp"; die "npm install $pkg@$version failed"; }
	rm -rf "$dir.old.$$"
	[ -e "$dir" ] && mv "$dir" "$dir.old.$$"
	mv "$tmp" "$dir"
	rm -rf "$dir.old.$$"
}

install_dynalite() {
	local dir="$WH_CACHE_DIR/dynalite"
	# An install without its bin link is redone.
	[ -x "$dir/node_modules/.bin/dynalite" ] || rm -rf "$dir/node_modules/dynalite"
	npm_install_pinned "$dir" dynalite "$DYNALITE_VERSION"
}

# install_chclient installs the official ClickHouse Node client the tests/chclients suite runs
# unmodified against the gateway (its node_modules is WH_TEST_NODE_MODULES for the tests).
install_chclient() {
	npm_install_pinned "$NODE_MODULES_PARENT" @clickhouse/client "$CH_NODE_CLIENT_VERSION"
}

install_chdb() {
	local out="$CHDB_LIB_DEFAULT"
	[ -s "$out" ] && return "$PRESENT"
	command -v npm >/dev/null 2>&1 || die "npm not found: install Node.js ≥ 20 with npm"
	mkdir -p "$(dirname "$out")"
	local tmp
	tmp="$(mktemp -d "$(dirname "$out")/.download.XXXXXX")" || die "mktemp failed"
	# npm pack checks the tarball against the registry's integrity hash.
	(cd "$tmp" && npm pack --silent "@chdb/lib-linux-x64-gnu@$CHDB_VERSION" >/dev/null \
		&& tar xzf ./*.tgz package/libchdb.so) \
		|| { rm -rf "$tmp"; die "fetching @chdb/lib-linux-x64-gnu@$CHDB_VERSION failed"; }
	[ -s "$tmp/package/libchdb.so" ] || { rm -rf "$tmp"; die "libchdb.so missing from the npm package"; }
	# A rename within one directory is atomic: a present libchdb.so is whole.
	mv -f "$tmp/package/libchdb.so" "$out"
	rm -rf "$tmp"
}

install_tools() {
	local did="$PRESENT"
	if ! command -v wrk >/dev/null 2>&1 || ! command -v hyperfine >/dev/null 2>&1; then
		apt_install wrk hyperfine
		did=0
	fi
	if [ ! -x "$WH_ROOT/bin/hey" ]; then
		command -v go >/dev/null 2>&1 || die "go not found: needed for hey"
		GOBIN="$WH_ROOT/bin" go install "github.com/rakyll/hey@$HEY_VERSION" >&2 \
			|| die "go install hey failed"
		did=0
	fi
	return "$did"
}

install_chromium() {
	# Headless Chromium for the EventSource test in tests/browser.
	if command -v chromium >/dev/null 2>&1; then
		return "$PRESENT"
	fi
	apt_install chromium
}

install_lint() {
	if [ -x "$WH_ROOT/bin/golangci-lint" ] \
		&& "$WH_ROOT/bin/golangci-lint" version 2>/dev/null | grep -q "${GOLANGCI_LINT_VERSION#v}"; then
		return "$PRESENT"
	fi
	GOBIN="$WH_ROOT/bin" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION" >&2 \
		|| die "go install golangci-lint failed"
}

# run_component runs install_<name> and prints one line: installed or
# already present, with the elapsed seconds. Inside the install functions
# `set -e` is off (they run in a `||` list), so they fail through die.
run_component() {
	local name="$1" start rc=0
	start="$(date +%s.%N)"
	"install_$name" || rc=$?
	local secs
	secs="$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"
	case "$rc" in
	0) printf '%-11s installed (%ss)\n' "$name:" "$secs" ;;
	"$PRESENT") printf '%-11s already present (%ss)\n' "$name:" "$secs" ;;
	*) die "$name: install failed (status $rc) after ${secs}s" ;;
	esac
}

main() {
	local comps=()
	[ "$#" -eq 0 ] && set -- all
	for arg in "$@"; do
		case "$arg" in
		all) comps+=(clickhouse zookeeper redis nats dynalite chclient chdb chromium tools) ;;
		clickhouse | zookeeper | redis | nats | dynalite | chclient | chdb | chromium | tools | lint) comps+=("$arg") ;;
		-h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown component '$arg' (want all|clickhouse|zookeeper|nats|redis|dynalite|chclient|chdb|chromium|tools|lint)" ;;
		esac
	done
	mkdir -p "$WH_CACHE_DIR"
	# Serialise concurrent runs (two `make test` at once).
	exec 9>"$WH_CACHE_DIR/.install.lock"
	flock 9
	ensure_curl
	local c
	for c in "${comps[@]}"; do
		run_component "$c"
	done
}

main "$@"
