"""Issue 29: the pruned kNN on the 663K-row shape, gb.knn on X and on gb.prepare(X), every
metric of the issue; answers equal between the two forms; stage profile of the prepared."""
import json, os, sys
import numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
from benchmarks import datasets, peers
from benchmarks.distances import PROBABILITY
from benchmarks.knn import _normalise_rows
from gbdist.backends.cuda import pruned as dev
OUT = os.environ.get("OUT", "/tmp")
X = datasets.paper_shape("tall")
metrics = sys.argv[1].split(",") if len(sys.argv) > 1 else ["cosine", "manhattan", "canberra", "hellinger", "jensenshannon", "chebyshev"]
rows, devs = [], {}
for metric in metrics:
    prob = metric in PROBABILITY
    if prob not in devs:
        devs.clear(); Xg = cps.csr_matrix(_normalise_rows(X) if prob else X); devs[prob] = (Xg, gb.prepare(Xg))
    Xg, Xp = devs[prob]
    res = {}
    def run(form):
        res[form] = gb.knn(Xg if form == "raw" else Xp, k=10, metric=metric, backend="cuda")
    for f in ("raw", "prepared"): run(f)
    cupy.cuda.Device().synchronize()
    same = all(np.array_equal(cupy.asnumpy(a), cupy.asnumpy(b), equal_nan=True) for a, b in zip(res["raw"], res["prepared"]))
    times = {"raw": [], "prepared": []}
    for _ in range(7):
        for f in ("raw", "prepared"):
            times[f].append(peers.timeit_cuda(lambda: run(f), 1, 0))
    dev.profile(True); run("prepared"); dev.profile(False)
    r = {"metric": metric, "identical": same, "raw_ms": float(np.median(times["raw"])),
         "prepared_ms": float(np.median(times["prepared"])), "times": times,
         "stages_prepared_ms": {k: (round(v * 1e3, 2) if isinstance(v, float) else v) for k, v in dev.PROFILE.items()}}
    rows.append(r); print(json.dumps(r), flush=True)
    res.clear()
cos = {f: next(r[f + "_ms"] for r in rows if r["metric"] == "cosine") for f in ("raw", "prepared")}
print("\n| metric | X ms | / cosine | gb.prepare(X) ms | / cosine | identical |\n|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['metric']} | {r['raw_ms']:.1f} | {r['raw_ms']/cos['raw']:.2f} | {r['prepared_ms']:.1f} | {r['prepared_ms']/cos['prepared']:.2f} | {r['identical']} |")
json.dump(rows, open(f"{OUT}/tall-prepared.json", "w"), indent=1)
