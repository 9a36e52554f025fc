# lib.sh: shared by the scripts: a free loopback port, and a throwaway database.

# free_port prints a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "paygate: no free port found" >&2
  return 1
}
