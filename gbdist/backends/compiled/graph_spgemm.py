"""The unmasked (and complemented-mask) Gustavson SpGEMM of the compiled graph kernels: the
kernels of a semiring's generated module (:mod:`.graph_codegen` appends :data:`KERNELS`
to it: ``gb_mul``, ``gb_add`` and ``gb_load`` are the semiring's, ``WT`` its domain) and
their driver (:func:`gustavson`).

* ``spgemm_terms``: each row's ⊗ terms (its size bound), their total, the rows under a bound;
* ``spgemm_count``: the symbolic pass, distinct output columns per row (a stamp array),
  skipped when the terms are the row sizes (:func:`gustavson`: a diagonal or
  row-selecting A, a diagonal or column-scaling B);
* ``spgemm_fill``: numeric, a dense accumulator row and a bitmap of the row's columns per
  range (rows of at least n/64/:data:`BITMAP` columns read off the bitmap in column order,
  shorter ones sorted);
* ``spgemm_hash``: numeric, an open-addressing hash table per row (outputs far sparser
  than n).

Both numeric kernels take a row whose ⊗ terms (its upper bound ``ub[i]``) are at most
``small`` by the *small-row* form instead (ESC in registers: expand, sort, compress): the
terms are inserted in a local buffer kept sorted by column (an insertion that moves past
greater columns only, so equal columns keep the order of their terms), then each run of
equal columns is folded in that order and written. A road grid's or a mesh's rows have
a handful of terms: the table's probes and clearing, and a sort call per row (~0.3 µs of
set-up each, whatever the row's length) cost more than the row's work. Every value is the
one Gustavson gives (the same terms ⊕-ed in the same order: A's entries in column order,
each B row in column order), so the forms agree exactly. Rows of the other forms sort
their columns by insertion too when they hold at most :data:`INSERTION` of them.
"""
from __future__ import annotations

import numpy as np

INSERTION = 32
"""Rows of at most this many output columns are sorted by insertion (``gb_sort_row``)."""
BITMAP = 8
"""``spgemm_fill`` reads a row's columns off its bitmap, in order, when the row holds at
least (n/64)/BITMAP of them (the scan's n/64 words against a sort of the row), else sorts
them."""

