# WaveHouse. `make run` starts the gateway on the embedded default; `make test` runs every test.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/wavehouse
PKG   := github.com/wavehouse/wavehouse/internal/buildinfo
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
IMAGE   ?= ghcr.io/wavehouse/wavehouse:latest
LDFLAGS := -X $(PKG).Version=$(VERSION) -X $(PKG).Commit=$(COMMIT) -X $(PKG).BuildTime=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

.PHONY: help run build test chaos cover lint bench image docs console-screenshots deps clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

run: build ## fetch the embedded engine, build, and run the gateway (all-embedded config.yaml)
	CHDB_LIB_PATH="$${CHDB_LIB_PATH:-$$(tests/deps/chdb-lib.sh)}" $(BIN) serve --config config.yaml

build: ## build bin/wavehouse
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/wavehouse

test: ## install and start every service the tests use, run the whole suite with -race
	tests/run.sh

chaos: ## the chaos suite long: faults under load, WH_CHAOS_CYCLES (default 10) per scenario; prints the table
	CHAOS=1 tests/run.sh

cover: ## enforce .testcoverage.yml on the profile written by make test
	@[ -f coverage.out ] || tests/run.sh
	$(GO) run ./internal/tools/covercheck -profile coverage.out -config .testcoverage.yml

lint: ## gofmt, go vet, and golangci-lint when installed
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	@if command -v golangci-lint >/dev/null; then golangci-lint run ./...; else echo "golangci-lint not installed: skipped"; fi

bench: ## run the benchmarks (services started as for make test)
	BENCH=1 tests/run.sh

image: ## build the container image $(IMAGE) (the Kubernetes manifests' image; also wavehouse:local for compose)
	docker build -f deployments/Dockerfile --build-arg LDFLAGS="$(LDFLAGS)" -t $(IMAGE) -t wavehouse:local .

docs: ## regenerate the generated parts of docs/ (the metrics reference starts the test services it needs)
	$(GO) test ./internal/config -run TestConfigurationDoc -update
	CHDB_LIB_PATH="$${CHDB_LIB_PATH:-$$(tests/deps/chdb-lib.sh)}" $(GO) test ./internal/app -run TestMetricsReference -update

console-screenshots: ## drive the operator console in headless Chromium and save each view to docs/console/*.png
	mkdir -p docs/console
	CHDB_LIB_PATH="$${CHDB_LIB_PATH:-$$(tests/deps/chdb-lib.sh)}" WH_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 ./tests/console -run TestConsole

deps: ## install every external dependency the tests use (idempotent)
	tests/deps/install.sh all

clean: ## remove build output, coverage and the local data directory
	rm -rf bin coverage.out data
