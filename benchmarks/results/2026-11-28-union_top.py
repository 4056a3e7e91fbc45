"""Issue 29: chebyshev's pruned kNN on the 663K-row shape with pruned_plan.UNION_TOP off
(gb_prune_union over every overlapping pair) and on (gb_prune_union_top: the SpGEMM's ∩
max and each row's best one-sided entry), gb.knn on gb.prepare(X), the two interleaved,
medians of 7, answers compared first; stage profile of each. Cosine for scale."""
import json, os, sys
os.environ.setdefault("GBDIST_PRUNE", "always")
import numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
from benchmarks import datasets, peers
from gbdist.backends.cuda import pruned as dev, pruned_plan
OUT = os.environ.get("OUT", "/tmp")
shape = sys.argv[1] if len(sys.argv) > 1 else "tall"
X = datasets.paper_shape(shape)
Xg = cps.csr_matrix(X); Xp = gb.prepare(Xg)
rows = []
for metric in ("cosine", "chebyshev"):
    res = {}
    def run(top):
        pruned_plan.UNION_TOP = top
        res[top] = gb.knn(Xp, k=10, metric=metric, backend="cuda")
    for t in (False, True): run(t)
    cupy.cuda.Device().synchronize()
    same = all(np.array_equal(cupy.asnumpy(a), cupy.asnumpy(b), equal_nan=True) for a, b in zip(res[False], res[True]))
    times = {False: [], True: []}
    for _ in range(7):
        for t in (False, True):
            times[t].append(peers.timeit_cuda(lambda: run(t), 1, 0))
    stages = {}
    for t in (False, True):
        pruned_plan.UNION_TOP = t
        dev.profile(True); gb.knn(Xp, k=10, metric=metric, backend="cuda"); dev.profile(False)
        stages[str(t)] = {k: (round(v * 1e3, 2) if isinstance(v, float) else v) for k, v in dev.PROFILE.items()}
    r = {"shape": shape, "metric": metric, "identical": same, "off_ms": float(np.median(times[False])),
         "on_ms": float(np.median(times[True])), "times": {str(k): v for k, v in times.items()}, "stages": stages}
    rows.append(r); print(json.dumps(r), flush=True)
pruned_plan.UNION_TOP = False
cos = next(r for r in rows if r["metric"] == "cosine")
print("\n| metric | UNION_TOP off ms | / cosine | on ms | / cosine | identical |\n|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['metric']} | {r['off_ms']:.1f} | {r['off_ms']/cos['off_ms']:.2f} | {r['on_ms']:.1f} | {r['on_ms']/cos['on_ms']:.2f} | {r['identical']} |")
json.dump(rows, open(f"{OUT}/union-top-{shape}.json", "w"), indent=1)
