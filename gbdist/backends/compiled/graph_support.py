"""Edge support: C⟨A⟩ = A plus.pair A on an undirected graph, from its triangles.

On a symmetric A without self loops, C(i, j) = #{k : A(i, k), A(k, j)} for an edge (i, j) is
the number of triangles through that edge (ktruss's support; jaccard's and cosine's shared
neighbours). The masked product (:mod:`.graph_masked`, even as its symmetric half) walks
about Σ deg² / 2 ⊗ terms: on R-MAT scale 20 (largest degree 64,701) 3.5·10¹⁰. Here every
triangle is found once, by triangle counting's own walk (Sandia's LL,
:func:`.graph_algorithms.ll_walk`, given the array to add into): L holds one copy of each
edge under a vertex ranking (no ranking, increasing or decreasing degree:
:mod:`.graph_rank`, the one whose walk is cheapest), and for each stored (c, b) of L the row
L(b, :) is walked against the marked row L(c, :); each a found is the triangle a < b < c,
which adds one to its three edges (c, b), (c, a), (b, a) — L's positions p, m, q. The walk
costs Σ over L's (c, b) of |L(b, :)| (on a skewed graph ranked by degree, far below Σ deg²).

The edge (b, a) lies in row b, which another thread may own: each thread adds into its own
count array (one uint16 per entry of L; int32 past degree 65,535), summed after. Then each
entry (i, j) of A reads its count from L's (i, j) when j ranks below i (the k-th such entry
of row i is L's k-th of the row: L keeps A's order) or from L's (j, i) by bisection, and the
entries with a count are written out: C's pattern is A's less the edges on no triangle, as
the masked product's.
:func:`plan` says whether this form is taken (the compiled kernels' ``spgemm``, for a product
:func:`.graph_masked.half_product` found symmetric, over plus_pair).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .graph_algorithms import ll_walk
from .graph_helpers import gb_lower_bound
from .graph_rank import counts as rank_counts
from .graph_rank import fill as rank_fill

_OPT = dict(cache=True, nogil=True)

# The support form is taken when its walk plus this many steps per entry of A (the ranking
# passes, L's fill, the two output passes with their bisections) costs less than the
# masked product's half (min of Gustavson's terms and the dot form's weighted steps, / 2).
PER_ENTRY = 8.0
# L's ranking: "auto" (the cheapest walk by L's row counts) or 0, 1, 2 forced (tests).
ORDER = "auto"


@njit(**_OPT)
def has_diagonal(ap, ai) -> bool:
    """Whether any row i stores (i, i) (sorted rows: one bisection a row)."""
    for i in range(ap.shape[0] - 1):
        q = gb_lower_bound(ai, ap[i], ap[i + 1], i)
        if q < ap[i + 1] and ai[q] == i:
            return True
    return False


@njit(**_OPT)
def _walk_cost(lp, lj, out):
    """Per row c of L: Σ over L(c, :)'s b of |L(b, :)| + 1 (the walk's work), into ``out``;
    the total returned."""
    total = 0
    for c in range(lp.shape[0] - 1):
        t = 1
        for p in range(lp[c], lp[c + 1]):
            b = lj[p]
            t += lp[b + 1] - lp[b]
        out[c] = t
        total += t
    return total


@njit(inline="always")
def _ranks_below(i, j, di, dj, mode):
    """Whether j ranks below i (:mod:`.graph_rank`'s orderings: 0 index, 1 increasing, 2
    decreasing degree; ties by index)."""
    if mode == 0:
        return j < i
    if mode == 1:
        return dj < di or (dj == di and j < i)
    return dj > di or (dj == di and j < i)


@njit(inline="always")
def _count_at(ai, lp, lj, s, deg, mode, i, p, k):
    """(count of A's entry p = (i, j), L's next position in row i)."""
    j = ai[p]
    if _ranks_below(i, j, deg[i], deg[j], mode):
        return s[k], k + 1
    q = gb_lower_bound(lj, lp[j], lp[j + 1], i)  # (j, i) in L's row j (symmetric: stored)
    return s[q], k


@njit(**_OPT)
def _row_counts(ap, ai, deg, mode, lp, lj, s, cnt, r0, r1):
    """Per row of A: its entries with a nonzero count (into ``cnt[i + 1]``)."""
    for i in range(r0, r1):
        k = lp[i]
        c = 0
        for p in range(ap[i], ap[i + 1]):
            v, k = _count_at(ai, lp, lj, s, deg, mode, i, p, k)
            if v != 0:
                c += 1
        cnt[i + 1] = c


@njit(**_OPT)
def _fill_rows(ap, ai, deg, mode, lp, lj, s, cp, ci, cx, r0, r1):
    """Rows r0..r1 of C: A's entries with a nonzero count and that count, at ``cp``."""
    for i in range(r0, r1):
        k = lp[i]
        o = cp[i]
        for p in range(ap[i], ap[i + 1]):
            v, k = _count_at(ai, lp, lj, s, deg, mode, i, p, k)
            if v != 0:
                ci[o] = ai[p]
                cx[o] = v
                o += 1


