#!/usr/bin/env bash
# Fleet mode against a real Redis (issue 15, fleet/): the sync's unit
# tests, the 3-process shared-budget test, the Redis kill-and-restart
# test, the cost tests, all of fleet/'s tests built with the e2e tag; then
# examples/fleet's short run.
#
#   bash scripts/e2e-fleet.sh        # about 30 s
#
# Installs Debian's redis-server package if redis-server is missing, starts
# one on 127.0.0.1 (a free port, a temp dir, no persistence, not
# daemonized), passes its address in FLOODGATE_REDIS_ADDR, and stops it on
# exit, whatever happens. The kill-and-restart tests start their own
# redis-server from PATH. If redis-server cannot be installed it skips,
# unless CI is set, where it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
began=$SECONDS

if ! command -v redis-server >/dev/null 2>&1; then
  echo "e2e-fleet: installing Debian's redis-server package"
  if ! { command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] &&
    apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }; then
    if [ -n "${CI:-}" ]; then
      echo "e2e-fleet: FAIL: redis-server is missing and apt-get could not install it (CI is set, so this is an error)" >&2
      exit 1
    fi
    echo "e2e-fleet: SKIP: redis-server is missing and apt-get could not install it (needs root and Debian's archive); set CI to make this an error"
    exit 0
  fi
fi
echo "e2e-fleet: $(redis-server --version | cut -d' ' -f1-3)"

tmp=$(mktemp -d)
redis_pid=
cleanup() {
  status=$?
  if [ -n "$redis_pid" ]; then
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
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free port: try random ones until a redis-server stays up on one and
# answers (one that is taken makes it exit at once).
port=
for _ in $(seq 20); do
  try=$((20000 + RANDOM % 40000))
  redis-server --bind 127.0.0.1 --port "$try" --dir "$tmp" --save '' --appendonly no --daemonize no \
    >"$tmp/redis.log" 2>&1 &
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
[ -n "$port" ] || { echo "e2e-fleet: FAIL: redis-server did not start on any of 20 ports" >&2; exit 1; }
export FLOODGATE_REDIS_ADDR="127.0.0.1:$port"

# go-redis's dial retries while Redis is down are noise
for dir in fleet examples/fleet; do
  echo "== go test -tags e2e -race -count=1 ./... in $dir"
  (cd "$dir" && go test -tags e2e -race -count=1 -v ./... 2>&1 | grep -v '^=== \|pool.go:')
done
echo "e2e-fleet: ok in $((SECONDS - began)) s"
