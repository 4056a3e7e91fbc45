"""Issue 30: the CUDA SpGEMM A·A (plus_times, graph_gpu's power-law graphs) in three forms
against cuSPARSE, in one process: ``tuple`` (the result through cupyx's public CSR
constructor, as before 2026-11-28 f), ``parts`` (the pre-validated constructor, now the
default) and ``async`` (``parts`` with ``graph_spgemm.ASYNC_SYMBOLIC`` on). Every answer is
checked against cuSPARSE first; then the four run interleaved (``cupyx.profiler.benchmark``,
GPU and host medians, two rounds, the second kept).

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28f-spgemm_ab.py 10000 100000 1000000

``ASYNC_SYMBOLIC`` was measured slower than the default at every size (2026-11-28 (f), call 1:
h200x2-2026-11-28f-call1-spgemm_ab.jsonl) and removed afterwards; this script ran on the tree
at 0d4908d plus the _from_parts constructor (4603546). On a later tree the switch no longer exists and its form runs the default.
"""
import json
import os
import sys

import cupy
import cupyx.scipy.sparse as cps
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import _same_csr, powerlaw_device
from gbdist.backends.cuda import graph_spgemm
from gbdist.backends.cuda.graph import CudaGraphKernels

K = CudaGraphKernels()
PARTS = graph_spgemm.make_csr


def tuple_csr(data, indices, indptr, shape):
    return cps.csr_matrix((data, indices, indptr), shape=shape)


def ours(form):
    graph_spgemm.ASYNC_SYMBOLIC = form == "async"
    graph_spgemm.make_csr = tuple_csr if form == "tuple" else PARTS
    return lambda A: K.spgemm(A, A, gb.semirings.plus_times, out_dtype=np.float64)


print(json.dumps({"cupy": cupy.__version__,
                  "from_parts": hasattr(cps.csr_matrix, "_from_parts")}), flush=True)
rows = []
for n in [int(a) for a in sys.argv[1:]]:
    A = powerlaw_device(n)
    R = A @ A
    forms = ("tuple", "parts", "async")
    for form in forms:
        f = ours(form)
        _same_csr(f(A), R)
    r = {"n": n, "nnz": int(A.nnz), "out": int(R.nnz)}
    reps = 30 if n < 10**6 else 10
    for _ in range(2):
        for name in forms + ("cusparse",):
            if name == "cusparse":
                fn = lambda: A @ A  # noqa: E731
            else:
                g = ours(name)
                fn = lambda: g(A)  # noqa: E731
            b = benchmark(fn, n_repeat=reps, n_warmup=3)
            r[name] = float(np.median(b.gpu_times[0])) * 1e3
            r[name + "_host"] = float(np.median(b.cpu_times)) * 1e3
    for name in forms:
        r[name + "_ratio"] = r[name] / r["cusparse"]
    rows.append(r)
    print(json.dumps(r), flush=True)
    A = R = None
    cupy.get_default_memory_pool().free_all_blocks()
graph_spgemm.ASYNC_SYMBOLIC = False
graph_spgemm.make_csr = PARTS
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), "spgemm-ab.json"), "w"), indent=1)
