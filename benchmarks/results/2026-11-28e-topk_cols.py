"""A tile's columns' top-k three ways, one GPU: CuPy's copy of D.T then ``select_k`` (the
old path), ``topk.transpose`` (gb_transpose) then ``select_k`` (the default since
2026-11-28 (e)), and the columns' kernel (``topk.COLUMN_SELECT``, gb_topk_cols). (1) One tile's
selection alone; (2) ``gb.knn`` self-joins under each, interleaved, answers checked bit for
bit first, and the mirrored tiles' layouts (dtype, shape, strides) seen by the selection.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28e-topk_cols.py ml dense

One JSON line per measurement; CUDA-synchronised host medians of 5 (micro) / 3 (kNN).
"""
from __future__ import annotations

import json
import statistics
import sys
import time

import cupy as cp
import cupyx.scipy.sparse as cps

import gbdist as gb
from benchmarks import datasets
from gbdist.backends.cuda import topk


def _sync():
    cp.cuda.Device().synchronize()


def _median(fn, n):
    fn()
    _sync()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        _sync()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts), ts


_transpose = topk.transpose
MODES = ("cupy", "kernel", "columns")


def _mode(name):
    topk.COLUMN_SELECT = name == "columns"
    topk.transpose = (lambda D: cp.ascontiguousarray(D.T)) if name == "cupy" else _transpose


def _same(a, b):
    u = cp.uint32 if a[0].dtype == cp.float32 else cp.uint64
    return bool((a[1] == b[1]).all()) and bool((a[0].view(u) == b[0].view(u)).all())


def micro(rows, cols, k=11, dtype=cp.float32):
    D = cp.random.default_rng(0).random((rows, cols), dtype=dtype)
    want = topk.select_k(cp.ascontiguousarray(D.T), k, 5)
    out = {"micro": [rows, cols], "dtype": str(cp.dtype(dtype)), "k": k}
    for name in MODES:
        _mode(name)
        out[f"{name}_equal"] = _same(topk.select_k_columns(D, k, 5), want)
        out[f"{name}_ms"], _ = _median(lambda: topk.select_k_columns(D, k, 5), 7)
    _mode("kernel")
    out["copy_cupy_ms"], _ = _median(lambda: cp.ascontiguousarray(D.T), 7)
    out["copy_kernel_ms"], _ = _median(lambda: _transpose(D), 7)
    out["select_rows_ms"], _ = _median(lambda: topk.select_k(D, k, 5), 7)
    out["copy_kernel_GBps"] = 2 * D.nbytes / out["copy_kernel_ms"] / 1e6
    print(json.dumps(out), flush=True)


def knn(shape):
    X = cps.csr_matrix(datasets.paper_shape(shape))
    P = gb.prepare(X)
    for metric in ("cosine", "manhattan"):
        def run(name):
            _mode(name)
            out = gb.knn(P, k=10, metric=metric, backend="cuda")
            _sync()
            return out
        seen = []
        inner = topk.select_k_columns

        def probe(D, k, offset=0):
            if len(seen) < 4:
                seen.append([str(D.dtype), list(D.shape), list(D.strides), bool(D.flags.c_contiguous)])
            return inner(D, k, offset)
        topk.select_k_columns = probe
        ref = run("cupy")
        topk.select_k_columns = inner
        equal = {name: _same(run(name), ref) for name in MODES}
        ts = {name: [] for name in MODES}
        for _ in range(3):
            for name in MODES:
                t = time.perf_counter()
                run(name)
                ts[name].append((time.perf_counter() - t) * 1e3)
        med = {name: statistics.median(v) for name, v in ts.items()}
        print(json.dumps({"shape": shape, "metric": metric, "equal": equal, "ms": med,
                          "kernel_over_cupy": med["kernel"] / med["cupy"],
                          "columns_over_cupy": med["columns"] / med["cupy"],
                          "tiles_seen": seen, "times": ts}), flush=True)
    _mode("kernel")
    X = P = None
    cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    for spec in [(20724, 13816), (20724, 20724), (8250, 8250), (6000, 66000)]:
        micro(*spec)
    micro(20724, 13816, dtype=cp.float64)
    for shape in sys.argv[1:]:
        knn(shape)
