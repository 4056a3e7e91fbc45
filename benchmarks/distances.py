"""The distances section: gbdist's distance matrices against their peers on the real data.

    python benchmarks/run.py distances --data-dir .bench_data --json out.json     # GPU
    python benchmarks/run.py distances --device cpu --data-dir .bench_data        # CPU
    python benchmarks/run.py distances --accuracy --data-dir .bench_data          # accuracy
    python benchmarks/run.py distances --check-peers --data-dir .bench_data       # the peers

**GPU** (``--device cuda``, the default where CuPy finds a GPU). Work: the distance matrix
of Q = the first ``--queries`` rows (2,048) against all rows of each data set, for cosine,
euclidean, manhattan, chebyshev, canberra and jensenshannon (rows normalised to sum 1 for
jensenshannon, for every implementation alike). Peers (benchmarks/peers.py): cuSPARSE
through cupyx (product + norm expansion, the dot-product family), torch.cdist on dense
copies where they fit, the naive one-thread-per-pair merge kernel (the paper's baseline),
scikit-learn on all CPU cores (timed on a sub-block of queries and scaled). Every gbdist
result is checked against a float64 reference (gbdist's CPU backend, itself tested
against SciPy) on a sample of query rows before it is timed. Times are medians of
CUDA-event timings after warm-up; inputs are on the device before timing; the first
call's time (compilation included) is reported separately. ``--all-strategies`` also
times every CUDA strategy the plan allows (to fit the cost model).

**CPU** (``--device cpu``). gbdist's default CPU backend (compiled, Numba) against
scikit-learn on ``--n-jobs`` cores: 500 query rows against all rows, for every named
metric scikit-learn also computes: ``pairwise_distances(Q, X, metric, n_jobs)`` where it
takes sparse input, else ``DistanceMetric.pairwise`` split over ``n_jobs`` column slices
the way ``pairwise_distances`` splits its own functions; Jensen-Shannon against SciPy's
``cdist`` on dense copies of row-normalised inputs. gbdist and its peer are timed
alternately; the ratio is the peer's time over gbdist's (> 1: gbdist is faster).

**Accuracy** (``--accuracy``; was benchmarks/accuracy.py). For every named metric in
float32: the largest error against float64 SciPy relative to the row scale
(tests/accuracy_cases.py, bound 1e-6), whether identical rows give exactly 0, and on the
GPU the time under float32 and float64 accumulation and the cost of the latter (target
<= +15%).

**Peers** (``--check-peers``; was benchmarks/check_peers.py, GPU). Every peer and metric
against a float64 reference on random inputs (an empty row included), the naive kernel's
grid-stride path, the naive kernel against scikit-learn on slices of the prepared sets.
"""
from __future__ import annotations

import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import scipy.sparse as sps

from benchmarks import datasets, peers

ROOT = Path(__file__).resolve().parents[1]

METRICS = ("cosine", "euclidean", "manhattan", "chebyshev", "canberra", "jensenshannon")
DOT_FAMILY = ("cosine", "euclidean")
CHECK_ROWS = 48
GPU_DATASETS = "movielens,tabula_muris,kos,newsgroups,sec_names"

# CPU: gbdist name -> (scikit-learn metric, its keyword arguments); None: SciPy's cdist
CPU_METRICS = {
    "cosine": ("cosine", {}), "euclidean": ("euclidean", {}), "manhattan": ("manhattan", {}),
    "sqeuclidean": ("sqeuclidean", {}), "canberra": ("canberra", {}),
    "chebyshev": ("chebyshev", {}), "braycurtis": ("braycurtis", {}),
    "minkowski": ("minkowski", {"p": 3}), "jensenshannon": (None, {}),
}
SPARSE_SKLEARN = ("cosine", "euclidean", "manhattan")
# scikit-learn's DistanceMetric("braycurtis") on sparse rows disagrees with SciPy (by 0.38 on
# MovieLens rows): timed against it, checked against SciPy's cdist on 20 query rows
CHECK_WITH_SCIPY = ("braycurtis",)
CPU_DATASETS = "kos,movielens,tabula_muris"

# rows normalised to sum 1 for the probability metrics (timing and accuracy alike)
PROBABILITY = ("jensenshannon", "hellinger", "kl_divergence")
NO_ZERO_SELF = ("inner_product", "russellrao")  # d(a, a) is not a constant


