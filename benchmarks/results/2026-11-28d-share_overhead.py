"""Where a replicated Dask share's extra time goes (issue 31), on one GPU, no Dask.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28d-share_overhead.py dense:2/4,ml:2/4 > out.jsonl

For each shape and metric: ``gb.knn(gb.prepare(X), k=10)`` (median of 3), then every share
(w, W) for the W given (``dense:2/4``), run one after another in this process as a worker runs it
(``gbdist.dask.tasks.share_knn`` on the CuPy matrix, the accuracy decision made once,
:func:`gbdist.dask.accuracy.whole`). The shares' sum over ``gb.knn`` is the split's
overhead with no scheduler and no transfers. A second, instrumented pass of each (device
synchronised around every build) counts the tiles and times the per-slice forms
(``kept.form``: Bᵀ, per-row orders) each call builds. Every share's lists, merged, are
checked against ``gb.knn``'s before any timing. One JSON line per (shape, metric, W).
"""
from __future__ import annotations

import functools
import json
import statistics
import sys
import time

import cupy as cp
import cupyx.scipy.sparse as cps

import gbdist as gb
from benchmarks import datasets
from gbdist.backends import cuda as cuda_backend
from gbdist.backends.cuda import strategies
from gbdist.dask import accuracy, tasks

K = 10
RECORD = None  # a list while instrumented


def _sync():
    cp.cuda.Device().synchronize()


def _timed_form(orig):
    @functools.wraps(orig)
    def form(job, side, key, build):
        if RECORD is None:
            return orig(job, side, key, build)

        def timed():
            _sync()
            t = time.perf_counter()
            v = build()
            _sync()
            RECORD.append(("form", key[0], time.perf_counter() - t))
            return v
        return orig(job, side, key, timed)
    return form


def _timed_tile(orig):
    @functools.wraps(orig)  # keeps run_tile's signature: the runtime asks upper by it
    def run_tile(self, p, r0, r1, c0, c1, *a, **kw):
        if RECORD is None:
            return orig(self, p, r0, r1, c0, c1, *a, **kw)
        _sync()
        t = time.perf_counter()
        out = orig(self, p, r0, r1, c0, c1, *a, **kw)
        _sync()
        RECORD.append(("tile", (r1 - r0, c1 - c0), time.perf_counter() - t))
        return out
    return run_tile


strategies.form = _timed_form(strategies.form)
cuda_backend.CUDABackend.run_tile = _timed_tile(cuda_backend.CUDABackend.run_tile)


def median_ms(fn, n=3):
    ts = []
    for _ in range(n):
        _sync()
        t = time.perf_counter()
        fn()
        _sync()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts), ts


def profile(fn):
    global RECORD
    RECORD = []
    _sync()
    t = time.perf_counter()
    fn()
    _sync()
    total = time.perf_counter() - t
    rec, RECORD = RECORD, None
    forms = [r for r in rec if r[0] == "form"]
    tiles = [r for r in rec if r[0] == "tile"]
    by = {}
    for _, name, s in forms:
        by.setdefault(name, [0, 0.0])
        by[name][0] += 1
        by[name][1] += s * 1e3
    return {"total_ms": total * 1e3, "tiles": len(tiles),
            "tile_ms": sum(s for *_, s in tiles) * 1e3,
            "tile_shapes": sorted({t[1] for t in tiles}),
            "forms": {k: {"n": v[0], "ms": round(v[1], 2)} for k, v in by.items()}}


def main():
    specs = sys.argv[1].split(",") if len(sys.argv) > 1 else ["dense:2", "ml:4"]
    metrics = sys.argv[2].split(",") if len(sys.argv) > 2 else ["cosine", "manhattan"]
    for spec in specs:
        shape, ws = spec.split(":")
        Xh = datasets.paper_shape(shape)
        X = cps.csr_matrix(Xh)
        P = gb.prepare(X)
        for metric in metrics:
            ref = gb.knn(P, k=K, metric=metric, backend="cuda")
            single, single_ts = median_ms(lambda: gb.knn(P, k=K, metric=metric, backend="cuda"))
            prof_single = profile(lambda: gb.knn(P, k=K, metric=metric, backend="cuda"))
            choice = accuracy.whole(X, metric, {})
            for W in [int(w) for w in ws.split("/")]:
                common = (metric, {}, "cuda", None, True, choice)
                shares = [tasks.share_knn(X, K + 1, w, W, *common) for w in range(W)]
                d, i = tasks.merge_shares(K, True, K + 1, *shares)
                rd, ri = ref
                equal = bool(cp.array_equal(cp.asarray(d), cp.asarray(rd))
                             and cp.array_equal(cp.asarray(i), cp.asarray(ri)))
                each = []
                for w in range(W):
                    m, _ = median_ms(lambda w=w: tasks.share_knn(X, K + 1, w, W, *common))
                    each.append(m)
                profs = [profile(lambda w=w: tasks.share_knn(X, K + 1, w, W, *common))
                         for w in range(W)]
                print(json.dumps({
                    "shape": shape, "metric": metric, "W": W, "equal": equal,
                    "single_ms": single, "single_ts": single_ts,
                    "shares_ms": each, "sum_over_single": sum(each) / single,
                    "max_share_over_even": max(each) / (single / W),
                    "single_profile": prof_single, "share_profiles": profs}), flush=True)
            del ref
        del X, P, Xh
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