KERNELS = '''

@njit(inline="always", **OPT)
def gb_sort_row(ci, lo, hi):
    """ci[lo:hi] sorted in place: by insertion when short (no call, no set-up), else
    NumPy's sort."""
    if hi - lo > %(insertion)d:
        ci[lo:hi].sort()
        return
    for p in range(lo + 1, hi):
        v = ci[p]
        h = p
        while h > lo and ci[h - 1] > v:
            ci[h] = ci[h - 1]
            h -= 1
        ci[h] = v


@njit(inline="always", **OPT)
def gb_small_row(ap, ai, ax, bp, bi, bx, mst, mmode, i, tj, tv, ci, cx, start):
    """Row i of C by ESC (the module's docstring): its terms inserted into (tj, tv) sorted
    by column, stably; each run of one column folded in term order and written at
    ci/cx[start:]. mmode 2: the columns with mst[j] == i are skipped."""
    c = 0
    for p in range(U(ap[i]), U(ap[i + 1])):
        k = U(ai[p])
        a = gb_load(ax[p])
        for q in range(U(bp[k]), U(bp[k + U(1)])):
            j = np.int64(bi[q])
            if mmode != 0 and mst[U(j)] == i:
                continue
            t = gb_mul(a, gb_load(bx[q]))
            h = c
            while h > 0 and tj[h - 1] > j:
                tj[h] = tj[h - 1]
                tv[h] = tv[h - 1]
                h -= 1
            tj[h] = j
            tv[h] = t
            c += 1
    o = start
    w = 0
    while w < c:
        j = tj[w]
        acc = tv[w]
        w += 1
        while w < c and tj[w] == j:
            acc = gb_add(acc, tv[w])
            w += 1
        ci[o] = j
        cx[o] = acc
        o += 1


@njit(**OPT)
def spgemm_terms(ap, ai, bp, bound, terms):
    """terms[i] = Σ over A(i,:)'s k of deg B(k,:) (Gustavson's ⊗ terms of row i, C's row
    size bound); returns their total, how many rows have fewer than ``bound`` and the
    longest row of A."""
    total = 0
    below = 0
    longest = 0
    for i in range(terms.shape[0]):
        t = 0
        longest = max(longest, ap[i + 1] - ap[i])
        for p in range(U(ap[i]), U(ap[i + 1])):
            k = U(ai[p])
            t += bp[k + U(1)] - bp[k]
        terms[i] = t
        total += t
        below += t < bound
    return total, below, longest


@njit(**OPT)
def columns_distinct(bi, n):
    """Whether no column holds two of B's entries (B's rows then never share a column)."""
    seen = np.zeros(n, np.bool_)
    for q in range(bi.shape[0]):
        j = U(bi[q])
        if seen[j]:
            return False
        seen[j] = True
    return True


@njit(**OPT)
def spgemm_count(ap, ai, bp, bi, mp, mi, mmode, n, r0, r1, rownnz):
    """Symbolic Gustavson: the number of distinct output columns of rows r0:r1
    (mmode 0: no mask; 2: skipping the mask's columns of the row)."""
    stamp = np.full(n, -1, np.int64)
    mst = np.full(n if mmode != 0 else 1, -1, np.int64)
    for i in range(r0, r1):
        if mmode != 0:
            for q in range(U(mp[i]), U(mp[i + 1])):
                mst[U(mi[q])] = i
        c = 0
        for p in range(U(ap[i]), U(ap[i + 1])):
            k = U(ai[p])
            if mmode == 0:  # branch-free: a new column or not is a coin toss per term
                for q in range(U(bp[k]), U(bp[k + U(1)])):
                    j = U(bi[q])
                    c += stamp[j] != i
                    stamp[j] = i
                continue
            for q in range(U(bp[k]), U(bp[k + U(1)])):
                j = U(bi[q])
                if stamp[j] != i and mst[j] != i:
                    stamp[j] = i
                    c += 1
        rownnz[i] = c


@njit(**OPT)
def spgemm_fill(ap, ai, ax, bp, bi, bx, mp, mi, mmode, n, cp, ci, cx, ub, small, r0, r1):
    """Numeric Gustavson into the preallocated CSR (cp from spgemm_count): a dense
    accumulator row and a bitmap of the row's columns (one bit a column: n/8 bytes, in
    the L1 cache where a stamp array of n int64 was not; every bit cleared again by the
    row that set it). A row's columns come out in order by one of two forms, chosen by its
    exact size c = cp[i+1] − cp[i]: rows of at least (n/64)/%(bitmap)d columns read the
    bitmap's words in order (n/64 words and c bit extractions, no sort); shorter rows
    write their columns as found and sort them. Rows of at most ``small`` terms (ub) by
    the small-row form."""
    nw = (n + 63) >> 6
    bits = np.zeros(max(nw, 1), np.uint64)
    acc = np.empty(n, WT)
    mst = np.full(n if mmode != 0 else 1, -1, np.int64)
    tj = np.empty(max(small, 1), np.int64)
    tv = np.empty(max(small, 1), WT)
    for i in range(r0, r1):
        if mmode != 0:
            for q in range(U(mp[i]), U(mp[i + 1])):
                mst[U(mi[q])] = i
        start = cp[i]
        if ub[i] <= small:
            gb_small_row(ap, ai, ax, bp, bi, bx, mst, mmode, i, tj, tv, ci, cx, start)
            continue
        # read off the bitmap (True) or sort the columns as written (False)
        scan = (cp[i + 1] - start) * %(bitmap)d >= nw
        c = 0
        for p in range(U(ap[i]), U(ap[i + 1])):
            k = U(ai[p])
            a = gb_load(ax[p])
            for q in range(U(bp[k]), U(bp[k + U(1)])):
                j = U(bi[q])
                if mmode != 0 and mst[j] == i:
                    continue
                t = gb_mul(a, gb_load(bx[q]))
                w = j >> U(6)
                b = U(1) << (j & U(63))
                if (bits[w] & b) == U(0):
                    bits[w] |= b
                    acc[j] = t
                    if not scan:
                        ci[start + c] = j
                        c += 1
                else:
                    acc[j] = gb_add(acc[j], t)
        if scan:
            q = start
            for w in range(nw):
                x = bits[w]
                if x == U(0):
                    continue
                bits[w] = U(0)
                base = U(w) << U(6)
                while x != U(0):
                    j = base | U(trailing_zeros(x))
                    ci[q] = j
                    cx[q] = acc[j]
                    q += 1
                    x &= x - U(1)
        else:
            gb_sort_row(ci, start, start + c)
            for q in range(start, start + c):
                j = U(ci[q])
                cx[q] = acc[j]
                bits[j >> U(6)] = U(0)


@njit(**OPT)
def spgemm_hash(ap, ai, ax, bp, bi, bx, cp, ci, cx, ub, small, r0, r1):
    """Numeric Gustavson with an open-addressing hash accumulator per row (table of the
    next power of two >= 2 x the row's upper bound ub[i]; for rows far sparser than n).
    The caller's cp comes from a symbolic pass; columns sorted per row. Rows of at most
    ``small`` terms by the small-row form."""
    big = 16
    for i in range(r0, r1):
        if ub[i] > big:
            big = ub[i]
    size = 1
    while size < 2 * big:
        size *= 2
    keys = np.full(size, -1, np.int64)
    vals = np.empty(size, WT)
    tj = np.empty(max(small, 1), np.int64)
    tv = np.empty(max(small, 1), WT)
    mst = np.empty(1, np.int64)
    for i in range(r0, r1):
        if ub[i] == 0:
            continue
        start = cp[i]
        if ub[i] <= small:
            gb_small_row(ap, ai, ax, bp, bi, bx, mst, 0, i, tj, tv, ci, cx, start)
            continue
        s = 1
        while s < 2 * ub[i]:
            s *= 2
        mask = s - 1
        c = 0
        for p in range(U(ap[i]), U(ap[i + 1])):
            k = U(ai[p])
            a = gb_load(ax[p])
            for q in range(U(bp[k]), U(bp[k + U(1)])):
                j = np.int64(bi[q])
                t = gb_mul(a, gb_load(bx[q]))
                h = (j * 0x9E3779B1) & mask
                while True:
                    kj = keys[h]
                    if kj == j:
                        vals[h] = gb_add(vals[h], t)
                        break
                    if kj == -1:
                        keys[h] = j
                        vals[h] = t
                        ci[start + c] = j
                        c += 1
                        break
                    h = (h + 1) & mask
        gb_sort_row(ci, start, start + c)
        for q in range(start, start + c):
            j = np.int64(ci[q])
            h = (j * 0x9E3779B1) & mask
            while keys[h] != j:
                h = (h + 1) & mask
            cx[q] = vals[h]
        for h in range(s):
            keys[h] = -1
''' % {"insertion": INSERTION, "bitmap": BITMAP}


