"""Pruned vs full all-pairs kNN on the device, beside cuSPARSE + top-k (issue 29).

    python benchmarks/run.py pruned --shape tall --metrics cosine,manhattan --json out.json
    BENCH_SECTION=pruned TEST_ARGS="-k pruning" bash benchmarks/gpu_check.sh   # GPU machine

The self-join ``gb.knn(X, k=10, backend="cuda")`` (each row left out of its own list) on
CuPy CSR input, three ways in one process: ``GBDIST_PRUNE=always`` (the pruned search of
gbdist.backends.cuda.pruned), ``GBDIST_PRUNE=never`` (the fused full search), and for the
dot-product metrics the peer (cuSPARSE product + norm expansion, then argpartition + sort
of each row block; benchmarks/knn.py's ``_cusparse_topk``, timed on ``--peer-rows``
queries and scaled). The pruned and full answers are compared on every row before any
timing (distances within float32 rounding, indices where not tied); recall@k against
float64 exact distances on 64 sampled queries (ties counted as right). Pruned and full
are timed alternately, CUDA events, medians; one extra pruned run with every stage
synchronised gives the stage profile. Shapes: ``tall`` (663K x 858K, ~3.8M nonzeros, ~6
a row: issue 29's last shape), ``ml`` (283K x 194K, 21M), from benchmarks/dask_knn.py.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def _data(shape: str):
    from benchmarks import datasets
    from benchmarks.dask_knn import SHAPES, _uniform
    gen, rows, cols, nnz = SHAPES[shape]
    if gen == "uniform":
        return _uniform(rows, cols, nnz)
    return datasets.powerlaw(rows, cols, nnz, seed=0)[0]


def add_arguments(ap) -> None:
    ap.add_argument("--shape", default="tall", help="tall (663K x 858K) or ml (283K x 194K)")
    ap.add_argument("--metrics", default="cosine,manhattan")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-rows", type=int, default=8192)
    ap.add_argument("--skip-full", action="store_true", help="time the pruned search only")


def run(args) -> dict:
    """The rows measured; ``failed`` when the pruned and full answers differ on some row or
    the recall is below 1."""
    import cupy
    import cupyx.scipy.sparse as cps
    import gbdist as gb
    from benchmarks import peers
    from benchmarks.knn import _cusparse_topk, recall_at_k
    from gbdist.backends.cuda import pruned as dev
    from gbdist.backends.cuda import CUDABackend

    t0 = time.perf_counter()
    X = _data(args.shape)
    print(f"## {args.shape}: {X.shape[0]} x {X.shape[1]}, nnz {X.nnz} "
          f"(made in {time.perf_counter() - t0:.1f} s); k = {args.k}", flush=True)
    Xg = cps.csr_matrix(X)
    m, k = X.shape[0], args.k
    out = []
    for metric in args.metrics.split(","):
        row = {"shape": args.shape, "metric": metric, "m": m, "nnz": int(X.nnz), "k": k}
        res = {}

        def run(mode):
            os.environ["GBDIST_PRUNE"] = mode
            res[mode] = gb.knn(Xg, k=k, metric=metric, backend="cuda")

        try:
            from gbdist.neighbors.pruned import explain_pruning
            row["explain"] = explain_pruning(Xg, metric=metric, backend="cuda")
            t = time.perf_counter()
            run("always")
            cupy.cuda.runtime.deviceSynchronize()
            row["pruned_first_s"] = time.perf_counter() - t
            modes = ["always"] + ([] if args.skip_full else ["never"])
            if not args.skip_full:
                run("never")  # warm-up, and the answer to compare
                d1, i1 = (cupy.asnumpy(a) for a in res["always"])
                d0, i0 = (cupy.asnumpy(a) for a in res["never"])
                close = np.isclose(d1, d0, rtol=2e-6, atol=1e-6, equal_nan=True)
                row["rows_differ"] = int((~close.all(axis=1)).sum())
                row["index_differ_not_tied"] = int(((i1 != i0) & ~close).sum())
            times = {md: [] for md in modes}
            for _ in range(args.repeats):  # interleaved
                for md in modes:
                    times[md].append(peers.timeit_cuda(lambda: run(md), 1, 0))
            for md in modes:
                row[f"{md}_ms"] = float(np.median(times[md]))
                row[f"{md}_times"] = times[md]
            dev.profile(True)
            run("always")
            dev.profile(False)
            row["stages_s"] = dict(dev.PROFILE)
            idx = cupy.asnumpy(res["always"][1])
            res.clear()
            cupy.get_default_memory_pool().free_all_blocks()
            if metric in ("cosine", "euclidean"):
                wm = CUDABackend().default_budget()
                rows = min(m, args.peer_rows)
                _cusparse_topk(Xg, metric, k, min(rows, 256), wm)
                ms = peers.timeit_cuda(lambda: _cusparse_topk(Xg, metric, k, rows, wm), 1, 0)
                row["cusparse_topk_ms"] = ms * m / rows
                row["cusparse_topk_rows"] = rows
                cupy.get_default_memory_pool().free_all_blocks()
            print(json.dumps({a: b for a, b in row.items() if not a.endswith("_times")}),
                  flush=True)  # before the reference (host) work
            row["recall"] = recall_at_k(X, metric, idx, k)
        except Exception as e:  # noqa: BLE001 - recorded, the next metric runs
            import traceback
            traceback.print_exc()
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        out.append(row)
        print(json.dumps({a: b for a, b in row.items() if not a.endswith("_times")}), flush=True)
    print("\n| shape | metric | pruned ms | full ms | full/pruned | cuSPARSE+top-k ms | recall |")
    print("|---|---|---|---|---|---|---|")
    for r in out:
        f = r.get("never_ms")
        p = r.get("always_ms")
        print(f"| {r['shape']} | {r['metric']} | {p if p is None else round(p, 1)} | "
              f"{f if f is None else round(f, 1)} | "
              f"{'-' if not (f and p) else round(f / p, 2)} | "
              f"{round(r['cusparse_topk_ms'], 1) if 'cusparse_topk_ms' in r else '-'} | "
              f"{r.get('recall', r.get('error', '-'))} |")
    failed = any(r.get("error") or r.get("rows_differ") or r.get("recall", 1.0) < 1.0
                 for r in out)
    return {"results": out, "failed": failed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    res = run(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, default=str)
    return 1 if res["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
