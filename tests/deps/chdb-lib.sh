#!/usr/bin/env bash
# chdb-lib.sh — print the path of libchdb.so, fetching it first when it is
# missing (install.sh chdb). CHDB_LIB_PATH, when set to an existing file,
# wins. Used by `make run`:  CHDB_LIB_PATH="$(tests/deps/chdb-lib.sh)"
set -euo pipefail
# shellcheck source=tests/deps/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ -n "${CHDB_LIB_PATH:-}" ] && [ -s "$CHDB_LIB_PATH" ]; then
	echo "$CHDB_LIB_PATH"
	exit 0
fi
if [ ! -s "$CHDB_LIB_DEFAULT" ]; then
	"$(dirname "${BASH_SOURCE[0]}")/install.sh" chdb >&2
fi
[ -s "$CHDB_LIB_DEFAULT" ] || die "libchdb.so still missing at $CHDB_LIB_DEFAULT"
echo "$CHDB_LIB_DEFAULT"
