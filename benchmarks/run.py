"""The benchmark runner: gbdist against its peers on the same work, in one process.

Work: the distance matrix of Q = the first ``--queries`` rows (2048) against
all rows of each data set, for cosine, euclidean, manhattan, chebyshev,
canberra and jensenshannon (rows normalised to sum 1 for jensenshannon, for
every implementation alike).

Peers (benchmarks/peers.py): cuSPARSE through cupyx (product + expansion, the
dot-product family), torch.cdist on dense copies where they fit, the naive
one-thread-per-pair merge kernel (the paper's baseline), scikit-learn on all
CPU cores (timed on a sub-block of queries and scaled, as marked).

Every gbdist result is checked against a float64 reference (gbdist's CPU
backend, itself tested against SciPy) on a sample of query rows before it is
timed. Times are medians of CUDA-event timings after warm-up; inputs are on
the device before timing; the first call's time (compilation included) is
reported separately.

    python benchmarks/run.py --data-dir .bench_data --json out.json
    python benchmarks/run.py --cpu --data-dir .bench_data --json cpu.json   # CPU section

The CPU section (``--cpu``, benchmarks/cpu.py; no GPU needed): gbdist's default CPU
backend against scikit-learn with ``n_jobs=2`` on every named metric it also computes,
kNN (k = 10) against its brute force, first calls and ``import gbdist``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import scipy.sparse as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gbdist as gb  # noqa: E402
from benchmarks import datasets, peers  # noqa: E402
from benchmarks import cpu as cpu_bench  # noqa: E402
from benchmarks import knn as knn_bench  # noqa: E402
from benchmarks.knn import _fmt  # noqa: E402  (one number formatter for both tables)

METRICS = ("cosine", "euclidean", "manhattan", "chebyshev", "canberra", "jensenshannon")
DOT_FAMILY = ("cosine", "euclidean")
UNION_FAMILY = ("manhattan", "canberra", "jensenshannon", "chebyshev")
CHECK_ROWS = 48


def _normalise_rows(X: sps.csr_matrix) -> sps.csr_matrix:
    s = np.asarray(X.sum(axis=1)).ravel()
    s[s == 0] = 1.0
    return sps.csr_matrix(sps.diags(1.0 / s) @ X, dtype=np.float32)


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    if (nan_g != nan_r).any():
        return float("inf")
    ok = ~nan_r
    den = np.linalg.norm(ref[ok])
    return float(np.linalg.norm(got[ok] - ref[ok]) / (den if den > 0 else 1.0))


def _peer_times(name, metric, Q, X, Qg, Xg, repeats, args):
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
            out["naive"] = peers.timeit_cuda(lambda: peers.naive_merge(Qg, Xg, metric), max(3, repeats // 3), 1)
        except NotImplementedError:
            pass
        except Exception as e:
            out["naive"] = f"error: {type(e).__name__}: {e}"[:120]
    if metric in ("euclidean", "manhattan", "chebyshev") and Q.shape[1] * (Q.shape[0] + X.shape[0]) * 4 < 8e9:
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
    import cupy
    import cupyx.scipy.sparse as cps
    Q = X[: args.queries]
    print(f"\n## {name}: {X.shape[0]} x {X.shape[1]}, nnz {X.nnz}; Q = {Q.shape[0]} rows", flush=True)
    for metric in args.metrics:
        data = _normalise_rows(X) if metric == "jensenshannon" else X
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
            row.update(_peer_times(name, metric, q, data, Qg, Xg, args.repeats, args))
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:300]
            traceback.print_exc()
        results.append(row)
        _print_row(row)
        cupy.get_default_memory_pool().free_all_blocks()


def _time_strategies(row, q, data, Qg, Xg, metric, args):
    """Time every strategy the plan allows (each checked first), to fit the cost model."""
    import cupy
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    p.add_argument("--datasets", default="movielens,tabula_muris,kos,newsgroups,sec_names")
    p.add_argument("--metrics", default=",".join(METRICS))
    p.add_argument("--queries", type=int, default=2048)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--powerlaw", action="store_true", help="also the 283K x 194K generated matrix")
    p.add_argument("--powerlaw-queries", type=int, default=2048)
    p.add_argument("--sklearn-rows", type=int, default=64)
    p.add_argument("--skip-naive", action="store_true")
    p.add_argument("--all-strategies", action="store_true",
                   help="also time every CUDA strategy the plan allows (to fit the cost model)")
    p.add_argument("--naive-max-pairs", type=float, default=3e8,
                   help="skip the naive merge kernel above this many output pairs (it takes minutes)")
    p.add_argument("--accumulate", default="auto", choices=("auto", "float32", "float64"),
                   help="CUDA accumulation type for float32 data (default auto = float64); "
                        "benchmarks/accuracy.py times both and checks accuracy")
    p.add_argument("--json", default=None)
    knn_bench.add_arguments(p)
    p.add_argument("--cpu", action="store_true",
                   help="the CPU section (benchmarks/cpu.py) instead of the GPU runs")
    cpu_bench.add_arguments(p)
    args = p.parse_args(argv)
    if args.cpu:
        out = cpu_bench.run_cpu(args)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1, default=str))
        return 0
    from gbdist.backends.cuda import set_accumulate
    set_accumulate(args.accumulate)  # validates
    args.metrics = [m for m in args.metrics.split(",") if m]
    if args.knn:  # the kNN benchmark (benchmarks/knn.py), not the distance one
        out = knn_bench.run_knn(args)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1, default=str))
        return 0

    import cupy
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
    lines = summary(results)
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": dev["name"].decode(), "results": results,
                                               "compile_log": _compile_log()}, indent=1, default=str))
    return 0


def _compile_log():
    from gbdist.backends import cuda
    return [(k, round(s, 3)) for k, s in cuda.compile_log()]


if __name__ == "__main__":
    raise SystemExit(main())
