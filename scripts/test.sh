#!/usr/bin/env bash
# The whole test suite, as the README gives it and .ci/run calls it: every Go
# module in the repository (the library, bench/, ...) under -race, then the
# end-to-end checks against real servers that scripts/e2e-*.sh install and start.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

for mod in $(find . -name go.mod -not -path './.git/*' | sort); do
  dir=$(dirname "$mod")
  echo "== go test -race -count=1 ./... in $dir"
  (cd "$dir" && go test -race -count=1 ./...)   # -count=1: run every test, never replay a cached pass
done

for e2e in scripts/e2e-*.sh; do
  [ -e "$e2e" ] || continue
  echo "== $e2e"
  bash "$e2e"
done
