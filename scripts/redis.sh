# Sourced by scripts/e2e-*.sh that need a real Redis; not run on its own.
#
#   redis_install NAME          installs Debian's redis-server package if
#                               redis-server is missing; if it cannot, exits
#                               0 (a skip), or 1 when CI is set
#   redis_start NAME [ARGS...]  starts one on 127.0.0.1 (a free port, a temp
#                               dir, no persistence, not daemonized, ARGS
#                               added), exports FLOODGATE_REDIS_ADDR, and
#                               stops it on exit, whatever happens; sets tmp
#                               (the temp dir, removed on exit) and port
#
# NAME prefixes every message.

redis_install() {
  command -v redis-server >/dev/null 2>&1 && return 0
  echo "$1: installing Debian's redis-server package"
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] &&
    apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; then
    return 0
  fi
  if [ -n "${CI:-}" ]; then
    echo "$1: FAIL: redis-server is missing and apt-get could not install it (CI is set, so this is an error)" >&2
    exit 1
  fi
  echo "$1: SKIP: redis-server is missing and apt-get could not install it (needs root and Debian's archive); set CI to make this an error"
  exit 0
}

redis_cleanup() {
  status=$?
  if [ -n "${redis_pid:-}" ]; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  if [ "$status" -ne 0 ] && [ -s "$tmp/redis.log" ]; then
    echo "--- last lines of redis.log"
    tail -n 20 "$tmp/redis.log"
  fi
  rm -rf "$tmp"
  exit "$status"
}

redis_start() {
  local name=$1 try
  shift
  tmp=$(mktemp -d)
  redis_pid=
  trap redis_cleanup EXIT
  trap 'exit 130' INT TERM
  # A free port: try random ones until a redis-server stays up on one and
  # answers (one that is taken makes it exit at once).
  port=
  for _ in $(seq 20); do
    try=$((20000 + RANDOM % 40000))
    redis-server --bind 127.0.0.1 --port "$try" --dir "$tmp" --save '' --appendonly no --daemonize no \
      "$@" >"$tmp/redis.log" 2>&1 &
    redis_pid=$!
    for _ in $(seq 100); do # up to 10 s
      kill -0 "$redis_pid" 2>/dev/null || break
      if redis-cli -h 127.0.0.1 -p "$try" ping 2>/dev/null | grep -q PONG; then port=$try; break; fi
      sleep 0.1
    done
    [ -n "$port" ] && break
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=
  done
  [ -n "$port" ] || { echo "$name: FAIL: redis-server did not start on any of 20 ports" >&2; exit 1; }
  export FLOODGATE_REDIS_ADDR="127.0.0.1:$port"
}
