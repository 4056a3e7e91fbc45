"""The reference graph kernels (:class:`ReferenceGraphKernels`): NumPy, structural semantics,
simple and obviously right; the values, casts and folds they use are
:mod:`gbdist.backends.graph_reference`'s (see its docstring for the semantics)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from .graph_fast import (intersect_merge, owners, pattern_symmetric, rank_lower_counts,
                         rank_lower_fill, union_merge)
from .graph_reference import binary, fold_segments, identity_value, union_values


def _expand_rows(indptr, rows, xp=np):
    """Positions of the stored entries of ``rows`` (in order) and, per position, which
    element of ``rows`` it came from."""
    indptr = xp.asarray(indptr)
    rows = xp.asarray(rows, dtype=np.int64)
    starts = indptr[rows].astype(np.int64)
    lens = (indptr[rows + 1] - indptr[rows]).astype(np.int64)
    total = int(lens.sum()) if lens.size else 0
    owner = owners(lens, xp)
    if total == 0:
        return xp.zeros(0, dtype=np.int64), owner
    first = xp.cumsum(lens) - lens
    pos = xp.arange(total, dtype=np.int64) - first[owner] + starts[owner]
    return pos, owner


def spmspv_update(A, u_idx, u_val, sr, d, p, only_new, out_dtype, xp=np):
    """:meth:`GraphKernels.spmspv_update` in array operations on ``xp`` (NumPy or CuPy):
    the terms of the frontier's rows, folded per output column in k order, then merged
    into the state (d, p). Work ~ the frontier's stored entries (sorts of that size)."""
    pos, owner = _expand_rows(A.indptr, u_idx, xp)
    j = A.indices[pos].astype(np.int64)
    if only_new:
        keep = p[j] == 0
        pos, owner, j = pos[keep], owner[keep], j[keep]
    if j.size == 0:
        return xp.zeros(0, dtype=np.int64), d[:0].copy()
    prod = binary(sr.mul, xp.asarray(u_val)[owner], A.data[pos], out_dtype, xp)
    order = xp.argsort(j, kind="stable")  # within a column, terms in k order
    cols, seg = xp.unique(j[order], return_inverse=True)
    folded, _ = fold_segments(sr.add.op, seg.ravel(), prod[order], int(cols.size), out_dtype, xp)
    new = p[cols] == 0
    old = ~new
    merged = binary(sr.add.op, d[cols[old]], folded[old], out_dtype, xp)
    folded[old] = merged
    changed = new.copy()
    changed[old] = merged != d[cols[old]]
    cols, folded = cols[changed], folded[changed]
    d[cols] = folded
    p[cols] = 1
    return cols, folded


def _pattern_keys(mask, ncols, xp=np):
    rows = owners(xp.diff(mask.indptr), xp)
    keys = rows * ncols + mask.indices.astype(np.int64)
    return xp.sort(keys)


def _in_sorted(keys, sorted_keys, xp=np):
    if sorted_keys.size == 0:
        return xp.zeros(keys.shape, dtype=bool)
    pos = xp.searchsorted(sorted_keys, keys)
    pos = xp.minimum(pos, sorted_keys.size - 1)
    return sorted_keys[pos] == keys


