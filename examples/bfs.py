"""Breadth-first search on a generated graph, written with gbdist's graph operations.

One BFS step is a product of the frontier (a sparse vector) with the adjacency matrix over
``any_pair`` (⊗: "there is an edge", ⊕: "one is enough"), masked by the complement of the
visited set so that only new vertices come out:

    frontier = frontier any.pair A     mask = ~visited.S

gbdist.algorithms.bfs_levels computes the same, switching between push (``vxm``, small
frontiers) and pull (``mxv`` with Aᵀ, large frontiers) by Beamer's rule, and keeps
``visited`` as a bitmap updated in place (the kernels' ``spmspv_update``) so that a level
costs the frontier's edges rather than O(n). Checked against SciPy's csgraph and networkx.

Run:  python examples/bfs.py
"""
import networkx as nx
import numpy as np
import scipy.sparse as sps
from scipy.sparse import csgraph

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr

# A random directed graph: 2000 vertices, ~8 out-edges each, heavier near the low ids.
rng = np.random.default_rng(0)
n, m = 2000, 16000
src = (n * rng.random(m) ** 2).astype(np.int64)
dst = rng.integers(0, n, m)
A = sps.csr_matrix((np.ones(m), (src, dst)), shape=(n, n))
A.sum_duplicates()
print(f"graph: {n} vertices, {A.nnz} edges")

# --- one BFS written out by hand: the loop the algorithm module runs ---------------------
G = gb.Matrix(A)
frontier = gb.Vector.from_coo([0], [True], n, dtype=bool)
visited = frontier
level = 0
sizes = []
while frontier.nvals:
    sizes.append(frontier.nvals)
    frontier = gr.vxm(frontier, G, gb.semirings.any_pair, mask=~visited.S)
    visited = gr.ewise_add(visited, frontier, gb.ops.lor)
    level += 1
print("frontier sizes per level:", sizes)
print(f"reached {visited.nvals} of {n} vertices")

# --- the algorithm module: levels and the BFS tree ----------------------------------------
levels = alg.bfs_levels(A, 0)
parents = alg.bfs_parents(A, 0)
print("deepest level:", levels.max(), "| unreachable:", int((levels < 0).sum()))

# --- checks against SciPy and networkx ----------------------------------------------------
ref = csgraph.shortest_path(A, unweighted=True, indices=0)
ref = np.where(np.isinf(ref), -1, ref).astype(np.int64)
assert np.array_equal(levels, ref), "levels differ from SciPy csgraph"
nxl = nx.single_source_shortest_path_length(
    nx.from_scipy_sparse_array(A, create_using=nx.DiGraph), 0)
assert all(levels[v] == d for v, d in nxl.items()) and (levels >= 0).sum() == len(nxl)
assert visited.nvals == (levels >= 0).sum() and len(sizes) == levels.max() + 1
reached = np.flatnonzero(levels > 0)
assert parents[0] == 0 and np.all(levels[parents[reached]] == levels[reached] - 1)
assert np.all(np.asarray(A[parents[reached], reached]).ravel() != 0)  # parent -> v is an edge
print("OK: levels match SciPy csgraph and networkx; every parent is one level up with an edge")
