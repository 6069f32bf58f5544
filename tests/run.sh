#!/usr/bin/env bash
# The whole test suite: installs what is missing, starts one shared instance of each service,
# runs every Go test with -race and a cover profile, and stops the services again.
# BENCH=1 runs the benchmarks instead; CHAOS=1 runs the chaos suite long (WH_CHAOS_CYCLES faults per
# scenario, default 10) and prints its table (also written to WH_CHAOS_REPORT, default
# bin/chaos-report.md). Extra arguments go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."

tests/deps/install.sh all
export WH_DEPS_DIR="${WH_DEPS_DIR:-${TMPDIR:-/tmp}/wavehouse-deps-$$}"
trap 'tests/deps/stop.sh' EXIT
env_file="$(tests/deps/start.sh)"
set -a
# shellcheck disable=SC1090
. "$env_file"
set +a

if [[ "${BENCH:-}" == 1 ]]; then
  go test -run '^$' -bench . -benchtime "${BENCHTIME:-1x}" "${@:-./...}"
  exit 0
fi
if [[ "${CHAOS:-}" == 1 ]]; then
  export WH_CHAOS_CYCLES="${WH_CHAOS_CYCLES:-10}"
  export WH_CHAOS_REPORT="${WH_CHAOS_REPORT:-$PWD/bin/chaos-report.md}"
  mkdir -p "$(dirname "$WH_CHAOS_REPORT")"
  rm -f "$WH_CHAOS_REPORT"
  rc=0
  go test -race -count=1 -timeout 120m -v "${@:-./tests/chaos/}" || rc=$?
  if [[ -f "$WH_CHAOS_REPORT" ]]; then
    echo "chaos: $WH_CHAOS_CYCLES cycles per scenario; table in $WH_CHAOS_REPORT:"
    cat "$WH_CHAOS_REPORT"
  fi
  exit "$rc"
fi
# -coverpkg counts what every test binary exercises in our packages, so code tested through
# another package (jsmq through both queue backends, the API through the binary) is credited.
go test -race -count=1 -timeout 45m -covermode=atomic -coverpkg=./internal/... -coverprofile=coverage.out "${@:-./...}"
