#!/usr/bin/env bash
# Runs every fuzz target of the project for FUZZTIME (default 10m), two at
# a time with one worker each, and prints each target's last status line
# (executions, corpus, failures). The results go to BENCHMARKS.md
# ("Fuzzing"). Usage: FUZZTIME=10m bash bench/fuzz.sh > fuzz.log
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10m}
targets=(./parser:FuzzParse ./ir:FuzzCheck ./runtime/data:FuzzReadCSV ./runtime/data:FuzzReadJSON ./runtime/data:FuzzParseSet)
run() {
  local pkg=${1%%:*} name=${1##*:}
  local log
  log=$(mktemp)
  go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -parallel 1 >"$log" 2>&1
  local rc=$?
  echo "== $name ($pkg): exit $rc"
  grep -E 'fuzz: elapsed|FAIL|panic|ok ' "$log" | tail -3
  rm -f "$log"
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
