"""Pruned kNN on the tall shape: the epilogue as CuPy array math vs one generated kernel
(pruned_values.FUSED), interleaved, answers compared bit for bit first."""
import json, os, sys, time
import numpy as np
import cupy, cupyx.scipy.sparse as cps
import gbdist as gb
from benchmarks import datasets, peers
from benchmarks.distances import PROBABILITY
from benchmarks.knn import _normalise_rows
from gbdist.backends.cuda import pruned as dev, pruned_values as PV

shape = sys.argv[1] if len(sys.argv) > 1 else "tall"
metrics = (sys.argv[2] if len(sys.argv) > 2 else "cosine,manhattan,canberra,hellinger,jensenshannon,chebyshev").split(",")
os.environ["GBDIST_PRUNE"] = "always"
X = datasets.paper_shape(shape)
print(shape, X.shape, X.nnz, flush=True)
rows, devs = [], {}
for metric in metrics:
    prob = metric in PROBABILITY
    if prob not in devs:
        devs.clear(); devs[prob] = cps.csr_matrix(_normalise_rows(X) if prob else X)
    Xg = devs[prob]
    res = {}
    def run(fused):
        PV.FUSED_SEARCH = fused
        res[fused] = gb.knn(Xg, k=10, metric=metric, backend="cuda")
    for f in (False, True):
        run(f); cupy.cuda.runtime.deviceSynchronize()
    d0, i0 = (cupy.asnumpy(a) for a in res[False]); d1, i1 = (cupy.asnumpy(a) for a in res[True])
    same = bool(np.array_equal(i0, i1) and np.array_equal(d0, d1, equal_nan=True))
    ndiff = int((~((d0 == d1) | (np.isnan(d0) & np.isnan(d1)))).any(axis=1).sum() + (i0 != i1).any(axis=1).sum())
    times = {False: [], True: []}
    for _ in range(5):
        for f in (False, True):
            times[f].append(peers.timeit_cuda(lambda: run(f), 1, 0))
    stages = {}
    for f in (False, True):
        PV.FUSED_SEARCH = f; dev.profile(True); run(f); dev.profile(False)
        stages[f] = {k: (round(v * 1e3, 2) if isinstance(v, float) else v) for k, v in dev.PROFILE.items()}
    row = {"shape": shape, "metric": metric, "identical": same, "rows_differ": ndiff,
           "arrays_ms": float(np.median(times[False])), "fused_ms": float(np.median(times[True])),
           "arrays_times": times[False], "fused_times": times[True],
           "stages_arrays_ms": stages[False], "stages_fused_ms": stages[True]}
    rows.append(row); print(json.dumps(row), flush=True)
    res.clear(); cupy.get_default_memory_pool().free_all_blocks()
PV.FUSED_SEARCH = False
cos = {r["shape"]: r["fused_ms"] for r in rows if r["metric"] == "cosine"}
print("\n| shape | metric | arrays ms | fused ms | / cosine (fused) | identical |")
print("|---|---|---|---|---|---|")
for r in rows:
    c = cos.get(r["shape"])
    print(f"| {r['shape']} | {r['metric']} | {r['arrays_ms']:.1f} | {r['fused_ms']:.1f} | "
          f"{(r['fused_ms'] / c) if c else float('nan'):.2f} | {r['identical']} |")
out = os.environ.get("OUT", "/tmp")
json.dump(rows, open(f"{out}/search-{shape}.json", "w"), indent=1)
