"""Shortest paths with the min-plus semiring on a small weighted graph.

min_plus = semiring(plus, min, annihilator=inf): structural (GraphBLAS)
semantics. Only stored entries (edges) take part, an explicitly stored 0 is an
edge of weight 0, and a pair with no path holds +inf.

(G ⊗ G)[i, j] = min_k G[i, k] + G[k, j] is the cheapest two-hop path; squaring
a matrix that also stores 0 on its diagonal doubles the path length covered,
so log2(n) squarings give all shortest paths.

Run:  python examples/min_plus_paths.py
"""
import numpy as np
import scipy.sparse as sps

import gbdist as gb

names = ["home", "bakery", "park", "school", "library", "station"]
edges = [  # (from, to, minutes)
    ("home", "bakery", 4), ("bakery", "park", 0),  # the bakery opens onto the park
    ("park", "school", 3), ("home", "school", 9), ("school", "library", 2),
    ("library", "station", 5), ("park", "station", 11), ("station", "home", 7),
]
idx = {n: i for i, n in enumerate(names)}
n = len(names)
rows = [idx[a] for a, _, _ in edges] + list(range(n))
cols = [idx[b] for _, b, _ in edges] + list(range(n))
mins = [float(w) for _, _, w in edges] + [0.0] * n  # stored 0 on the diagonal: staying put
G = sps.csr_matrix((mins, (rows, cols)), shape=(n, n))
print(f"{G.nnz} stored entries, {int((G.data == 0).sum())} of them explicit zeros")

two_hop = gb.mxm(G, G, gb.semirings.min_plus)
print("home -> park in at most two hops:", two_hop[idx["home"], idx["park"]], "minutes")

D = G
steps = 0
while 2 ** steps < n:
    dist = gb.mxm(D, D, gb.semirings.min_plus)  # dense: +inf where there is no path
    r, c = np.nonzero(np.isfinite(dist))  # store the finite entries, zeros included
    D = sps.csr_matrix((dist[r, c], (r, c)), shape=(n, n))
    steps += 1

print(f"all shortest paths after {steps} squarings:")
print("          " + " ".join(f"{m[:7]:>7}" for m in names))
for i, m in enumerate(names):
    print(f"{m[:9]:>9} " + " ".join(f"{v:7.0f}" for v in dist[i]))

# Check against Floyd–Warshall on the same edges.
F = np.full((n, n), np.inf)
np.fill_diagonal(F, 0.0)
for a, b, w in edges:
    F[idx[a], idx[b]] = min(F[idx[a], idx[b]], w)
for k in range(n):
    F = np.minimum(F, F[:, [k]] + F[[k], :])
assert np.array_equal(dist, F)
print("home -> station:", dist[idx["home"], idx["station"]], "minutes")
print("OK: matches Floyd-Warshall")
