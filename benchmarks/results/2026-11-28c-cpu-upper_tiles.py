"""The compiled CPU backend's diagonal tiles on and above the diagonal (docs/cpu.md):
gb.knn(gb.prepare(X), k=10, backend="cpu") on real sets, in the tree argv[1] (put first on
sys.path; run from this checkout's root, DATA the shared data folder, TILES=1: the tile loop
for every plan). argv: TREE SETS METRICS REPS [SAVE]; one JSON line per case (median ms of
REPS after one warm call); the answers saved to SAVE (npz) if given. Each tree, one process
per run, 7 runs in turn with the other tree's."""
import json, os, sys, time
tree = os.path.abspath(sys.argv[1])
sys.path.insert(0, tree)
import numpy as np
import gbdist as gb
assert gb.__file__.startswith(tree), gb.__file__
if os.environ.get("TILES"):  # the tile loop for every plan (no fused gb_knn search)
    from gbdist.backends.compiled import CompiledCPUBackend
    CompiledCPUBackend.search_k = None
sys.path.insert(1, os.getcwd())
from benchmarks import datasets
sets, metrics, reps = sys.argv[2].split(","), sys.argv[3].split(","), int(sys.argv[4])
ans = {}
for name in sets:
    X0, _ = datasets.load(name, os.environ.get("DATA", "../shared/data"))
    X0 = X0.tocsr().astype(np.float64)
    s = np.asarray(X0.sum(axis=1)).ravel(); s[s == 0] = 1
    Xn = X0.multiply(1 / s[:, None]).tocsr()
    P = {False: gb.prepare(X0), True: gb.prepare(Xn)}
    for metric in metrics:
        Xp = P[metric in ("jensenshannon", "hellinger")]
        d, i = gb.knn(Xp, k=10, metric=metric, backend="cpu")
        ts = []
        for _ in range(reps):
            t = time.perf_counter(); gb.knn(Xp, k=10, metric=metric, backend="cpu")
            ts.append((time.perf_counter() - t) * 1e3)
        ans[f"{name}/{metric}/d"], ans[f"{name}/{metric}/i"] = d, i
        print(json.dumps({"data": name, "shape": X0.shape, "metric": metric,
                          "ms": round(float(np.median(ts)), 2)}), flush=True)
if len(sys.argv) > 5:
    np.savez(sys.argv[5], **ans)
