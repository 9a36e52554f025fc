#!/usr/bin/env bash
# run.sh: start the gateway as a developer would, or (with "migrate") only migrate.
#
# With DATABASE_URL unset the database is a project-local cluster under .data/ that stays
# between runs and is stopped when the gateway exits. The built-in simulator keeps its
# processor account in .data/sim_account, and the development keys of the merchant "dev"
# are kept in .data/dev_keys and reused while they are valid. Ctrl-C (in a terminal) or
# SIGTERM stops the gateway, then the cluster, and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

mode=${1:-serve}
mkdir -p .data
owner=.data/run.pid
# Whether this run stops the .data/ cluster when it ends: only a cluster no other live run
# of this script is using (one left running by a run that was killed is this run's now).
stop_db=false
pid=

cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ "$stop_db" = true ]; then
    scripts/pg.sh stop .data/pg || true
    rm -f "$owner"
  fi
}
on_exit cleanup

# A signal stops the gateway; the script goes on from its wait and ends with the gateway.
# Before the gateway runs, it ends the script at once (the cleanup still runs).
stopping=false
on_signal() {
  stopping=true
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
  else
    exit 0
  fi
}
trap on_signal INT TERM

if [ -z "${DATABASE_URL:-}" ]; then
  if [ -f "$owner" ] && p=$(cat "$owner") && kill -0 "$p" 2>/dev/null && grep -qs run.sh "/proc/$p/cmdline"; then
    : # another make run (or make migrate) uses the cluster: it stops it
  else
    stop_db=true
    echo $$ >"$owner"
  fi
  # The usual port, or the next free one: a cluster that already runs keeps its own.
  port=
  for p in $(seq "${PAYGATE_DEV_PG_PORT:-54329}" "$((${PAYGATE_DEV_PG_PORT:-54329} + 19))"); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      port=$p
      break
    fi
  done
  [ -n "$port" ] || port=$(free_port)
  DATABASE_URL=$(scripts/pg.sh start .data/pg "$port")
  export DATABASE_URL
fi

bin/paygate migrate
[ "$mode" = migrate ] && exit 0

# The keys are created and printed once serve answers, so a bad setting leaves serve's one
# line naming it, and no keys. An address another process listens on is refused first: it
# would answer in serve's place.
addr=${PAYGATE_ADDR:-127.0.0.1:8080}
host=${addr%:*}; host=${host#[}; host=${host%]}
if (exec 3<>"/dev/tcp/$host/${addr##*:}") 2>/dev/null; then
  echo "paygate: PAYGATE_ADDR: cannot listen on $addr: address already in use" >&2
  exit 1
fi
# serve requires the processor to be named: the development gateway charges against its
# built-in simulator unless the developer names another, and the simulator answers as the
# same processor account on every run (charges recorded at it stay its own, and so do the
# card fingerprints the network rules count).
export PAYGATE_PROCESSOR=${PAYGATE_PROCESSOR:-sim}
export PAYGATE_SIM_ACCOUNT_FILE=${PAYGATE_SIM_ACCOUNT_FILE:-.data/sim_account}
# Webhook endpoints may be a receiver on this machine, over plain http:// to loopback.
export PAYGATE_WEBHOOK_ALLOW_HTTP=${PAYGATE_WEBHOOK_ALLOW_HTTP:-1}
# In a terminal the gateway runs as a job of its own and gets the terminal once it is up:
# Ctrl-C then reaches the gateway alone, which stops gracefully, and make sees this script
# end well. Elsewhere SIGTERM (to make, or to this script) stops it.
interactive=false
if [ -t 0 ] && [ -t 1 ]; then
  set -m
  interactive=true
fi
bin/paygate serve &
pid=$!
for _ in $(seq 1 600); do
  if ! kill -0 "$pid" 2>/dev/null; then
    status=0; wait "$pid" || status=$?
    pid=
    exit "$status"
  fi
  curl -fs -o /dev/null "http://$addr/healthz" && break
  sleep 0.1
done

# One development key per role for the merchant "dev": the ones kept from an earlier run
# while the gateway still knows them, new ones otherwise.
keys=.data/dev_keys
declare -A key=()
if [ -f "$keys" ]; then
  while read -r role secret; do
    [ -n "${secret:-}" ] || continue
    if curl -fs -H "Authorization: Bearer $secret" "http://$addr/v1/key" 2>/dev/null |
      grep -q "\"merchant\":\"dev\",\"role\":\"$role\""; then
      key[$role]=$secret
    fi
  done <"$keys"
fi
for role in checkout operator auditor; do
  [ -n "${key[$role]:-}" ] || key[$role]=$(bin/paygate keys create --merchant dev --role "$role")
done
(umask 077 && for role in checkout operator auditor; do echo "$role ${key[$role]}"; done >"$keys")

processor="$PAYGATE_PROCESSOR at ${STRIPE_API_BASE:-Stripe}"
[ "$PAYGATE_PROCESSOR" = sim ] && processor="the built-in simulator, its account kept in $PAYGATE_SIM_ACCOUNT_FILE"
cat <<EOF
paygate on http://$addr (processor: $processor)
  console:  http://$addr/ops/
  database: DATABASE_URL='$DATABASE_URL'
development API keys of the merchant dev (kept in $keys, reused by the next make run):
  checkout  ${key[checkout]}
  operator  ${key[operator]}
  auditor   ${key[auditor]}
a key for another merchant:
  DATABASE_URL='$DATABASE_URL' bin/paygate keys create --merchant other --role checkout
Ctrl-C stops the gateway and the database.
EOF

status=0
if [ "$interactive" = true ] && [ "$stopping" = false ]; then
  # Ctrl-C now reaches the gateway alone: it stops gracefully and exits 0.
  fg %% >/dev/null || status=$?
fi
# Until the gateway ends: a signal interrupts the wait, and the gateway stops on its own.
while kill -0 "$pid" 2>/dev/null; do
  status=0
  wait "$pid" || status=$?
done
pid=
# Stopped by a signal, a gateway that shut down gracefully is a clean end.
if [ "$stopping" = true ] && { [ "$status" = 0 ] || [ "$status" -gt 128 ]; }; then
  exit 0
fi
exit "$status"
