"""Issue 29: what separates the max family and log terms from cosine (GPU machine).

    python benchmarks/strategy_profile.py SETS METRICS      # e.g. powerlaw,sec_names cosine,chebyshev

For each set (``powerlaw``: datasets.powerlaw(); a name of datasets.PAPER_SHAPES; else a set written by ``run.py data`` into
.bench_data) and metric, a 2,048-row query block against every row: wall ms per call of each
strategy the plan allows (forced; each result compared with the automatic choice's; the
sorted union also with one column tile as wide as fits, ``sorted_uncapped``), the
automatic choice, and its kernels' device times (the CUDA profiler through torch). Writes
$OUT/prof_max.json. Results: benchmarks/results/h200-2026-11-27c-max-family-profile*.json."""
import sys, time, json, os
import numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
sys.path.insert(0, ".")
from benchmarks import datasets
from benchmarks.distances import _normalise_rows, PROBABILITY
from gbdist.backends.cuda import last_run, strategies
from torch.profiler import profile, ProfilerActivity
out = {}
sets = sys.argv[1].split(",")
metrics = sys.argv[2].split(",")
for name in sets:
    if name == "powerlaw":
        X = datasets.powerlaw()[0].astype(np.float32)
    elif name in datasets.PAPER_SHAPES:
        X = datasets.paper_shape(name).astype(np.float32)
    else:
        X = datasets.load(name, ".bench_data")[0].astype(np.float32)
    for metric in metrics:
        Xm = _normalise_rows(X) if metric in PROBABILITY else X
        Q = Xm[:2048]
        Qg, Xg = cps.csr_matrix(Q), cps.csr_matrix(Xm)
        row = {"set": name, "metric": metric, "shape": list(X.shape), "nnz": int(X.nnz)}
        ref = None
        for strat in ("auto", "gather", "scatter", "sorted", "dense"):
            f = lambda: gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda", strategy=strat)
            try:
                D = f()
            except Exception as e:
                row[strat] = str(e).splitlines()[0][:60]; continue
            if strat == "auto":
                ref = D; row["chosen"] = last_run().get("strategy")
            else:
                row[strat + "_maxdiff"] = float(cupy.max(cupy.abs(D - ref)))
            cupy.cuda.runtime.deviceSynchronize()
            ts = []
            for _ in range(3):
                t0 = time.perf_counter(); f(); cupy.cuda.runtime.deviceSynchronize(); ts.append(time.perf_counter() - t0)
            row[strat] = round(float(np.median(ts)) * 1e3, 2)
        if isinstance(row.get("sorted"), float):  # the sorted union with one tile as wide as fits
            strategies.SORTED_CAPPED = False
            try:
                f = lambda: gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda", strategy="sorted")
                row["sorted_uncapped_maxdiff"] = float(cupy.max(cupy.abs(f() - ref)))
                ts = []
                for _ in range(3):
                    t0 = time.perf_counter(); f(); cupy.cuda.runtime.deviceSynchronize(); ts.append(time.perf_counter() - t0)
                row["sorted_uncapped"] = round(float(np.median(ts)) * 1e3, 2)
            finally:
                strategies.SORTED_CAPPED = True
        f = lambda: gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda")
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            f(); cupy.cuda.runtime.deviceSynchronize()
        agg = {}
        for e in prof.events():
            if e.device_type.name == "CUDA":
                k = e.name[:70]; agg[k] = agg.get(k, 0.0) + e.device_time / 1e3
        row["kernels"] = sorted(((round(v, 3), k) for k, v in agg.items()), reverse=True)[:4]
        out.setdefault("rows", []).append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "kernels"}), flush=True)
        print("   ", row["kernels"], flush=True)
json.dump(out, open(os.environ.get("OUT", ".") + "/prof_max.json", "w"), indent=1)
