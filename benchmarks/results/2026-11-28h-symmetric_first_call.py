"""Issue 30: the first symmetric product a process runs, U by diagonals on or off (argv[1]:
"dia" or "csr"): wall time of the first ``gr.mxv(gb.Matrix(U), u, plus_times,
symmetric="upper")`` on a 7-point Poisson 128³ (its kernels compiled or read from the cache,
U's diagonals built), then the second and the median of 10 more, each answer checked against
cuSPARSE's full product.

    GBDIST_CACHE_DIR=/tmp/c python benchmarks/results/2026-11-28h-symmetric_first_call.py dia
"""
import json
import sys
import time

import cupy
import numpy as np

import gbdist as gb
from benchmarks import stencils as st
from gbdist import graph as gr
from gbdist.backends.cuda import graph_symmetric as gs

gs.DIA = sys.argv[1] == "dia"
A = st.as_cupyx(st.poisson3d(128, xp=cupy))
U = st.as_cupyx(st.poisson3d(128, upper=True, xp=cupy))
x = cupy.random.default_rng(1).random(A.shape[0])
ref = A @ x
M, u = gb.Matrix(U), gb.Vector(x)
times = []
for i in range(12):
    cupy.cuda.Device().synchronize()
    t = time.perf_counter()
    y = gr.mxv(M, u, gb.semirings.plus_times, symmetric="upper")
    got = cupy.asarray(y.dense_parts()[0])
    cupy.cuda.Device().synchronize()
    times.append((time.perf_counter() - t) * 1e3)
    assert float(cupy.linalg.norm(got - ref) / cupy.linalg.norm(ref)) < 1e-12
print(json.dumps({"mode": sys.argv[1], "first_ms": times[0], "second_ms": times[1],
                  "median_ms": float(np.median(times[2:]))}))
