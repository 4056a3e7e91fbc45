"""A fresh process's first mxv, the library's own loading included (issue 28's mxv memory):
the peak resident-set growth of [import the library, make its operands from the SciPy CSR
and a NumPy vector, one mxv plus_times], 1 thread, the graph already in memory (loaded from
GRAPH_DIR before the measured part: power_law-1.7e+07.npz). The runner's protocol loads the
kernels on a small graph first and imports both libraries for both sides, so it leaves out
gbdist's Numba import in one variant (6.06x) and SuiteSparse's library load always; here
both sides pay their loading. One JSON line a run.

    MALLOC_MMAP_THRESHOLD_=131072 python benchmarks/results/cpu2-2026-11-27j-mxv-first-process.py gbdist|graphblas
"""
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("GBDIST_NUM_THREADS", "1")
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
import scipy.sparse as sps  # noqa: E402

from benchmarks.graphs import peak_growth  # noqa: E402  (numpy, scipy only)

side = sys.argv[1]
A = sps.load_npz(Path(os.environ.get("GRAPH_DIR", "/tmp")) / "power_law-1.7e+07.npz").tocsr()
x = np.random.default_rng(0).random(A.shape[0])
out = {}


def gbdist_first():
    import gbdist as gb
    from gbdist import graph as gr
    M, v = gb.Matrix(A), gb.Vector(x)
    out["y"] = gr.mxv(M, v, gb.semirings.plus_times).to_dense(fill=0.0)


def graphblas_first():
    import graphblas as grb
    grb.ss.config["nthreads"] = 1
    G = grb.io.from_scipy_sparse(A)
    v = grb.Vector.from_dense(x)
    out["y"] = G.mxv(v, grb.semiring.plus_times).new().to_dense(fill_value=0.0)


t = time.perf_counter()
grow = peak_growth(gbdist_first if side == "gbdist" else graphblas_first)
dt = time.perf_counter() - t
ref = A @ x
ok = bool(np.allclose(out["y"], ref, rtol=1e-12, atol=1e-12))
print(json.dumps(dict(side=side, entries=int(A.nnz), peak_mib=grow / 2**20, seconds=dt,
                      equal_to_scipy=ok, load=os.getloadavg()[0])), flush=True)
