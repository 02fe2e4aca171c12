#!/usr/bin/env bash
# Runs every fuzz target of the project for FUZZTIME (default 10m), two at
# a time with one worker each, and prints each target's last status lines
# (executions, corpus, failures); each target's whole log stays in LOGDIR
# (default a new temporary folder, printed). The results go to
# BENCHMARKS.md ("Fuzzing"). Usage: FUZZTIME=10m bash bench/fuzz.sh
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10m}
logdir=${LOGDIR:-$(mktemp -d)}
mkdir -p "$logdir"
echo "logs in $logdir"
targets=(./parser:FuzzParse ./ir:FuzzCheck ./runtime/data:FuzzReadCSV ./runtime/data:FuzzReadJSON ./runtime/data:FuzzParseSet)
run() {
  local pkg=${1%%:*} name=${1##*:}
  local log="$logdir/$name.log"
  go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -parallel 1 >"$log" 2>&1
  local rc=$?
  echo "== $name ($pkg): exit $rc, log $log"
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
