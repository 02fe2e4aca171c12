#!/usr/bin/env bash
# Experiment D (CIFAR-10 window alignment) over a range of images: builds
# shm, generates the images' data (seed 1), samples each image with each
# regime, and prints the paper's metrics per regime (models/gen expD-eval).
#
# Defaults are the paper's held-out run: images 32-63, 4 chains of 600
# warmup + 256 draws, target acceptance 0.75, lambda = 0.5, both regimes.
# Settings come from the environment, e.g. the reduced run of
# BENCHMARKS.md and models/experiments.md:
#
#   FIRST=32 COUNT=32 CHAINS=1 WARMUP=100 SAMPLES=100 JOBS=2 bash bench/expD.sh
#
# CHAIN_ID numbers the chains from it (shm sample --chain-id): chain k of
# an image depends only on the seed and k, so the paper's 4-chain run can
# be done as four single-chain sweeps, CHAINS=1 CHAIN_ID=1 … 4, on
# different days or machines, into the same OUT; expD-eval pools the chains
# it finds per image. An image whose chains' files already exist is
# skipped, so an interrupted sweep resumes where it stopped.
#
# JOBS runs that many images at once (each with its chains one at a time
# when JOBS > 1). SEED is the sampler's seed: "image" (the default) seeds
# each image with its index, so that chain k starts from a different point
# on every image; a number gives every image that seed (SEED=1 reproduces
# the runs of 2026-11-26 01:10–04:00 in models/expD/results, whose trapped
# chains were correlated across images for that reason). The data always
# come from seed 1. Results: $OUT/<regime>/img<index>/*.csv and
# $OUT/<regime>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

first=${FIRST:-32}
count=${COUNT:-32}
chains=${CHAINS:-4}
chain_id=${CHAIN_ID:-1}
warmup=${WARMUP:-600}
samples=${SAMPLES:-256}
lambda=${LAMBDA:-0.5}
jobs=${JOBS:-1}
regimes=${REGIMES:-unbalanced balanced}
seed=${SEED:-image}
out=${OUT:-out/expD}

go build -o "$out/shm" ./cmd/shm
go run ./models/gen expD --seed 1 --out "$out/data" --first "$first" --count "$count" >/dev/null

parallel=2
if [ "$jobs" -gt 1 ]; then parallel=1; fi
for regime in $regimes; do
  start=$(date +%s)
  mkdir -p "$out/$regime" "$out/logs"
  seq "$first" $((first + count - 1)) | xargs -P "$jobs" -I{} bash -c '
    img=$(printf "img%03d" "$1")
    seed=$9
    if [ "$seed" = image ]; then seed=$1; fi
    done=1
    for ((k = ${10}; k < ${10} + $5; k++)); do
      [ -f "$2/$3/$img/expD_$3-$k.csv" ] || done=0
    done
    if [ $done = 1 ]; then echo "$3 $img: chains already there, skipped" >&2; exit 0; fi
    "$2/shm" sample "models/expD/expD_$3.shm" "$2/data/$img.json" --set lambda="$4" --seed "$seed" \
      --chains "$5" --chain-id "${10}" --parallel "$6" --warmup "$7" --samples "$8" --adapt-delta 0.75 \
      --output "$2/$3/$img" --refresh 0 >"$2/logs/$3-$img.log" 2>&1 || { echo "$img ($3) failed: see $2/logs/$3-$img.log" >&2; exit 1; }
    echo "$3 $img done" >&2
  ' _ {} "$out" "$regime" "$lambda" "$chains" "$parallel" "$warmup" "$samples" "$seed" "$chain_id"
  go run ./models/gen expD-eval --truth "$out/data/truth.csv" "$out/$regime"/img[0-9]* >"$out/$regime.txt"
  echo "== $regime: $count images, chains $chain_id..$((chain_id + chains - 1)) x ($warmup + $samples), lambda $lambda, seed $seed, $(( $(date +%s) - start )) s wall"
  grep -E '^(chains|images with)' "$out/$regime.txt"
done
