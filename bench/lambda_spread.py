#!/usr/bin/env python3
"""The spread of lambda* over resamples of a calibration's datasets.

usage: bench/lambda_spread.py RUNS.csv [--region hpd] [--target 0.9] [--resamples 2000] [--seed 1]

Reads runs.csv of `shm calibrate lambda` (one row per lambda and dataset),
resamples the datasets with replacement, and for each resample takes
lambda* as the tool does: the highest evaluated scale whose coverage
reaches the target. Prints lambda* on all datasets, and the median and the
5% and 95% quantiles over the resamples. Standard library only.
"""
import argparse
import csv
import random
from collections import defaultdict

ap = argparse.ArgumentParser()
ap.add_argument("runs")
ap.add_argument("--region", default="hpd")
ap.add_argument("--target", type=float, default=0.9)
ap.add_argument("--resamples", type=int, default=2000)
ap.add_argument("--seed", type=int, default=1)
a = ap.parse_args()

covered = defaultdict(dict)  # lambda -> dataset -> bool
for r in csv.DictReader(open(a.runs)):
    covered[float(r["lambda"])][int(r["dataset"])] = r[a.region + "_covered"] == "true"
lambdas = sorted(covered)
datasets = sorted(set.intersection(*(set(covered[l]) for l in lambdas)))


def star(sample):
    best = None
    for l in lambdas:
        if sum(covered[l][d] for d in sample) >= a.target * len(sample) * (1 - 1e-12):
            best = l
    return best


rng = random.Random(a.seed)
stars = sorted(
    (s for s in (star([rng.choice(datasets) for _ in datasets]) for _ in range(a.resamples)) if s is not None)
)
q = lambda p: stars[min(len(stars) - 1, int(p * len(stars)))]
print(f"lambda* = {star(datasets)} on the {len(datasets)} datasets; over {a.resamples} resamples: "
      f"median {q(0.5)}, 5% {q(0.05)}, 95% {q(0.95)} ({a.resamples - len(stars)} resamples with no scale reaching {a.target})")
