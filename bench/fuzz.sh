#!/usr/bin/env bash
# Runs every fuzz target of the project for FUZZTIME (default 10m), two at
# a time with one worker each, and prints each target's last status lines
# (executions, corpus, failures); each target's whole log stays in LOGDIR
# (default a new temporary folder, printed). The results go to
# BENCHMARKS.md ("Fuzzing"). Usage: FUZZTIME=10m bash bench/fuzz.sh
# [TARGET...] (targets as ./pkg:FuzzName; all of them by default).
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10m}
logdir=${LOGDIR:-$(mktemp -d)}
mkdir -p "$logdir"
echo "logs in $logdir"
targets=(./parser:FuzzParse ./parser:FuzzLexer ./ir:FuzzCheck ./runtime:FuzzDensity ./runtime:FuzzSession ./runtime/data:FuzzReadCSV ./runtime/data:FuzzReadJSON
  ./runtime/data:FuzzParseSet ./runtime/stancsv:FuzzRead ./calibrate:FuzzDraws)
if [ $# -gt 0 ]; then
  targets=("$@")
fi
run() {
  local pkg=${1%%:*} name=${1##*:}
  local log="$logdir/$name.log"
  local corpus="$pkg/testdata/fuzz/$name"
  local before
  before=$(ls "$corpus" 2>/dev/null | wc -l)
  go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -parallel 1 >"$log" 2>&1
  local rc=$?
  local after
  after=$(ls "$corpus" 2>/dev/null | wc -l)
  if [ "$rc" -ne 0 ] && [ "$after" -eq "$before" ] && grep -q 'context deadline exceeded' "$log"; then
    # Go's fuzz coordinator can report its own deadline as a failure, with
    # no failing input (golang/go#75804, fixed in Go 1.27).
    echo "== $name ($pkg): no failing input; the run ended on Go's fuzztime deadline race (golang/go#75804), log $log"
  else
    echo "== $name ($pkg): exit $rc, log $log"
  fi
  grep -E 'fuzz: elapsed|FAIL|panic|ok |Error|error' "$log" | tail -5
}
pids=()
for t in "${targets[@]}"; do
  run "$t" &
  pids+=($!)
  if [ ${#pids[@]} -eq 2 ]; then
    wait "${pids[0]}"
    pids=("${pids[@]:1}")
  fi
done
wait
