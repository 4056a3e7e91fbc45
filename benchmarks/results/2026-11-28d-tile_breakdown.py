"""Where one GPU's kNN self-join time goes, tile by tile (issue 31's baseline), no Dask.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28d-tile_breakdown.py dense:None,2048 ml:None

For each shape and working memory (MiB; None: the default): ``gb.knn(gb.prepare(X), k=10)``
cosine, median of 3, then one instrumented pass (the device synchronised around each step):
per tile its shape, whether the runtime asked ``upper``, the strategy the backend chose and
whether it ran upper, and the time in ``run_tile``, in the rows' and columns' ``select_k``,
in ``merge_k`` and elsewhere (the transposed copy of an off-diagonal tile). One JSON line
per (shape, working memory).
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

K = 10
REC = None


def _sync():
    cp.cuda.Device().synchronize()


def _timer(name, orig):
    @functools.wraps(orig)  # keeps run_tile's signature: the runtime asks upper by it
    def wrapped(*a, **kw):
        if REC is None:
            return orig(*a, **kw)
        _sync()
        t = time.perf_counter()
        out = orig(*a, **kw)
        _sync()
        REC.append((name, time.perf_counter() - t, a, kw))
        return out
    return wrapped


_choose = strategies.choose


def choose(job, strategy):
    s = _choose(job, strategy)
    if REC is not None:
        REC.append(("choose", 0.0, (s.name, bool(job.upper), bool(s.upper)), {}))
    return s


strategies.choose = choose
B = cuda_backend.CUDABackend
B.run_tile = _timer("tile", B.run_tile)
B.select_k = _timer("select", B.select_k)
B.merge_k = _timer("merge", B.merge_k)


def micro(rows: int, cols: int):
    """One tile's selection steps alone: rows' select_k, the transposed copy, its select_k."""
    from gbdist.backends.cuda import topk
    D = cp.random.default_rng(0).random((rows, cols), dtype=cp.float32)
    steps = {"select rows": lambda: topk.select_k(D, 11),
             "transpose copy": lambda: cp.ascontiguousarray(D.T),
             "select transposed": lambda: topk.select_k(DT, 11)}
    DT = cp.ascontiguousarray(D.T)
    out = {}
    for name, fn in steps.items():
        fn()
        _sync()
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            fn()
            _sync()
            ts.append((time.perf_counter() - t) * 1e3)
        out[name] = statistics.median(ts)
    print(json.dumps({"micro": [rows, cols], "ms": out}), flush=True)


def main():
    global REC
    for spec in sys.argv[1:]:
        shape, wms = spec.split(":")
        if shape == "micro":
            micro(*[int(x) for x in wms.split("x")])
            continue
        X = cps.csr_matrix(datasets.paper_shape(shape))
        P = gb.prepare(X)
        for wm in wms.split(","):
            wm = None if wm == "None" else int(wm)

            def run():
                out = gb.knn(P, k=K, metric="cosine", backend="cuda", working_memory=wm)
                _sync()
                return out
            run()
            ts = []
            for _ in range(3):
                t = time.perf_counter()
                run()
                ts.append((time.perf_counter() - t) * 1e3)
            REC = []
            t = time.perf_counter()
            run()
            total = (time.perf_counter() - t) * 1e3
            rec, REC = REC, None
            tiles, strat = [], []
            for name, s, a, kw in rec:
                if name == "tile":
                    r0, r1, c0, c1 = a[2:6]
                    tiles.append({"r": [r0, r1], "c": [c0, c1], "upper_asked": bool(
                        kw.get("upper", a[6] if len(a) > 6 else False)), "ms": s * 1e3})
                elif name == "choose":
                    strat.append(a)
            sums = {n: sum(s for m, s, *_ in rec if m == n) * 1e3 for n in ("tile", "select", "merge")}
            print(json.dumps({"shape": shape, "working_memory": wm, "median_ms": statistics.median(ts),
                              "times": ts, "instrumented_ms": total, "sums_ms": sums,
                              "other_ms": total - sum(sums.values()), "n_tiles": len(tiles),
                              "strategies": sorted({tuple(x) for x in strat}),
                              "tiles": tiles}), flush=True)
        del X, P
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
