#!/usr/bin/env bash
# run.sh: start the gateway as a developer would, or (with "migrate") only migrate.
# With DATABASE_URL unset the database is a project-local cluster under .data/ that stays
# between runs and is stopped when the gateway exits.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

mode=${1:-serve}
if [ -z "${DATABASE_URL:-}" ]; then
  port=${PAYGATE_DEV_PG_PORT:-54329}
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    port=$(free_port) # another cluster holds the usual port; ours takes a free one
  fi
  # A cluster another make run started stays up when this one ends: only ours is stopped.
  pidfile=.data/pg/pgdata/postmaster.pid
  if [ -f "$pidfile" ] && kill -0 "$(head -1 "$pidfile")" 2>/dev/null; then
    stop_db=:
  else
    stop_db='scripts/pg.sh stop .data/pg'
  fi
  DATABASE_URL=$(scripts/pg.sh start .data/pg "$port")
  export DATABASE_URL
  trap "$stop_db" EXIT
fi
stop_db=${stop_db:-:}

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
# built-in simulator unless the developer names another.
PAYGATE_PROCESSOR=${PAYGATE_PROCESSOR:-sim} bin/paygate serve &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid; '"$stop_db" EXIT INT TERM
for _ in $(seq 1 600); do
  if ! kill -0 "$pid" 2>/dev/null; then
    status=0; wait "$pid" || status=$?
    exit "$status"
  fi
  curl -fs -o /dev/null "http://$addr/healthz" && break
  sleep 0.1
done

# One development key per role for the merchant "dev", printed for the developer.
echo "development API keys (merchant dev):"
for role in checkout operator auditor; do
  printf '  %-9s %s\n' "$role" "$(bin/paygate keys create --merchant dev --role "$role")"
done
echo "gateway on http://$addr (Ctrl-C stops it)"
wait $pid
