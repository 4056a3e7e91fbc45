"""Triangles and k-trusses: masked products over ``plus_pair``.

``plus_pair`` has ⊗ = pair (1 for every pair of stored entries, whatever their values) and
⊕ = plus, so ``(A ⊕.⊗ B)(i, j)`` *counts* the k with A(i, k) and B(k, j) both stored.

**Triangles** (Sandia's L·Lᵀ). Let L be the strictly lower triangle of the undirected
adjacency (``select(A, "tril", -1)``: one copy of each edge, self loops gone). Then

    C<L> = L ⊕.⊗ Lᵀ        C(i, j) = #{k : L(i, k), L(j, k)}  for each edge j < i

counts, for the edge (i, j), the common neighbours k < j < i: every triangle once, at its two
largest vertices. The mask ``L`` (structural) is the point: only entries on edges are
computed, never the n × n two-hop matrix. The count is ``reduce_scalar(C, plus)``.

"Lower" may be taken under any ranking of the vertices: keep (i, j) when rank(j) < rank(i).
The count is the same, the work is not: on a skewed (power-law) graph ranking by degree
bounds the rows (or columns) a hub contributes. :func:`choose_order` (the planner rule) picks
no ranking on graphs with even degrees, else increasing or decreasing degree by the cost of
the cheaper masked-product form (dot or Gustavson, the kernels' own choice) counted from L's
row and column counts; :func:`lower` builds L by comparing ranks on the entries, without
renumbering the graph.

**k-truss**: the largest subgraph where every edge lies on at least k - 2 triangles *of the
subgraph*. Start from the edges C (self loops removed) and repeat

    S<C> = C ⊕.⊗ C            support of each edge: its triangles within C
    C = select(S, ">=", k-2)   drop the edges with too little support

until no edge is dropped.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr

from ._common import as_matrix, plus_pair, require_undirected


def triangle_count(A, *, order: str = "auto", backend: str = "auto") -> int:
    """Number of triangles of an undirected graph (self loops and values ignored), as
    ``sum(networkx.triangles(G).values()) // 3``. A directed input is an InputError.
    ``order``: the vertex ranking L is taken under (``"auto"``: :func:`choose_order`;
    ``"none"``, ``"increasing"``, ``"decreasing"`` degree): the count is the same, the work
    is not."""
    M = as_matrix(A)
    require_undirected(M, "triangle_count")
    L = lower(M, order, backend)
    if not L.nvals:
        return 0
    # int64 counts whatever A's dtype (plus over a bool A would stay bool)
    C = gr.mxm(L, L.T, plus_pair, mask=L.S, dtype=np.int64, backend=backend)
    return int(gr.reduce_scalar(C, gb.ops.plus, dtype=np.int64, backend=backend))


# Rank by degree only when the degrees are this skewed (max / mean): else "none".
PRESORT_SKEW = 8.0
ORDERS = ("auto", "none", "increasing", "decreasing")


def _ranks(deg, order):
    """rank[v]: v's position in the ordering (None: the identity)."""
    if order == "none":
        return None
    key = deg if order == "increasing" else -deg
    by = np.argsort(key, kind="stable")
    rank = np.empty_like(by)
    rank[by] = np.arange(by.size)
    return rank


def masked_cost(deg, below) -> float:
    """The cheaper of the two forms of C<L> = L ⊕.⊗ Lᵀ from L's row counts ``below`` (the
    vertex's lower-ranked neighbours) and column counts ``deg - below``: Gustavson (saxpy)
    walks Σ col² terms, the dot form Σ over L's entries (i, j) of row(i) + row(j)."""
    below = below.astype(np.float64)
    above = deg - below
    return min(float((above * above).sum()), float((below * below).sum() + (above * below).sum()))


def choose_order(deg, rows, cols) -> str:
    """The planner rule for the ordering: ``"none"`` when the degrees are not skewed
    (max <= PRESORT_SKEW · mean: a grid, a mesh); else the degree ordering (increasing or
    decreasing) whose L has the smaller :func:`masked_cost`, each counted from L's row
    counts in one pass over the entries (``rows``, ``cols``: the coordinates)."""
    if deg.size == 0 or deg.max() <= PRESORT_SKEW * max(deg.mean(), 1.0):
        return "none"
    best, cost = "increasing", np.inf
    for order in ("increasing", "decreasing"):
        rank = _ranks(deg, order)
        below = np.bincount(rows[rank[cols] < rank[rows]], minlength=deg.size)
        c = masked_cost(deg.astype(np.float64), below)
        if c < cost:
            best, cost = order, c
    return best


def lower(M, order: str = "auto", backend: str = "auto"):
    """L: one copy of each edge of the undirected M, (i, j) kept when j ranks below i in
    the ordering (self loops dropped). No relabelling: the ranks are compared on the
    entries in place, so L keeps M's numbering and sorted rows, built in one pass (the
    renumbered graph, ``extract(A, order, order)``, cost as much as the product itself).
    Every triangle {a, b, c} ranked a < b < c is counted once, at (c, b) through a."""
    if order not in ORDERS:
        raise gb.ParameterError("unknown vertex order", expected=" | ".join(map(repr, ORDERS)),
                                got=repr(order))
    if M.on_device:  # the device path: the index ordering (tril)
        return gr.select(M, "tril", -1, backend=backend)
    csr = M.csr
    n = M.nrows
    deg = np.diff(csr.indptr).astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=csr.indices.dtype), deg)
    cols = csr.indices
    if order == "auto":
        order = choose_order(deg, rows, cols)
    rank = _ranks(deg, order)
    keep = cols < rows if rank is None else rank[cols] < rank[rows]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
    S = sps.csr_matrix((csr.data[keep], cols[keep], indptr), shape=M.shape)
    S.has_sorted_indices = True
    return gb.Matrix(S)


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