class ReferenceGraphKernels:
    """The NumPy oracle for :class:`gbdist.backends.base.GraphKernels`."""

    name = "reference"
    xp = np
    BLOCK = 1 << 22  # ⊗ terms materialised at once (row blocks keep memory bounded)

    def spgemm(self, A, B, sr, *, mask=None, complement=False, out_dtype, symmetric=None):
        m, n = A.shape[0], B.shape[1]
        mkeys = None if mask is None else _pattern_keys(mask, n)
        blen = np.diff(B.indptr).astype(np.int64)
        a_rows = np.repeat(np.arange(m), np.diff(A.indptr).astype(np.int64))
        row_work = np.bincount(a_rows, weights=blen[A.indices], minlength=m)
        keys_out, vals_out = [], []
        cum = np.cumsum(row_work)  # blocks of rows of about BLOCK terms (at least one row)
        r0 = 0
        while r0 < m:
            before = cum[r0 - 1] if r0 else 0.0
            r1 = max(r0 + 1, int(np.searchsorted(cum, before + self.BLOCK, side="right")))
            r1 = min(r1, m)
            k, v = self._spgemm_rows(A, B, sr, r0, r1, n, mkeys, complement, out_dtype)
            keys_out.append(k)
            vals_out.append(v)
            r0 = r1
        keys = np.concatenate(keys_out) if keys_out else np.zeros(0, np.int64)
        vals = np.concatenate(vals_out) if vals_out else np.zeros(0, out_dtype)
        return _keys_to_csr(keys, vals, (m, n), out_dtype)

    def _spgemm_rows(self, A, B, sr, r0, r1, n, mkeys, complement, out_dtype):
        a_pos = np.arange(A.indptr[r0], A.indptr[r1], dtype=np.int64)
        a_row = np.repeat(np.arange(r0, r1, dtype=np.int64), np.diff(A.indptr[r0:r1 + 1]).astype(np.int64))
        k = A.indices[a_pos].astype(np.int64)
        b_pos, owner = _expand_rows(B.indptr, k)
        i = a_row[owner]
        j = B.indices[b_pos].astype(np.int64)
        keys = i * n + j
        if mkeys is not None:
            keep = _in_sorted(keys, mkeys)
            if complement:
                keep = ~keep
            keys, owner, b_pos = keys[keep], owner[keep], b_pos[keep]
        prod = binary(sr.mul, A.data[a_pos[owner]], B.data[b_pos], out_dtype)
        order = np.argsort(keys, kind="stable")  # terms of one entry in k order
        keys, prod = keys[order], prod[order]
        starts = np.ones(keys.size, dtype=bool)
        starts[1:] = keys[1:] != keys[:-1]
        seg = np.cumsum(starts) - 1
        folded, _ = fold_segments(sr.add.op, seg, prod, int(starts.sum()), out_dtype)
        return keys[starts], folded

    def spmv(self, A, x, x_present, sr, *, mask=None, complement=False, out_dtype,
             compensated=False):
        m = A.shape[0]
        rows = np.arange(m, dtype=np.int64)
        if mask is not None:
            allowed = np.asarray(mask, dtype=bool)
            rows = rows[~allowed if complement else allowed]
        pos, owner = _expand_rows(A.indptr, rows)
        kk = A.indices[pos]
        if x_present is not None:
            keep = np.asarray(x_present, dtype=bool)[kk]
            pos, owner, kk = pos[keep], owner[keep], kk[keep]
        prod = binary(sr.mul, A.data[pos], np.asarray(x)[kk], out_dtype)
        folded, present = fold_segments(sr.add.op, rows[owner], prod, m, out_dtype)
        if compensated and sr.add.invertible and np.dtype(out_dtype).kind == "f":
            # the oracle of compensated sums: each row's terms summed exactly (math.fsum),
            # rounded once
            import math
            seg = rows[owner]
            starts = np.searchsorted(seg, np.arange(m), side="left")
            ends = np.searchsorted(seg, np.arange(m), side="right")
            terms = prod.astype(np.float64)
            for i in np.flatnonzero(present):
                t = terms[starts[i]:ends[i]]
                try:
                    folded[i] = math.fsum(t)
                except (ValueError, OverflowError):  # Inf - Inf, or past the float range: the
                    folded[i] = t.sum()  # plain sum's Inf or NaN is the answer
        folded[~present] = identity_value(sr.add, out_dtype)
        return folded, present

    def spmspv(self, A, u_idx, u_val, sr, *, mask=None, complement=False, out_dtype):
        n = A.shape[1]
        u_idx = np.asarray(u_idx, dtype=np.int64)
        pos, owner = _expand_rows(A.indptr, u_idx)
        j = A.indices[pos].astype(np.int64)
        if mask is not None:
            allowed = np.asarray(mask, dtype=bool)[j]
            keep = ~allowed if complement else allowed
            pos, owner, j = pos[keep], owner[keep], j[keep]
        prod = binary(sr.mul, np.asarray(u_val)[owner], A.data[pos], out_dtype)
        order = np.argsort(j, kind="stable")  # within a column, terms in k order
        folded, present = fold_segments(sr.add.op, j[order], prod[order], n, out_dtype)
        folded[~present] = identity_value(sr.add, out_dtype)
        return folded, present

    def spmspv_update(self, A, u_idx, u_val, sr, d, p, *, only_new, out_dtype):
        return spmspv_update(A, np.asarray(u_idx, dtype=np.int64), u_val, sr, d, p,
                             only_new, out_dtype)

    def rank_lower_counts(self, A, deg, *, only_none=False):
        return rank_lower_counts(A.indptr, A.indices, deg, only_none=only_none)

    def rank_lower_fill(self, A, deg, mode, lp, *, with_values, nnz=None):
        return rank_lower_fill(A.indptr, A.indices, A.data, deg, mode, with_values)

    def pattern_symmetric(self, A):
        return pattern_symmetric(A.indptr, A.indices)

    def union_merge(self, A, B, xa, xb, *, itype):
        return union_merge(A.indptr, A.indices, B.indptr, B.indices, xa, xb, A.shape[1], itype)

    def intersect_merge(self, A, B, *, itype):
        return intersect_merge(A.indptr, A.indices, B.indptr, B.indices, A.shape[1], itype)

    def union_keys(self, ka, kb, va, vb, op, left_default, right_default, *, out_dtype,
                   space=None):
        return union_values(ka, kb, va, vb, op, left_default, right_default, out_dtype, np,
                            space)

    def segment_reduce(self, indptr, values, monoid, *, out_dtype):
        indptr = np.asarray(indptr, dtype=np.int64)
        nseg = indptr.size - 1
        seg = np.repeat(np.arange(nseg, dtype=np.int64), np.diff(indptr))
        folded, present = fold_segments(monoid.op, seg, values, nseg, out_dtype)
        folded[~present] = identity_value(monoid, out_dtype)
        return folded, present


def _keys_to_csr(keys, vals, shape, dtype) -> sps.csr_matrix:
    m, n = shape
    rows = keys // n if n else keys
    cols = keys - rows * n if n else keys
    itype = np.int32 if max(m, n, keys.size) < 2**31 - 1 else np.int64
    indptr = np.zeros(m + 1, dtype=itype)
    np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:]) if m else None
    return sps.csr_matrix((np.asarray(vals, dtype=dtype), cols.astype(itype), indptr), shape=shape)
