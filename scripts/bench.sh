#!/usr/bin/env bash
# bench.sh: the benchmarks of the design's Performance table, printed in one run.
# Like make test, it starts a throwaway PostgreSQL when DATABASE_URL is unset (fsync and
# synchronous_commit on).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

# The bench cluster holds its working set in memory, as a production server sized for its
# write rate does: with the default 128 MB, backends write evicted pages out during the runs,
# and the kernel's bursts of writeback stall the WAL's flushes (commits wait 100 ms and more).
PAYGATE_PG_OPTIONS="-c shared_buffers=1GB" throwaway_database bench

echo "== retry budget: one decision (target <= 100 ns, 0 allocs uncontended; contended on 2 cores beside it)"
go test ./retry/ -run '^$' -bench 'Budget' -benchmem -count=1 | grep -E '^(Benchmark|ok)'

echo
echo "== charges through the whole gateway against pgbench's bound (fsync and synchronous_commit on)"
go build -o bin/loadgen ./cmd/loadgen
C=${BENCH_CONCURRENCY:-16}
D=${BENCH_SECONDS:-10}
work=$(mktemp -d -t paygate-bench-run.XXXXXX)
pids=()
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
on_exit stop_all

# cpu_snap PID...: "pid ticks" (user and system CPU, in clock ticks) for each live process.
cpu_snap() {
  local p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && awk -v p="$p" '{print p, $14 + $15}' "/proc/$p/stat" 2>/dev/null
  done
  return 0
}
# cpu_ms BEFORE AFTER: the CPU milliseconds the processes of AFTER used since BEFORE.
cpu_ms() {
  awk -v hz="$(getconf CLK_TCK)" 'NR == FNR {t0[$1] = $2; next} {d += $2 - t0[$1]} END {printf "%.0f", d * 1000 / hz}' \
    <(echo "$1") <(echo "$2")
}
pg_pids() { pgrep -x postgres || true; }
# busy_ms: the CPU milliseconds the whole machine spent busy since boot (every core).
busy_ms() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / {printf "%.0f", ($2 + $3 + $4 + $7 + $8) * 1000 / hz}' /proc/stat; }
# settle starts a measured run from a clean state, as pgbench does by default: the tables
# vacuumed and analyzed. No checkpoint is forced: right after one, the first change of every
# page writes the whole page to the WAL, and a run of ten seconds would measure little else.
settle() { psql "$BENCH_DB" -qc "VACUUM ANALYZE" >/dev/null; }

