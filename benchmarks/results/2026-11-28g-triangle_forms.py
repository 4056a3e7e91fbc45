"""Issue 30: which ordering and product form counts triangles fastest on the GPU, and what
the rule picks. On graph_gpu's undirected power-law graphs (S = pattern of A + Aᵀ): for each
vertex ordering (none / increasing / decreasing degree) L is built by ``triangles.lower``
(timed), then the masked product ``C<L> = L·L`` and ``C<L> = L·Lᵀ`` (plus_pair) and its sum
are timed with Lᵀ prebuilt, and Lᵀ's build alone. Beside them: the rule's choice
(``choose_order``, ``choose_product``), the cost models' numbers (``masked_cost`` per
ordering; Σ col·row and Σ col² + transpose per form) and the whole ``triangle_count``. Every
count checked against the first one (the rule's) before timing; ``cupyx.profiler.benchmark``
GPU medians.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28g-triangle_forms.py 100000 1000000 10000000
"""
import json
import os
import sys

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import host_profile, powerlaw_device
from gbdist import algorithms as alg
from gbdist.algorithms import triangles as tri
from gbdist.backends.cuda.graph import CudaGraphKernels
from gbdist.graph.sparse import transpose_csr

K = CudaGraphKernels()


def gpu_ms(fn, reps):
    b = benchmark(fn, n_repeat=reps, n_warmup=1)
    return float(np.median(b.gpu_times[0])) * 1e3


rows = []
for n in [int(a) for a in sys.argv[1:]]:
    A = powerlaw_device(n)
    S = (A + A.T).tocsr()
    S.data[:] = 1.0
    S.sort_indices()
    del A
    G = gb.Matrix(S)
    reps = 10 if n < 10**7 else 3
    count = alg.triangle_count(G)
    deg = cupy.diff(S.indptr).astype(cupy.int64)
    r = {"n": n, "entries": int(S.nnz), "triangles": count, "skewed": tri._skewed(deg, cupy)}
    below = K.rank_lower_counts(S, deg.astype(cupy.int32))
    r["rule_order"] = "none" if not r["skewed"] else tri.choose_order(  # the device rule
        deg.get(), {o: below[tri.MODES[o]].get() for o in ("increasing", "decreasing")}, on_device=True)
    L = tri.lower(G, "auto", values=False)
    r["rule_product"] = tri.choose_product(G, L)
    r["triangle_count_ms"] = gpu_ms(lambda: alg.triangle_count(G), reps)
    best = None
    for order in ("none", "increasing", "decreasing"):
        if order == "none" and n >= 10**7:
            continue  # the hubs' rows: minutes
        L = tri.lower(G, order, values=False)
        row = cupy.diff(L.csr.indptr).astype(cupy.int64)
        col = deg - row
        r[f"{order}_lower_ms"] = gpu_ms(lambda: tri.lower(G, order, values=False), reps)
        r[f"{order}_masked_cost"] = tri.masked_cost(deg.get().astype(np.float64), row.get())
        r[f"{order}_sum_colrow"] = float(col.dot(row))
        r[f"{order}_sum_col2"] = float(col.dot(col))
        r[f"{order}_sum_row2"] = float(row.dot(row))
        r[f"{order}_max_row"] = int(row.max())
        r[f"{order}_max_col"] = int(col.max())
        Lc = L.csr
        LT = transpose_csr(Lc, True)
        r[f"{order}_transpose_ms"] = gpu_ms(lambda: transpose_csr(Lc, True), reps)
        for form, B in (("L.L", Lc), ("L.LT", LT)):
            def run(B=B):
                C = K.spgemm(Lc, B, gb.semirings.plus_pair, mask=Lc, out_dtype=np.int64)
                return C.data.sum()
            got = int(run())
            assert got == count, (order, form, got, count)
            ms = gpu_ms(run, reps)
            r[f"{order}_{form}_ms"] = ms
            whole = ms + r[f"{order}_lower_ms"] + (r[f"{order}_transpose_ms"] if form == "L.LT" else 0)
            r[f"{order}_{form}_whole_ms"] = whole
            if best is None or whole < best[0]:
                best = (whole, order, form)
        L = Lc = LT = None
        cupy.get_default_memory_pool().free_all_blocks()
    if os.environ.get("PROFILE"):  # host time of the whole count by function, 10 calls
        r["profile_top"] = host_profile(lambda: alg.triangle_count(G), 10, 16)
    r["best"] = list(best)
    r["count_vs_best"] = r["triangle_count_ms"] / best[0]
    rows.append(r)
    print(json.dumps(r), flush=True)
    G = S = deg = None
    cupy.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), "triangle_forms.json"), "w"), indent=1)
