# paygate: a payments outcome-reconciliation gateway.
#
# `make run` and `make test` need nothing but Go and the PostgreSQL server binaries: with
# DATABASE_URL unset they start a throwaway PostgreSQL cluster of their own.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

BIN := bin/paygate
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
export GOFLAGS ?= -buildvcs=false

.PHONY: help build run test test/race lint bench migrate clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z\/_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/paygate
	$(GO) build -o $(BIN) ./cmd/paygate

run: build ## start the gateway on 127.0.0.1:8080 (own PostgreSQL under .data/ if DATABASE_URL is unset)
	scripts/run.sh

test: ## run the whole test suite (own throwaway PostgreSQL if DATABASE_URL is unset)
	scripts/test.sh

test/race: ## the test suite under the race detector
	PAYGATE_TEST_RACE=1 scripts/test.sh

lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

bench: build ## run the benchmarks and print their figures
	scripts/bench.sh

migrate: build ## apply migrations to DATABASE_URL (or to the .data/ cluster)
	scripts/run.sh migrate

clean: ## remove the binary and the local database under .data/
	-scripts/pg.sh stop .data/pg
	rm -rf bin .data
