"""Issue 30, 2026-11-28 (i): the CUDA SpGEMM A·A (plus_times, float64, gbdist's default path)
against cuSPARSE (cupyx ``A @ A``) in one process, for an A/B of two gbdist trees (the tree is
whatever ``gbdist`` imports; ``TREE`` names it in the output). Matrices as
``benchmarks.graph_gpu.spec_matrix`` (``pl:N`` power-law graphs, ``poisson:G``, ``fem27:G``,
``band:N:B``). Every answer checked against cuSPARSE first; ``cupyx.profiler.benchmark`` GPU and
host medians, gbdist and cuSPARSE alternated for ``ROUNDS`` rounds (default 3), every round kept.
``first_ms``: the product on a fresh copy of A (per-matrix facts computed again), CUDA events,
the median of three.

    TREE=new PYTHONPATH=$PWD python benchmarks/results/2026-11-28i-spgemm_ab.py pl:10000 pl:100000
"""
import json
import os
import sys

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import _same_csr, spanned, spec_matrix
from gbdist.backends.cuda.graph import CudaGraphKernels

K = CudaGraphKernels()
SR = gb.semirings.plus_times


def events(fn):
    """One call of ``fn`` after a device sync, its CUDA-event ms (graph_gpu.spanned)."""
    return cupy.cuda.get_elapsed_time(*spanned(fn)[2:])


for spec in sys.argv[1:]:
    A = spec_matrix(spec)
    R = A @ A
    _same_csr(K.spgemm(A, A, SR, out_dtype=np.float64), R)
    r = {"tree": os.environ.get("TREE", "?"), "matrix": spec, "n": int(A.shape[0]), "nnz": int(A.nnz),
         "out": int(R.nnz), "gbdist": [], "cusparse": [], "gbdist_host": [], "cusparse_host": []}
    reps = 40 if A.nnz < 10**6 else 20 if A.nnz < 10**7 else 8
    for _ in range(int(os.environ.get("ROUNDS", "3"))):
        for name, fn in (("gbdist", lambda: K.spgemm(A, A, SR, out_dtype=np.float64)), ("cusparse", lambda: A @ A)):
            b = benchmark(fn, n_repeat=reps, n_warmup=3)
            r[name].append(float(np.median(b.gpu_times[0])) * 1e3)
            r[name + "_host"].append(float(np.median(b.cpu_times)) * 1e3)
    r["ratios"] = [g / c for g, c in zip(r["gbdist"], r["cusparse"])]
    fresh = []
    for _ in range(3):
        A2 = A.copy()
        fresh.append(events(lambda A2=A2: K.spgemm(A2, A2, SR, out_dtype=np.float64)))
        del A2
    r["first_ms"] = sorted(fresh)[1]
    print(json.dumps(r), flush=True)
    A = R = None
    cupy.get_default_memory_pool().free_all_blocks()
