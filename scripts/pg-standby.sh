#!/usr/bin/env bash
# pg-standby.sh: a throwaway PostgreSQL primary with a synchronous hot standby, from the
# installed binaries, on this machine: for trying replicas and a failover.
#
#   scripts/pg-standby.sh start DIR PRIMARY_PORT STANDBY_PORT
#       initialise DIR/primary (scripts/pg.sh), clone it into DIR/standby with pg_basebackup -R
#       (streaming replication through a slot), start the standby, make it the primary's
#       synchronous standby (synchronous_standby_names, synchronous_commit=on: a commit is
#       acknowledged once the standby has flushed it), and print two lines:
#         DATABASE_URL=postgres://...@127.0.0.1:PRIMARY_PORT,127.0.0.1:STANDBY_PORT/postgres?...&target_session_attrs=read-write
#         PAYGATE_READ_DATABASE_URL=postgres://...@127.0.0.1:STANDBY_PORT,127.0.0.1:PRIMARY_PORT/postgres?...&target_session_attrs=prefer-standby
#   scripts/pg-standby.sh failover DIR
#       stop the primary with -m immediate (as a crash would) and promote the standby; print
#       how long the promotion took. paygate reconnects to the new primary by itself.
#   scripts/pg-standby.sh stop DIR
#       stop both servers (fast shutdown).
#
# As root, the clusters belong to the postgres user and every PostgreSQL command runs as that
# user (initdb refuses root). Both listen on 127.0.0.1 only and trust local connections: for
# development and tests, never for production.
set -euo pipefail
cd "$(dirname "$0")/.."

find_bin() {
  local name=$1 dir
  if command -v "$name" >/dev/null 2>&1; then
    command -v "$name"
    return 0
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/$name" ]; then
      echo "$dir/$name"
      return 0
    fi
  done
  echo "paygate: PostgreSQL server binaries ($name) not found: install them (apt-get install postgresql)" >&2
  exit 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# The standby's name, as the primary's synchronous_standby_names and the walreceiver's
# application_name (cluster_name) spell it.
name=paygate_standby

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: pg-standby.sh start DIR PRIMARY_PORT STANDBY_PORT | failover DIR | stop DIR" >&2; exit 2; }

case "$cmd" in
start)
  p1=${3:?usage: pg-standby.sh start DIR PRIMARY_PORT STANDBY_PORT}
  p2=${4:?usage: pg-standby.sh start DIR PRIMARY_PORT STANDBY_PORT}
  pg_ctl=$(find_bin pg_ctl)
  basebackup=$(find_bin pg_basebackup)
  psql=$(find_bin psql)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # The primary: scripts/pg.sh's cluster, with room for a WAL sender and its slot. Settings
  # given on the command line are not copied to the standby by pg_basebackup.
  PAYGATE_PG_OPTIONS="-c wal_level=replica -c max_wal_senders=4 -c max_replication_slots=4 ${PAYGATE_PG_OPTIONS:-}" \
    scripts/pg.sh start "$dir/primary" "$p1" >/dev/null
  primary="host=127.0.0.1 port=$p1 user=paygate dbname=postgres"
  if [ ! -f "$dir/standby/pgdata/PG_VERSION" ]; then
    mkdir -p "$dir/standby"
    [ "$(id -u)" = 0 ] && chown postgres "$dir/standby"
    as_owner "$basebackup" -d "$primary" -D "$dir/standby/pgdata" -R -X stream -C -S "$name" >"$dir/standby/basebackup.log" 2>&1 \
      || { cat "$dir/standby/basebackup.log" >&2; exit 1; }
  fi
  PAYGATE_PG_OPTIONS="-c cluster_name=$name -c hot_standby=on ${PAYGATE_PG_OPTIONS:-}" \
    scripts/pg.sh start "$dir/standby" "$p2" >/dev/null
  # Synchronous from now on: the standby is connected, so no commit waits for nobody.
  # ALTER SYSTEM writes the primary's own postgresql.auto.conf, which the standby (cloned
  # before) does not have: once promoted, it waits for no standby of its own.
  as_owner "$psql" -d "$primary" -qAtc "ALTER SYSTEM SET synchronous_standby_names = '$name'" >/dev/null
  as_owner "$psql" -d "$primary" -qAtc "SELECT pg_reload_conf()" >/dev/null
  for _ in $(seq 1 300); do
    state=$(as_owner "$psql" -d "$primary" -qAtc "SELECT sync_state FROM pg_stat_replication WHERE application_name = '$name'")
    [ "$state" = sync ] && break
    sleep 0.1
  done
  [ "${state:-}" = sync ] || { echo "paygate: the standby did not become synchronous (state: ${state:-none})" >&2; exit 1; }
  echo "DATABASE_URL=postgres://paygate@127.0.0.1:$p1,127.0.0.1:$p2/postgres?sslmode=disable&target_session_attrs=read-write"
  echo "PAYGATE_READ_DATABASE_URL=postgres://paygate@127.0.0.1:$p2,127.0.0.1:$p1/postgres?sslmode=disable&target_session_attrs=prefer-standby"
  ;;
failover)
  pg_ctl=$(find_bin pg_ctl)
  dir=$(cd "$dir" && pwd)
  start=$(date +%s%N)
  as_owner "$pg_ctl" -D "$dir/primary/pgdata" -m immediate -w stop >/dev/null
  stopped=$(date +%s%N)
  as_owner "$pg_ctl" -D "$dir/standby/pgdata" -w -t 60 promote >/dev/null
  done=$(date +%s%N)
  echo "primary stopped (immediate) in $(((stopped - start) / 1000000)) ms; standby promoted in $(((done - stopped) / 1000000)) ms"
  ;;
stop)
  pg_ctl=$(find_bin pg_ctl)
  for node in standby primary; do
    [ -f "$dir/$node/pgdata/PG_VERSION" ] || continue
    as_owner "$pg_ctl" -D "$dir/$node/pgdata" -m fast -w stop >/dev/null 2>&1 || true
  done
  ;;
*)
  echo "usage: pg-standby.sh start DIR PRIMARY_PORT STANDBY_PORT | failover DIR | stop DIR" >&2
  exit 2
  ;;
esac
