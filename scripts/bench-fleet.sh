#!/usr/bin/env bash
# bench-fleet.sh: the figures of replicas sharing one retry budget and breaker, and of a
# failover of the primary to its synchronous standby (docs/replicas-and-failover.md).
#
# It runs the tests that measure them and prints their figures: a retry decision of the
# fleet's budget and one sync with PostgreSQL; three replicas through a rate limit and an
# outage of the processor, with the budget and breaker per process and then shared by the
# fleet (attempts per charge, retries, circuits open); 1 000 charges through a failover (the
# gap between the last write on the old primary and the first on the new). Like make test, it
# starts a throwaway PostgreSQL when DATABASE_URL is unset; the failover test starts its own
# primary and standby (scripts/pg-standby.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

throwaway_database bench-fleet
export CI=true # the tests need their databases: never skip
go build -o bin/paygate ./cmd/paygate
PAYGATE_BIN=$(pwd)/bin/paygate
export PAYGATE_BIN

# figures TEST [ENV...]: runs one test of cmd/paygate and prints its FIGURE lines.
figures() {
  local test=$1 out
  shift
  if ! out=$(env "$@" go test ./cmd/paygate/ -run "^$test\$" -count=1 -v 2>&1); then
    echo "$out" | grep -E -- '--- FAIL|_test.go:[0-9]+:' | grep -v '"level"' | head -20 >&2
    echo "bench-fleet: $test failed" >&2
    return 1
  fi
  echo "$out" | grep -o 'FIGURE .*' | sed 's/^FIGURE /   /'
}

echo "== fleet-wide retry budget: one decision in memory, a sync amortised every 1000 (target <= 1 us), and one sync with PostgreSQL (every 250 ms, off the request path)"
go test ./retry/ -run '^$' -bench 'FleetBudget' -benchmem -count=1 | grep -E '^Benchmark'
go test ./store/ -run '^$' -bench 'FleetSync' -benchmem -count=1 | grep -E '^Benchmark'

echo
echo "== three replicas on one database, processor rate-limited (429) then down (503): attempts per charge <= 1.10, retries within one budget"
figures TestFleetOutage PAYGATE_FLEET_TEST_SCOPE=process
figures TestFleetOutage PAYGATE_FLEET_TEST_SCOPE=fleet

echo
echo "== 1 000 charges through a failover of the primary (pg_ctl stop -m immediate) to its synchronous standby"
figures TestFailover
