#!/usr/bin/env bash
# End-to-end check of floodgate's observability against a real Prometheus:
# the slowdown example serves /metrics through a short slowdown, a Prometheus
# on 127.0.0.1 (random free port, temp data dir, 1 s scrape and rule
# evaluation) scrapes it with docs/prometheus/floodgate-rules.yml loaded, and
# once floodgate has shed load and its breaker has opened, every PromQL
# expression of the Grafana dashboard (docs/grafana/floodgate.json) and of the
# rules file is run through Prometheus's HTTP API by dashboard/cmd/promcheck:
# each must parse and return at least one series, and the alerts that a
# slowdown should raise must have held. The fleet row and rule group
# (package fleet's series, which the slowdown example has not) are checked
# by scripts/e2e-fleet.sh instead, against examples/fleet's replicas.
#
# Installs Debian's prometheus package if prometheus or promtool is missing.
# If that is impossible it skips, unless CI is set, where it fails. Both
# processes are stopped and the temp dir removed on exit, whatever happens.
# Takes about 20 s.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
began=$SECONDS

. scripts/prometheus.sh
prom_install e2e-prometheus
echo "e2e-prometheus: $(prometheus --version 2>&1 | head -n 1)"

tmp=$(mktemp -d)
example_pid= prom_pid=
cleanup() {
  status=$?
  for pid in $example_pid $prom_pid; do kill "$pid" 2>/dev/null || true; done
  for pid in $example_pid $prom_pid; do wait "$pid" 2>/dev/null || true; done
  if [ "$status" -ne 0 ]; then
    for log in slowdown.log prometheus.log; do
      [ -s "$tmp/$log" ] && { echo "--- last lines of $log"; tail -n 20 "$tmp/$log"; }
    done
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go build -o "$tmp/slowdown" ./examples/slowdown
(cd dashboard && go build -o "$tmp/promcheck" ./cmd/promcheck)

metrics_port=$("$tmp/promcheck" freeport)
prom_port=$("$tmp/promcheck" freeport)
while [ "$prom_port" = "$metrics_port" ]; do prom_port=$("$tmp/promcheck" freeport); done
prom="http://127.0.0.1:$prom_port"
job=floodgate-slowdown

prom_start e2e-prometheus "$tmp" "$prom_port" "$job" "127.0.0.1:$metrics_port"
# The example starts once Prometheus scrapes its address (up is 0 until then;
# Prometheus applies new targets about 5 s after it starts), so that its
# first, healthy seconds are scraped too: the baseline of the slowdown.
"$tmp/promcheck" wait -url "$prom" -timeout 30s -pid "$prom_pid" -query "up{job=\"$job\"}"

# Slowdown from 2 s to 14 s: floodgate sheds from about 2.2 s; its breaker
# opens about 9 s after the onset, once the healthy calls of before it have
# left the breaker's 10 s window.
start=$(date +%s)
"$tmp/slowdown" -metrics-addr "127.0.0.1:$metrics_port" -rate 100 -slow-at 2s -heal-at 14s -duration 18s -drain 1s \
  >"$tmp/slowdown.log" 2>&1 &
example_pid=$!

"$tmp/promcheck" wait -url "$prom" -timeout 20s -pid "$example_pid" -query "up{job=\"$job\"} == 1"
"$tmp/promcheck" wait -url "$prom" -timeout 20s -pid "$example_pid" -query 'floodgate_calls_total{outcome="shed"} > 0'
"$tmp/promcheck" wait -url "$prom" -timeout 25s -pid "$example_pid" -query 'floodgate_breaker_state{state="open"} == 1'

"$tmp/promcheck" check -url "$prom" -start "$((start - 1))" -rate-interval 4s \
  -dashboard docs/grafana/floodgate.json -rules docs/prometheus/floodgate-rules.yml \
  -skip-rows "Fleet mode: budget / breaker / cap shared through Redis (package fleet)" -skip-groups floodgate.fleet \
  -expect-firing FloodgateLimiterSaturated,FloodgateShedding,FloodgateBreakerOpen,FloodgateDownstreamSlow,FloodgateCallLatencyHigh,FloodgateErrorRatioHigh

echo "e2e-prometheus: ok in $((SECONDS - began)) s"
