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
a row: issue 29's last shape), ``ml`` (283K x 194K, 21M), ``dense`` (66K x 26K, 108M) and
``wide`` (300K x 103K, 36M): ``benchmarks.datasets.PAPER_SHAPES``. ``--modes auto`` times
what ``gb.knn`` chooses itself (the full search where the planner does not prune).
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


LABELS = {"always": "pruned", "never": "full", "auto": "gb.knn (auto)"}


def _data(shape: str):
    from benchmarks import datasets
    return datasets.paper_shape(shape)


def add_arguments(ap) -> None:
    ap.add_argument("--shape", default="tall", help="tall (663K x 858K) or ml (283K x 194K)")
    ap.add_argument("--metrics", default="cosine,manhattan")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-rows", type=int, default=8192)
    ap.add_argument("--skip-full", action="store_true", help="time the pruned search only")
    ap.add_argument("--recall-queries", type=int, default=64,
                    help="queries checked against float64 distances computed on the device")
    ap.add_argument("--no-stages", action="store_true", help="skip the synchronised stage profile")
    ap.add_argument("--modes", default="always,never",
                    help="GBDIST_PRUNE settings timed, alternately: always (the pruned search), "
                         "never (the full search), auto (what gb.knn chooses); the first two "
                         "listed are compared on every row; the stage profile needs always")


def run(args) -> dict:
    """The rows measured; ``failed`` when the pruned and full answers differ on some row or
    the recall is below 1."""
    import cupy
    import cupyx.scipy.sparse as cps
    import gbdist as gb
    from benchmarks import peers
    from benchmarks.distances import PROBABILITY
    from benchmarks.knn import _cusparse_topk, _normalise_rows, recall_device
    from gbdist.backends.cuda import pruned as dev
    from gbdist.backends.cuda import CUDABackend

    t0 = time.perf_counter()
    X = _data(args.shape)
    print(f"## {args.shape}: {X.shape[0]} x {X.shape[1]}, nnz {X.nnz} "
          f"(made in {time.perf_counter() - t0:.1f} s); k = {args.k}", flush=True)
    m, k = X.shape[0], args.k
    out = []
    devs = {}
    for metric in args.metrics.split(","):
        row = {"shape": args.shape, "metric": metric, "m": m, "nnz": int(X.nnz), "k": k}
        res = {}
        prob = metric in PROBABILITY  # rows normalised to sum 1, as benchmarks/knn.py does
        if prob not in devs:
            devs.clear()
            devs[prob] = cps.csr_matrix(_normalise_rows(X) if prob else X)
        Xg = devs[prob]

        def run(mode):
            os.environ["GBDIST_PRUNE"] = mode
            res[mode] = gb.knn(Xg, k=k, metric=metric, backend="cuda")

        modes = [md for md in args.modes.split(",") if md]
        if args.skip_full:
            modes = [md for md in modes if md != "never"]

        try:
            from gbdist.neighbors.pruned import explain_pruning
            row["explain"] = explain_pruning(Xg, metric=metric, backend="cuda")
            t = time.perf_counter()
            run(modes[0])
            cupy.cuda.runtime.deviceSynchronize()
            row[f"{modes[0]}_first_s"] = time.perf_counter() - t
            if len(modes) > 1:
                run(modes[1])  # warm-up, and the answer to compare
                d1, i1 = (cupy.asnumpy(a) for a in res[modes[0]])
                d0, i0 = (cupy.asnumpy(a) for a in res[modes[1]])
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
            if "always" in modes and not args.no_stages:
                dev.profile(True)
                run("always")
                dev.profile(False)
                row["stages_s"] = dict(dev.PROFILE)
            idx = cupy.asnumpy(res[modes[0]][1])
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
            row["recall"], _ = recall_device(Xg, metric, idx, k, queries=args.recall_queries)
        except Exception as e:  # noqa: BLE001 - recorded, the next metric runs
            import traceback
            traceback.print_exc()
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        out.append(row)
        print(json.dumps({a: b for a, b in row.items() if not a.endswith("_times")}), flush=True)
    modes = [md for md in args.modes.split(",") if md]
    print("\n| shape | metric | " + " | ".join(f"{LABELS.get(md, md)} ms" for md in modes)
          + " | cuSPARSE+top-k ms | recall |")
    print("|---|---|" + "---|" * len(modes) + "---|---|")
    for r in out:
        ms = [r.get(f"{md}_ms") for md in modes]
        print(f"| {r['shape']} | {r['metric']} | "
              + " | ".join("-" if v is None else f"{v:.1f}" for v in ms)
              + f" | {round(r['cusparse_topk_ms'], 1) if 'cusparse_topk_ms' in r else '-'} | "
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