base=${DATABASE_URL%%\?*}
base=${base%/*}
psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS paygate_bench" >/dev/null
psql "$DATABASE_URL" -qc "CREATE DATABASE paygate_bench" >/dev/null
BENCH_DB="$base/paygate_bench?sslmode=disable"
psql "$BENCH_DB" -Atqc "SHOW fsync; SHOW synchronous_commit" | paste -sd' ' | sed 's/^/postgres fsync, synchronous_commit: /'

simport=$(free_port); gwport=$(free_port)
bin/paygate sim --addr "127.0.0.1:$simport" --account acct_bench >"$work/sim.log" 2>&1 & simpid=$!; pids+=($simpid)
DATABASE_URL=$BENCH_DB bin/paygate migrate >/dev/null
KEY=$(DATABASE_URL=$BENCH_DB bin/paygate keys create --merchant bench --role checkout)
DATABASE_URL=$BENCH_DB PAYGATE_ADDR="127.0.0.1:$gwport" PAYGATE_PROCESSOR=stripe STRIPE_SECRET_KEY=sk_test_bench \
  STRIPE_API_BASE="http://127.0.0.1:$simport" PAYGATE_DB_MAX_CONNS=$((C + 8)) PAYGATE_METRICS_ADDR=127.0.0.1:0 \
  bin/paygate serve >"$work/gateway.log" 2>&1 & gwpid=$!; pids+=($gwpid)
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$gwport") 2>/dev/null && break; sleep 0.1; done

bin/loadgen -target gateway -url "http://127.0.0.1:$gwport" -key "$KEY" -c "$C" -d 2s >/dev/null   # warm-up
settle
s0=$(cpu_snap "$simpid")
sim=$(bin/loadgen -target sim -url "http://127.0.0.1:$simport" -c "$C" -d "${D}s")
sim_cpu=$(cpu_ms "$s0" "$(cpu_snap "$simpid")")
# Commits are counted by transaction ids: every transaction that writes takes one, and the
# cumulative statistics lag behind by up to the backends' flush interval.
xids() { psql "$BENCH_DB" -Atqc "SELECT pg_snapshot_xmax(pg_current_snapshot())"; }
commits0=$(xids)
settle
p0=$(cpu_snap $(pg_pids)); g0=$(cpu_snap "$gwpid"); s0=$(cpu_snap "$simpid")
gw=$(bin/loadgen -target gateway -url "http://127.0.0.1:$gwport" -key "$KEY" -c "$C" -d "${D}s")
gw_pg_cpu=$(cpu_ms "$p0" "$(cpu_snap $(pg_pids))"); gw_gw_cpu=$(cpu_ms "$g0" "$(cpu_snap "$gwpid")")
gw_sim_cpu=$(cpu_ms "$s0" "$(cpu_snap "$simpid")")
commits1=$(xids)

psql "$BENCH_DB" -qc "CREATE TABLE IF NOT EXISTS bench_insert (id bigserial PRIMARY KEY, v int NOT NULL)" >/dev/null
echo "INSERT INTO bench_insert (v) VALUES (1);" >"$work/insert.sql"
settle
b0=$(busy_ms)
(cd "$work" && pgbench -n -c "$C" -j 2 -T "$D" -f insert.sql -l --log-prefix=pgb "$BENCH_DB" >pgbench.out 2>&1)
pgb_cpu=$(( $(busy_ms) - b0 ))
pg_tx=$(grep -E '^number of transactions actually processed' "$work/pgbench.out" | sed -E 's/.*: ([0-9]+).*/\1/')
pg_tps=$(grep -E '^tps' "$work/pgbench.out" | head -1 | sed -E 's/^tps = ([0-9.]+).*/\1/')
pg_p99=$(cat "$work"/pgb.* | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {i=int(NR*0.99); if (i<1) i=1; printf "%.3f", a[i]/1000}')

field() { echo "$1" | tr ' ' '\n' | grep "^$2=" | cut -d= -f2; }
gw_rate=$(field "$gw" rate | tr -d '/s'); gw_p50=$(field "$gw" p50_ms); gw_p99=$(field "$gw" p99_ms); gw_n=$(field "$gw" requests)
if [ "$(field "$gw" errors)" != 0 ] || [ "$gw_n" = 0 ]; then
  echo "gateway answered errors during the run: $gw; its log ends:" >&2
  tail -5 "$work/gateway.log" >&2
fi
sim_p50=$(field "$sim" p50_ms); sim_p99=$(field "$sim" p99_ms)

# Latency at half the peak rate, open loop, after two seconds at that rate unrecorded: five
# rounds of the simulator alone and then the gateway, judged on the median round, so that
# one stall of the machine does not decide the figure (each round is printed). Stalls come
# from outside the gateway: the disk's writeback bursts, and autovacuum's first visits to the
# new database (an analyze of the growing tables takes a core for a second and makes every
# connection plan its statements again).
half=$(awk -v r="$gw_rate" 'BEGIN {printf "%.0f", r/2}')
rounds=""
for _ in 1 2 3 4 5; do
  settle
  simh=$(bin/loadgen -target sim -url "http://127.0.0.1:$simport" -rate "$half" -warmup 2s -d "${D}s")
  settle
  gwh=$(bin/loadgen -target gateway -url "http://127.0.0.1:$gwport" -key "$KEY" -rate "$half" -warmup 2s -d "${D}s")
  rounds+="$(field "$simh" p50_ms) $(field "$simh" p99_ms) $(field "$gwh" p50_ms) $(field "$gwh" p99_ms)"$'\n'
done

awk -v gw="$gw_rate" -v tps="$pg_tps" -v c="$C" -v n="$gw_n" -v k0="$commits0" -v k1="$commits1" \
    -v pgp99="$pg_p99" -v half="$half" -v rounds="$rounds" 'BEGIN {
  bound = tps / 2
  printf "%-52s %12s %12s\n", "", "measured", "target"
  printf "%-52s %12.1f\n", "pgbench single-row insert TPS (c=" c ")", tps
  printf "%-52s %12.1f\n", "PostgreSQL bound: half of it (two durable writes)", bound
  printf "%-52s %12.1f %12s\n", "gateway charges/s (c=" c ")", gw, ">= " sprintf("%.1f", 0.7 * bound)
  printf "%-52s %11.1f%% %12s\n", "gateway / bound", 100 * gw / bound, ">= 70%"
  printf "%-52s %12.2f %12s\n", "commits per charge observed", (k1 - k0) / n, "2"
  printf "%-52s %12.3f\n", "pgbench p99 commit latency (ms)", pgp99
  nr = split(rounds, lines, "\n")
  k = 0
  for (i = 1; i <= nr; i++) {
    if (split(lines[i], f, " ") < 4) continue
    k++; sp99[k] = f[2]; a50[k] = f[3] - f[1]; a99[k] = f[4] - f[2]
    all = all sprintf("%s%.1f", k > 1 ? ", " : "", a99[k])
  }
  m = median(a99, k)
  printf "%-52s %12.3f\n", "simulator alone p99 at " half "/s (ms)", sp99[idx]
  printf "%-52s %12.3f\n", "gateway p50 added over the simulator (ms)", a50[idx]
  printf "%-52s %12.3f %12s\n", "gateway p99 added over the simulator (ms)", m, "<= " sprintf("%.3f", 3 + 2 * pgp99)
  printf "%-52s %12s\n", "  p99 added in each of the " k " rounds (ms)", all
}
# median returns the median of v[1..n] (n odd) and sets idx to its round.
function median(v, n,    i, j, below) {
  for (i = 1; i <= n; i++) {
    below = 0
    for (j = 1; j <= n; j++) if (v[j] < v[i] || (v[j] == v[i] && j < i)) below++
    if (below == int(n / 2)) { idx = i; return v[i] }
  }
}'

# Where the machine's time goes: CPU per charge by process, beside what the target rate
# leaves per charge and what its fixed parts (pgbench's two inserts, the simulator and the
# load generator on their own) take of it.
awk -v n="$gw_n" -v pg="$gw_pg_cpu" -v g="$gw_gw_cpu" -v s="$gw_sim_cpu" -v lg="$(field "$gw" cpu_ms)" \
    -v sn="$(field "$sim" requests)" -v ss="$sim_cpu" -v sl="$(field "$sim" cpu_ms)" \
    -v tx="$pg_tx" -v bcpu="$pgb_cpu" -v tps="$pg_tps" -v cores="$(nproc)" 'BEGIN {
  printf "\nmachine time per charge (CPU ms over all processes; %d cores shared by all of them)\n", cores
  printf "%-52s %12.3f\n", "  PostgreSQL (every postgres process)", pg / n
  printf "%-52s %12.3f\n", "  gateway", g / n
  printf "%-52s %12.3f\n", "  simulator", s / n
  printf "%-52s %12.3f\n", "  load generator", lg / n
  printf "%-52s %12.3f\n", "  all", (pg + g + s + lg) / n
  target = 0.7 * tps / 2
  printf "%-52s %12.3f\n", "machine time per charge at the target rate", cores * 1000 / target
  printf "%-52s %12.3f\n", "  of which two pgbench inserts (the machine busy)", 2 * bcpu / tx
  printf "%-52s %12.3f\n", "  of which the simulator and the load generator alone", (ss + sl) / sn
}'

