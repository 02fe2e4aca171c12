#!/usr/bin/env python3
"""Pathfinder on the shipped posteriordb models against their reference
posteriors (issue 45): for every model of models/posteriordb with a
reference in ../shared/posteriordb, run `shm pathfinder` (Stan's defaults,
seed 1), and report the largest |mean - reference mean| / reference sd
over the parameters, the Pareto k-hat, and the wall time; with --nuts, the
wall time of `shm sample` (4 x (1000 + 1000), seed 1) beside it.

Usage: python3 bench/pathfinder_posteriordb.py [--nuts] [--timeout S] [NAME...]
(from the repository root, with ./shm built: go build -o shm ./cmd/shm).
"""
import csv
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared", "posteriordb")


def read_draws(path):
    with open(path) as f:
        rows = [r for r in csv.reader(l for l in f if not l.startswith("#"))]
    head, body = rows[0], [list(map(float, r)) for r in rows[1:]]
    return head, body


def column(name):
    """Stan's reference name beta[1,2] as a Stan CSV column beta.1.2."""
    m = re.match(r"^([^\[]+)\[(.*)\]$", name)
    if not m:
        return name
    return m.group(1) + "." + ".".join(s.strip() for s in m.group(2).split(","))


def run(cmd, timeout):
    start = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None, time.time() - start, "timeout"
    return p, time.time() - start, p.stderr


def main():
    args = sys.argv[1:]
    nuts = "--nuts" in args
    timeout = 600
    if "--timeout" in args:
        timeout = float(args[args.index("--timeout") + 1])
    names = [a for a in args if not a.startswith("--") and not re.match(r"^[0-9.]+$", a)]
    models = sorted(glob.glob(os.path.join(ROOT, "models", "posteriordb", "*.shm")))
    print("| posterior | max abs(mean - ref) / ref sd | worst parameter | Pareto k | pathfinder s | NUTS s | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for model in models:
        name = os.path.basename(model)[:-4]
        ref_path = os.path.join(SHARED, name, "reference.json")
        if names and name not in names or not os.path.exists(ref_path):
            continue
        ref = json.load(open(ref_path))["parameters"]
        data = os.path.join(SHARED, name, "data.json")
        with tempfile.TemporaryDirectory() as out:
            p, secs, err = run(["./shm", "pathfinder", model, data, "--seed", "1", "--refresh", "0", "--output", out], timeout)
            if p is None or p.returncode != 0:
                print(f"| {name} | failed | {err.strip().splitlines()[-1] if err.strip() else ''} | | {secs:.1f} | | |")
                continue
            k = re.search(r"Pareto k-hat of the importance weights: ([-0-9.e+naNinf]+)", p.stderr)
            head, body = read_draws(glob.glob(os.path.join(out, "*-pathfinder.csv"))[0])
            worst, worst_name = 0.0, ""
            for pname, st in ref.items():
                c = column(pname)
                if c not in head or not st["sd"] > 0:
                    continue
                j = head.index(c)
                mean = sum(r[j] for r in body) / len(body)
                z = abs(mean - st["mean"]) / st["sd"]
                if z > worst:
                    worst, worst_name = z, pname
            nuts_s, ratio = "", ""
            if nuts:
                q, nsecs, _ = run(["./shm", "sample", model, data, "--seed", "1", "--refresh", "0", "--output", out], timeout)
                nuts_s = f"{nsecs:.1f}" if q is not None and q.returncode == 0 else "failed"
                if q is not None and q.returncode == 0:
                    ratio = f"{100 * secs / nsecs:.1f}%"
            print(f"| {name} | {worst:.2f} | {worst_name} | {k.group(1) if k else '?'} | {secs:.1f} | {nuts_s} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
