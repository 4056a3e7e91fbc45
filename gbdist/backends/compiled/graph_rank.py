"""The lower triangle of an undirected graph under a vertex ranking, compiled with Numba
(imported lazily): triangle counting's L (:func:`gbdist.algorithms.triangles.lower`).

Vertex j ranks below i with no ranking when j < i; by increasing degree when
(deg j, j) < (deg i, i); by decreasing degree when deg j > deg i, or the degrees tie and
j < i. :func:`counts` is one pass over the entries that counts, per row, the entries kept
under each of the three (the planner rule picks the ordering from them);
:func:`fill` writes the kept entries of one, each row's in A's (sorted) order, at the row
pointers the counts give. Rows are split into ranges of about equal entries on the
backend's thread pool. The NumPy form is :mod:`gbdist.backends.graph_fast`'s
``rank_lower_counts`` / ``rank_lower_fill`` (the reference and CUDA kernel sets).
"""
from __future__ import annotations

import numpy as np
from numba import njit

_OPT = dict(cache=True, nogil=True)


@njit(**_OPT)
def _counts(ap, ai, deg, cnt, only_none, r0, r1):
    for i in range(r0, r1):
        if only_none:  # no ranking: the row's columns below i, a prefix of the sorted row
            p, pe = ap[i], ap[i + 1]
            while p < pe and ai[p] < i:  # no degree loads, stops at the diagonal
                p += 1
            cnt[0, i] = p - ap[i]
            continue
        di = deg[i]
        a = 0
        b = 0
        c = 0
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            dj = deg[j]
            if j < i:
                a += 1
                if dj <= di:
                    b += 1
                if dj >= di:
                    c += 1
            elif j > i:
                if dj < di:
                    b += 1
                if dj > di:
                    c += 1
        cnt[0, i] = a
        cnt[1, i] = b
        cnt[2, i] = c


@njit(**_OPT)
def _fill(ap, ai, ax, deg, mode, lp, lc, lx, with_values, r0, r1):
    for i in range(r0, r1):
        q = lp[i]
        if mode == 0:  # no ranking: the row's prefix below i (sorted rows), copied
            p0 = ap[i]
            for t in range(lp[i + 1] - q):
                lc[q + t] = ai[p0 + t]
                if with_values:
                    lx[q + t] = ax[p0 + t]
            continue
        di = deg[i]
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            dj = deg[j]
            if mode == 0:
                keep = j < i
            elif mode == 1:
                keep = dj < di or (dj == di and j < i)
            else:
                keep = dj > di or (dj == di and j < i)
            if keep:
                lc[q] = j
                if with_values:
                    lx[q] = ax[p]
                q += 1


def counts(indptr, indices, deg, only_none, ranges, run) -> np.ndarray:
    """(3, m) in ``deg``'s type: per row, the entries ranked below it with no ranking, by
    increasing and by decreasing degree (``only_none``: the first row only, the others
    zero)."""
    cnt = (np.zeros if only_none else np.empty)((3, indptr.shape[0] - 1), dtype=deg.dtype)
    run(_counts, (indptr, indices, deg, cnt, bool(only_none)), ranges)
    return cnt


def fill(indptr, indices, data, deg, mode: int, lp, with_values: bool, ranges, run,
         index_dtype=None):
    """(columns, values or None) of the kept entries under ordering ``mode`` (0 none,
    1 increasing, 2 decreasing), at the row pointers ``lp``; the columns in ``index_dtype``
    (default: ``indices``')."""
    nnz = int(lp[-1])
    lc = np.empty(nnz, dtype=indices.dtype if index_dtype is None else index_dtype)
    lx = np.empty(nnz if with_values else 0, dtype=data.dtype)
    run(_fill, (indptr, indices, data, deg, np.int64(mode), lp, lc, lx, bool(with_values)),
        ranges)
    return lc, (lx if with_values else None)
