"""Issue 31: dense manhattan's shares under DIRECT_UNION on and off; strategy choices."""
import json, os, time
import numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
from benchmarks import datasets, peers
from gbdist.backends.cuda import codegen, cache
from gbdist.dask import tasks
OUT = os.environ.get("OUT", "/tmp")
X = datasets.paper_shape("dense"); Xg = cps.csr_matrix(X)
rows = []
for metric in ("manhattan", "cosine"):
    for direct in (True, False):
        codegen.DIRECT_UNION = direct
        cache.CHOICES.clear()
        f = lambda: gb.knn(Xg, k=10, metric=metric, backend="cuda")
        f(); cupy.cuda.Device().synchronize()
        t_knn = [peers.timeit_cuda(f, 1, 0) for _ in range(3)]
        ch_knn = dict(cache.CHOICES); cache.CHOICES.clear()
        shares = []
        for w in range(4):
            g = lambda w=w: tasks.share_knn(Xg, 11, w, 4, metric, {}, "cuda", None, None)
            g(); cupy.cuda.Device().synchronize()
            shares.append(float(np.median([peers.timeit_cuda(g, 1, 0) for _ in range(2)])))
        r = {"metric": metric, "direct_union": direct, "knn_ms": float(np.median(t_knn)),
             "knn_raw": t_knn, "shares_raw": shares, "choices_knn": [str(v) for v in ch_knn.values()],
             "choices_shares": [str(v) for v in cache.CHOICES.values()],
             "pool_gib": cupy.get_default_memory_pool().total_bytes() / 2**30}
        rows.append(r); print(json.dumps(r), flush=True)
        cupy.get_default_memory_pool().free_all_blocks()
codegen.DIRECT_UNION = True
json.dump(rows, open(f"{OUT}/dense-manhattan.json", "w"), indent=1)
