#!/usr/bin/env bash
# bench.sh: the benchmarks of the design's Performance table, printed in one run.
#
# A charge through paygate is measured beside the minimal keyed-charge gateway (cmd/minimal:
# a cached key hash, one INSERT with a unique key, one stripe-go create+confirm, one UPDATE)
# on the same PostgreSQL cluster, against the same simulator process, in alternating rounds.
# Like make test, it starts a throwaway PostgreSQL when DATABASE_URL is unset (fsync and
# synchronous_commit on). BENCH_ROUNDS, BENCH_CONCURRENCY and BENCH_SECONDS tune the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

# The working set stays in memory, as on a server sized for its write rate; checkpoints are
# spaced so that a round of seconds measures the rows it writes, not a checkpoint's first
# page images (both gateways alike).
PAYGATE_PG_OPTIONS="-c shared_buffers=1GB -c checkpoint_timeout=30min -c max_wal_size=16GB ${PAYGATE_PG_OPTIONS:-}" \
  throwaway_database bench
ROUNDS=${BENCH_ROUNDS:-5}
C=${BENCH_CONCURRENCY:-16}
D=${BENCH_SECONDS:-10}

echo "== retry budget: one decision (target <= 100 ns, 0 allocs uncontended; contended on 2 cores beside it)"
go test ./retry/ -run '^$' -bench 'Budget' -benchmem -count=1 | grep -E '^(Benchmark|ok)'

go build -o bin/loadgen ./cmd/loadgen
go build -o bin/minimal ./cmd/minimal
work=$(mktemp -d -t paygate-bench-run.XXXXXX)
pids=()
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
on_exit stop_all

