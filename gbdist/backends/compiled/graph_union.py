"""eWiseUnion's merge, compiled with Numba (imported lazily): the row-wise merge of two
canonical CSR matrices (:func:`gbdist.graph.union.ewise_union` on matrices).

Per row, the two sorted column lists are merged as two sorted lists: :func:`_counts` counts
the union's entries and the shared ones of each row (one pass); :func:`_fill` writes the
union's columns and values at the row pointers the counts give: an entry only A stores
takes ``xa`` (``op(a, right_default)``, computed by the caller), one only B stores ``xb``
(``op(left_default, b)``); for an entry both store it records where it lands and the two
operands' positions (the caller writes ``op(a, b)`` there: any op, through the reference's
vectorised ops). Rows are split into ranges of about equal entries on the backend's thread
pool. The NumPy form is :func:`gbdist.backends.graph_fast.union_merge` (the reference and
CUDA kernel sets).
"""
from __future__ import annotations

import numpy as np
from numba import njit

_OPT = dict(cache=True, nogil=True)


@njit(**_OPT)
def _counts(ap, ai, bp, bi, cnt, shc, r0, r1):
    for i in range(r0, r1):
        p, pe, q, qe = ap[i], ap[i + 1], bp[i], bp[i + 1]
        s = 0
        while p < pe and q < qe:
            a, b = ai[p], bi[q]
            if a < b:
                p += 1
            elif b < a:
                q += 1
            else:
                s += 1
                p += 1
                q += 1
        cnt[i + 1] = (ap[i + 1] - ap[i]) + (qe - bp[i]) - s
        shc[i + 1] = s


@njit(**_OPT)
def _fill(ap, ai, bp, bi, xa, xb, cp, ci, cx, shp, sk, sa, sb, r0, r1):
    for i in range(r0, r1):
        p, pe, q, qe = ap[i], ap[i + 1], bp[i], bp[i + 1]
        k = cp[i]
        s = shp[i]
        while p < pe and q < qe:
            a, b = ai[p], bi[q]
            if a < b:
                ci[k] = a
                cx[k] = xa[p]
                p += 1
            elif b < a:
                ci[k] = b
                cx[k] = xb[q]
                q += 1
            else:
                ci[k] = a
                sk[s] = k
                sa[s] = p
                sb[s] = q
                s += 1
                p += 1
                q += 1
            k += 1
        while p < pe:
            ci[k] = ai[p]
            cx[k] = xa[p]
            p += 1
            k += 1
        while q < qe:
            ci[k] = bi[q]
            cx[k] = xb[q]
            q += 1
            k += 1


def merge(ap, ai, bp, bi, xa, xb, itype, ranges, run) -> tuple:
    """``(indptr, indices, values, at, a_pos, b_pos)`` of the union of two canonical CSR
    matrices of one shape (:meth:`gbdist.backends.base.GraphKernels.union_merge`)."""
    m = ap.shape[0] - 1
    cnt = np.empty(m + 1, dtype=np.int64)
    shc = np.empty(m + 1, dtype=np.int64)
    cnt[0] = shc[0] = 0
    run(_counts, (ap, ai, bp, bi, cnt, shc), ranges)
    np.cumsum(cnt, out=cnt)
    np.cumsum(shc, out=shc)
    nnz, ns = int(cnt[-1]), int(shc[-1])
    ci = np.empty(nnz, dtype=itype)
    cx = np.empty(nnz, dtype=xa.dtype)
    sk, sa, sb = (np.empty(ns, dtype=np.int64) for _ in range(3))
    run(_fill, (ap, ai, bp, bi, xa, xb, cnt, ci, cx, shc, sk, sa, sb), ranges)
    return cnt.astype(itype, copy=False), ci, cx, sk, sa, sb
