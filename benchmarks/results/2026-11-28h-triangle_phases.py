"""Issue 30: where triangle_count's time goes on the GPU beyond its masked product, and the
ratio the issue's target reads (whole count against the product alone, ≤ 1.5×). On
graph_gpu's undirected power-law graphs (S = pattern of A + Aᵀ, float64 ones):

* ``whole_ms``: ``algorithms.triangle_count(G)`` on a ``gb.Matrix`` built before timing;
* ``lower_ms``: ``triangles.lower(G, rule's order, values=False)`` alone;
* ``product_ms``: the masked product of the rule's form on that L and its sum
  (``K.spgemm(L, L or Lᵀ, plus_pair, mask=L)``, Lᵀ prebuilt), the count checked first;
* with ``TRI_SWEEP=1`` (a tree with ``graph_algorithms.TRI_LANES``): ``lower_ms`` and
  ``whole_ms`` with the L kernels at 4, 8, 16 and 32 lanes a row;
* one instrumented call: every step of the count (the functions below, wrapped) between
  CUDA events, with its host start: where the device waits for the host.

``cupyx.profiler.benchmark`` GPU medians. Run once per tree (PYTHONPATH picks the tree) for an
A/B in separate processes:

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28h-triangle_phases.py 100000 1000000
"""
import json
import os
import sys
import time

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import powerlaw_device
from gbdist import algorithms as alg
from gbdist import graph as gr
from gbdist.algorithms import triangles as tri
from gbdist.backends.cuda import graph as cg
from gbdist.graph.sparse import transpose_csr

K = cg.CudaGraphKernels()
REC = []


def gpu_ms(fn, reps):
    b = benchmark(fn, n_repeat=reps, n_warmup=1)
    return float(np.median(b.gpu_times[0])) * 1e3


def wrap(owner, name):
    real = getattr(owner, name, None)
    if real is None:
        return

    def timed(*a, **kw):
        if not REC:
            return real(*a, **kw)
        s, e = cupy.cuda.Event(), cupy.cuda.Event()
        t = time.perf_counter()
        s.record()
        out = real(*a, **kw)
        e.record()
        REC[0].append((name, t, time.perf_counter(), s, e))
        return out
    setattr(owner, name, timed)


for owner, names in ((tri, ("require_undirected", "_skewed", "device_sums", "_form_of", "as_matrix")),
                     (cg.CudaGraphKernels, ("rank_lower_counts", "rank_lower_sums", "rank_lower_fill")),
                     (tri.gs, ("make_csr",)), (gr, ("mxm", "reduce_scalar"))):
    for nm in names:
        wrap(owner, nm)

rows = []
tree = os.environ.get("TREE", "?")
for n in [int(a) for a in sys.argv[1:]]:
    A = powerlaw_device(n)
    S = (A + A.T).tocsr()
    S.data[:] = 1.0
    S.sort_indices()
    del A
    G = gb.Matrix(S)
    reps = 10 if n < 10**7 else 3
    count = alg.triangle_count(G)
    r = {"tree": tree, "n": n, "entries": int(S.nnz), "triangles": count}
    deg = cupy.diff(S.indptr).astype(cupy.int32)
    below = K.rank_lower_counts(S, deg)
    order = "none" if not tri._skewed(deg, cupy) else tri.choose_order(
        deg, {o: below[tri.MODES[o]] for o in ("increasing", "decreasing")}, on_device=True, xp=cupy)
    L = tri.lower(G, order, values=False)
    form = tri.choose_product(G, L)
    r["order"], r["form"] = order, form
    Lc = L.csr
    B = transpose_csr(Lc, True) if form == "L.LT" else Lc

    def product():
        C = K.spgemm(Lc, B, gb.semirings.plus_pair, mask=Lc, out_dtype=np.int64)
        return C.data.sum()
    assert int(product()) == count, (int(product()), count)
    for rnd in range(2):  # two rounds, the second kept
        r["whole_ms"] = gpu_ms(lambda: alg.triangle_count(G), reps)
        r["product_ms"] = gpu_ms(product, reps)
        r["lower_ms"] = gpu_ms(lambda: tri.lower(G, order, values=False), reps)
    r["whole_over_product"] = r["whole_ms"] / r["product_ms"]
    from gbdist.backends.cuda import graph_algorithms as ga
    if hasattr(ga, "TRI_LANES") and os.environ.get("TRI_SWEEP"):  # the L kernels' lanes a row
        r["sweep"] = {}
        for g in (4, 8, 16, 32):
            ga.TRI_LANES = g
            assert alg.triangle_count(G) == count
            r["sweep"][g] = {"lower_ms": gpu_ms(lambda: tri.lower(G, order, values=False), reps),
                             "whole_ms": gpu_ms(lambda: alg.triangle_count(G), reps)}
        ga.TRI_LANES = None
    # one instrumented call: steps between events, the device timeline against the host's
    cupy.cuda.Device().synchronize()
    REC.append([])
    t0 = time.perf_counter()
    s0 = cupy.cuda.Event()
    s0.record()
    got = alg.triangle_count(G)
    s1 = cupy.cuda.Event()
    s1.record()
    s1.synchronize()
    t1 = time.perf_counter()
    steps = REC.pop()
    assert got == count
    r["span_ms"] = cupy.cuda.get_elapsed_time(s0, s1)
    r["host_ms"] = (t1 - t0) * 1e3
    r["steps"] = [(nm, round((ht - t0) * 1e3, 3), round((he - t0) * 1e3, 3),
                   round(cupy.cuda.get_elapsed_time(s0, s), 3), round(cupy.cuda.get_elapsed_time(s0, e), 3))
                  for nm, ht, he, s, e in steps]  # name, host start/end, GPU start/end (ms from call)
    rows.append(r)
    print(json.dumps(r), flush=True)
    G = S = L = Lc = B = deg = below = None
    cupy.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), f"triangle_phases_{tree}.json"), "w"), indent=1)
