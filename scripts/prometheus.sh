# Sourced by scripts/e2e-*.sh that need a real Prometheus; not run on its own.
#
#   prom_install NAME     installs Debian's prometheus package if prometheus
#                         or promtool is missing; if it cannot, exits 0 (a
#                         skip), or 1 when CI is set
#   prom_start NAME DIR PORT JOB TARGET...
#                         writes DIR/prometheus.yml (1 s scrapes and rule
#                         evaluation, docs/prometheus/floodgate-rules.yml
#                         loaded, job JOB scraping the host:port TARGETs),
#                         checks it with promtool, and starts Prometheus on
#                         127.0.0.1:PORT (data in DIR/data, log in
#                         DIR/prometheus.log); sets prom_pid, which the
#                         caller's exit trap stops
#
# NAME prefixes every message.

prom_install() {
  command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 && return 0
  echo "$1: installing Debian's prometheus package"
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] &&
    apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; then
    return 0
  fi
  if [ -n "${CI:-}" ]; then
    echo "$1: FAIL: prometheus and promtool are missing and apt-get could not install them (CI is set, so this is an error)" >&2
    exit 1
  fi
  echo "$1: SKIP: prometheus and promtool are missing and apt-get could not install them (needs root and Debian's archive); set CI to make this an error"
  exit 0
}

prom_start() {
  local name=$1 dir=$2 port=$3 job=$4 targets="" t
  shift 4
  for t in "$@"; do targets="$targets${targets:+, }\"$t\""; done
  cat >"$dir/prometheus.yml" <<CONFIG
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $PWD/docs/prometheus/floodgate-rules.yml
scrape_configs:
  - job_name: $job
    static_configs:
      - targets: [$targets]
CONFIG
  promtool check config "$dir/prometheus.yml" >/dev/null ||
    { echo "$name: FAIL: promtool rejects $dir/prometheus.yml" >&2; exit 1; }
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn >"$dir/prometheus.log" 2>&1 &
  prom_pid=$!
}
