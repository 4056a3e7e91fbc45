"""Jaccard and cosine similarity of adjacent vertices: one masked ``plus_pair`` product.

For every edge (i, j) the shared neighbours are counted by

    C<A> = A ⊕.⊗ Aᵀ   over plus_pair     C(i, j) = |N(i) ∩ N(j)|

masked by the edges themselves (structural mask ``A.S``): the two-hop pairs that are not
edges are never computed. On an undirected graph the pattern matrix stands for its own
transpose (its values are all 1), so no transpose is built. With the degrees ``d = reduce_rows(pattern, plus)``, the edge
values d(i) and d(j) come from products with the diagonal matrix D = diag(d) (``D·P`` scales
rows, ``P·D`` scales columns, P the pattern with value 1), and

    jaccard(i, j) = |N(i) ∩ N(j)| / (d(i) + d(j) - |N(i) ∩ N(j)|)
    cosine(i, j)  = |N(i) ∩ N(j)| / sqrt(d(i) · d(j))

are ``ewise`` operations on matrices with the same pattern (the edges). Edges with no shared
neighbour have no entry in C; an ``ewise_add`` with the all-zero edge matrix puts the 0 back.
Neighbourhoods are out-neighbourhoods (row i of A); values are ignored (a stored 0 is an
edge); a self loop makes a vertex its own neighbour (networkx's ``jaccard_coefficient``
counts it in the union but leaves u and v out of the intersection: the two agree on graphs
without self loops).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr

from ._common import as_matrix, host, pattern_is_symmetric, plus_pair, plus_times


def _shared_and_degrees(A, backend):
    M = as_matrix(A)
    n = M.nrows
    undirected = pattern_is_symmetric(M, backend)  # kept on M: checked once per matrix
    # the pattern with value 1 on each edge (P) and with value 0 (Z), whatever A's dtype; P
    # carries M's known symmetry (an apply keeps the pattern), so the masked product below
    # takes its symmetric half without checking P again (gr.Matrix.known_symmetry)
    P = gr.apply(gb.ops.second, M, right=1.0, dtype=np.float64, backend=backend)
    Z = gr.apply(gb.ops.second, M, right=0.0, dtype=np.float64, backend=backend)
    # Pᵀ is P itself (every value 1) when the graph is undirected: no transpose built
    PT = P if undirected else P.T
    shared = gr.mxm(P, PT, plus_pair, mask=P.S, dtype=np.float64, backend=backend)
    shared = gr.ewise_add(shared, Z, gb.ops.plus, backend=backend)  # 0 where none shared
    d = gr.reduce_rows(P, gb.ops.plus, backend=backend)  # absent: no out-edge
    # every degree, 0 where absent: from d's own form (full or bitmap: no keys made)
    deg = host(d.to_dense(fill=0)).astype(np.float64, copy=False)
    # D stores every degree, 0 too (an edge into a vertex without out-edges keeps d(j)):
    # the diagonal's CSR written directly (row i holds (i, d(i)))
    every = np.arange(n + 1, dtype=np.int64 if n >= 2 ** 31 - 1 else np.int32)
    diag = sps.csr_matrix((deg, every[:n], every), shape=(n, n))
    diag.has_canonical_format = True  # sorted, no duplicates: known, not checked
    D = gb.Matrix(diag)
    if getattr(M, "on_device", False):
        D = D.to_device()
    d_row = gr.mxm(D, P, plus_times, backend=backend)   # d(i) on edge (i, j)
    d_col = gr.mxm(P, D, plus_times, backend=backend)   # d(j) on edge (i, j)
    return shared, d_row, d_col


def jaccard(A, *, backend: str = "auto"):
    """Jaccard similarity |N(i) ∩ N(j)| / |N(i) ∪ N(j)| on every edge (i, j), as a
    :class:`gbdist.Matrix` with A's pattern (float64). For an undirected graph the values
    are ``networkx.jaccard_coefficient(G, G.edges)``."""
    shared, d_row, d_col = _shared_and_degrees(A, backend)
    union = gr.ewise_mult(gr.ewise_mult(d_row, d_col, gb.ops.plus, backend=backend), shared,
                          gb.ops.minus, backend=backend)
    return gr.ewise_mult(shared, union, gb.ops.div, backend=backend)


def cosine(A, *, backend: str = "auto"):
    """Cosine similarity |N(i) ∩ N(j)| / sqrt(|N(i)| |N(j)|) of the (binary) neighbourhood
    vectors on every edge (i, j), as a :class:`gbdist.Matrix` with A's pattern (float64);
    0 on an edge into a vertex with no out-edge (an empty neighbourhood)."""
    shared, d_row, d_col = _shared_and_degrees(A, backend)
    norm = gr.apply(gb.ops.sqrt, gr.ewise_mult(d_row, d_col, gb.ops.times, backend=backend),
                    backend=backend)
    # d(i) >= 1 on an edge (i, j); d(j) = 0 only when j has no out-edge, and then nothing is
    # shared: max(norm, 1) changes no other value and makes that 0/0 a 0
    norm = gr.apply(gb.ops.max, norm, right=1.0, backend=backend)
    return gr.ewise_mult(shared, norm, gb.ops.div, backend=backend)


__all__ = ["jaccard", "cosine"]
