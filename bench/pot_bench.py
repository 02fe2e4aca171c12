#!/usr/bin/python3
"""POT's log-domain Sinkhorn on the problems of stdlib/ot's benchmarks.

Same points as benchProblem in stdlib/ot/bench_test.go (d = 2, n = m,
uniform weights), eps = 0.05, T = 80 iterations, stopThr = 0 so that all T
iterations run. Reports ns per log-sum-exp term = time / (2·T·n·m).

Run with the Debian interpreter (python3-pot, numpy):
    /usr/bin/python3 stdlib/ot/bench/pot_bench.py [sizes...]
"""
import sys
import time

import numpy as np
import ot

EPS, T = 0.05, 80


def problem(n):
    i = np.arange(n, dtype=float)
    x = np.stack([np.sin(1.3 * i), 1.1 * np.cos(0.7 * i)], axis=1)
    y = np.stack([0.8 * np.sin(0.9 * i + 0.5) + 0.3, 0.9 * np.cos(1.7 * i)], axis=1)
    a = np.full(n, 1.0 / n)
    b = np.full(n, 1.0 / n)
    return x, y, a, b


def numpy_halfstep(n):
    """One plain NumPy log-sum-exp half-iteration with the cost matrix
    precomputed (the issue's "numpy vectorized log-sum-exp" reference)."""
    x, y, a, b = problem(n)
    C = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    g = np.zeros(n)
    lb = np.log(b)
    reps = max(1, int(5e7 // (n * n)))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            A = (g[None, :] - C) / EPS + lb[None, :]
            m = A.max(axis=1)
            f = -EPS * (m + np.log(np.exp(A - m[:, None]).sum(axis=1)))
        best = min(best, (time.perf_counter() - t0) / reps)
    return best / (n * n) * 1e9


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [120, 256, 1024, 4096]
    print("POT", ot.__version__, "numpy", np.__version__)
    for n in sizes:
        x, y, a, b = problem(n)
        M = ot.dist(x, y)  # squared Euclidean
        reps = max(1, int(2e8 // (2 * T * n * n)))
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(reps):
                v = ot.sinkhorn2(a, b, M, EPS, method="sinkhorn_log", numItermax=T, stopThr=0)
            best = min(best, (time.perf_counter() - t0) / reps)
        print(f"n={n} T={T} eps={EPS}: {best*1e3:.2f} ms per solve, "
              f"{best / (2 * T * n * n) * 1e9:.3f} ns/term (best of 3, {reps} solves each), value {float(v):.6g}")
        print(f"n={n}: plain NumPy log-sum-exp half-iteration: {numpy_halfstep(n):.3f} ns/term")


if __name__ == "__main__":
    main()
