"""CPU section: gbdist's compiled CPU backend (Numba) against scikit-learn.

500 query rows against all rows of each prepared data set, scikit-learn's
``pairwise_distances(Q, X, metric, n_jobs=2)`` against gbdist's
``pairwise_distances(Q, X, metric, backend="compiled")`` (the whole user path:
binding and validation by the runtime, the compiled kernels tile by tile, exact
d(a, a), the direct-form repair).
The two results are checked against each other before anything is timed; the
table shows medians of 5 runs (after one untimed warm-up call that compiles or
loads the kernels) and scikit-learn's time over gbdist's.

    python benchmarks/prepare_data.py --data-dir ../shared/data --out .bench_data
    python benchmarks/cpu.py --data-dir .bench_data
    python benchmarks/cpu.py --first-call        # fresh processes, cold and warm cache
    python benchmarks/cpu.py --knn               # k = 10, all pairs, vs NearestNeighbors
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METRICS = ("cosine", "euclidean", "manhattan", "canberra", "chebyshev")
DATASETS = ("kos", "movielens")


def sklearn_pd(Q, X, metric: str, n_jobs: int):
    """scikit-learn's answer: ``pairwise_distances`` where it takes sparse input (cosine,
    euclidean, manhattan); for the others (canberra, chebyshev, which
    ``pairwise_distances`` refuses on sparse input) ``DistanceMetric.pairwise``, the
    Cython walk over each pair's union, split over ``n_jobs`` column slices the way
    ``pairwise_distances`` does (sklearn's ``_parallel_pairwise``)."""
    from sklearn.metrics import DistanceMetric, pairwise_distances
    if metric in ("cosine", "euclidean", "manhattan"):
        return pairwise_distances(Q, X, metric=metric, n_jobs=n_jobs)
    from sklearn.metrics.pairwise import _parallel_pairwise
    dm = DistanceMetric.get_metric(metric)
    return _parallel_pairwise(Q, X, lambda a, b: dm.pairwise(a, b), n_jobs)


def median_s(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def compare(data_dir: str, queries: int, repeat: int, n_jobs: int) -> int:
    import gbdist as gb
    from benchmarks.datasets import load
    print(f"{'data':<10} {'metric':<10} {'gbdist compiled':>16} {'scikit-learn':>14} {'ratio':>7}   max |diff|")
    bad = 0
    for name in DATASETS:
        X, meta = load(name, data_dir)
        Q = X[:queries]
        for metric in METRICS:
            ours = gb.pairwise_distances(Q, X, metric=metric, backend="compiled")  # compiles / loads
            theirs = sklearn_pd(Q, X, metric, n_jobs)
            diff = float(np.nanmax(np.abs(ours.astype(np.float64) - theirs)))
            tol = 1e-4 * max(1.0, float(np.nanmax(np.abs(theirs))))
            if not np.allclose(ours, theirs, rtol=1e-4, atol=tol, equal_nan=True):
                print(f"{name:<10} {metric:<10} RESULTS DIFFER (max |diff| {diff:.3g}); not timed")
                bad += 1
                continue
            t_ours = median_s(lambda: gb.pairwise_distances(Q, X, metric=metric, backend="compiled"), repeat)
            t_sk = median_s(lambda: sklearn_pd(Q, X, metric, n_jobs), repeat)
            print(f"{name:<10} {metric:<10} {t_ours * 1e3:13.1f} ms {t_sk * 1e3:11.1f} ms "
                  f"{t_sk / t_ours:6.1f}x   {diff:.2g}", flush=True)
    return 1 if bad else 0


FIRST_CALL = r"""
import sys, time
t0 = time.perf_counter()
import numpy as np, scipy.sparse as sps
import gbdist as gb
t1 = time.perf_counter()
sys.path.insert(0, {root!r})
X = sps.random(300, 2000, density=0.01, format="csr", random_state=0, dtype=np.float32)
out = []
for metric in {metrics!r}:
    t = time.perf_counter()
    gb.pairwise_distances(X, X, metric=metric, backend="compiled")
    first = time.perf_counter() - t
    t = time.perf_counter()
    gb.pairwise_distances(X, X, metric=metric, backend="compiled")
    out.append((metric, first, time.perf_counter() - t))
print(f"import gbdist {{(t1 - t0) * 1e3:.0f}} ms")
for metric, first, second in out:
    print(f"{{metric:<10}} first call {{first * 1e3:8.1f}} ms   second {{second * 1e3:7.1f}} ms")
"""


def first_call(metrics) -> int:
    """Fresh processes: an empty cache directory (cold), then the same one again (warm)."""
    code = FIRST_CALL.format(root=str(ROOT), metrics=tuple(metrics))
    with tempfile.TemporaryDirectory() as d:
        for label in ("cold cache", "warm cache"):
            # the first metric of each process also pays for importing Numba
            env = dict(os.environ, GBDIST_CACHE_DIR=d)
            t = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            print(f"-- {label} (process {time.perf_counter() - t:.1f} s)")
            print(r.stdout.rstrip() or r.stderr[-2000:])
    return 0


def knn(data_dir: str, repeat: int, n_jobs: int, k: int = 10) -> int:
    """k nearest neighbours of every row among all rows (self excluded): gbdist.knn with the
    compiled backend (its compiled top-k selection and merging) against scikit-learn's brute force (``NearestNeighbors``); the
    neighbour distances are compared before timing (indices may differ on ties)."""
    import gbdist as gb
    from sklearn.neighbors import NearestNeighbors
    from benchmarks.datasets import load
    print(f"{'data':<10} {'metric':<10} {'gbdist knn':>12} {'scikit-learn':>14} {'ratio':>7}")
    bad = 0
    for name in DATASETS:
        X, _ = load(name, data_dir)
        for metric in ("cosine", "euclidean", "manhattan"):
            nn = NearestNeighbors(n_neighbors=k, algorithm="brute", metric=metric, n_jobs=n_jobs)
            ours = gb.knn(X, None, k=k, metric=metric, backend="compiled")
            theirs = nn.fit(X).kneighbors()
            if not np.allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5):
                print(f"{name:<10} {metric:<10} DISTANCES DIFFER; not timed")
                bad += 1
                continue
            t_ours = median_s(lambda: gb.knn(X, None, k=k, metric=metric, backend="compiled"), repeat)
            t_sk = median_s(lambda: nn.fit(X).kneighbors(), repeat)
            print(f"{name:<10} {metric:<10} {t_ours * 1e3:9.1f} ms {t_sk * 1e3:11.1f} ms "
                  f"{t_sk / t_ours:6.1f}x", flush=True)
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=str(ROOT / ".bench_data"))
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--first-call", action="store_true", help="time first calls in fresh processes")
    ap.add_argument("--knn", action="store_true", help="k = 10 neighbours of every row, all pairs")
    args = ap.parse_args(argv)
    if args.knn:
        return knn(args.data_dir, args.repeat, args.n_jobs)
    if args.first_call:
        return first_call(("cosine", "manhattan", "chebyshev"))
    return compare(args.data_dir, args.queries, args.repeat, args.n_jobs)


if __name__ == "__main__":
    raise SystemExit(main())
