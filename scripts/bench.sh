#!/usr/bin/env bash
# bench.sh: the benchmarks of the design's Performance table, printed in one run.
# Like make test, it starts a throwaway PostgreSQL when DATABASE_URL is unset (fsync and
# synchronous_commit on).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

if [ -z "${DATABASE_URL:-}" ]; then
  tmp=$(mktemp -d -t paygate-bench.XXXXXX)
  cleanup() { scripts/pg.sh stop "$tmp" || true; rm -rf "$tmp"; }
  trap cleanup EXIT
  port=$(free_port)
  DATABASE_URL=$(scripts/pg.sh start "$tmp" "$port")
  export DATABASE_URL
fi

echo "== retry budget: one decision (target <= 100 ns, 0 allocs uncontended; contended on 2 cores beside it)"
go test ./retry/ -run '^$' -bench 'Budget' -benchmem -count=1 | grep -E '^(Benchmark|ok)'