# Memory with 1 000 charges in flight: the simulator holds each answer for 2 s.
curl -s -X POST "http://127.0.0.1:$simport/_sim/faults" -d '{"latency_ms": 2000}' >/dev/null
rss=$(bin/loadgen -target gateway -url "http://127.0.0.1:$gwport" -key "$KEY" -inflight 1000 -rss-pid "$gwpid")
printf "%-52s %12s %12s\n" "gateway RSS with 1000 charges in flight (MB)" "$(field "$rss" peak_rss_mb)" "<= 150"

echo
echo "== a charge's two phases through the store, 8 at a time over 500 cards: cards with approvals only (the intent in one round trip) beside cards with a decline (two)"
go test ./store/ -run '^$' -bench ChargePhases -benchtime 6000x -count=1 | grep -E '^Benchmark'

echo
echo "== retry amplification: paygate's policy beside stripe-go's default and three nested layers of 3 (same populations)"
go test ./policysim/ -run '^$' -bench Compare -benchtime 1x -count=1 | grep -vE '^(goos|goarch|pkg|cpu|PASS)'

echo
echo "== reconciliation: 10 000 pending charges through the retrieve path against the configured read rate"
go test ./janitor/ -run '^$' -bench ReconcileRetrieve -benchtime 1x -count=1 | grep -E '^(reconciled|Benchmark)'
