"""Issue 30, 2026-11-28 (i): where a fresh process's first GPU triangle count (50 vertices) spends
its time, the disk cache warm from an earlier process: import, the CUDA context, the count
under cProfile (cumulative and own time), the second count, and what was compiled or loaded.

    GBDIST_CACHE_DIR=/some/cache python benchmarks/results/2026-11-28i-first_call.py $PWD
"""
import sys, time, cProfile, pstats, io
sys.path.insert(0, sys.argv[1])
t0 = time.perf_counter()
import numpy as np, scipy.sparse as sps, cupy as cp, cupyx.scipy.sparse as cps
import gbdist as gb
from gbdist import algorithms as alg
from gbdist.backends.cuda import cache
t1 = time.perf_counter()
cp.cuda.Device().synchronize(); cp.zeros(1).sum().get()
t2 = time.perf_counter()
A = sps.random(50, 50, density=0.1, random_state=2, format="csr"); A = ((A + A.T) > 0).astype(np.float64)
M = gb.Matrix(cps.csr_matrix(A))
pr = cProfile.Profile(); pr.enable()
n = alg.triangle_count(M); cp.cuda.Device().synchronize()
pr.disable()
t3 = time.perf_counter()
n2 = alg.triangle_count(gb.Matrix(cps.csr_matrix(A))); cp.cuda.Device().synchronize()
t4 = time.perf_counter()
print(f"import {1e3*(t1-t0):.0f} ms, context {1e3*(t2-t1):.0f} ms, first tri {1e3*(t3-t2):.0f} ms, second {1e3*(t4-t3):.1f} ms, count {n} {n2}")
print("compiles:", [(str(k)[:60], round(s, 3)) for k, s in cache.compile_log()])
buf = io.StringIO(); pstats.Stats(pr, stream=buf).sort_stats("cumulative").print_stats(35); print(buf.getvalue()[:6000])
buf = io.StringIO(); pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(15); print(buf.getvalue()[:3000])
