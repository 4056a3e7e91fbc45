"""CPU section of the benchmark runner: gbdist's default CPU backend (compiled, Numba)
against scikit-learn on 2 cores.

* pairwise: 500 query rows against all rows of each prepared data set, for every named
  metric scikit-learn also computes (:data:`METRICS`): ``pairwise_distances(Q, X, metric,
  n_jobs=2)`` where it takes sparse input, else ``DistanceMetric.pairwise`` (its Cython walk
  over each pair's union) split over 2 column slices the way ``pairwise_distances`` splits
  its own functions; gbdist's ``pairwise_distances(Q, X, metric, backend="cpu")`` (the
  whole user path: binding and validation, the compiled kernels tile by tile, exact
  d(a, a), the direct-form repair). Jensen-Shannon against SciPy's ``cdist`` on dense
  copies (scikit-learn has no sparse Jensen-Shannon), on row-normalised inputs.
* knn: k = 10 neighbours of every row among all rows (self excluded), ``gbdist.knn``
  against ``NearestNeighbors(algorithm="brute", n_jobs=2)``.
* graph: the graph algorithms and products against python-graphblas (SuiteSparse:GraphBLAS)
  and plus_times mxv against SciPy's ``A @ x``, on power-law graphs (benchmarks/graph.py,
  ``--cpu-graph-edges``; skipped with the reason when python-graphblas is missing).
* first call: fresh processes, an empty disk cache (cold), then the same one (warm), the
  first call split into stages; ``import gbdist`` and ``gbdist --help`` alone
  (``benchmarks/startup.py``). Wall and CPU time of the process (the CPU time is what a
  shared, loaded machine distorts least).

Every result is checked against scikit-learn's (or SciPy's) before it is timed; times
are medians (after one untimed call that compiles or loads the kernels), gbdist and its
peer timed alternately; the ratio is the peer's time over gbdist's (> 1: gbdist is faster).

    python benchmarks/prepare_data.py --data-dir ../shared/data --out .bench_data
    python benchmarks/cpu.py --data-dir .bench_data --json cpu.json   # everything
    python benchmarks/run.py --cpu --data-dir .bench_data --json cpu.json   # the same
    python benchmarks/cpu.py --cpu-only first-call                   # one part
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# gbdist name -> (scikit-learn metric, its keyword arguments); None: SciPy's cdist
METRICS = {
    "cosine": ("cosine", {}), "euclidean": ("euclidean", {}), "manhattan": ("manhattan", {}),
    "sqeuclidean": ("sqeuclidean", {}), "canberra": ("canberra", {}),
    "chebyshev": ("chebyshev", {}), "braycurtis": ("braycurtis", {}),
    "minkowski": ("minkowski", {"p": 3}), "jensenshannon": (None, {}),
}
SPARSE_SKLEARN = ("cosine", "euclidean", "manhattan")
# scikit-learn's DistanceMetric("braycurtis") on sparse rows disagrees with SciPy (by 0.38 on
# MovieLens rows): timed against it, checked against SciPy's cdist on 20 query rows
CHECK_WITH_SCIPY = ("braycurtis",)
DATASETS = ("kos", "movielens", "tabula_muris", "newsgroups", "sec_names")
PARTS = ("pairwise", "knn", "first-call", "graph")


def sklearn_pd(Q, X, metric: str, n_jobs: int, **kw):
    """scikit-learn's answer: ``pairwise_distances`` where it takes sparse input (cosine,
    euclidean, manhattan); for the others, which ``pairwise_distances`` refuses on sparse
    input, ``DistanceMetric.pairwise`` (the Cython walk over each pair's union) split over
    ``n_jobs`` column slices the way ``pairwise_distances`` does (``_parallel_pairwise``)."""
    from sklearn.metrics import DistanceMetric, pairwise_distances
    if metric in SPARSE_SKLEARN:
        return pairwise_distances(Q, X, metric=metric, n_jobs=n_jobs)
    from sklearn.metrics.pairwise import _parallel_pairwise
    if metric == "sqeuclidean":
        dm = DistanceMetric.get_metric("euclidean")
        return _parallel_pairwise(Q, X, lambda a, b: dm.pairwise(a, b) ** 2, n_jobs)
    dm = DistanceMetric.get_metric(metric, **kw)
    return _parallel_pairwise(Q, X, lambda a, b: dm.pairwise(a, b), n_jobs)


def scipy_js(Q, X):
    """SciPy's Jensen-Shannon distance on dense copies (natural log, as gbdist)."""
    from scipy.spatial.distance import cdist
    return cdist(Q.toarray(), X.toarray(), "jensenshannon")


def _normalised(X):
    import scipy.sparse as sps
    s = np.asarray(X.sum(axis=1)).ravel()
    s[s == 0] = 1.0
    return sps.csr_matrix(sps.diags(1.0 / s) @ X)


def median_s(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def interleaved(ours, peer, repeat: int = 5) -> tuple:
    """Medians (s) of ``ours`` and ``peer``, timed alternately (a shared machine's load then
    weighs on both alike)."""
    a, b = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        ours()
        a.append(time.perf_counter() - t)
        t = time.perf_counter()
        peer()
        b.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b)


def compare(data_dir: str, datasets, queries: int, repeat: int, n_jobs: int,
            metrics=tuple(METRICS)) -> list:
    """The pairwise part: one row per (data set, metric)."""
    import gbdist as gb
    from benchmarks.datasets import load
    rows = []
    print(f"{'data':<13} {'metric':<14} {'gbdist':>10} {'peer':>12} {'ratio':>7}   max |diff|")
    for name in datasets:
        X0, _ = load(name, data_dir)
        for metric in metrics:
            sk_name, kw = METRICS[metric]
            X = _normalised(X0) if metric == "jensenshannon" else X0
            Q = X[:queries]
            peer_name = "scipy cdist (dense)" if sk_name is None else "scikit-learn"
            if sk_name is None and X.shape[1] * (X.shape[0] + Q.shape[0]) > 1.5e8:
                rows.append(dict(dataset=name, metric=metric, skipped="dense copy too large"))
                continue
            ours_fn = lambda: gb.pairwise_distances(Q, X, metric=metric, backend="cpu", **kw)  # noqa: E731
            peer_fn = (lambda: scipy_js(Q, X)) if sk_name is None else \
                (lambda: sklearn_pd(Q, X, sk_name, n_jobs, **kw))  # noqa: E731
            ours = ours_fn()  # compiles or loads the kernels
            theirs = peer_fn()
            if metric in CHECK_WITH_SCIPY:  # scikit-learn's sparse answer is not the metric
                from scipy.spatial.distance import cdist
                n = min(20, Q.shape[0])  # and at most ~5e7 dense cells of X (Newsgroups: 287 rows)
                m = min(X.shape[0], max(1, int(5e7 // max(X.shape[1], 1))))
                ours, theirs = ours[:n, :m], cdist(Q[:n].toarray(), X[:m].toarray(), metric)
                peer_name += " (checked against SciPy cdist: scikit-learn's sparse " \
                             f"{metric} differs from it)"
            diff = float(np.nanmax(np.abs(ours.astype(np.float64) - theirs)))
            # float32 sets: scikit-learn computes cosine in float32 (gbdist in float64)
            rel = 1e-4 if X.dtype == np.float32 else 1e-6
            tol = rel * max(1.0, float(np.nanmax(np.abs(theirs))))
            ok = bool(np.allclose(ours, theirs, rtol=rel, atol=tol, equal_nan=True))
            row = dict(dataset=name, metric=metric, shape=list(X.shape), queries=Q.shape[0],
                       peer=peer_name, max_abs_diff=diff, checked=ok)
            if not ok:
                print(f"{name:<13} {metric:<14} RESULTS DIFFER (max |diff| {diff:.3g}); not timed")
                rows.append(row)
                continue
            ours_s, peer_s = interleaved(ours_fn, peer_fn, repeat)
            row["gbdist_ms"], row["peer_ms"] = ours_s * 1e3, peer_s * 1e3
            row["ratio"] = row["peer_ms"] / row["gbdist_ms"]
            rows.append(row)
            print(f"{name:<13} {metric:<14} {row['gbdist_ms']:7.1f} ms {row['peer_ms']:9.1f} ms "
                  f"{row['ratio']:6.1f}x   {diff:.2g}", flush=True)
    return rows


def first_call(metrics=("cosine", "manhattan", "chebyshev"), repeat: int = 5) -> dict:
    """Start-up in fresh processes (``benchmarks/startup.py``): ``import gbdist``,
    ``gbdist --help``, and the first call stage by stage with an empty and a warm cache."""
    from benchmarks.startup import measure
    return measure(metrics, repeat)


def knn(data_dir: str, datasets, repeat: int, n_jobs: int, k: int = 10,
        metrics=("cosine", "euclidean", "manhattan")) -> list:
    """k nearest neighbours of every row among all rows (self excluded): gbdist.knn on the
    default CPU backend (compiled tiles, compiled top-k selection and merging) against
    scikit-learn's brute force (``NearestNeighbors``); the neighbour distances are compared
    before timing (indices may differ on ties)."""
    import gbdist as gb
    from sklearn.neighbors import NearestNeighbors
    from benchmarks.datasets import load
    rows = []
    print(f"{'data':<13} {'metric':<10} {'gbdist knn':>12} {'scikit-learn':>14} {'ratio':>7}")
    for name in datasets:
        X, _ = load(name, data_dir)
        if X.shape[0] > 20000:
            rows.append(dict(dataset=name, skipped="all pairs too many for this machine"))
            continue
        for metric in metrics:
            nn = NearestNeighbors(n_neighbors=k, algorithm="brute", metric=metric, n_jobs=n_jobs)
            ours = gb.knn(X, None, k=k, metric=metric, backend="cpu")
            theirs = nn.fit(X).kneighbors()
            # float32 sets: scikit-learn computes cosine in float32 (gbdist in float64)
            rel = 1e-4 if X.dtype == np.float32 else 1e-6
            ok = bool(np.allclose(ours[0], theirs[0], rtol=rel, atol=rel))
            row = dict(dataset=name, metric=metric, k=k, rows=X.shape[0], checked=ok)
            if not ok:
                print(f"{name:<13} {metric:<10} DISTANCES DIFFER; not timed")
                rows.append(row)
                continue
            ours_s, peer_s = interleaved(
                lambda: gb.knn(X, None, k=k, metric=metric, backend="cpu"),
                lambda: nn.fit(X).kneighbors(), repeat)
            row["gbdist_ms"], row["peer_ms"] = ours_s * 1e3, peer_s * 1e3
            row["ratio"] = row["peer_ms"] / row["gbdist_ms"]
            rows.append(row)
            print(f"{name:<13} {metric:<10} {row['gbdist_ms']:9.1f} ms {row['peer_ms']:11.1f} ms "
                  f"{row['ratio']:6.1f}x", flush=True)
    return rows


def graph_part(edges: str, repeat: int, threads: int):
    """benchmarks/graph.py on ``threads`` threads for both libraries: its rows, or why not."""
    import tempfile
    try:
        from benchmarks import graph as graph_bench
    except ImportError as e:  # python-graphblas (the peer) is an optional install
        print(f"graph part skipped: {e}", flush=True)
        return {"skipped": str(e)}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "graph.json"
        graph_bench.main(["--edges", edges, "--repeat", str(repeat), "--threads", str(threads),
                          "--json", str(path)])
        return json.loads(path.read_text())


def add_arguments(ap) -> None:
    ap.add_argument("--cpu-queries", type=int, default=500)
    ap.add_argument("--cpu-repeat", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--cpu-datasets", default="kos,movielens,tabula_muris",
                    help="comma-separated prepared sets (also: newsgroups, sec_names)")
    ap.add_argument("--cpu-metrics", default=",".join(METRICS),
                    help="comma-separated, among: " + ", ".join(METRICS))
    ap.add_argument("--cpu-knn-metrics", default="cosine,euclidean,manhattan",
                    help="comma-separated metrics of the kNN part")
    ap.add_argument("--cpu-graph-edges", default="1e6,1e7",
                    help="stored entries of the graph part's graphs (comma-separated)")
    ap.add_argument("--cpu-only", default=",".join(PARTS),
                    help="comma-separated: " + ", ".join(PARTS))


def run_cpu(args) -> dict:
    """Every part named in ``args.only``; returns what the JSON holds."""
    import gbdist as gb
    parts = [p for p in args.cpu_only.split(",") if p]
    sets = [d for d in args.cpu_datasets.split(",") if d]
    out = dict(machine=dict(cpus=os.cpu_count(), affinity=len(os.sched_getaffinity(0))
                            if hasattr(os, "sched_getaffinity") else None,
                            load_average=os.getloadavg() if hasattr(os, "getloadavg") else None,
                            python=platform.python_version()),
               gbdist=gb.__version__, backend=gb.runtime.get_backend("cpu").name,
               queries=args.cpu_queries, repeat=args.cpu_repeat, n_jobs=args.n_jobs)
    print(f"CPU section: backend={out['backend']}; {out['machine']}", flush=True)
    if "pairwise" in parts:
        out["pairwise"] = compare(args.data_dir, sets, args.cpu_queries, args.cpu_repeat,
                                  args.n_jobs, [m for m in args.cpu_metrics.split(",") if m])
    if "knn" in parts:
        out["knn"] = knn(args.data_dir, sets, max(1, args.cpu_repeat // 2), args.n_jobs,
                         metrics=[m for m in args.cpu_knn_metrics.split(",") if m])
    if "first-call" in parts:
        out["first_call"] = first_call()
    if "graph" in parts:
        out["graph"] = graph_part(args.cpu_graph_edges, args.cpu_repeat, args.n_jobs)
    out["machine"]["load_average_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=str(ROOT / ".bench_data"))
    ap.add_argument("--json", default=None)
    add_arguments(ap)
    args = ap.parse_args(argv)
    out = run_cpu(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    bad = [r for part in ("pairwise", "knn") for r in out.get(part, []) if r.get("checked") is False]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
