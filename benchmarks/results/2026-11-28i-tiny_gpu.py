"""Issue 30, 2026-11-28 (i): a fresh process's first answers on the GPU (5x3 manhattan distances,
kNN 40x8, a 50-vertex triangle count), each synchronised, then the distances warm in the same
process; run twice over one cache folder for the cold and the warm first call.

    GBDIST_CACHE_DIR=/some/cache python benchmarks/results/2026-11-28i-tiny_gpu.py $PWD tag
"""
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import numpy as np, scipy.sparse as sps, cupy as cp, cupyx.scipy.sparse as cps
import gbdist as gb
from gbdist import algorithms as alg
t1 = time.perf_counter()
X = cps.csr_matrix(sps.random(5, 3, density=0.6, random_state=0, format="csr"))
gb.pairwise_distances(X, metric="manhattan", backend="cuda"); cp.cuda.Device().synchronize()
t2 = time.perf_counter()
gb.knn(cps.csr_matrix(sps.random(40, 8, density=0.3, random_state=1, format="csr")), k=3, metric="cosine", backend="cuda"); cp.cuda.Device().synchronize()
t3 = time.perf_counter()
A = sps.random(50, 50, density=0.1, random_state=2, format="csr"); A = ((A + A.T) > 0).astype(np.float64)
alg.triangle_count(gb.Matrix(cps.csr_matrix(A))); cp.cuda.Device().synchronize()
t4 = time.perf_counter()
# the tiny calls again, warm in this process
ts = []
for _ in range(20):
    a = time.perf_counter(); gb.pairwise_distances(X, metric="manhattan", backend="cuda"); cp.cuda.Device().synchronize(); ts.append(time.perf_counter() - a)
print(f"{sys.argv[2]} import={1e3*(t1-t0):.0f} dist={1e3*(t2-t1):.0f} knn={1e3*(t3-t2):.0f} tri={1e3*(t4-t3):.0f} total={1e3*(t4-t0):.0f} warm_dist_med={1e3*sorted(ts)[10]:.3f}", flush=True)
