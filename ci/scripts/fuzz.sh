#!/usr/bin/env bash
# Runs every Go fuzz target (func FuzzXxx in src/**/*_test.go) for FUZZTIME
# each (default 30s), one after the other, and fails on the first crasher.
# A crasher is saved by `go test` under <pkg>/testdata/fuzz/FuzzXxx/<hash>:
# commit it with the fix, it then runs as a regression seed in `go test`.
#
#   FUZZTIME=30s bash ci/scripts/fuzz.sh            # make fuzz
#   FUZZTIME=5s  bash ci/scripts/fuzz.sh            # ci/scripts/fuzz-short.sh
#   FUZZ_MATCH=Stat bash ci/scripts/fuzz.sh         # only targets whose name contains Stat
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZ_MATCH=${FUZZ_MATCH:-}

mapfile -t targets < <(grep -rHo --include='*_test.go' --exclude-dir=_module --exclude-dir=vendor '^func Fuzz[A-Za-z0-9_]*' src | sed -e 's/:func /:/' | sort)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz: no fuzz targets found under src/" >&2
  exit 1
fi

start=$(date +%s)
ran=0
for t in "${targets[@]}"; do
  file=${t%%:*}
  name=${t##*:}
  if [ -n "$FUZZ_MATCH" ] && [[ "$name" != *"$FUZZ_MATCH"* ]]; then
    continue
  fi
  pkg=./$(dirname "$file")
  t0=$(date +%s)
  echo "fuzz: $pkg $name for $FUZZTIME"
  # -run '^$' skips the package's ordinary tests; the seeds of every target
  # already run in `go test`.
  if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
    echo "fuzz: $name in $pkg FAILED; the crasher is in $pkg/testdata/fuzz/$name/" >&2
    exit 1
  fi
  echo "fuzz: $name done in $(( $(date +%s) - t0 ))s"
  ran=$((ran + 1))
done
echo "fuzz: $ran targets, ${FUZZTIME} each, $(( $(date +%s) - start ))s in all"