def gustavson(mod, A, B, mask, knobs, ranges_of, run) -> tuple:
    """``(indptr, indices, values)`` of C = A ⊕.⊗ B (``mask``: the complemented mask's
    pattern, or None), values in the module's domain, indices int64 or B's type.
    ``knobs``: (hash_min_n, hash_ratio, small_row) of :mod:`.graph`. The row sizes are the
    terms themselves, with no symbolic pass, when no two terms of a row can meet in one
    column: every row of A holds at most one entry (a row-selecting or diagonal A), or no
    column of B holds two entries (a column-scaling, e.g. diagonal, B)."""
    hash_min_n, hash_ratio, small_row = knobs
    ap, ai, ax, (m, _) = A.indptr, A.indices, A.data, A.shape
    bp, bi, bx, (_, n) = B.indptr, B.indices, B.data, B.shape
    terms = np.empty(m, dtype=np.int64)  # ⊗ terms per row (Gustavson's work)
    # rows with terms below n / hash_ratio: the median row is when they are over half
    total, below, longest = mod.spgemm_terms(ap, ai, bp, np.int64(-(-n // hash_ratio)), terms)
    mp, mi = (mask.indptr, mask.indices) if mask is not None else (ap[:1], ai[:1])
    mmode = np.int64(2 if mask is not None else 0)
    n64 = np.int64(n)
    ranges = ranges_of(terms + 1, m, float(total) + m)
    cp = np.zeros(m + 1, dtype=np.int64)
    exact = mask is None and (longest <= 1 or bi.shape[0] <= n and mod.columns_distinct(bi, n64))
    if exact:
        np.cumsum(terms, out=cp[1:])
    else:
        rownnz = np.zeros(m, dtype=np.int64)
        run(mod.spgemm_count, (ap, ai, bp, bi, mp, mi, mmode, n64), ranges, (rownnz,))
        np.cumsum(rownnz, out=cp[1:])
    nnz = int(cp[-1])
    wide = nnz >= 2 ** 31 - 1 or np.int64 in (ai.dtype, bi.dtype)  # graph._index_dtype's
    ci = np.empty(nnz, dtype=np.int64 if wide else np.int32)
    cx = np.empty(nnz, dtype=mod.WT)
    small = np.int64(min(small_row, int(terms.max()) if m else 0))  # the buffers' length
    if mask is None and n > hash_min_n and nnz > 0 and 2 * below > m:
        run(mod.spgemm_hash, (ap, ai, ax, bp, bi, bx, cp, ci, cx, terms, small), ranges)
    else:
        run(mod.spgemm_fill, (ap, ai, ax, bp, bi, bx, mp, mi, mmode, n64, cp, ci, cx,
                              terms, small), ranges)
    return cp, ci, cx
