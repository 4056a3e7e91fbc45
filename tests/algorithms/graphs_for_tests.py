"""Small random graphs with the awkward cases: isolated vertices, self loops, explicit
0-weight edges and several disconnected parts."""
from __future__ import annotations

import networkx as nx
import numpy as np
import scipy.sparse as sps


def random_graph(seed, n=40, p=0.08, *, directed=False, self_loops=3, zeros=4, isolated=3,
                 weights=(1, 5)):
    """(CSR adjacency, networkx graph): two random parts plus ``isolated`` lone vertices.

    Edge weights are integers in ``weights`` stored as float64; ``zeros`` edges carry an
    explicitly stored 0; ``self_loops`` vertices have an edge to themselves."""
    rng = np.random.default_rng(seed)
    half = (n - isolated) // 2
    parts = [np.arange(half), np.arange(half, n - isolated)]  # no edges between the parts
    rows, cols = [], []
    for part in parts:
        m = len(part)
        keep = rng.random((m, m)) < p
        if not directed:
            keep = np.triu(keep, 1)
        np.fill_diagonal(keep, False)
        r, c = np.nonzero(keep)
        rows.append(part[r])
        cols.append(part[c])
    r, c = np.concatenate(rows), np.concatenate(cols)
    loops = rng.choice(n - isolated, size=self_loops, replace=False)
    r, c = np.concatenate([r, loops]), np.concatenate([c, loops])
    w = rng.integers(weights[0], weights[1], size=r.size).astype(np.float64)
    if zeros:
        w[rng.choice(r.size, size=zeros, replace=False)] = 0.0
    if not directed:
        off = r != c
        r, c, w = np.concatenate([r, c[off]]), np.concatenate([c, r[off]]), \
            np.concatenate([w, w[off]])
    A = sps.csr_matrix((w, (r, c)), shape=(n, n))
    A.sort_indices()
    assert A.nnz == r.size  # no duplicates; the stored zeros are kept
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(range(n))
    G.add_weighted_edges_from(zip(r.tolist(), c.tolist(), w.tolist()))
    return A, G


def shuffled(A, seed):
    """The same graph with its vertices renumbered (so the lone vertices sit anywhere);
    stored zeros stay stored."""
    q = np.random.default_rng(seed).permutation(A.shape[0])
    C = A.tocoo()
    B = sps.csr_matrix((C.data, (q[C.row], q[C.col])), shape=A.shape)
    B.sort_indices()
    assert B.nnz == A.nnz
    return B
