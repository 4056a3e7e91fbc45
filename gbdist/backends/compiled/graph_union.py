"""eWiseUnion's merges, compiled with Numba (imported lazily): the row-wise merge of two
canonical CSR matrices (:func:`gbdist.graph.union.ewise_union` and ``ewise_add`` on
matrices), the row-wise intersection (:func:`intersect`: ``ewise_mult``), and the merge
of two sorted key arrays with the op applied in the same pass (vectors, and operands under
a mask or ``out=``).

Per row, the two sorted column lists are merged as two sorted lists: :func:`_counts` counts
the union's entries and the shared ones of each row (one pass); :func:`_fill` writes the
union's columns and values at the row pointers the counts give: an entry only A stores
takes ``xa`` (``op(a, right_default)``, computed by the caller), one only B stores ``xb``
(``op(left_default, b)``); for an entry both store it records where it lands and the two
operands' positions (the caller writes ``op(a, b)`` there: any op, through the reference's
vectorised ops). Rows are split into ranges of about equal entries on the backend's thread
pool. The NumPy form is :func:`gbdist.backends.graph_fast.union_merge` (the reference and
CUDA kernel sets).

The key merge (:func:`merge_keys`) is a kernel appended to the op's generated module
(:mod:`.graph_codegen`: the op printed as ``gb_mul`` in the result's domain, operand values
cast with ``gb_load``): one pass writes the union's keys and every value,
``op(a, right_default)``, ``op(left_default, b)`` or ``op(a, b)``, chosen without a branch
on the keys' order (a merge of random interleavings mispredicts about every other branch:
the branching form took 3x as long). From :data:`PARALLEL_KEYS` keys, ranges cut at
quantiles of the longer array run on the pool. The NumPy form is :func:`gbdist.backends.graph_reference.union_values`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..graph_reference import cast

_OPT = dict(cache=True, nogil=True)


@njit(**_OPT)
def _shared(ai, p, pe, bi, q, qe):
    """How many columns the sorted runs ai[p:pe] and bi[q:qe] share (a merge)."""
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
    return s


@njit(**_OPT)
def _counts(ap, ai, bp, bi, cnt, shc, r0, r1):
    for i in range(r0, r1):
        s = _shared(ai, ap[i], ap[i + 1], bi, bp[i], bp[i + 1])
        cnt[i + 1] = (ap[i + 1] - ap[i]) + (bp[i + 1] - bp[i]) - s
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


@njit(**_OPT)
def _shared_counts(ap, ai, bp, bi, cnt, r0, r1):
    """cnt[i + 1]: the columns rows i of A and B share (a merge of the two sorted rows)."""
    for i in range(r0, r1):
        cnt[i + 1] = _shared(ai, ap[i], ap[i + 1], bi, bp[i], bp[i + 1])


@njit(**_OPT)
def _shared_fill(ap, ai, bp, bi, cp, ci, pa, pb, r0, r1):
    """The shared columns of rows r0:r1 at cp[i] with their A and B positions (ci, pa or
    pb of length 0: not written; C has no entry or the caller has them)."""
    wc, wa, wb = ci.shape[0] > 0, pa.shape[0] > 0, pb.shape[0] > 0
    for i in range(r0, r1):
        p, pe, q, qe = ap[i], ap[i + 1], bp[i], bp[i + 1]
        k = cp[i]
        while p < pe and q < qe:
            a, b = ai[p], bi[q]
            if a < b:
                p += 1
            elif b < a:
                q += 1
            else:
                if wc:
                    ci[k] = a
                if wa:
                    pa[k] = p
                if wb:
                    pb[k] = q
                k += 1
                p += 1
                q += 1


def intersect(ap, ai, bp, bi, itype, ranges, run) -> tuple:
    """``(indptr, indices, a_pos, b_pos)`` of the entries two canonical CSR matrices of one
    shape both store (:meth:`gbdist.backends.base.GraphKernels.intersect_merge`): a
    counting pass, then the fill. When every entry of A is shared (the counts' total is
    A's), C's pattern is A's: no positions of A are written (``a_pos`` None) and its
    columns are A's, copied; the same for B; both: no fill pass at all."""
    m = ap.shape[0] - 1
    cnt = np.empty(m + 1, dtype=np.int64)
    cnt[0] = 0
    run(_shared_counts, (ap, ai, bp, bi, cnt), ranges)
    np.cumsum(cnt, out=cnt)
    nnz = int(cnt[-1])
    a_all, b_all = nnz == ai.shape[0], nnz == bi.shape[0]
    none = np.empty(0, dtype=np.int64)
    pa = none if a_all else np.empty(nnz, dtype=np.int64)
    pb = none if b_all else np.empty(nnz, dtype=np.int64)
    if a_all or b_all:
        ci = (ai if a_all else bi).astype(itype, copy=True)
    else:
        ci = np.empty(nnz, dtype=itype)
    if not (a_all and b_all):
        run(_shared_fill, (ap, ai, bp, bi, cnt, ci[:0] if a_all or b_all else ci, pa, pb),
            ranges)
    return (cnt.astype(itype, copy=False), ci, None if a_all else pa,
            None if b_all else pb)


@njit(**_OPT)
def _count_keys(ka, kb, ap, bp, got, c0, c1):
    """Per chunk c (A's keys ``ap[c]:ap[c+1]``, B's ``bp[c]:bp[c+1]``): the entries of the
    union of its keys (branch-free)."""
    for c in range(c0, c1):
        p, pe, q, qe = ap[c], ap[c + 1], bp[c], bp[c + 1]
        s = 0
        while p < pe and q < qe:
            a, b = ka[p], kb[q]
            s += a == b
            p += a <= b
            q += b <= a
        got[c] = (pe - ap[c]) + (qe - bp[c]) - s


# Appended to the op's generated module (:mod:`.graph_codegen`: ``gb_mul`` is the op,
# ``gb_load`` the cast into its domain ``WT``).
_UNION_KERNEL = '''

@njit(**OPT)
def union_keys(ka, kb, va, vb, ld, rd, ap, bp, ko, ck, cx, got, c0, c1):
    """Chunk c of eWiseUnion's key merge (A's keys ap[c]:ap[c+1], B's bp[c]:bp[c+1], each
    below the next chunk's) written from ko[c]; got[c]: its entries. The three values
    op(a, rd), op(ld, b), op(a, b) are computed at every step and one is kept (a select,
    no branch on the keys' order)."""
    for c in range(c0, c1):
        p, pe, q, qe = ap[c], ap[c + 1], bp[c], bp[c + 1]
        k = ko[c]
        while p < pe and q < qe:
            a = ka[p]
            b = kb[q]
            x = gb_load(va[p])
            y = gb_load(vb[q])
            only_a = gb_mul(x, rd)
            only_b = gb_mul(ld, y)
            both = gb_mul(x, y)
            one = only_a if a < b else only_b
            cx[k] = both if a == b else one
            ck[k] = min(a, b)
            p += a <= b
            q += b <= a
            k += 1
        while p < pe:
            ck[k] = ka[p]
            cx[k] = gb_mul(gb_load(va[p]), rd)
            p += 1
            k += 1
        while q < qe:
            ck[k] = kb[q]
            cx[k] = gb_mul(ld, gb_load(vb[q]))
            q += 1
            k += 1
        got[c] = k - ko[c]
'''
_MODULES: dict = {}

PARALLEL_KEYS = 1 << 26
"""Keys (both operands) from which the key merge runs in ranges on the pool. Measured on
the 2 shared cores (2026-11-28, two half-full vectors, minus, float64): one pass took 4.3,
21.5 and 66.6 ms at 10⁶, 4·10⁶ and 10⁷ keys, two threads over eight ranges 8.5, 33.8 and
107.6 ms (the counting pass costs about what the merge does, and the two threads fault
in the output's pages together): below this the merge is one pass on the calling
thread."""


def _module(op, work: str):
    """The op's generated module with :data:`_UNION_KERNEL` (by the op's id, checked by
    identity; compiled once per (op, domain), cached on disk)."""
    hit = _MODULES.get((id(op), work))
    if hit is None or hit[0] is not op:
        from .cache import load
        from .graph_codegen import generate
        hit = _MODULES[(id(op), work)] = (op, load(generate(op.formula, op.formula, work)
                                                   + _UNION_KERNEL))
    return hit[1]


def merge_keys(ka, kb, va, vb, op, defaults, out_dtype, threads: int, run) -> tuple:
    """``(keys, values)`` of eWiseUnion over two sorted unique int64 key arrays with their
    values (:meth:`gbdist.backends.base.GraphKernels.union_keys`; ``defaults``: left and
    right, cast to ``out_dtype`` as the reference casts), in key ranges cut at quantiles of
    the longer array, four per thread on the pool (one for ``threads`` = 1). One range: one
    pass into room for every key, the arrays then cut to length in place; several: a
    counting pass first, each range then written at its place."""
    chunks = 4 * threads if threads > 1 else 1
    dt = np.dtype(out_dtype)
    mod = _module(op, dt.name)
    ld, rd = (cast(np.asarray(d), dt, np)[()] for d in defaults)
    na, nb = int(ka.shape[0]), int(kb.shape[0])
    longer = ka if na >= nb else kb
    cuts = longer[np.linspace(0, longer.shape[0], chunks + 1)[1:-1].astype(np.int64)] \
        if chunks > 1 and longer.shape[0] else np.empty(0, dtype=np.int64)
    ap = np.concatenate(([0], np.searchsorted(ka, cuts), [na])).astype(np.int64)
    bp = np.concatenate(([0], np.searchsorted(kb, cuts), [nb])).astype(np.int64)
    nc = ap.shape[0] - 1
    ranges = [(c, c + 1) for c in range(nc)]
    got = np.zeros(nc, dtype=np.int64)
    if nc > 1:
        run(_count_keys, (ka, kb, ap, bp, got), ranges)
        size = int(got.sum())
        ko = np.cumsum(got) - got
    else:
        size, ko = na + nb, np.zeros(1, dtype=np.int64)  # room for every key; cut after
    ck = np.empty(size, dtype=np.int64)
    cx = np.empty(size, dtype=dt)
    run(mod.union_keys, (ka, kb, va, vb, ld, rd, ap, bp, ko, ck, cx, got), ranges)
    if nc == 1:
        k = int(got[0])
        ck.resize(k, refcheck=False)  # realloc: shrinks in place
        cx.resize(k, refcheck=False)
    return ck, cx
