#!/usr/bin/env bash
# test.sh: the whole test suite. With DATABASE_URL unset it starts a throwaway PostgreSQL
# cluster in a temporary directory and removes it on exit. The test packages migrate one
# template database and clone it, one database per package (see internal/dbtest).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

throwaway_database test

# stripe-mock checks that every request paygate sends is valid in Stripe's published API.
gobin=$(go env GOPATH)/bin
if ! command -v stripe-mock >/dev/null 2>&1 && [ ! -x "$gobin/stripe-mock" ]; then
  echo "installing stripe-mock (once)"
  go install github.com/stripe/stripe-mock@v0.203.0
fi
export PATH="$PATH:$gobin"

# The console's browser test needs Chromium, the alert rules' tests promtool; without them
# those tests skip here, and fail in CI (CI=true), which installs both (.ci/run).
for tool in chromium promtool; do
  if ! command -v "$tool" >/dev/null 2>&1 && [ "${CI:-}" != true ]; then
    echo "paygate: $tool is not installed: its tests will skip (apt-get install chromium prometheus)" >&2
  fi
done

# The binary is built once; whole-program tests run it from here.
go build -o bin/paygate ./cmd/paygate
PAYGATE_BIN=$(pwd)/bin/paygate
export PAYGATE_BIN

flags=(-count=1 -timeout 12m)
if [ "${PAYGATE_TEST_RACE:-}" = 1 ]; then
  flags+=(-race)
fi
go test "${flags[@]}" ./...
