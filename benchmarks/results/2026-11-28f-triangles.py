"""Issue 30: masked triangle products on the GPU against cuSPARSE, in one process. On the
undirected power-law graphs of graph_gpu (S = pattern of A + Aᵀ, L its strict lower
triangle, float64 ones): gbdist's masked ``L·L .* L`` (``CudaGraphKernels.spgemm``,
plus_pair, mask L) and its sum, against cuSPARSE's unmasked ``L @ L`` then ``.multiply(L)`` and
its sum (cupyx: the fastest form cupyx offers a masked product); and the whole
``gbdist.algorithms.triangle_count`` (the rule's ordering and method) on a ``gb.Matrix`` built
before timing. Every count checked against the cuSPARSE one first; ``cupyx.profiler.benchmark``
GPU medians, interleaved, two rounds, the second kept.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28f-triangles.py 10000 100000 1000000
"""
import json
import os
import sys

import cupy
import cupyx.scipy.sparse as cps
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import powerlaw_device
from gbdist import algorithms as alg
from gbdist.backends.cuda.graph import CudaGraphKernels

K = CudaGraphKernels()
rows = []
for n in [int(a) for a in sys.argv[1:]]:
    A = powerlaw_device(n)
    S = (A + A.T).tocsr()
    S.data[:] = 1.0  # self loops stay in S: triangle_count ignores them, L leaves them out
    S.sort_indices()
    L = cps.tril(S, k=-1, format="csr")
    L.sort_indices()
    G = gb.Matrix(S)

    def ours():
        return K.spgemm(L, L, gb.semirings.plus_pair, mask=L, out_dtype=np.float64)

    def cus():
        return (L @ L).multiply(L)

    want = int(round(float(cus().sum())))
    got = int(round(float(ours().sum())))
    whole = alg.triangle_count(G)
    assert got == want == whole, (got, want, whole)
    r = {"n": n, "entries": int(S.nnz), "lower": int(L.nnz), "triangles": want}
    reps = 20 if n < 10**6 else 5
    forms = (("masked", lambda: ours().sum()), ("cusparse", lambda: cus().sum()),
             ("triangle_count", lambda: alg.triangle_count(G)))
    for _ in range(2):
        for name, fn in forms:
            b = benchmark(fn, n_repeat=reps, n_warmup=2)
            r[name] = float(np.median(b.gpu_times[0])) * 1e3
    r["masked_ratio"] = r["masked"] / r["cusparse"]
    r["count_ratio"] = r["triangle_count"] / r["cusparse"]
    rows.append(r)
    print(json.dumps(r), flush=True)
    A = S = L = G = None
    cupy.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), "triangles.json"), "w"), indent=1)
