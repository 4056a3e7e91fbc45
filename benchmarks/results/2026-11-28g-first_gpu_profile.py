"""Where a fresh process's first GPU distance spends its time (issue 30's latency item): a
5 x 3 manhattan ``pairwise_distances`` on the device, the process's first, under cProfile
(after ``import gbdist``, CuPy's context not yet made); then the same call warm, 20 times.
Run twice on one GBDIST_CACHE_DIR: empty (every kernel compiled), then warm (cached).

    GBDIST_CACHE_DIR=/tmp/c PYTHONPATH=$PWD python benchmarks/results/2026-11-28g-first_gpu_profile.py label
"""
import cProfile
import io
import pstats
import sys
import time

t0 = time.perf_counter()
import cupy as cp  # noqa: E402
import cupyx.scipy.sparse as cps  # noqa: E402
import scipy.sparse as sps  # noqa: E402

import gbdist as gb  # noqa: E402

t1 = time.perf_counter()
X = cps.csr_matrix(sps.random(5, 3, density=0.6, random_state=0, format="csr"))
t2 = time.perf_counter()
pr = cProfile.Profile()
pr.enable()
gb.pairwise_distances(X, metric="manhattan", backend="cuda")
cp.cuda.Device().synchronize()
pr.disable()
t3 = time.perf_counter()
ts = []
for _ in range(20):
    a = time.perf_counter()
    gb.pairwise_distances(X, metric="manhattan", backend="cuda")
    cp.cuda.Device().synchronize()
    ts.append(time.perf_counter() - a)
print(f"{sys.argv[1]} import={1e3 * (t1 - t0):.0f} ms, operand (context) {1e3 * (t2 - t1):.0f} ms, "
      f"first distance {1e3 * (t3 - t2):.0f} ms, warm median {1e3 * sorted(ts)[10]:.3f} ms, "
      f"sympy imported: {'sympy' in sys.modules}")
for key in ("cumulative", "tottime"):
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats(key).print_stats(28)
    print("\n".join(ln for ln in buf.getvalue().splitlines() if ln.strip())[:6000])
