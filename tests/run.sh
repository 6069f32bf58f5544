#!/usr/bin/env bash
# The whole test suite: installs what is missing, starts one shared instance of each service,
# runs every Go test with -race and a cover profile, and stops the services again.
# BENCH=1 runs the benchmarks instead. Extra arguments go to `go test`.
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
# -coverpkg counts what every test binary exercises in our packages, so code tested through
# another package (jsmq through both queue backends, the API through the binary) is credited.
go test -race -count=1 -timeout 45m -covermode=atomic -coverpkg=./internal/... -coverprofile=coverage.out "${@:-./...}"
