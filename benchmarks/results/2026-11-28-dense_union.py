"""Issue 29: chebyshev's kNN with the dense union strategy (kernels/dense_union.cuh) off and
on (dense_strategies.DENSE_UNION), gb.knn on gb.prepare(X) for Tabula Muris and KOS from
.bench_data (python benchmarks/run.py data --data-dir ../shared/data --out .bench_data),
the two interleaved, medians of 7, answers compared first; cosine for scale. Which strategy
the planner took with it on, the forced kernels' times (gather, dense_union) through the
backend's last run, and the estimates of each strategy for the whole product (to refit
dense_strategies.DU_RATES).

    python benchmarks/results/2026-11-28-dense_union.py [data_dir]   (OUT: where the JSON goes)"""
import json, os, sys
import numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
from benchmarks import datasets, peers
from gbdist.backends.cuda import cache, dense_strategies, last_run, strategies
OUT = os.environ.get("OUT", "/tmp")
DATA = sys.argv[1] if len(sys.argv) > 1 else ".bench_data"
rows = []
for name in ("tabula_muris", "kos"):
    X, _ = datasets.load(name, DATA)
    X = X.astype(np.float32)
    Xg = cps.csr_matrix(X); Xp = gb.prepare(Xg)
    for metric in ("cosine", "chebyshev"):
        res, took = {}, {}
        def run(on):
            dense_strategies.DENSE_UNION = on
            res[on] = gb.knn(Xp, k=10, metric=metric, backend="cuda")
            took[on] = last_run()["strategy"]
        for on in (False, True): run(on)
        cupy.cuda.Device().synchronize()
        same = all(np.array_equal(cupy.asnumpy(a), cupy.asnumpy(b), equal_nan=True) for a, b in zip(res[False], res[True]))
        times = {False: [], True: []}
        for _ in range(7):
            for on in (False, True):
                times[on].append(peers.timeit_cuda(lambda: run(on), 1, 0))
        forced = {}
        if metric == "chebyshev":  # the whole product, each strategy forced: kernel-side view
            for s in ("gather", "sorted", "dense_union"):
                fn = lambda s=s: gb.pairwise_distances(Xg, Xg, metric=metric, backend="cuda", strategy=s)
                D = fn()
                forced[s] = {"ms": peers.timeit_cuda(fn, 7, 1), "strategy": last_run()["strategy"],
                             "max_abs_vs_gather": None}
                if s != "gather":
                    Dg = gb.pairwise_distances(Xg, Xg, metric=metric, backend="cuda", strategy="gather")
                    forced[s]["max_abs_vs_gather"] = float(cupy.nanmax(cupy.abs(cupy.asarray(D) - cupy.asarray(Dg))))
            dense_strategies.DENSE_UNION = True
            est = {}
            spy_real = strategies.estimate
            def spy(job):
                e = spy_real(job); est.update({k: v * 1e3 for k, v in e.items()}); return e
            strategies.estimate = spy
            cache.CHOICES.clear()
            gb.pairwise_distances(Xg, Xg, metric=metric, backend="cuda")
            strategies.estimate = spy_real
            forced["estimates_ms"] = est
        dense_strategies.DENSE_UNION = False
        r = {"data": name, "shape": list(X.shape), "density": X.nnz / (X.shape[0] * X.shape[1]),
             "metric": metric, "identical": same, "strategy_off": took[False], "strategy_on": took[True],
             "off_ms": float(np.median(times[False])), "on_ms": float(np.median(times[True])),
             "times": {str(k): v for k, v in times.items()}, "forced": forced}
        rows.append(r); print(json.dumps(r), flush=True)
dense_strategies.DENSE_UNION = False
print("\n| data | metric | DENSE_UNION off ms | / cosine | on ms | / cosine | strategy on | identical |\n|---|---|---|---|---|---|---|---|")
for r in rows:
    cos = next(c for c in rows if c["data"] == r["data"] and c["metric"] == "cosine")
    print(f"| {r['data']} | {r['metric']} | {r['off_ms']:.2f} | {r['off_ms']/cos['off_ms']:.2f} | {r['on_ms']:.2f} "
          f"| {r['on_ms']/cos['on_ms']:.2f} | {r['strategy_on']} | {r['identical']} |")
json.dump(rows, open(f"{OUT}/dense-union.json", "w"), indent=1)
