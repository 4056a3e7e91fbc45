"""Stage timings of gbdist's unmasked mxm on the power law 10^5 (one process, T threads):
each kernel's time as graph._run ran it, and gustavson's whole; kernels loaded on a
3,000-vertex corner of the graph first; two calls (helper hE1, issue 28).
    GRAPH_DIR=... MALLOC_MMAP_THRESHOLD_=131072 python cpu2-2026-11-27k-hE1-stages.py T"""
import os, sys, time, gc, json
T = int(sys.argv[1]); os.environ["GBDIST_NUM_THREADS"] = str(T); os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
import numpy as np, scipy.sparse as sps
import gbdist as gb
from gbdist import graph as gr
from gbdist.backends.compiled import graph as cg
from gbdist.backends.compiled import graph_spgemm as gs
A = sps.load_npz(os.environ["GRAPH_DIR"] + "/power_law-1.7e+06.npz").tocsr()
A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
S = sps.load_npz(os.environ["GRAPH_DIR"] + "/power_law-1.7e+06.npz").tocsr()[:3000, :3000].tocsr()
stages = []
orig_run = cg._run
def run(kernel, head, ranges, tail=()):
    t0 = time.perf_counter(); orig_run(kernel, head, ranges, tail); stages.append((kernel.__name__ if hasattr(kernel, "__name__") else str(kernel), time.perf_counter() - t0))
cg._run = run
orig_g = gs.gustavson
def g(*a, **k):
    t0 = time.perf_counter(); r = orig_g(*a, **k); stages.append(("gustavson total", time.perf_counter() - t0)); return r
gs.gustavson = g
Gs = gb.Matrix(S); gr.mxm(Gs, Gs, gb.semirings.plus_times)
G = gb.Matrix(A)
for rep in range(2):
    stages.clear(); gc.collect()
    t0 = time.perf_counter(); C = gr.mxm(G, G, gb.semirings.plus_times); tt = time.perf_counter() - t0
    print(rep, "total %.3f" % tt, [(k, round(v, 3)) for k, v in stages], flush=True)
    del C
