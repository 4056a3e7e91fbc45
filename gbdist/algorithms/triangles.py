"""Triangles and k-trusses: masked products over ``plus_pair``.

``plus_pair`` has ⊗ = pair (1 for every pair of stored entries, whatever their values) and
⊕ = plus, so ``(A ⊕.⊗ B)(i, j)`` *counts* the k with A(i, k) and B(k, j) both stored.

**Triangles** (Sandia's L·Lᵀ). Let L be the strictly lower triangle of the undirected
adjacency (``select(A, "tril", -1)``: one copy of each edge, self loops gone). Then

    C<L> = L ⊕.⊗ Lᵀ        C(i, j) = #{k : L(i, k), L(j, k)}  for each edge j < i
    C<L> = L ⊕.⊗ L         C(i, j) = #{k : L(i, k), L(k, j)}  (j < k < i: no transpose)

counts, for the edge (i, j), the common neighbours k < j < i: every triangle once, at its two
largest vertices. The mask ``L`` (structural) is the point: only entries on edges are
computed, never the n × n two-hop matrix. The count is ``reduce_scalar(C, plus)``.

"Lower" may be taken under any ranking of the vertices: keep (i, j) when rank(j) < rank(i).
The count is the same, the work is not: on a skewed (power-law) graph ranking by degree
bounds the rows (or columns) a hub contributes. :func:`choose_order` (the planner rule) picks
no ranking on graphs with even degrees, else increasing or decreasing degree by the cost of
the cheaper masked-product form (dot or Gustavson, the kernels' own choice) counted from L's
row and column counts (on the GPU: the cheaper form's products plus a weight of L's rows
squared, :func:`device_costs`); :func:`lower` builds L by comparing ranks on the entries, without
renumbering the graph. :func:`choose_product` picks L·Lᵀ or L·L (no transpose to build) from
the same counts.

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
from gbdist.graph import sparse as gs

from ._common import as_matrix, plus_pair, require_undirected


METHODS = ("auto", "mxm", "intersect")


def choose_method(K, form: str = "L.LT") -> str:
    """The planner rule for the count: ``"intersect"`` (the kernel set's ``count_triangles``:
    the sum without forming the product) on the compiled CPU set when the product's form
    is L·L (:func:`choose_product`), whose terms its kernel walks (Sandia's LL, each row's
    L entries marked, no output, no mask cost pass, no compaction: on the 1000 × 1000
    road grid 43 ms against the masked product's 70 ms, 1 thread, 2026-11-28); else
    ``"mxm"`` (the masked product, then its sum): where L·Lᵀ is cheaper (power-law graphs)
    the masked product's own form choice wins, and the CUDA set's ``count_triangles`` (a
    merge per edge) is taken only when asked: on one H200 (2026-11-27, power-law graphs of
    3.2·10⁷ and 3.2·10⁸ entries) it took 43 and 177 ms where the masked product took 18
    and 84 ms."""
    return "intersect" if form == "L.L" and getattr(K, "name", "") == "compiled" else "mxm"
    # (under the index order, "none", triangle_count's compiled count reads L in A itself:
    # L(c,:) is the prefix of the sorted row A(c,:) below c, so no L is built)


def triangle_count(A, *, order: str = "auto", method: str = "auto",
                   backend: str = "auto") -> int:
    """Number of triangles of an undirected graph (self loops and values ignored), as
    ``sum(networkx.triangles(G).values()) // 3``. A directed input is an InputError.
    ``order``: the vertex ranking L is taken under (``"auto"``: :func:`choose_order`;
    ``"none"``, ``"increasing"``, ``"decreasing"`` degree): the count is the same, the work
    is not. ``method``: ``"mxm"`` (the masked product, then its sum) or ``"intersect"``
    (the kernel set's count of the same sum without the product; a set without it: a
    BackendError); ``"auto"``: :func:`choose_method`."""
    if method not in METHODS:
        raise gb.ParameterError("unknown triangle-count method",
                                expected=" | ".join(map(repr, METHODS)), got=repr(method))
    M = as_matrix(A)
    _check_order(order)
    require_undirected(M, "triangle_count", backend)
    K = gr.get_kernels(backend, M.on_device, work=M.nvals)
    if method == "intersect" and not callable(getattr(K, "count_triangles", None)):
        raise gb.BackendError("method='intersect' needs a kernel set with count_triangles",
                              got=f"the {K.name!r} kernels",
                              hint="host data with Numba (the compiled kernels), device data "
                                   "(the CUDA kernels), or method='auto'")
    if (method == "auto" and not M.on_device and K.name == "compiled"
            and (order == "none" or order == "auto" and not _skewed(M.xp.diff(M.csr.indptr), M.xp, total=M.nvals))):
        return int(K.count_triangles(M.csr, below=True))  # the index order: L read in A
    # L as the kernels wrote it (a Matrix of it only for the product: no copy for the count)
    Lcsr, sums = _lower_csr(M, order, backend, False)
    L, nvals = None, int(Lcsr.indices.shape[0])
    if not nvals:
        return 0
    if sums is not None:  # the device rule's sums for this ordering: _form's, without a read
        form = _form_of(sums[0], sums[1], nvals, True)
    else:
        form = _form(M.xp.diff(M.csr.indptr), M.xp.diff(Lcsr.indptr), nvals, M.on_device)
    if method == "auto":
        method = choose_method(K, form)
    if method == "intersect":
        return int(K.count_triangles(Lcsr))
    L = L if L is not None else gb.Matrix(Lcsr)
    # int64 counts whatever A's dtype (plus over a bool A would stay bool)
    B = L.T if form == "L.LT" else L
    C = gr.mxm(L, B, plus_pair, mask=L.S, dtype=np.int64, backend=backend)
    return int(gr.reduce_scalar(C, gb.ops.plus, dtype=np.int64, backend=backend))


# Rank by degree only when the degrees are this skewed (max / mean): else "none".
PRESORT_SKEW = 8.0
ORDERS = ("auto", "none", "increasing", "decreasing")
# A dot-form merge step against a Gustavson term (the kernels' own weighting,
# gbdist.backends.compiled.graph.DOT_WEIGHT, measured there).
DOT_WEIGHT = 3.0


def masked_cost(deg, below) -> float:
    """The cheaper of the two forms of C<L> = L ⊕.⊗ Lᵀ from L's row counts ``below`` (the
    vertex's lower-ranked neighbours) and column counts ``deg - below``: Gustavson (saxpy)
    walks Σ col² terms, the dot form Σ over L's entries (i, j) of row(i) + row(j)
    (weighted by :data:`DOT_WEIGHT`)."""
    below = below.astype(np.float64)
    above = deg - below
    return min(float((above * above).sum()),
               DOT_WEIGHT * float((below * below).sum() + (above * below).sum()))


# Building Lᵀ costs about this many Gustavson terms per entry of L (a CSR transpose); on
# the device the transpose is a sort of the entries' int64 keys (gbdist.graph.sparse).
TRANSPOSE_COST = 8.0
DEVICE_TRANSPOSE_COST = 32.0


def choose_product(M, L) -> str:
    """The planner rule for the product: ``"L.LT"`` (C<L> = L·Lᵀ, Sandia's LUT: Gustavson
    walks Σ col² terms, after building Lᵀ) or ``"L.L"`` (C<L> = L·L, Sandia's LL: every
    triangle a < b < c once, at (c, a) through b; Σ col·row terms and no transpose), by
    those counts from L's row counts (row = lower-ranked neighbours, col = the rest)."""
    return _form(M.xp.diff(M.csr.indptr), M.xp.diff(L.csr.indptr), L.nvals, M.on_device)


def _form(deg, row, nvals: int, on_device: bool) -> str:
    """:func:`choose_product` from the degrees and L's row counts (integer arrays: the sums
    in int64, no float copies)."""
    col = deg.astype(np.int64) - row
    return _form_of(float(col.dot(row.astype(np.int64, copy=False))), float(col.dot(col)), nvals,
                    on_device)


def _form_of(colrow: float, col2: float, nvals: int, on_device: bool) -> str:
    """L·Lᵀ where Σ col² plus building Lᵀ (a transpose cost a stored entry) is below L·L's
    Σ col·row, else L·L."""
    cost = DEVICE_TRANSPOSE_COST if on_device else TRANSPOSE_COST
    return "L.LT" if col2 + cost * nvals < colrow else "L.L"


def _skewed(deg, xp=np, total=None) -> bool:
    """max(deg) > PRESORT_SKEW · max(mean(deg), 1), the max and the sum read at once
    (``total``: the degrees' sum where the caller knows it, a CSR's stored entries: then
    only the max is reduced and read)."""
    if not deg.size:
        return False
    if total is None:
        got = xp.stack([deg.max().astype(np.int64), deg.sum(dtype=np.int64)])
        top, total = (int(v) for v in (got.get() if hasattr(got, "get") else got))
    else:
        top = int(deg.max())
    return top > PRESORT_SKEW * max(total / deg.size, 1.0)


def choose_order(deg, below, *, on_device: bool = False, xp=np) -> str:
    """The planner rule for the ordering: ``"none"`` when the degrees are not skewed
    (max <= PRESORT_SKEW · mean: a grid, a mesh); else the degree ordering whose L has the
    smaller cost: :func:`masked_cost` on the host, :func:`device_costs` on the device.
    ``below``: {order: L's row counts under it}; ``xp``: their array module."""
    if not _skewed(deg, xp):
        return "none"
    if on_device:
        costs = device_costs(deg, below, xp)
        return min(costs, key=costs.get)
    d = deg.astype(np.float64)
    return min(("increasing", "decreasing"), key=lambda o: masked_cost(d, below[o]))


# The masked product's time on the GPU grows with its products and, beyond them, with
# Σ row² of L (each row's mask is its table: long rows take the large, slow tables and
# unbalance the bins). Fitted on one H200 (2026-11-28 (g), power-law graphs of 3.2·10⁶ to
# 3.2·10⁸ entries): under decreasing and increasing degree L·L has the same products (one
# ordering's L is the other's transpose) but took 4.5 against 8.5 ms and 46 against 73 ms;
# the weight between the two fits was 0.2-0.37 of a product.
DEVICE_ROW_WEIGHT = 0.3


def device_sums(deg, below, xp=np) -> dict:
    """{ordering: (Σ col·row, Σ col², Σ row², Σ row)} of L under each ordering of ``below``
    (L's row counts; ``col = deg - row``), integers read from the device (``xp``: CuPy) at
    once."""
    orders = tuple(below)
    d = deg.astype(np.int64)
    sums = []
    for o in orders:
        row = below[o].astype(np.int64)
        col = d - row
        sums += [col.dot(row), col.dot(col), row.dot(row), row.sum()]
    got = xp.stack(sums)
    got = [int(v) for v in (got.get() if hasattr(got, "get") else got)]
    return {o: tuple(got[4 * i:4 * i + 4]) for i, o in enumerate(orders)}


def device_cost(colrow: int, col2: int, row2: int, nvals: int) -> float:
    """The masked product's cost on the GPU from :func:`device_sums`: the cheaper form's
    products (L·L: Σ col·row; L·Lᵀ: Σ col² plus :data:`DEVICE_TRANSPOSE_COST` a stored
    entry, for building Lᵀ) plus :data:`DEVICE_ROW_WEIGHT` · Σ row²."""
    return min(colrow, col2 + DEVICE_TRANSPOSE_COST * nvals) + DEVICE_ROW_WEIGHT * row2


def device_costs(deg, below, xp=np) -> dict:
    """{ordering: :func:`device_cost`} (one read of the sums)."""
    return {o: device_cost(*v) for o, v in device_sums(deg, below, xp).items()}


MODES = {"none": 0, "increasing": 1, "decreasing": 2}  # the kernels' ordering codes


def lower(M, order: str = "auto", backend: str = "auto", *, values: bool = True):
    """L: one copy of each edge of the undirected M, (i, j) kept when j ranks below i in
    the ordering (self loops dropped). No relabelling: ranks are compared on the entries in
    place — by degree, ties by index — so L keeps M's numbering and sorted rows. The kernel
    set's ``rank_lower_counts`` counts each row's kept entries under all three orderings in
    one pass over the entries (the counts :func:`choose_order` reads; renumbering the graph
    first, ``extract(A, p, p)``, cost as much as the product itself), and
    ``rank_lower_fill`` writes the chosen one's at the row pointers those counts give.
    Every triangle {a, b, c} ranked a < b < c is counted once, at (c, b) through a.
    ``values=False``: L holds True (bool) instead of M's values (a pattern for
    ``plus_pair``: 1/8 the memory)."""
    _check_order(order)
    return gb.Matrix(_lower_csr(M, order, backend, values)[0])


def _check_order(order: str) -> None:
    if order not in ORDERS:
        raise gb.ParameterError("unknown vertex order", expected=" | ".join(map(repr, ORDERS)),
                                got=repr(order))


def _lower_csr(M, order: str, backend: str, values: bool):
    """(:func:`lower`'s CSR as the kernels wrote it (SciPy on the host, cupyx on the device:
    host and device data take this one path, the CUDA set's kernels a warp a row), the
    chosen ordering's :func:`device_sums` where the device rule read them, else None)."""
    xp, csr, n = M.xp, M.csr, M.nrows
    deg = xp.diff(csr.indptr).astype(np.int32 if M.nvals < 2**31 - 1 else np.int64)  # counts too
    K = gr.get_kernels(backend, M.on_device, work=M.nvals)
    if order == "auto" and not _skewed(deg, xp, total=M.nvals):
        order = "none"  # even degrees (a grid, a mesh): no ranking, no degree compared
    counts = K.rank_lower_counts(csr, deg, only_none=order == "none")
    sums = None
    if order == "auto":
        below = {o: counts[MODES[o]] for o in ("increasing", "decreasing")}
        if M.on_device:  # choose_order's device rule, its sums kept for the product's form
            fused = getattr(K, "rank_lower_sums", None)  # one launch, where the set has it
            every = fused(deg, counts) if callable(fused) else device_sums(deg, below, xp)
            order = min(every, key=lambda o: device_cost(*every[o]))
            sums = every[order]
        else:
            order = choose_order(deg, below)
    # L's entries: known from the rule's sums (Σ row), so neither the fill nor the index type
    # reads them; the row pointers are built in L's index type (no copy after)
    nnz = None if sums is None else int(sums[3])
    it = gs.index_dtype(n, M.ncols, M.nvals if nnz is None else nnz) if M.on_device else np.int64
    lp = xp.zeros(n + 1, dtype=it)
    lp[1:] = xp.cumsum(counts[MODES[order]], dtype=it)
    cols, data = K.rank_lower_fill(csr, deg, MODES[order], lp, with_values=values, nnz=nnz)
    if not values:
        data = xp.ones(cols.shape[0], dtype=bool)
    if M.on_device:  # cupyx's index type where it fits (the device kernels read int32 L)
        L = gs.make_csr(data, cols.astype(it, copy=False), lp, M.shape, True, valid=True)
    else:
        L = sps.csr_matrix((data, cols, lp), shape=M.shape)
    L.has_canonical_format = True  # kept entries of sorted unique rows: no check needed
    return L, sums


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
    require_undirected(M, "ktruss", backend)
    C = gr.select(M, "offdiag", backend=backend)
    while True:
        nvals = C.nvals
        S = gr.mxm(C, C, plus_pair, mask=C.S, dtype=np.int64, backend=backend)
        C = gr.select(S, ">=", k - 2, backend=backend)
        if C.nvals == nvals:
            return C
