"""Issue 30: PageRank, 20 fixed steps, against 20 cuSPARSE SpMVs on the same A^T, at 10^6
and 10^7 vertices (the graph of benchmarks/graph_gpu.algorithms); answer checked against
the operations path first; the kernel table at 10^6."""
import json, os, time
import numpy as np, cupy
import gbdist as gb
from gbdist import algorithms as alg
from benchmarks.graph_gpu import undirected_device, median_ms, wall_s
OUT = os.environ.get("OUT", "/tmp")
rows = []
for n in (10**6, 10**7):
    S = undirected_device(n); G = gb.Matrix(S); G.T
    N = 20
    fixed = alg.pagerank(G, steps=N)
    assert np.allclose(fixed, alg.pagerank(G, steps=N, method="operations"), rtol=1e-12, atol=1e-15)
    assert np.array_equal(fixed, alg.pagerank(G, steps=N))  # deterministic
    AT = G.T.csr
    w = cupy.random.default_rng(1).random(n)
    r = {"n": n, "entries": int(S.nnz)}
    r["pagerank_fixed_s"] = wall_s(lambda: alg.pagerank(G, steps=N), 7)
    r["spmv_cusparse_ms"] = median_ms(lambda: AT @ w, 20)
    r["bound_s"] = N * r["spmv_cusparse_ms"] / 1e3
    r["ratio"] = r["pagerank_fixed_s"] / r["bound_s"]
    conv = alg.pagerank(G)
    r["pagerank_converged_s"] = wall_s(lambda: alg.pagerank(G), 5)
    rows.append(r); print(json.dumps(r), flush=True)
    del S, G, AT; cupy.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(f"{OUT}/pagerank.json", "w"), indent=1)
