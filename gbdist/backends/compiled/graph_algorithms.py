"""Whole-algorithm CPU kernels (issue 30), Numba: connected components by union-find, the
algorithm the CUDA set runs (``gbdist/backends/cuda/graph_algorithms.py``) on one thread.

Every vertex keeps a parent no larger than itself; each stored entry (v, u) joins the trees
of v and u, the larger root hooked under the smaller, finds halving the path. The root of
each tree is then the smallest vertex of its component: the label FastSV gives. One pass
over the entries (about one find each) where FastSV's rounds each cost several products,
merges and copies (docs/graph.md, "Whole-algorithm kernels").
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _find(parent, v):
    p = parent[v]
    while p != v:
        g = parent[p]
        parent[v] = g  # path halving
        v = g
        p = parent[v]
    return v


@njit(cache=True, nogil=True)
def _union_find(indptr, indices, n, half, label):
    parent = np.empty(n, dtype=np.int64)
    for v in range(n):
        parent[v] = v
        if indptr[v + 1] > indptr[v] and indices[indptr[v]] < v:
            parent[v] = indices[indptr[v]]  # the smallest neighbour, when smaller than v
    for v in range(n):
        r = _find(parent, v)
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if half and u >= v:
                break  # sorted rows: the rest lie above the diagonal
            ru = _find(parent, u)
            if ru < r:
                parent[r] = ru
                r = ru
            elif ru > r:
                parent[ru] = r
    for v in range(n):
        label[v] = _find(parent, v)


def components(A, *, half: bool) -> np.ndarray:
    """Component labels (int64, the smallest vertex of each component) of the graph of the
    canonical CSR ``A``'s stored entries, directions ignored; ``half``: A is symmetric."""
    n = int(A.shape[0])
    label = np.empty(n, dtype=np.int64)
    if n:
        _union_find(np.asarray(A.indptr), np.asarray(A.indices), n, bool(half), label)
    return label


@njit(cache=True, nogil=True)
def ll_walk(lp, lj, s, r0, r1):
    """Rows r0..r1 of Sandia's LL: each triangle a < b < c (L's ranking) found once, at row
    c through b. ``s`` None: their number returned (Σ over L's stored (c, b) of
    |L(c,:) ∩ L(b,:)|); ``s`` an array of L's size: each adds 1 to ``s`` at its three
    edges' positions in L, (c, b), (c, a), (b, a) (:mod:`.graph_support`), and 0 is
    returned. Numba compiles the two forms apart, the test on ``s`` pruned away. Row c's
    entries are marked by their positions (``pos[j]``, valid only when it points into the
    row at j: never initialised, so no n-wide fill and only touched pages are mapped)."""
    pos = np.empty(lp.shape[0] - 1, lp.dtype)
    total = 0
    for c in range(r0, r1):
        lo, hi = lp[c], lp[c + 1]
        if hi - lo < 2:  # a triangle at row c needs two lower-ranked neighbours
            continue
        for q in range(lo, hi):
            pos[lj[q]] = q
        for p in range(lo, hi):
            b = lj[p]
            for q in range(lp[b], lp[b + 1]):
                a = lj[q]
                m = pos[a]
                if m >= lo and m < hi and lj[m] == a:
                    if s is None:
                        total += 1
                    else:
                        s[p] += 1
                        s[m] += 1
                        s[q] += 1
    return total


def _triangles(lp, lj, starts, totals, r0, r1):
    """:func:`ll_walk`'s count of rows r0..r1, into the range's slot of ``totals``."""
    totals[np.searchsorted(starts, r0)] = ll_walk(lp, lj, None, r0, r1)


@njit(cache=True, nogil=True)
def _triangles_below(ap, ai, starts, totals, r0, r1):
    """:func:`ll_walk`'s count on the symmetric A itself under the index order, whose L(c,:)
    is the prefix of the sorted row A(c,:) below c (found while it is marked): no L is built.
    Each triangle a < b < c once, at row c through b (a's place in the row is before b's)."""
    pos = np.empty(ap.shape[0] - 1, np.int64)
    total = 0
    for c in range(r0, r1):
        lo = hi = ap[c]
        pe = ap[c + 1]
        while hi < pe and ai[hi] < c:
            pos[ai[hi]] = hi
            hi += 1
        for p in range(lo + 1, hi):
            b = ai[p]
            for q in range(ap[b], ap[b + 1]):
                a = ai[q]
                if a >= b:
                    break
                m = pos[a]
                if m >= lo and m < p and ai[m] == a:
                    total += 1
    totals[np.searchsorted(starts, r0)] = total  # the range's slot


def count_triangles(L, ranges, run, *, below: bool = False) -> int:
    """The triangles of the undirected graph whose one-direction L (canonical CSR, one copy
    of each edge under a ranking: :func:`gbdist.algorithms.triangles.lower`) is given, by
    :func:`ll_walk` over row ranges on the pool; ``below``: ``L`` is the symmetric A,
    counted under the index order by :func:`_triangles_below` (no L built)."""
    lp = np.asarray(L.indptr)
    starts = np.array([r0 for r0, _ in ranges], dtype=np.int64)  # sorted: one slot a range
    totals = np.zeros(starts.shape[0], dtype=np.int64)
    if lp.shape[0] > 1 and L.nnz:
        run(_triangles_below if below else _triangles,
            (lp, np.asarray(L.indices), starts, totals), ranges)
    return int(totals.sum())
