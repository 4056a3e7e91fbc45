"""Issue 30, 2026-11-28 (i): the graph kernels' final forms run once each for Nsight Compute
(one H200; its runtime reads the hardware counters: ../.library/device/KINDS.md). Each
operation runs twice (the first compiles and keeps the per-matrix facts; ncu's filter takes
both), every answer checked against cuSPARSE first:

* ``spgemm:pl:N`` — A·A (plus_times) by the binned one pass: gb_spgemm_bound, the bins'
  kernels, gb_spgemm_binned (gb_esc_row inside), the shared and global tables, the compaction;
* ``spgemm_binned:poisson:G`` — 7-point Poisson squared with the diagonals' product off
  (short rows in registers); ``spgemm:poisson:G`` — by diagonals (gb_spgemm_dia);
* ``mxv:pl:N`` — gr.mxv on a power-law graph (the row tiles, gb_spmv_stream);
* ``sym:poisson:G`` — gr.mxv(symmetric="upper") plain and compensated (U by diagonals);
* ``tri:N`` — triangle_count of an undirected power-law graph (L's kernels, the masked product).

    ncu --clock-control none --kernel-name regex:gb_ --csv --metrics ... \\
        python3 benchmarks/results/2026-11-28i-ncu_kernels.py spgemm:pl:10000 ...
"""
import sys

import cupy
import numpy as np

import gbdist as gb
import gbdist.graph as gr
from benchmarks.graph_gpu import _same_csr, spec_matrix, undirected_device
from gbdist import algorithms as alg
from gbdist.backends.cuda import graph_dia
from gbdist.backends.cuda.graph import CudaGraphKernels

K = CudaGraphKernels()
SR = gb.semirings.plus_times

for arg in sys.argv[1:]:
    op, spec = arg.split(":", 1)
    print("==", arg, flush=True)
    if op in ("spgemm", "spgemm_binned"):
        A = spec_matrix(spec)
        R = A @ A
        graph_dia.SPGEMM = op == "spgemm"
        for _ in range(2):
            _same_csr(K.spgemm(A, A, SR, out_dtype=np.float64), R)
        graph_dia.SPGEMM = True
    elif op == "mxv":
        A = spec_matrix(spec)
        x = cupy.random.default_rng(1).random(A.shape[0])
        M, u = gb.Matrix(A), gb.Vector(x)
        for _ in range(2):
            y = gr.mxv(M, u, SR)
        assert float(cupy.linalg.norm(cupy.asarray(y.to_dense(0.0)) - A @ x)) <= 1e-12 * float(cupy.linalg.norm(A @ x))
    elif op == "sym":
        A = spec_matrix(spec)
        import cupyx.scipy.sparse as cps
        U = cps.triu(A, format="csr")
        x = cupy.random.default_rng(1).random(A.shape[0])
        MU, u = gb.Matrix(U), gb.Vector(x)
        ref = A @ x
        for comp in (False, True):
            for _ in range(2):
                y = gr.mxv(MU, u, SR, symmetric="upper", compensated=comp)
            got = cupy.asarray(y.dense_parts()[0])
            assert float(cupy.linalg.norm(got - ref)) <= 1e-12 * float(cupy.linalg.norm(ref))
            print("  kernel", y.spmv_choice.kernel, "compensated", comp, flush=True)
    elif op == "tri":
        S = undirected_device(int(spec))
        counts = {int(alg.triangle_count(gb.Matrix(S))) for _ in range(2)}
        assert len(counts) == 1
        print("  triangles", counts, flush=True)
    else:
        raise SystemExit(f"unknown operation {arg}")
    cupy.cuda.Device().synchronize()
    cupy.get_default_memory_pool().free_all_blocks()
