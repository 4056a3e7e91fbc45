"""Issue 30: the CUDA SpGEMM A·A (plus_times, graph_gpu's power-law graphs) with
``graph_spgemm.ASYNC_SYMBOLIC`` off and on, against cuSPARSE, in one process: every answer
checked against cuSPARSE first, then the three interleaved (``cupyx.profiler.benchmark`` GPU
medians, two rounds, the second kept). Written 2026-11-28 (e) for the next GPU session.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28e-spgemm_async.py 10000 100000 1000000

``ASYNC_SYMBOLIC`` was measured slower than the default at every size (2026-11-28 (f), call 1:
h200x2-2026-11-28f-call1-spgemm_ab.jsonl) and removed afterwards; this script ran on the tree
at 0d4908d. On a later tree the switch no longer exists and its form runs the default.
"""
import json
import os
import sys

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import _same_csr, powerlaw_device
from gbdist.backends.cuda import graph_spgemm
from gbdist.backends.cuda.graph import CudaGraphKernels

K = CudaGraphKernels()
rows = []
for n in [int(a) for a in sys.argv[1:]]:
    A = powerlaw_device(n)
    R = A @ A

    def ours(on):
        graph_spgemm.ASYNC_SYMBOLIC = on
        return K.spgemm(A, A, gb.semirings.plus_times, out_dtype=np.float64)
    for on in (False, True):
        _same_csr(ours(on), R)
    r = {"n": n, "nnz": int(A.nnz), "out": int(R.nnz)}
    reps = 30 if n < 10**6 else 10
    for _ in range(2):
        for name, f in (("off", lambda: ours(False)), ("on", lambda: ours(True)), ("cusparse", lambda: A @ A)):
            b = benchmark(f, n_repeat=reps, n_warmup=3)
            r[name] = float(np.median(b.gpu_times[0])) * 1e3
    r["off_ratio"], r["on_ratio"] = r["off"] / r["cusparse"], r["on"] / r["cusparse"]
    rows.append(r)
    print(json.dumps(r), flush=True)
    A = R = None
    cupy.get_default_memory_pool().free_all_blocks()
graph_spgemm.ASYNC_SYMBOLIC = False
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), "spgemm-async.json"), "w"), indent=1)
