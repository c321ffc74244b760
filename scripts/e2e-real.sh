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

. scripts/redis.sh
redis_install e2e-real
version=$(redis-server --version | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p')
echo "e2e-real: redis-server $version"
debug=()
# Redis 7 disables DEBUG by default; before 7 it is always enabled and the
# option does not exist.
if [ "${version%%.*}" -ge 7 ]; then debug=(--enable-debug-command local); fi

redis_start e2e-real "${debug[@]}"

if [ -n "$full" ]; then
  (cd bench && go run ./cmd/real -full)
else
  (cd bench && go test -tags e2e -count=1 -v -run '^TestReal$' ./real/)
fi
echo "e2e-real: ok in $((SECONDS - began)) s"