base=${DATABASE_URL%%\?*}
base=${base%/*}
psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS paygate_bench" >/dev/null
psql "$DATABASE_URL" -qc "CREATE DATABASE paygate_bench" >/dev/null
BENCH_DB="$base/paygate_bench?sslmode=disable"
sql() { psql "$BENCH_DB" -Atqc "$1"; }

simport=$(free_port); gwport=$(free_port); mport=$(free_port); minport=$(free_port)
# The simulator keeps the last 10 000 objects of each kind, not 100 000: no round reads an
# older one, and a heap of 100 000 PaymentIntents (500 MB live) took half a second of both
# cores to mark, a stall in whichever arm's round it fell.
bin/paygate sim --addr "127.0.0.1:$simport" --account acct_bench --keep 10000 >"$work/sim.log" 2>&1 & simpid=$!; pids+=($simpid)
DATABASE_URL=$BENCH_DB bin/paygate migrate >/dev/null
KEY=$(DATABASE_URL=$BENCH_DB bin/paygate keys create --merchant bench --role checkout)
DATABASE_URL=$BENCH_DB PAYGATE_ADDR="127.0.0.1:$gwport" PAYGATE_METRICS_ADDR="127.0.0.1:$mport" PAYGATE_PROCESSOR=stripe \
  STRIPE_SECRET_KEY=sk_test_bench STRIPE_API_BASE="http://127.0.0.1:$simport" PAYGATE_DB_MAX_CONNS=$((C + 8)) \
  bin/paygate serve >"$work/gateway.log" 2>&1 & gwpid=$!; pids+=($gwpid)
DATABASE_URL=$BENCH_DB MINIMAL_ADDR="127.0.0.1:$minport" MINIMAL_DB_MAX_CONNS=$((C + 8)) \
  STRIPE_API_BASE="http://127.0.0.1:$simport" bin/minimal >"$work/minimal.log" 2>&1 & minpid=$!; pids+=($minpid)
wait_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
wait_port "$gwport"; wait_port "$minport"; wait_port "$mport" || true

# cpu_ns PID...: the CPU nanoseconds the live processes used so far, one "pid ns" a line. A
# single-threaded process (a PostgreSQL backend) is read from its scheduler statistics, to the
# nanosecond: /proc/PID/stat counts whole clock ticks of 10 ms, and a round's sum over some
# twenty backends could be off by tens of milliseconds, several percent of a short round. A
# process with threads (Go's) is read from its ticks, which count its threads that exited too.
cpu_ns() {
  local p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && awk -v p="$p" -v hz="$(getconf CLK_TCK)" '
      FNR == NR {threads = $20; ticks = $14 + $15; next}
      {ns = $1}
      END {if (threads == 1 && ns != "") print p, ns; else printf "%s %.0f\n", p, ticks * 1e9 / hz}' \
      "/proc/$p/stat" "/proc/$p/schedstat" 2>/dev/null
  done
  return 0
}
# cpu_ms BEFORE AFTER: CPU milliseconds the processes of AFTER used since BEFORE (a process
# started meanwhile counts from zero).
cpu_ms() {
  awk 'NR == FNR {t0[$1] = $2; next} {d += $2 - ($1 in t0 ? t0[$1] : 0)} END {printf "%.0f", d / 1e6}' \
    <(echo "$1") <(echo "$2")
}
# pg_pids: this cluster's processes (the postmaster and its children); every postgres process
# of the machine when the database is the caller's.
pg_pids() {
  if [ -n "${PAYGATE_PGDATA:-}" ]; then
    local pm
    pm=$(head -1 "$PAYGATE_PGDATA/postmaster.pid" 2>/dev/null || runuser -u postgres -- head -1 "$PAYGATE_PGDATA/postmaster.pid")
    echo "$pm"; pgrep -P "$pm" || true
  else
    pgrep -x postgres || true
  fi
}
# allocs ARM: "bytes mallocs" the gateway process allocated so far.
allocs() {
  if [ "$1" = paygate ]; then
    curl -fs "http://127.0.0.1:$mport/metrics" 2>/dev/null || curl -fs "http://127.0.0.1:$gwport/metrics"
  else
    curl -fs "http://127.0.0.1:$minport/stats" | tr ' ' '\n' | sed 's/=/ /'
  fi | awk '/^go_memstats_alloc_bytes_total|^alloc_bytes/ {b = $2} /^go_memstats_mallocs_total|^mallocs/ {m = $2} END {printf "%.0f %.0f", b, m}'
}
# wal_counts FROM TO: "rows_written wal_bytes commits" between two WAL positions, read from
# the WAL itself (pg_walinspect): every row a heap insert, update or delete record wrote, and
# every commit, of the whole cluster.
sql "CREATE EXTENSION IF NOT EXISTS pg_walinspect" >/dev/null
wal_counts() {
  sql "SELECT COALESCE(sum(count) FILTER (WHERE \"resource_manager/record_type\" ~ '^Heap/(INSERT|UPDATE|HOT_UPDATE|DELETE)'), 0),
              pg_wal_lsn_diff('$2', '$1'),
              COALESCE(sum(count) FILTER (WHERE \"resource_manager/record_type\" = 'Transaction/COMMIT'), 0)
         FROM pg_get_wal_stats('$1', '$2', true)" | tr '|' ' '
}
# settle starts a measured round from a clean state, as pgbench does by default: the tables
# vacuumed and analyzed.
settle() { sql "VACUUM ANALYZE" >/dev/null; }

# round ARM LOADGEN-ARGS...: one measured round; prints
# "arm rate p50 p99 n gw_cpu pg_cpu sim_cpu lg_cpu rows wal commits alloc_bytes mallocs".
# The other gateway is stopped (SIGSTOP) meanwhile, so that its background work (paygate's
# job queue, for one) is in neither arm's figures.
round() {
  local arm=$1 url pid other; shift
  if [ "$arm" = paygate ]; then url="http://127.0.0.1:$gwport"; pid=$gwpid; other=$minpid
  else url="http://127.0.0.1:$minport"; pid=$minpid; other=$gwpid; fi
  settle
  kill -STOP "$other"
  local g0 p0 s0 l0 a0 out g1 p1 s1 l1 a1
  g0=$(cpu_ns "$pid"); p0=$(cpu_ns $(pg_pids)); s0=$(cpu_ns "$simpid"); a0=$(allocs "$arm"); l0=$(sql "SELECT pg_current_wal_lsn()")
  out=$(bin/loadgen -target gateway -url "$url" -key "$KEY" -c "$C" "$@")
  l1=$(sql "SELECT pg_current_wal_lsn()"); g1=$(cpu_ns "$pid"); p1=$(cpu_ns $(pg_pids)); s1=$(cpu_ns "$simpid"); a1=$(allocs "$arm")
  kill -CONT "$other"
  field() { echo "$out" | tr ' ' '\n' | grep "^$1=" | cut -d= -f2 | tr -d '/s'; }
  if [ "$(field errors)" != 0 ]; then echo "bench: $arm answered errors: $out" >&2; fi
  echo "$arm $(field rate) $(field p50_ms) $(field p99_ms) $(field requests) $(cpu_ms "$g0" "$g1") $(cpu_ms "$p0" "$p1")" \
    "$(cpu_ms "$s0" "$s1") $(field cpu_ms) $(wal_counts "$l0" "$l1")" \
    "$(paste -d' ' <(echo "$a0") <(echo "$a1") | awk '{print $3 - $1, $4 - $2}')"
}

# Warm-up: connections, prepared statements, caches, and the simulator's card cache.
bin/loadgen -target gateway -url "http://127.0.0.1:$gwport" -key "$KEY" -c "$C" -d 3s >/dev/null
bin/loadgen -target gateway -url "http://127.0.0.1:$minport" -key "$KEY" -c "$C" -d 3s >/dev/null

echo
echo "== a charge through paygate beside the minimal keyed-charge gateway: $ROUNDS alternating rounds of ${D}s each, c=$C"
echo "   (same cluster, same simulator process; fsync and synchronous_commit: $(sql "SHOW fsync") $(sql "SHOW synchronous_commit"))"
results=$work/rounds
for i in $(seq 1 "$ROUNDS"); do
  round paygate -d "${D}s" >>"$results"
  round minimal -d "${D}s" >>"$results"
done

# Latency at the same load: an open loop at half of paygate's median throughput, both arms.
rate=$(awk '$1 == "paygate" {print $2}' "$results" | sort -n | awk '{a[NR] = $1} END {printf "%.0f", a[int((NR + 1) / 2)] / 2}')
lat=$work/latency
for i in $(seq 1 "$ROUNDS"); do
  round paygate -rate "$rate" -warmup 2s -d "${D}s" >>"$lat"
  round minimal -rate "$rate" -warmup 2s -d "${D}s" >>"$lat"
done

awk -v rate="$rate" -v c="$C" '
function median(arm, col,    n, i, j, v, t) {
  n = 0
  for (i = 1; i <= nr; i++) if (a[i] == arm) v[++n] = row[i, col]
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
# per-charge median of column col over the rounds of arm (col divided by the round'\''s charges)
function per(arm, col, scale,    n, i, j, v, t) {
  n = 0
  for (i = 1; i <= nr; i++) if (a[i] == arm && row[i, 5] > 0) v[++n] = row[i, col] * scale / row[i, 5]
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function line(label, p, m, target, fmt) {
  printf "%-46s %10" fmt " %10" fmt " %8.2f  %s\n", label, p, m, m ? p / m : 0, target
}
FNR == NR { nr++; a[nr] = $1; for (k = 2; k <= NF; k++) row[nr, k] = $k; next }
{ lr++; la[lr] = $1; lrow[lr] = $4 }
END {
  printf "%-46s %10s %10s %8s  %s\n", "per charge (median of the rounds)", "paygate", "minimal", "ratio", "target"
  line("charges/s (closed loop, c=" c ")", median("paygate", 2), median("minimal", 2), "ratio >= 0.85", ".1f")
  line("CPU ms: PostgreSQL (this cluster)", per("paygate", 7, 1), per("minimal", 7, 1), "ratio <= 1.50", ".3f")
  line("CPU ms: gateway", per("paygate", 6, 1), per("minimal", 6, 1), "", ".3f")
  line("CPU ms: simulator", per("paygate", 8, 1), per("minimal", 8, 1), "", ".3f")
  line("CPU ms: load generator", per("paygate", 9, 1), per("minimal", 9, 1), "", ".3f")
  line("rows written (inserted, updated, deleted)", per("paygate", 10, 1), per("minimal", 10, 1), "", ".2f")
  line("WAL bytes", per("paygate", 11, 1), per("minimal", 11, 1), "ratio <= 2.00", ".0f")
  line("commits", per("paygate", 12, 1), per("minimal", 12, 1), "", ".2f")
  line("gateway allocations (KB)", per("paygate", 13, 1 / 1024), per("minimal", 13, 1 / 1024), "paygate <= 30", ".1f")
  line("gateway allocations (objects)", per("paygate", 14, 1), per("minimal", 14, 1), "", ".0f")
  line("p50 ms (closed loop)", median("paygate", 3), median("minimal", 3), "", ".2f")
  line("p99 ms (closed loop)", median("paygate", 4), median("minimal", 4), "", ".2f")
  nr = lr
  for (i = 1; i <= lr; i++) { a[i] = la[i]; row[i, 4] = lrow[i] }
  line("p99 ms at " rate "/s (open loop, both)", median("paygate", 4), median("minimal", 4), "ratio <= 1.50", ".2f")
}' "$results" "$lat"

echo
echo "   each round: arm charges/s p50 p99 charges gw_cpu_ms pg_cpu_ms sim_cpu_ms lg_cpu_ms rows wal_bytes commits alloc_bytes mallocs"
sed 's/^/   /' "$results" "$lat"

echo
echo "== PostgreSQL CPU per charge as a card is used: cards with 1 prior attempt beside cards with 500"
# 128 cards with 500 approvals each (so that a round spreads over cards as the other does, not
# over a few index pages).
bin/loadgen -target gateway -url "http://127.0.0.1:$gwport" -key "$KEY" -c "$C" -cards 128 -card-offset 9000 -n 64000 >/dev/null
hist=$work/history
for i in 1 2 3 4; do
  # Each round of the first kind takes 2000 cards used once so far (the rounds above used
  # cards 1 to 1000, the cards with 500 are 9001 to 9128; card numbers end at 9999): cards
  # 1001 to 9000 make four rounds, so that the median of four is steady.
  off=$((1000 + (i - 1) * 2000))
  bin/loadgen -target gateway -url "http://127.0.0.1:$gwport" -key "$KEY" -c "$C" -cards 2000 -card-offset "$off" -n 2000 >/dev/null
  echo "1 $(round paygate -cards 2000 -card-offset "$off" -n 2000)" >>"$hist"
  echo "500 $(round paygate -cards 128 -card-offset 9000 -n 2000)" >>"$hist"
done
awk '{v[$1] = v[$1] " " $8 / $6} END {
  for (k in v) {
    n = split(v[k], x, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] + 0 < x[i] + 0) { t = x[i]; x[i] = x[j]; x[j] = t }
    med[k] = n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
  }
  printf "%-46s %10.3f\n", "PostgreSQL CPU ms per charge, 1 prior attempt", med[1]
  printf "%-46s %10.3f %8.2f  ratio <= 1.10\n", "PostgreSQL CPU ms per charge, 500+ prior", med[500], med[500] / med[1]
}' "$hist"

echo
# Memory with 1 000 charges in flight: the simulator holds each answer for 2 s.
curl -s -X POST "http://127.0.0.1:$simport/_sim/faults" -d '{"latency_ms": 2000}' >/dev/null
rss=$(bin/loadgen -target gateway -url "http://127.0.0.1:$gwport" -key "$KEY" -inflight 1000 -rss-pid "$gwpid")
printf "%-46s %10s  %s\n" "gateway RSS with 1000 charges in flight (MB)" "$(echo "$rss" | sed -E 's/.*peak_rss_mb=([0-9.]+).*/\1/')" "<= 150"
curl -s -X POST "http://127.0.0.1:$simport/_sim/faults" -d '{"latency_ms": 0}' >/dev/null

echo
echo "== retry amplification: paygate's policy beside stripe-go's default and three nested layers of 3 (same populations)"
go test ./internal/policysim/ -run '^$' -bench Compare -benchtime 1x -count=1 | grep -vE '^(goos|goarch|pkg|cpu|PASS)'

echo
echo "== reconciliation: 10 000 pending charges through the retrieve path against the configured read rate"
go test ./reconcile/ -run '^$' -bench ReconcileRetrieve -benchtime 1x -count=1 | grep -E '^(reconciled|Benchmark)'

echo
echo "== sweeps: 1 000 lost answers (PaymentIntent ids unknown), no processor events, settled by sweeps (target <= 0.1 reads per charge, list pages at >= 90 % of the read rate)"
go test ./reconcile/ -run '^$' -bench ReconcileSweep -benchtime 1x -count=1 | grep -E '^(swept|Benchmark)'

echo
echo "== replicas: one retry budget and breaker for the fleet, and a failover to a synchronous standby"
scripts/bench-fleet.sh

echo
echo "== webhooks: 1 000 lost answers settled by the processor's events"
scripts/bench-webhooks.sh
