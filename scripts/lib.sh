# lib.sh: shared by the scripts: a free loopback port, and a throwaway database.

# free_port prints a TCP port on 127.0.0.1 that nothing listens on now, below the kernel's
# ephemeral range: a port there may be the local end of an outgoing connection, which no
# listener can bind and no connection attempt reveals.
free_port() {
  local p low
  low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$low" -gt 20100 ] 2>/dev/null || low=32768
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % (low - 20000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "paygate: no free port found" >&2
  return 1
}

# on_exit runs a command when the script exits, after the ones registered later (LIFO).
exit_cmds=()
on_exit() {
  exit_cmds+=("$1")
  trap 'for ((i = ${#exit_cmds[@]} - 1; i >= 0; i--)); do eval "${exit_cmds[i]}"; done' EXIT
}

# throwaway_database exports DATABASE_URL: the caller's, or a new cluster in a temporary
# directory (named after $1) that is removed on exit; PAYGATE_PGDATA is then its data
# directory (empty for the caller's database).
throwaway_database() {
  PAYGATE_PGDATA=
  [ -n "${DATABASE_URL:-}" ] && return 0
  local tmp
  tmp=$(mktemp -d -t "paygate-$1.XXXXXX")
  on_exit "scripts/pg.sh stop '$tmp' || true; rm -rf '$tmp'"
  # A port can be taken between the look and the bind: try another one then.
  local try
  for try in 1 2 3; do
    DATABASE_URL=$(scripts/pg.sh start "$tmp" "$(free_port)") && break
    [ "$try" = 3 ] && return 1
    echo "paygate: retrying the throwaway PostgreSQL on another port" >&2
  done
  PAYGATE_PGDATA=$tmp/pgdata
  export DATABASE_URL
}
