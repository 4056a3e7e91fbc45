"""Issue 30: the SpGEMM A·A (plus_times, float64) by diagonals (``graph_dia``, the default
where both operands lie on few diagonals) against the binned one-pass SpGEMM (the default
before) and cuSPARSE (cupyx ``A @ A``), in one process, on the fourth seed's matrix classes
(``poisson:G`` 7-point Poisson 3D on G³, ``fem27:G``, ``band:N:B``) and graph_gpu's power-law
graphs (``pl:N``: the rule must decline them; its check is paid once per matrix). Every
answer is checked against cuSPARSE first; ``cupyx.profiler.benchmark`` GPU and host medians,
two rounds, the second kept. ``first_ms``: the first product on a fresh matrix object (the
diagonals' check and build included), CUDA events, after the kernels are compiled.

    PYTHONPATH=$PWD python benchmarks/results/2026-11-28h-spgemm_dia.py poisson:128 fem27:64 \\
        fem27:96 band:4000000:8 pl:10000 pl:1000000
"""
import json
import os
import sys

import cupy
import numpy as np
from cupyx.profiler import benchmark

import gbdist as gb
from benchmarks.graph_gpu import _same_csr, spanned, spec_matrix
from gbdist.backends.cuda import graph_dia
from gbdist.backends.cuda.graph import CudaGraphKernels

K = CudaGraphKernels()


def ours(dia):
    def f():
        graph_dia.SPGEMM = dia
        return K.spgemm(A, A, gb.semirings.plus_times, out_dtype=np.float64)
    return f


def events(fn):
    """One call of ``fn`` after a device sync, its CUDA-event ms (graph_gpu.spanned)."""
    return cupy.cuda.get_elapsed_time(*spanned(fn)[2:])


rows = []
for spec in sys.argv[1:]:
    A = spec_matrix(spec)
    R = A @ A
    forms = {"dia": ours(True), "binned": ours(False)}
    for f in forms.values():
        _same_csr(f(), R)
    r = {"matrix": spec, "n": int(A.shape[0]), "nnz": int(A.nnz), "out": int(R.nnz)}
    got = getattr(A, "_gbdist_dia", (None, None))[1]
    r["diagonals"] = None if got is None else int(got[1].size)
    reps = 30 if A.nnz < 10**7 else 10
    for _ in range(2):
        for name, fn in list(forms.items()) + [("cusparse", lambda: A @ A)]:
            b = benchmark(fn, n_repeat=reps, n_warmup=3)
            r[name] = float(np.median(b.gpu_times[0])) * 1e3
            r[name + "_host"] = float(np.median(b.cpu_times)) * 1e3
    for name in forms:
        r[name + "_ratio"] = r[name] / r["cusparse"]
    graph_dia.SPGEMM = True
    fresh = []
    for _ in range(3):  # a fresh CSR object: its form checked and built again
        A2 = A.copy()
        fresh.append(events(lambda A2=A2: K.spgemm(A2, A2, gb.semirings.plus_times, out_dtype=np.float64)))
        del A2
    r["first_ms"] = sorted(fresh)[1]
    rows.append(r)
    print(json.dumps(r), flush=True)
    A = R = None
    cupy.get_default_memory_pool().free_all_blocks()
out = os.environ.get("OUT", "/tmp")
with open(os.path.join(out, "spgemm_dia.json"), "w") as f:
    json.dump(rows, f, indent=1)
for r in rows:
    print(f"{r['matrix']:>16} diag {r['diagonals']} out {r['out']:.3g} cuSPARSE {r['cusparse']:.3f} | dia "
          f"{r['dia']:.3f} ({r['dia_ratio']:.2f}x) | binned {r['binned']:.3f} ({r['binned_ratio']:.2f}x) | "
          f"first {r['first_ms']:.3f}")
