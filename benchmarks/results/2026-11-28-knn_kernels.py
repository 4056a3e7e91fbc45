"""Issue 29: where a small real set's kNN goes (Tabula Muris, 1,067 x 23,433, 7.7% dense):
gb.knn on gb.prepare(X) per metric, wall (CUDA events, median of 7) against the device's
busy time and its largest kernels (torch's CUDA profiler over 3 calls)."""
import json, os, sys
import numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
from benchmarks import datasets, peers
from benchmarks.distances import PROBABILITY
from benchmarks.knn import _normalise_rows
from gbdist.backends.cuda import last_run
from torch.profiler import profile, ProfilerActivity
name = sys.argv[1] if len(sys.argv) > 1 else "tabula_muris"
metrics = (sys.argv[2] if len(sys.argv) > 2 else "cosine,manhattan,canberra,hellinger,jensenshannon,chebyshev").split(",")
X = datasets.load(name, ".bench_data")[0].astype(np.float32)
rows = []
for metric in metrics:
    Xp = gb.prepare(cps.csr_matrix(_normalise_rows(X) if metric in PROBABILITY else X))
    f = lambda: gb.knn(Xp, k=10, metric=metric, backend="cuda")
    f(); f()
    wall = peers.timeit_cuda(f, 7, 1)
    r = {"set": name, "metric": metric, "wall_ms": wall, "strategy": last_run().get("strategy")}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3): f()
        cupy.cuda.runtime.deviceSynchronize()
    agg, n = {}, {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            k = e.name[:80]; agg[k] = agg.get(k, 0.0) + e.device_time / 3e3; n[k] = n.get(k, 0) + 1
    r["busy_ms"] = round(sum(agg.values()), 3)
    r["launches"] = sum(n.values()) // 3
    r["kernels"] = sorted(((round(v, 3), n[k] // 3, k) for k, v in agg.items()), reverse=True)[:6]
    rows.append(r); print(json.dumps(r), flush=True)
json.dump(rows, open(os.environ.get("OUT", "/tmp") + f"/knn-kernels-{name}.json", "w"), indent=1)
