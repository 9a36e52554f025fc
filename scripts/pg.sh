#!/usr/bin/env bash
# pg.sh: a throwaway PostgreSQL cluster from the installed binaries.
#
#   scripts/pg.sh start DIR PORT   initialise DIR if needed, start the cluster, print DATABASE_URL
#                                  (PAYGATE_PG_OPTIONS adds server settings: "-c name=value ...")
#   scripts/pg.sh stop DIR         stop the cluster in DIR (fast shutdown)
#
# initdb refuses to run as root, so as root the cluster belongs to the postgres user and
# every PostgreSQL command runs as that user. The server listens on 127.0.0.1 only and
# trusts local connections: it is for development and tests, never for production.
set -euo pipefail

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
  echo "paygate: PostgreSQL server binaries ($name) not found: install them (apt-get install postgresql) or set DATABASE_URL" >&2
  exit 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    # runuser keeps no root privileges and needs no password.
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: pg.sh start DIR PORT | stop DIR" >&2; exit 2; }

case "$cmd" in
start)
  port=${3:?usage: pg.sh start DIR PORT}
  initdb=$(find_bin initdb)
  pg_ctl=$(find_bin pg_ctl)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || { echo "paygate: running as root needs the postgres user (install postgresql) or set DATABASE_URL" >&2; exit 1; }
    chown postgres "$dir"
    # The postgres user must be able to reach DIR through its parents.
    p=$dir
    while [ "$p" != / ]; do p=$(dirname "$p"); chmod o+x "$p" 2>/dev/null || true; done
  fi
  if [ ! -f "$dir/pgdata/PG_VERSION" ]; then
    as_owner "$initdb" -D "$dir/pgdata" -U paygate -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
      || as_owner "$initdb" -D "$dir/pgdata" -U paygate -A trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  if as_owner "$pg_ctl" -D "$dir/pgdata" status >/dev/null 2>&1; then
    # Already running (an earlier run left it up): use it on the port it listens on.
    port=$(sed -n 4p "$dir/pgdata/postmaster.pid")
  else
    as_owner "$pg_ctl" -D "$dir/pgdata" -l "$dir/postgres.log" -w -t 30 start \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 -c fsync=on -c synchronous_commit=on ${PAYGATE_PG_OPTIONS:-}" >/dev/null \
      || { tail -20 "$dir/postgres.log" >&2; exit 1; }
  fi
  echo "postgres://paygate@127.0.0.1:$port/postgres?sslmode=disable"
  ;;
stop)
  pg_ctl=$(find_bin pg_ctl)
  [ -f "$dir/pgdata/PG_VERSION" ] || exit 0
  as_owner "$pg_ctl" -D "$dir/pgdata" -m fast -w stop >/dev/null 2>&1 || true
  ;;
*)
  echo "usage: pg.sh start DIR PORT | stop DIR" >&2
  exit 2
  ;;
esac
