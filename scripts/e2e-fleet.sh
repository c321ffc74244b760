#!/usr/bin/env bash
# Fleet mode against a real Redis (issue 15, fleet/): the sync's unit
# tests, the 3-process shared-budget test, the Redis kill-and-restart
# test, the shared breaker's 3-process tests, the cost tests, all of
# fleet/'s tests built with the e2e tag; then
# examples/fleet's short run; then the dashboard's fleet row and the
# floodgate.fleet rule group against a real Prometheus: it scrapes
# examples/fleet's 3 replicas (-metrics-addrs) through a 6 s run on this
# Redis, and dashboard/cmd/promcheck runs each of those queries, which must
# return a series (the rest of the dashboard is scripts/e2e-prometheus.sh's).
#
#   bash scripts/e2e-fleet.sh        # about 50 s
#
# Installs Debian's redis-server and prometheus packages if redis-server,
# prometheus or promtool is missing, starts
# one on 127.0.0.1 (a free port, a temp dir, no persistence, not
# daemonized), passes its address in FLOODGATE_REDIS_ADDR, and stops it on
# exit, whatever happens (so are Prometheus and the example). The
# kill-and-restart tests start their own redis-server from PATH. If a
# package cannot be installed it skips, unless CI is set, where it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
began=$SECONDS

. scripts/redis.sh
redis_install e2e-fleet
. scripts/prometheus.sh
prom_install e2e-fleet
echo "e2e-fleet: $(redis-server --version | cut -d' ' -f1-3); $(prometheus --version 2>&1 | head -n 1)"
redis_start e2e-fleet

# Prometheus and the example, stopped before redis_cleanup stops Redis
# and removes $tmp.
prom_pid= example_pid=
cleanup() {
  status=$?
  set +e # a failing kill or wait must not end the trap before redis_cleanup
  for pid in $example_pid $prom_pid; do kill "$pid" 2>/dev/null || true; done
  for pid in $example_pid $prom_pid; do wait "$pid" 2>/dev/null || true; done
  if [ "$status" -ne 0 ]; then
    for log in prometheus.log example.log; do
      [ -s "$tmp/$log" ] && { echo "--- last lines of $log"; tail -n 20 "$tmp/$log"; }
    done
  fi
  (exit "$status")
  redis_cleanup
}
trap cleanup EXIT

# go-redis's dial retries while Redis is down are noise
for dir in fleet examples/fleet; do
  echo "== go test -tags e2e -race -count=1 ./... in $dir"
  (cd "$dir" && go test -tags e2e -race -count=1 -v ./... 2>&1 | grep -v '^=== \|pool.go:')
done

# The dashboard's fleet row and the fleet rule group against a real
# Prometheus scraping examples/fleet's 3 replicas, each serving /metrics.
echo "== the dashboard's fleet row against a Prometheus scraping examples/fleet"
checked=$SECONDS
(cd examples/fleet && go build -o "$tmp/fleet" .)
(cd dashboard && go build -o "$tmp/promcheck" ./cmd/promcheck)
ports=()
while [ "${#ports[@]}" -lt 4 ]; do
  p=$("$tmp/promcheck" freeport)
  [[ " ${ports[*]} " == *" $p "* ]] || [ "$p" = "$port" ] || ports+=("$p")
done
prom="http://127.0.0.1:${ports[3]}"
job=floodgate-fleet
prom_start e2e-fleet "$tmp" "${ports[3]}" "$job" "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" "127.0.0.1:${ports[2]}"
# Start the replicas once Prometheus has its targets (up is 0 until they
# serve), so that it scrapes them from their first second.
"$tmp/promcheck" wait -url "$prom" -timeout 30s -pid "$prom_pid" -query "up{job=\"$job\"}"
start=$(date +%s)
"$tmp/fleet" -redis "$FLOODGATE_REDIS_ADDR" -replicas 3 -calls 3000 -span 6s \
  -metrics-addrs "127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}" >"$tmp/example.log" 2>&1 &
example_pid=$!
"$tmp/promcheck" wait -url "$prom" -timeout 15s -pid "$example_pid" \
  -query "count(floodgate_fleet_shared{job=\"$job\"} == 1) == 3 and count(floodgate_fleet_budget_tokens{job=\"$job\"}) == 3"
wait "$example_pid" # a failing example fails the script (set -e)
example_pid=
cat "$tmp/example.log"
"$tmp/promcheck" check -url "$prom" -start "$((start - 1))" -rate-interval 4s \
  -dashboard docs/grafana/floodgate.json -rules docs/prometheus/floodgate-rules.yml \
  -rows "Fleet mode: budget / breaker / cap shared through Redis (package fleet)" -groups floodgate.fleet
echo "e2e-fleet: the fleet row checked in $((SECONDS - checked)) s"
echo "e2e-fleet: ok in $((SECONDS - began)) s"
