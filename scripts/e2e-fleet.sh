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

. scripts/redis.sh
redis_install e2e-fleet
echo "e2e-fleet: $(redis-server --version | cut -d' ' -f1-3)"
redis_start e2e-fleet

# go-redis's dial retries while Redis is down are noise
for dir in fleet examples/fleet; do
  echo "== go test -tags e2e -race -count=1 ./... in $dir"
  (cd "$dir" && go test -tags e2e -race -count=1 -v ./... 2>&1 | grep -v '^=== \|pool.go:')
done
echo "e2e-fleet: ok in $((SECONDS - began)) s"
