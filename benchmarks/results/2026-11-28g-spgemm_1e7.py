"""Issue 30: the SpGEMM A·A (plus_times, float64) at 10^7 vertices, where the product (~4·10^9
entries) is past the int32 range that cupyx's CSR and cuSPARSE index with. gbdist's product is
one call (int32 columns, int64 row pointers); cuSPARSE's user splits A into row panels whose
products each stay below 2^31 entries and multiplies panel by panel (the fastest form open to
them: cupyx ``A[r0:r1] @ A``, the panels prepared before timing). gbdist's rows are checked
against each panel's product first (entries, columns, values). Then both are timed,
``cupyx.profiler.benchmark`` GPU medians of 3 (a panel's product freed before the next).

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28g-spgemm_1e7.py 10000000 8
"""
import json
import os
import sys

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import powerlaw_device
from gbdist.backends.cuda.graph import CudaGraphKernels

K = CudaGraphKernels()
n, panels = int(float(sys.argv[1])), int(sys.argv[2])
A = powerlaw_device(n)
deg = cupy.diff(A.indptr).astype(cupy.int64)
products = int(deg[A.indices].sum())
cuts = np.linspace(0, n, panels + 1).astype(np.int64)
P = [A[int(a):int(b)] for a, b in zip(cuts[:-1], cuts[1:])]
r = {"n": n, "nnz": int(A.nnz), "products": products, "panels": panels}


def ours():
    return K.spgemm(A, A, gb.semirings.plus_times, out_dtype=np.float64)


def cusparse():
    total = 0
    for p in P:
        R = p @ A
        total += int(R.nnz)
        del R
    return total


C = ours()
Cp = C.indptr.astype(cupy.int64)
r["out"] = int(Cp[-1])
r["indptr"], r["indices"] = str(C.indptr.dtype), str(C.indices.dtype)
for (a, b), p in zip(zip(cuts[:-1], cuts[1:]), P):
    R = p @ A
    R.sort_indices()
    assert int(R.nnz) < 2**31
    lo, hi = int(Cp[a]), int(Cp[b])
    assert hi - lo == int(R.nnz), (a, b, hi - lo, int(R.nnz))
    assert bool(cupy.all(Cp[a:b + 1] - lo == R.indptr.astype(cupy.int64)))
    assert bool(cupy.all(C.indices[lo:hi] == R.indices))
    assert bool(cupy.allclose(C.data[lo:hi], R.data, rtol=1e-9))
    del R
del C, Cp
cupy.get_default_memory_pool().free_all_blocks()
r["checked"] = True
print(json.dumps(r), flush=True)
for name, fn in (("gbdist", ours), ("cusparse_panels", cusparse)):
    b = benchmark(fn, n_repeat=3, n_warmup=1)
    r[name + "_ms"] = float(np.median(b.gpu_times[0])) * 1e3
    cupy.get_default_memory_pool().free_all_blocks()
r["ratio"] = r["gbdist_ms"] / r["cusparse_panels_ms"]
r["pool_held_gb_after"] = cupy.get_default_memory_pool().total_bytes() / 2**30
print(json.dumps(r), flush=True)
with open(os.path.join(os.environ.get("OUT", "/tmp"), "spgemm_1e7.json"), "w") as f:
    json.dump(r, f, indent=1)