def _normalise_rows(X: sps.csr_matrix) -> sps.csr_matrix:
    s = np.asarray(X.sum(axis=1)).ravel()
    s[s == 0] = 1.0
    return sps.csr_matrix(sps.diags(1.0 / s) @ X, dtype=X.dtype)


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    if (nan_g != nan_r).any():
        return float("inf")
    ok = ~nan_r
    den = np.linalg.norm(ref[ok])
    return float(np.linalg.norm(got[ok] - ref[ok]) / (den if den > 0 else 1.0))


def _fmt(v, nd=2):
    if v is None:
        return "-"
    if isinstance(v, str):
        return "ERR"
    return f"{v:.{nd}f}"


# ---------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------

def _peer_times(metric, Q, X, Qg, Xg, repeats, args):
    """Median ms of each applicable peer (None where it does not apply)."""
    import cupy
    out = {}
    if metric in DOT_FAMILY:
        try:
            out["cusparse"] = peers.timeit_cuda(lambda: peers.cusparse(Qg, Xg, metric), repeats, 2)
        except Exception as e:  # report, never hide
            out["cusparse"] = f"error: {type(e).__name__}: {e}"[:120]
    if not args.skip_naive and Q.shape[0] * X.shape[0] <= args.naive_max_pairs:
        try:
            out["naive"] = peers.timeit_cuda(lambda: peers.naive_merge(Qg, Xg, metric),
                                             max(3, repeats // 3), 1)
        except NotImplementedError:
            pass
        except Exception as e:
            out["naive"] = f"error: {type(e).__name__}: {e}"[:120]
    if metric in ("euclidean", "manhattan", "chebyshev") and \
            Q.shape[1] * (Q.shape[0] + X.shape[0]) * 4 < 8e9:
        try:
            tq, tx = peers.to_torch_dense(Q), peers.to_torch_dense(X)
            out["torch"] = peers.timeit_cuda(lambda: peers.torch_cdist(tq, tx, metric), repeats, 2)
            del tq, tx
        except NotImplementedError:
            pass
        except Exception as e:
            out["torch"] = f"error: {type(e).__name__}: {e}"[:120]
    if metric in ("cosine", "euclidean", "manhattan") and args.sklearn_rows > 0:
        rows = min(args.sklearn_rows, Q.shape[0])
        ms = peers.timeit_cpu(lambda: peers.sklearn_cpu(Q[:rows], X, metric), 1, 0)
        out["sklearn"] = ms * Q.shape[0] / rows
    cupy.get_default_memory_pool().free_all_blocks()
    return out


def bench_dataset(name, X, args, results):
    """Every metric of ``args.metrics`` on one data set, on the GPU."""
    import cupy
    import cupyx.scipy.sparse as cps

    import gbdist as gb
    Q = X[: args.queries]
    print(f"\n## {name}: {X.shape[0]} x {X.shape[1]}, nnz {X.nnz}; Q = {Q.shape[0]} rows", flush=True)
    for metric in args.metrics:
        data = _normalise_rows(X) if metric in PROBABILITY else X
        q = data[: args.queries]
        Qg, Xg = cps.csr_matrix(q), cps.csr_matrix(data)
        row = {"dataset": name, "metric": metric, "shape": list(X.shape), "nnz": int(X.nnz),
               "queries": int(q.shape[0])}
        try:
            t0 = time.perf_counter()
            D = gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda")
            cupy.cuda.runtime.deviceSynchronize()
            row["first_call_ms"] = (time.perf_counter() - t0) * 1e3
            ref = gb.pairwise_distances(q[:CHECK_ROWS].astype(np.float64), data.astype(np.float64),
                                        metric=metric, backend="cpu")
            row["rel_err"] = _rel_err(cupy.asnumpy(D[:CHECK_ROWS]).astype(np.float64), ref)
            del D
            if not row["rel_err"] < 1e-3:
                row["gbdist_ms"] = None
                row["error"] = f"check failed: relative error {row['rel_err']:.2e}"
            else:
                row["gbdist_ms"] = peers.timeit_cuda(
                    lambda: gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda"), args.repeats, 2)
                from gbdist.backends.cuda import last_run
                row["strategy"] = last_run()["strategy"]
                if args.all_strategies:
                    _time_strategies(row, q, data, Qg, Xg, metric, args)
            row.update(_peer_times(metric, q, data, Qg, Xg, args.repeats, args))
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:300]
            traceback.print_exc()
        results.append(row)
        _print_row(row)
        cupy.get_default_memory_pool().free_all_blocks()


def _time_strategies(row, q, data, Qg, Xg, metric, args):
    """Time every strategy the plan allows (each checked first), to fit the cost model."""
    import cupy

    import gbdist as gb
    from gbdist.backends.cuda import generated as _generated
    from gbdist.pairwise import metric_program
    gen = _generated(metric_program(metric).plan, "float32")
    ref = None
    for strat in gen.strategies:
        try:
            D = gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda", strategy=strat)
            if ref is None:
                ref = gb.pairwise_distances(q[:CHECK_ROWS].astype(np.float64), data.astype(np.float64),
                                            metric=metric, backend="cpu")
            err = _rel_err(cupy.asnumpy(D[:CHECK_ROWS]).astype(np.float64), ref)
            del D
            if not err < 1e-3:
                row[f"t_{strat}"] = f"check failed: {err:.1e}"
                continue
            row[f"t_{strat}"] = peers.timeit_cuda(
                lambda: gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda", strategy=strat),
                max(3, args.repeats // 2), 1)
        except Exception as e:
            row[f"t_{strat}"] = f"error: {type(e).__name__}: {e}"[:200]
        cupy.get_default_memory_pool().free_all_blocks()


def _print_row(r):
    print(f"{r['dataset']:<13} {r['metric']:<14} gbdist {_fmt(r.get('gbdist_ms')):>9} ms"
          f"  cusparse {_fmt(r.get('cusparse')):>9}  naive {_fmt(r.get('naive')):>9}"
          f"  torch {_fmt(r.get('torch')):>9}  sklearn {_fmt(r.get('sklearn')):>10}"
          f"  first {_fmt(r.get('first_call_ms')):>8}  err {r.get('rel_err', float('nan')):.1e}"
          f"  [{r.get('strategy')}; " + " ".join(f"{k[2:]}={_fmt(v)}" for k, v in r.items() if k.startswith("t_")) + "]"
          + (f"  {r['error']}" if r.get("error") else ""), flush=True)


def summary(results) -> list[str]:
    """The targets as ratios measured in this run."""
    lines = ["", "| data set | metric | gbdist ms | vs cuSPARSE | vs naive | vs own cosine | vs torch.cdist | vs sklearn |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    cos = {r["dataset"]: r.get("gbdist_ms") for r in results if r["metric"] == "cosine"}

    def ratio(a, b):
        return f"{a / b:.2f}x" if isinstance(a, float) and isinstance(b, float) and b > 0 else "-"

    for r in results:
        g = r.get("gbdist_ms")
        c = cos.get(r["dataset"])
        lines.append(f"| {r['dataset']} | {r['metric']} | {_fmt(g)} | {ratio(g, r.get('cusparse'))} | "
                     f"{ratio(g, r.get('naive'))} | {ratio(g, c) if r['metric'] != 'cosine' else '-'} | "
                     f"{ratio(g, r.get('torch'))} | {ratio(g, r.get('sklearn'))} |")
    return lines


def run_gpu(args) -> dict:
    import cupy

    import gbdist as gb
    from gbdist.backends import cuda
    cuda.set_accumulate(args.accumulate)  # validates
    dev = cupy.cuda.runtime.getDeviceProperties(0)
    print(f"device: {dev['name'].decode()}; CuPy {cupy.__version__}; gbdist {gb.__version__};"
          f" accumulate={args.accumulate}", flush=True)
    results: list = []
    for name in [d for d in args.datasets.split(",") if d]:
        X = datasets.load(name, args.data_dir)[0].astype(np.float32)
        bench_dataset(name, X, args, results)
    if args.powerlaw:
        t0 = time.perf_counter()
        X = datasets.powerlaw()[0].astype(np.float32)
        print(f"(generated power-law matrix in {time.perf_counter() - t0:.1f} s)", flush=True)
        qa, sk = args.queries, args.sklearn_rows
        args.queries, args.sklearn_rows = args.powerlaw_queries, min(sk, 8)
        bench_dataset("powerlaw-ML", X, args, results)
        args.queries, args.sklearn_rows = qa, sk
    print("\n".join(summary(results)))
    return {"device": dev["name"].decode(), "results": results,
            "compile_log": [(k, round(s, 3)) for k, s in cuda.compile_log()]}


# ---------------------------------------------------------------------------
# CPU
# ---------------------------------------------------------------------------

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


def run_cpu(args) -> dict:
    """One row per (data set, metric): gbdist's CPU backend against scikit-learn / SciPy."""
    import gbdist as gb
    out = dict(machine=dict(cpus=os.cpu_count(), python=platform.python_version(),
                            load_average=os.getloadavg() if hasattr(os, "getloadavg") else None),
               gbdist=gb.__version__, backend=gb.runtime.get_backend("cpu").name,
               queries=args.queries, repeat=args.repeats, n_jobs=args.n_jobs)
    print(f"CPU distances: backend={out['backend']}; {out['machine']}", flush=True)
    rows = []
    print(f"{'data':<13} {'metric':<14} {'gbdist':>10} {'peer':>12} {'ratio':>7}   max |diff|")
    for name in [d for d in args.datasets.split(",") if d]:
        X0, _ = datasets.load(name, args.data_dir)
        for metric in args.metrics:
            sk_name, kw = CPU_METRICS[metric]
            X = _normalise_rows(X0) if metric == "jensenshannon" else X0
            Q = X[:args.queries]
            peer_name = "scipy cdist (dense)" if sk_name is None else "scikit-learn"
            if sk_name is None and X.shape[1] * (X.shape[0] + Q.shape[0]) > 1.5e8:
                rows.append(dict(dataset=name, metric=metric, skipped="dense copy too large"))
                continue
            ours_fn = lambda: gb.pairwise_distances(Q, X, metric=metric, backend="cpu", **kw)  # noqa: E731
            peer_fn = (lambda: scipy_js(Q, X)) if sk_name is None else \
                (lambda: sklearn_pd(Q, X, sk_name, args.n_jobs, **kw))  # noqa: E731
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
            ours_s, peer_s = interleaved(ours_fn, peer_fn, args.repeats)
            row["gbdist_ms"], row["peer_ms"] = ours_s * 1e3, peer_s * 1e3
            row["ratio"] = row["peer_ms"] / row["gbdist_ms"]
            rows.append(row)
            print(f"{name:<13} {metric:<14} {row['gbdist_ms']:7.1f} ms {row['peer_ms']:9.1f} ms "
                  f"{row['ratio']:6.1f}x   {diff:.2g}", flush=True)
    out["pairwise"] = rows
    out["machine"]["load_average_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    out["failed"] = any(r.get("checked") is False for r in rows)
    return out


# ---------------------------------------------------------------------------
# accuracy (float32 against float64 SciPy)
# ---------------------------------------------------------------------------

def check_accuracy(metric, data, args, backend):
    """(max scaled error, identical rows exact?) on a sample: Q = rows 0..q plus copies
    of index rows, against the first ``--index-rows`` rows."""
    import gbdist as gb
    sys.path.insert(0, str(ROOT / "tests"))
    from accuracy_cases import max_scaled_error
    n = min(args.index_rows, data.shape[0])
    idx = data[:n]
    q = sps.vstack([data[: args.check_rows], idx[n - 8: n]]).tocsr()  # 8 copies of index rows
    D = gb.pairwise_distances(q, idx, metric=metric, backend=backend)
    err = max_scaled_error(metric, D, q.toarray(), idx.toarray())
    exact = True
    if metric not in NO_ZERO_SELF:
        copies = D[args.check_rows:, n - 8:n]
        diag = np.diagonal(copies)
        S = gb.pairwise_distances(q, metric=metric, backend=backend)
        sd = np.diagonal(S)
        exact = bool(((diag == 0) | np.isnan(diag)).all() and ((sd == 0) | np.isnan(sd)).all())
    return err, exact


def time_modes(metric, data, args):
    """ms of the GPU distance matrix with float32 and with float64 ("auto") accumulation."""
    import cupy
    import cupyx.scipy.sparse as cps

    import gbdist as gb
    from gbdist.backends.cuda import accumulate
    Qg, Xg = cps.csr_matrix(data[: args.queries]), cps.csr_matrix(data)
    out = {}
    for mode in ("float32", "auto"):
        with accumulate(mode):
            out[mode] = peers.timeit_cuda(
                lambda: gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda"), args.repeats, 2)
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def run_accuracy(args) -> dict:
    import gbdist as gb
    sys.path.insert(0, str(ROOT / "tests"))
    from accuracy_cases import BOUND
    metrics = args.metrics if args.metrics_given else sorted(gb.metric_names())
    backend = "cuda" if args.device == "cuda" else "cpu"
    rows = []
    print(f"{'data set':<13} {'metric':<26} {'max err/scale':>13} {'ok':>3} {'d(a,a)=0':>8}"
          f" {'f32 acc ms':>10} {'f64 acc ms':>10} {'cost':>6}")
    for name in [d for d in args.datasets.split(",") if d]:
        X = datasets.load(name, args.data_dir)[0].astype(np.float32)
        for metric in metrics:
            data = _normalise_rows(X) if metric in PROBABILITY else X
            r = {"dataset": name, "metric": metric}
            try:
                r["max_err"], r["identical_exact"] = check_accuracy(metric, data, args, backend)
                if not args.no_timing and backend == "cuda":
                    t = time_modes(metric, data, args)
                    r["ms_float32"], r["ms_float64"] = t["float32"], t["auto"]
                    r["cost"] = t["auto"] / t["float32"] - 1.0
            except Exception as e:  # report, never hide
                r["error"] = f"{type(e).__name__}: {e}"[:200]
            rows.append(r)
            ok = "yes" if r.get("max_err", np.inf) <= BOUND else "NO"
            f = (lambda v, s="{:10.2f}": s.format(v) if isinstance(v, float) else f"{'-':>10}")
            print(f"{name:<13} {metric:<26} {r.get('max_err', float('nan')):>13.2e} {ok:>3}"
                  f" {str(r.get('identical_exact', '-')):>8} {f(r.get('ms_float32'))} {f(r.get('ms_float64'))}"
                  f" {('%+5.0f%%' % (100 * r['cost'])) if 'cost' in r else '-':>6}"
                  + (f"  {r['error']}" if "error" in r else ""), flush=True)
    bad = [r for r in rows if "error" in r or r.get("max_err", np.inf) > BOUND
           or not r.get("identical_exact", True)]
    costs = [r["cost"] for r in rows if "cost" in r]
    if costs:
        print(f"\nfloat64 accumulation cost: median {100 * np.median(costs):+.0f}%, "
              f"max {100 * max(costs):+.0f}% (target <= +15%)")
    print(f"{len(rows) - len(bad)} of {len(rows)} rows meet the bound with exact zeros")
    return {"accuracy": rows, "failed": bool(bad)}


# ---------------------------------------------------------------------------
# the section
# ---------------------------------------------------------------------------

def add_arguments(p) -> None:
    datasets.add_source_arguments(p)
    p.add_argument("--datasets", default=None,
                   help=f"comma-separated (default GPU: {GPU_DATASETS}; CPU: {CPU_DATASETS})")
    p.add_argument("--metrics", default=None,
                   help="comma-separated (default GPU: the six of the table; CPU: "
                        f"{', '.join(CPU_METRICS)}; --accuracy: every named metric)")
    p.add_argument("--queries", type=int, default=None, help="query rows (GPU 2048, CPU 500)")
    p.add_argument("--repeats", type=int, default=None, help="timings per median (GPU 10, CPU 5)")
    gpu = p.add_argument_group("GPU")
    gpu.add_argument("--powerlaw", action="store_true", help="also the 283K x 194K generated matrix")
    gpu.add_argument("--powerlaw-queries", type=int, default=2048)
    gpu.add_argument("--sklearn-rows", type=int, default=64)
    gpu.add_argument("--skip-naive", action="store_true")
    gpu.add_argument("--all-strategies", action="store_true",
                     help="also time every CUDA strategy the plan allows (to fit the cost model)")
    gpu.add_argument("--naive-max-pairs", type=float, default=3e8,
                     help="skip the naive merge kernel above this many output pairs (it takes minutes)")
    gpu.add_argument("--accumulate", default="auto", choices=("auto", "float32", "float64"),
                     help="CUDA accumulation type for float32 data (default auto = float64)")
    p.add_argument("--n-jobs", type=int, default=2, help="CPU: scikit-learn's n_jobs")
    acc = p.add_argument_group("accuracy")
    acc.add_argument("--accuracy", action="store_true",
                     help="float32 accuracy against float64 SciPy (and its cost on the GPU)")
    acc.add_argument("--check-rows", type=int, default=24, help="query rows of the accuracy check")
    acc.add_argument("--index-rows", type=int, default=256, help="index rows of the accuracy check")
    acc.add_argument("--no-timing", action="store_true", help="accuracy only, no timing")
    p.add_argument("--check-peers", action="store_true",
                   help="check the peers against a float64 reference (GPU) and exit")


def run(args) -> dict:
    if args.device is None:
        args.device = "cuda" if peers.gpu_present() else "cpu"
    gpu = args.device == "cuda"
    if args.check_peers:
        return peers.self_check(args.data_dir)
    args.metrics_given = args.metrics is not None
    if args.datasets is None:
        args.datasets = ",".join(datasets.REAL_NAMES) if args.accuracy else (
            GPU_DATASETS if gpu else CPU_DATASETS)
    args.metrics = [m for m in (args.metrics or ",".join(METRICS if gpu else CPU_METRICS)).split(",") if m]
    if args.queries is None:
        args.queries = 2048 if gpu else 500
    if args.repeats is None:
        args.repeats = 10 if gpu and not args.accuracy else 5
    if args.accuracy:
        return run_accuracy(args)
    return run_gpu(args) if gpu else run_cpu(args)
