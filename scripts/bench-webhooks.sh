#!/usr/bin/env bash
# bench-webhooks.sh: the figures of the processor's webhooks (docs/operations.md, Webhooks).
#
# It runs the whole-program test that measures them and prints its figures: `paygate sim
# --webhook-url --webhook-secret` and a gateway process; the simulator loses the answer of
# every third request until 1 000 charges are pending without knowing their PaymentIntent;
# then the faults stop, and the events settle them (target: all within 10 s, at most one
# processor read per charge). BENCH_WEBHOOK_CHARGES and BENCH_WEBHOOK_RATE (charges sent per
# second, default 100) tune it. Like make test, it starts a throwaway PostgreSQL when
# DATABASE_URL is unset.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

throwaway_database bench-webhooks
export CI=true # the test needs its database: never skip
go build -o bin/paygate ./cmd/paygate
PAYGATE_BIN=$(pwd)/bin/paygate
export PAYGATE_BIN

n=${BENCH_WEBHOOK_CHARGES:-1000}
rate=${BENCH_WEBHOOK_RATE:-100}
echo "== webhooks: $n charges whose answers were lost (PaymentIntent ids unknown), settled by the simulator's events once the faults stop (target <= 10 s, <= 1 read per charge)"
if ! out=$(PAYGATE_WEBHOOK_TEST_CHARGES=$n PAYGATE_WEBHOOK_TEST_RATE=$rate \
  go test ./cmd/paygate/ -run '^TestWebhooksSettleLostAnswers$' -count=1 -v -timeout 10m 2>&1); then
  echo "$out" | grep -E -- '--- FAIL|FIGURE|_test.go:[0-9]+:' | grep -v '"level"' | head -20 >&2
  echo "bench-webhooks: TestWebhooksSettleLostAnswers failed" >&2
  exit 1
fi
echo "$out" | grep -o 'FIGURE .*' | sed 's/^FIGURE /   /'
