"""Issue 30: the CUDA SpGEMM A·A (plus_times, float64) in one pass (``graph_spgemm.ONE_PASS``:
the numeric pass on the bounds' bins, then the rows compacted) and in two (symbolic, then
numeric), against cuSPARSE (cupyx ``A @ A``), in one process: graph_gpu's power-law graphs
(``pl:N``) and the fourth seed's matrix classes standing in for the second seed's unnamed ones
(``poisson:G``: 7-point Poisson 3D on G³; ``fem27:G``: the 27-point stencil; ``band:N:B``).
Every answer is checked against cuSPARSE first; then the three run interleaved
(``cupyx.profiler.benchmark``, GPU and host medians, two rounds, the second kept).
``SHORT_AB=1``: one pass with the short rows sorted in registers (``graph_spgemm.SHORT_ROWS``,
the default since 2026-11-28 (f)) against one pass with every row in a table. ``ONE_ONLY=1``:
the default (one pass) alone against cuSPARSE, for A/B runs of two trees in separate processes.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28f-spgemm_onepass.py pl:10000 pl:100000 \\
        pl:1000000 poisson:128 fem27:64 fem27:96 band:4000000:8
"""
import json
import os
import sys

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks import stencils
from benchmarks.graph_gpu import _same_csr, host_profile, powerlaw_device
from gbdist.backends.cuda import graph_spgemm
from gbdist.backends.cuda.graph import CudaGraphKernels

K = CudaGraphKernels()


def matrix(spec):
    kind, *a = spec.split(":")
    if kind == "pl":
        return powerlaw_device(int(a[0]))
    if kind == "poisson":
        return stencils.as_cupyx(stencils.poisson3d(int(a[0]), xp=cupy, seed=1))
    if kind == "fem27":
        return stencils.as_cupyx(stencils.fem27(int(a[0]), xp=cupy, seed=1))
    if kind == "band":
        return stencils.as_cupyx(stencils.band(int(a[0]), int(a[1]), xp=cupy, seed=1))
    raise SystemExit(f"unknown matrix {spec}")


def ours(one, short=True):
    def f():
        graph_spgemm.ONE_PASS = one
        graph_spgemm.SHORT_ROWS = short
        return K.spgemm(A, A, gb.semirings.plus_times, out_dtype=np.float64)
    return f


FORMS = {"one": ours(True), "two": ours(False)}
if os.environ.get("SHORT_AB"):  # the short rows in registers (gb_esc_row) against tables
    FORMS = {"one": ours(True), "one_tables": ours(True, False)}
if os.environ.get("ONE_ONLY"):  # the default alone (two trees A/B'd in separate processes)
    FORMS = {"one": ours(True)}


rows = []
for spec in sys.argv[1:]:
    A = matrix(spec)
    R = A @ A
    for f in FORMS.values():
        _same_csr(f(), R)
    deg = cupy.diff(A.indptr).astype(cupy.int64)
    r = {"matrix": spec, "n": int(A.shape[0]), "nnz": int(A.nnz), "out": int(R.nnz),
         "products": int(deg[A.indices].sum())}
    reps = 30 if A.nnz < 10**7 else 10
    for _ in range(2):
        for name, fn in list(FORMS.items()) + [("cusparse", lambda: A @ A)]:
            b = benchmark(fn, n_repeat=reps, n_warmup=3)
            r[name] = float(np.median(b.gpu_times[0])) * 1e3
            r[name + "_host"] = float(np.median(b.cpu_times)) * 1e3
    for name in FORMS:
        r[name + "_ratio"] = r[name] / r["cusparse"]
    if os.environ.get("PROFILE") and A.nnz < 10**6:  # host time by function, 30 calls a form
        for name, fn in (("one", ours(True)), ("two", ours(False))):
            r["profile_" + name] = host_profile(fn, 30, 14)
    rows.append(r)
    print(json.dumps(r), flush=True)
    A = R = None
    cupy.get_default_memory_pool().free_all_blocks()
graph_spgemm.ONE_PASS = graph_spgemm.SHORT_ROWS = True
json.dump(rows, open(os.path.join(os.environ.get("OUT", "/tmp"), "spgemm-onepass.json"), "w"), indent=1)
