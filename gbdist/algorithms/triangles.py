"""Triangles and k-trusses: masked products over ``plus_pair``.

``plus_pair`` has ⊗ = pair (1 for every pair of stored entries, whatever their values) and
⊕ = plus, so ``(A ⊕.⊗ B)(i, j)`` *counts* the k with A(i, k) and B(k, j) both stored.

**Triangles** (Sandia's L·Lᵀ). Let L be the strictly lower triangle of the undirected
adjacency (``select(A, "tril", -1)``: one copy of each edge, self loops gone). Then

    C<L> = L ⊕.⊗ Lᵀ        C(i, j) = #{k : L(i, k), L(j, k)}  for each edge j < i

counts, for the edge (i, j), the common neighbours k < j < i: every triangle once, at its two
largest vertices. The mask ``L`` (structural) is the point: only entries on edges are
computed, never the n × n two-hop matrix. The count is ``reduce_scalar(C, plus)``. On a
skewed (power-law) graph the vertices are first renumbered by increasing degree
(``extract(A, order, order)``; on the host the coordinates renamed through ``to_coo`` /
``Matrix.from_coo``, which is cheaper): the count is the same, the work much smaller.

**k-truss**: the largest subgraph where every edge lies on at least k - 2 triangles *of the
subgraph*. Start from the edges C (self loops removed) and repeat

    S<C> = C ⊕.⊗ C            support of each edge: its triangles within C
    C = select(S, ">=", k-2)   drop the edges with too little support

until no edge is dropped.
"""
from __future__ import annotations

import numpy as np

import gbdist as gb
from gbdist import graph as gr

from ._common import as_matrix, plus_pair, require_undirected


def triangle_count(A, *, backend: str = "auto") -> int:
    """Number of triangles of an undirected graph (self loops and values ignored), as
    ``sum(networkx.triangles(G).values()) // 3``. A directed input is an InputError."""
    M = as_matrix(A)
    require_undirected(M, "triangle_count")
    M = _by_degree(M, backend)
    L = gr.select(M, "tril", -1, backend=backend)
    if not L.nvals:
        return 0
    # int64 counts whatever A's dtype (plus over a bool A would stay bool)
    C = gr.mxm(L, L.T, plus_pair, mask=L.S, dtype=np.int64, backend=backend)
    return int(gr.reduce_scalar(C, gb.ops.plus, dtype=np.int64, backend=backend))


# Relabel the vertices by increasing degree when the degrees are this skewed (max / mean).
PRESORT_SKEW = 8.0


def _by_degree(M, backend):
    """The same graph with its vertices renumbered by increasing degree, when the degree
    distribution is skewed.

    The count does not depend on the numbering, but the work does: after the relabelling a
    hub has the largest id, so in L = tril(A) its row holds its neighbours while its
    *column* — the part a masked L·Lᵀ walks over again and again — is short (only the few
    vertices of even higher degree). On power-law graphs this is the difference between
    work ~ Σ deg² and work ~ Σ min(deg)² (measured on 1.1e7 power-law edges: the masked
    product 5 s instead of 44 s)."""
    indptr = M.csr.indptr
    deg = np.diff(indptr.get() if hasattr(indptr, "get") else np.asarray(indptr))
    if deg.size == 0 or deg.max() <= PRESORT_SKEW * max(deg.mean(), 1.0) \
            or (deg[:-1] <= deg[1:]).all():  # not skewed, or numbered that way already
        return M
    order = np.argsort(deg, kind="stable")
    if M.on_device:
        return gr.extract(M, order, order, backend=backend)
    # on the host, renaming the coordinates is cheaper than the general extract
    # (measured 0.29 s against 0.69 s at 10^6 edges); the same matrix either way
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    r, c, v = M.to_coo()
    return gb.Matrix.from_coo(rank[r], rank[c], v, M.shape, dtype=M.dtype)


def ktruss(A, k: int, *, backend: str = "auto"):
    """The k-truss of an undirected graph as a :class:`gbdist.Matrix`: its pattern holds both
    directions of every edge of the truss, its values the edge's support (triangles within
    the truss). ``k >= 3``; the 3-truss is every edge on a triangle. Self loops are ignored.
    Same edges as ``networkx.k_truss(G, k)``."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 3:
        raise gb.ParameterError("k must be an integer >= 3",
                                expected="k >= 3 (the 2-truss would be the graph itself)",
                                got=repr(k))
    M = as_matrix(A)
    require_undirected(M, "ktruss")
    C = gr.select(M, "offdiag", backend=backend)
    while True:
        nvals = C.nvals
        S = gr.mxm(C, C, plus_pair, mask=C.S, dtype=np.int64, backend=backend)
        C = gr.select(S, ">=", k - 2, backend=backend)
        if C.nvals == nvals:
            return C
