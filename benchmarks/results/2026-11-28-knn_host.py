"""Issue 29: the host's share of a small real set's kNN (gb.knn on gb.prepare(X), Tabula
Muris): cProfile of 20 calls per metric, functions by own time and by cumulative time."""
import cProfile, io, json, os, pstats, sys
import numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
from benchmarks import datasets, peers
from benchmarks.distances import PROBABILITY
from benchmarks.knn import _normalise_rows
name = sys.argv[1] if len(sys.argv) > 1 else "tabula_muris"
metrics = (sys.argv[2] if len(sys.argv) > 2 else "cosine,manhattan,jensenshannon,chebyshev").split(",")
X = datasets.load(name, ".bench_data")[0].astype(np.float32)
for metric in metrics:
    Xp = gb.prepare(cps.csr_matrix(_normalise_rows(X) if metric in PROBABILITY else X))
    f = lambda: gb.knn(Xp, k=10, metric=metric, backend="cuda")
    f(); f()
    wall = peers.timeit_cuda(f, 7, 1)
    pr = cProfile.Profile(); pr.enable()
    for _ in range(20): f()
    cupy.cuda.Device().synchronize(); pr.disable()
    s = io.StringIO(); st = pstats.Stats(pr, stream=s)
    st.sort_stats("tottime").print_stats(22); st.sort_stats("cumulative").print_stats(45)
    print(f"\n######## {metric}: wall {wall:.2f} ms a call\n" + s.getvalue(), flush=True)
