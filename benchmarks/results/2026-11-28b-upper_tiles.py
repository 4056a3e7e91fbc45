"""Issue 29: kNN with the symmetric search's diagonal tiles computed on and above the
diagonal only (run_tile(..., upper=True)), against the tree before it. One process per
tree and round (argv[1]: the tree's root put first on sys.path, argv[2]: its label);
gb.knn(gb.prepare(X), k=10) on the real sets in .bench_data (rows normalised to sum 1 for
hellinger and jensenshannon, as benchmarks/knn.py does), CUDA-event medians of 7 after 2
warm-up calls; each process saves its answers (OUT/knn-<label>.npz) for the comparison.

    python benchmarks/results/2026-11-28b-upper_tiles.py TREE LABEL [sets]"""
import json, os, sys
sys.path.insert(0, os.path.abspath(sys.argv[1]))
import numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
assert gb.__file__.startswith(os.path.abspath(sys.argv[1])), gb.__file__
sys.path.insert(1, os.getcwd())
from benchmarks import datasets, peers
from gbdist.backends.cuda import last_run
OUT = os.environ.get("OUT", "/tmp")
label = sys.argv[2]
sets = (sys.argv[3] if len(sys.argv) > 3 else "movielens,tabula_muris,kos,newsgroups").split(",")
METRICS = ("cosine", "manhattan", "canberra", "hellinger", "jensenshannon", "chebyshev")
answers = {}
for name in sets:
    X0, _ = datasets.load(name, ".bench_data")
    X0 = X0.astype(np.float32).tocsr()
    s = np.asarray(X0.sum(axis=1)).ravel(); s[s == 0] = 1
    Xn = X0.multiply(1 / s[:, None]).tocsr().astype(np.float32)
    prepared = {False: gb.prepare(cps.csr_matrix(X0)), True: gb.prepare(cps.csr_matrix(Xn))}
    for metric in METRICS:
        Xp = prepared[metric in ("hellinger", "jensenshannon")]
        fn = lambda: gb.knn(Xp, k=10, metric=metric, backend="cuda")
        d, i = fn()
        ms = peers.timeit_cuda(fn, 7, 2)
        answers[f"{name}/{metric}/d"] = cupy.asnumpy(d); answers[f"{name}/{metric}/i"] = cupy.asnumpy(i)
        print(json.dumps({"tree": label, "data": name, "metric": metric, "ms": ms,
                          "strategy": last_run()["strategy"]}), flush=True)
np.savez(f"{OUT}/knn-{label}.npz", **answers)
