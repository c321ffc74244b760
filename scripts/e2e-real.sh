#!/usr/bin/env bash
# Real-server trials of floodgate (issue 12, bench/real): a real Redis
# stalled by DEBUG SLEEP and made to serve a busy client, and a net/http
# server behind an in-process toxiproxy (2 s and 300 ms latencies,
# reset_peer); floodgate's default gate beside plain go-redis v9, net/http
# and failsafe-go. Prints the tables and the targets.
#
#   bash scripts/e2e-real.sh         # short form: the test bench/real TestReal (-tags e2e), about 45 s
#   bash scripts/e2e-real.sh -full   # full form: bench/cmd/real -full, about 90 s
#
# Installs Debian's redis-server package if redis-server is missing, starts
# one on 127.0.0.1 (a free port, a temp dir, no persistence, DEBUG allowed
# from loopback, not daemonized), passes its address in FLOODGATE_REDIS_ADDR,
# and stops it on exit, whatever happens. If redis-server cannot be installed
# it skips, unless CI is set, where it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
began=$SECONDS

full=
case "${1:-}" in
  "") ;;
  -full) full=1 ;;
  *) echo "usage: $0 [-full]" >&2; exit 2 ;;
esac

if ! command -v redis-server >/dev/null 2>&1; then
  echo "e2e-real: installing Debian's redis-server package"
  if ! { command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] &&
    apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }; then
    if [ -n "${CI:-}" ]; then
      echo "e2e-real: FAIL: redis-server is missing and apt-get could not install it (CI is set, so this is an error)" >&2
      exit 1
    fi
    echo "e2e-real: SKIP: redis-server is missing and apt-get could not install it (needs root and Debian's archive); set CI to make this an error"
    exit 0
  fi
fi
version=$(redis-server --version | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p')
echo "e2e-real: redis-server $version"
debug=()
# Redis 7 disables DEBUG by default; before 7 it is always enabled and the
# option does not exist.
if [ "${version%%.*}" -ge 7 ]; then debug=(--enable-debug-command local); fi

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

(cd bench && go build -o "$tmp/real" ./cmd/real)
port=$("$tmp/real" -freeport)
redis-server --bind 127.0.0.1 --port "$port" --dir "$tmp" --save '' --appendonly no --daemonize no \
  "${debug[@]}" >"$tmp/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 100); do # up to 10 s
  if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then break; fi
  kill -0 "$redis_pid" 2>/dev/null || { echo "e2e-real: FAIL: redis-server exited" >&2; exit 1; }
  sleep 0.1
done
redis-cli -h 127.0.0.1 -p "$port" ping | grep -q PONG || { echo "e2e-real: FAIL: redis-server does not answer on port $port" >&2; exit 1; }
export FLOODGATE_REDIS_ADDR="127.0.0.1:$port"

if [ -n "$full" ]; then
  (cd bench && "$tmp/real" -full)
else
  (cd bench && go test -tags e2e -count=1 -v -run '^TestReal$' ./real/)
fi
echo "e2e-real: ok in $((SECONDS - began)) s"