def plan(ap, ai, m: int, half_cost: float, ranges, run):
    """(mode, degrees, L's row pointers, L's columns) when the support form applies (no self
    loop) and is cheaper than the masked product's half (``half_cost``), else None. A: the
    canonical CSR of a symmetric pattern, ``m`` rows; ``ranges(work, rows, total)`` splits
    rows by work, ``run`` runs a kernel over them."""
    nnz = int(ap[m])
    if not nnz or half_cost <= PER_ENTRY * nnz or has_diagonal(ap, ai):
        return None
    deg = np.diff(ap).astype(np.int32 if nnz < 2**31 - 1 else np.int64)
    rr = ranges(deg, m, float(nnz) + m)
    below = rank_counts(ap, ai, deg, False, rr, run)  # (3, m): L's row counts per mode
    d = deg.astype(np.int64)
    cost = [float(((d - r) * r.astype(np.int64)).sum()) for r in below]  # Σ col · row
    mode = int(np.argmin(cost)) if ORDER == "auto" else int(ORDER)
    if cost[mode] + PER_ENTRY * nnz >= half_cost:
        return None
    nl = int(below[mode].sum(dtype=np.int64))
    lp = np.zeros(m + 1, dtype=np.int32 if nl < 2**31 - 1 else np.int64)
    np.cumsum(below[mode], dtype=lp.dtype, out=lp[1:])
    del below
    # L's columns in int32 where they fit (the benchmark's A has int64 indices: half of L)
    lj, _ = rank_fill(ap, ai, ai, deg, mode, lp, False, rr, run,
                      np.int32 if m < 2**31 - 1 else ai.dtype)
    return mode, deg, lp, lj


def support(ap, ai, m: int, planned, work, itype, ranges, nnz_ranges, run, pool, threads):
    """(indptr, indices, values) of C⟨A⟩ = A plus.pair A for :func:`plan`'s ``planned``.
    ``ranges(work, rows, total)`` splits the walk, ``nnz_ranges(indptr, rows)`` the output
    passes; ``run`` runs a kernel over row ranges; ``pool(t)`` / ``threads()`` the pool the
    walk's per-thread count arrays run on."""
    mode, deg, lp, lj = planned
    nl = int(lp[m])
    rw = np.empty(m, dtype=np.int64)
    total = _walk_cost(lp, lj, rw)
    rr = ranges(rw, m, float(total))
    del rw
    # an edge's count is below both its vertices' degrees: uint16 where the largest degree
    # fits (half the memory; on the power law of docs/benchmarks.md L and the counts are
    # more than the output itself)
    s = np.zeros(nl, dtype=np.uint16 if int(deg.max(initial=0)) <= 0xFFFF else np.int32)
    if len(rr) == 1:
        ll_walk(lp, lj, s, np.int64(rr[0][0]), np.int64(rr[0][1]))
    else:  # each thread its own counts: (b, a) lies in a row another thread may own
        _walk_private(lp, lj, s, rr, pool, threads())
    out_rr = nnz_ranges(ap, m)
    cp = np.zeros(m + 1, dtype=itype)
    run(_row_counts, (ap, ai, deg, np.int64(mode), lp, lj, s, cp), out_rr)
    np.cumsum(cp, out=cp)
    nc = int(cp[m])
    ci = np.empty(nc, dtype=itype)
    cx = np.empty(nc, dtype=work)
    run(_fill_rows, (ap, ai, deg, np.int64(mode), lp, lj, s, cp, ci, cx), out_rr)
    return cp, ci, cx


def _walk_private(lp, lj, s, rr, pool, t: int) -> None:
    """:func:`.graph_algorithms.ll_walk` over the ranges ``rr`` on ``t`` threads (the caller
    one of them), each adding into its own array (the caller into ``s``), the others added
    to ``s`` after."""
    import threading
    todo = iter(rr)
    lock = threading.Lock()

    def worker(acc):
        while True:
            with lock:
                r = next(todo, None)
            if r is None:
                return acc
            ll_walk(lp, lj, acc, np.int64(r[0]), np.int64(r[1]))

    k = min(t, len(rr)) - 1
    futures = [pool(t).submit(worker, np.zeros_like(s)) for _ in range(k)]
    worker(s)
    for f in futures:
        np.add(s, f.result(), out=s)
