#!/usr/bin/env bash
# The whole test suite, as the README gives it and .ci/run calls it: every Go
# module in the repository (the library, bench/, ...) under -race, a few
# seconds of each fuzz target, then the end-to-end checks against real
# servers that scripts/e2e-*.sh install and start.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

for mod in $(find . -name go.mod -not -path './.git/*' | sort); do
  dir=$(dirname "$mod")
  echo "== go test -race -count=1 ./... in $dir"
  (cd "$dir" && go test -race -count=1 ./...)   # -count=1: run every test, never replay a cached pass
done

# The scenario suite's targets, without -race: under -race, bench runs only
# floodgate's contenders through the scenarios and checks no target (186 s
# there for all six contenders, 20 s without -race).
echo "== go test -count=1 -run '^TestScenario' . in ./bench (the scenario targets, without -race)"
(cd bench && go test -count=1 -run '^TestScenario' .)

# Short fuzz runs, one target per go test invocation (-fuzz takes one target
# and one package): "package target" pairs, one line each. A target listed
# here but missing from its package is skipped with a message, except under
# CI (CI set), where it fails the suite. FUZZTIME is per target: a count
# of executions (100000x: about 2–4 s each here), not a duration, because a
# timed run has failed with "context deadline exceeded" at its deadline,
# with no failing input, on Go 1.26.
fuzz_targets=(
  "./retry FuzzBudget"
  "./retry FuzzBackoff"
  "./adaptive FuzzLimiter"
  "./breaker FuzzWindow"
  "./floodhttp FuzzParseRetryAfter"
  "./floodhttp FuzzClassify"
)
fuzztime=${FUZZTIME:-100000x}
for pair in "${fuzz_targets[@]}"; do
  read -r pkg target <<<"$pair"
  if ! go test -list "^${target}\$" "$pkg" | grep -x "$target" >/dev/null; then
    if [ -n "${CI:-}" ]; then
      echo "fuzz: $target is not in $pkg (CI is set: a listed target must exist)"; exit 1
    fi
    echo "== fuzz $pkg $target: not in the package yet, skipped"
    continue
  fi
  echo "== go test -fuzz ^${target}\$ -fuzztime $fuzztime $pkg"
  out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1) || { echo "$out"; exit 1; }
  execs=$(grep -o 'execs: [0-9]*' <<<"$out" | tail -1 | cut -d' ' -f2)
  echo "fuzz: $pkg $target: ${execs:-?} executions (-fuzztime $fuzztime)"
done

for e2e in scripts/e2e-*.sh; do
  [ -e "$e2e" ] || continue
  echo "== $e2e"
  bash "$e2e"
done
