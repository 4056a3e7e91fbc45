"""ncu driver: gb.knn on gb.prepare(Tabula Muris), k=10, metric argv[1], three calls."""
import sys, numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
from benchmarks import datasets
X, _ = datasets.load("tabula_muris", ".bench_data")
X = X.astype(np.float32)
metric = sys.argv[1]
if metric in ("jensenshannon", "hellinger"):
    s = np.asarray(X.sum(axis=1)).ravel(); s[s == 0] = 1
    X = X.multiply(1 / s[:, None]).tocsr().astype(np.float32)
Xp = gb.prepare(cps.csr_matrix(X))
for _ in range(3):
    gb.knn(Xp, k=10, metric=metric, backend="cuda")
cupy.cuda.Device().synchronize()
from gbdist.backends.cuda import last_run
print("strategy", last_run()["strategy"])
