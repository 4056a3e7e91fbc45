"""eWiseUnion's pattern, compiled with Numba (imported lazily): the row-wise merge of two
canonical CSR patterns (:func:`gbdist.graph.union.ewise_union` on matrices).

Per row, the two sorted column lists are merged as two sorted lists: :func:`_counts` counts
the union's entries of each row (one pass), :func:`_fill` writes the union's columns at the
row pointers the counts give, with where each operand's entries land in it and, for each
entry of B, the position of the same (i, j) in A (-1 when A does not store it). The values
are the caller's (``op`` through the reference's vectorised ops, any op). Rows are split
into ranges of about equal entries on the backend's thread pool. The NumPy form is
:func:`gbdist.backends.graph_fast.union_pattern` (the reference and CUDA kernel sets).
"""
from __future__ import annotations

import numpy as np
from numba import njit

_OPT = dict(cache=True, nogil=True)


@njit(**_OPT)
def _counts(ap, ai, bp, bi, cnt, r0, r1):
    for i in range(r0, r1):
        p, pe, q, qe = ap[i], ap[i + 1], bp[i], bp[i + 1]
        c = 0
        while p < pe and q < qe:
            a, b = ai[p], bi[q]
            if a <= b:
                p += 1
            if b <= a:
                q += 1
            c += 1
        cnt[i + 1] = c + (pe - p) + (qe - q)


@njit(**_OPT)
def _fill(ap, ai, bp, bi, cp, ci, oa, ob, bina, r0, r1):
    for i in range(r0, r1):
        p, pe, q, qe = ap[i], ap[i + 1], bp[i], bp[i + 1]
        k = cp[i]
        while p < pe and q < qe:
            a, b = ai[p], bi[q]
            if a < b:
                ci[k] = a
                oa[p] = k
                p += 1
            elif b < a:
                ci[k] = b
                ob[q] = k
                bina[q] = -1
                q += 1
            else:
                ci[k] = a
                oa[p] = k
                ob[q] = k
                bina[q] = p
                p += 1
                q += 1
            k += 1
        while p < pe:
            ci[k] = ai[p]
            oa[p] = k
            p += 1
            k += 1
        while q < qe:
            ci[k] = bi[q]
            ob[q] = k
            bina[q] = -1
            q += 1
            k += 1


def pattern(ap, ai, bp, bi, itype, ranges, run) -> tuple:
    """``(indptr, indices, out_a, out_b, b_in_a)`` of the union of two canonical CSR
    patterns of one shape (:meth:`gbdist.backends.base.GraphKernels.union_pattern`)."""
    m = ap.shape[0] - 1
    cnt = np.empty(m + 1, dtype=np.int64)
    cnt[0] = 0
    run(_counts, (ap, ai, bp, bi, cnt), ranges)
    np.cumsum(cnt, out=cnt)
    nnz = int(cnt[-1])
    ci = np.empty(nnz, dtype=itype)
    oa = np.empty(ai.shape[0], dtype=np.int64)
    ob = np.empty(bi.shape[0], dtype=np.int64)
    bina = np.empty(bi.shape[0], dtype=np.int64)
    run(_fill, (ap, ai, bp, bi, cnt, ci, oa, ob, bina), ranges)
    return cnt.astype(itype, copy=False), ci, oa, ob, bina
