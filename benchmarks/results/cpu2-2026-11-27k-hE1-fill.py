"""spgemm_fill alone on the power law 10^5 (1 thread): into fresh output arrays (the first
one compiles if the module is new), into the same arrays again (pages touched), into
fresh arrays again, and over 8 row ranges into touched arrays (helper hE1, issue 28).
    GRAPH_DIR=... MALLOC_MMAP_THRESHOLD_=131072 python cpu2-2026-11-27k-hE1-fill.py"""
import os, sys, time, gc
os.environ["GBDIST_NUM_THREADS"] = "1"
import numpy as np, scipy.sparse as sps
import gbdist as gb
from gbdist.backends.compiled import graph as cg
A = sps.load_npz(os.environ["GRAPH_DIR"] + "/power_law-1.7e+06.npz").tocsr()
A.indices, A.indptr = A.indices.astype(np.int32), A.indptr.astype(np.int64)
sr = gb.semirings.plus_times
mod = cg._module(sr.mul, sr.add.op, "float64")
m = n = A.shape[0]
ap, ai, ax = A.indptr, A.indices, A.data
terms = np.empty(m, np.int64)
mod.spgemm_terms(ap, ai, ap, np.int64(n // 64), terms)
rownnz = np.zeros(m, np.int64)
t0 = time.perf_counter(); mod.spgemm_count(ap, ai, ap, ai, ap[:1], ai[:1], np.int64(0), np.int64(n), np.int64(0), np.int64(m), rownnz); print("count", time.perf_counter() - t0)
cp = np.zeros(m + 1, np.int64); np.cumsum(rownnz, out=cp[1:]); nnz = int(cp[-1])
print("nnz", nnz, "rows c>n/16", (rownnz > n / 16).sum(), "entries in them", rownnz[rownnz > n / 16].sum())
small = np.int64(32)
def fill(ci, cx, r0=0, r1=m):
    t0 = time.perf_counter()
    mod.spgemm_fill(ap, ai, ax, ap, ai, ax, ap[:1], ai[:1], np.int64(0), np.int64(n), cp, ci, cx, terms, small, np.int64(r0), np.int64(r1))
    return time.perf_counter() - t0
ci = np.empty(nnz, np.int32); cx = np.empty(nnz)
print("fresh", fill(ci, cx))
print("touched", fill(ci, cx))
del ci, cx; gc.collect()
ci = np.empty(nnz, np.int32); cx = np.empty(nnz)
print("fresh2", fill(ci, cx))
ci[:] = 0; cx[:] = 0
t = 0
for a, b in zip(range(0, m, m // 8), range(m // 8, m + 1, m // 8)):
    t += fill(ci, cx, a, b)
print("touched, 8 ranges", t)
