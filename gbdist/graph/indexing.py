"""Extract and assign: sub-matrices and sub-vectors by row/column index lists.

``extract(A, rows, cols)`` is ``C(i', j') = A(rows[i'], cols[j'])`` (repeated indices
allowed); ``assign(C, value, rows, cols)`` is ``C(rows, cols) = value`` in place (a
Matrix/Vector of the region's shape, or a scalar stored at every position of the
region), with the GraphBLAS mask (over the whole of C), accumulator (inside the region)
and replace. Index arguments: None (all), a slice, an int, or a sequence of ints.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import InputError
from . import sparse as S
from .masks import as_mask
from .objects import Matrix, Vector, as_matrix, as_vector
from .results import _check_out, finish
from ..backends.graph_fast import owners
from ..backends.graph_reference import binary, cast
from ..compiler import graph as rule
from . import types as T


def _remap(idx_of_entries, selection, xp):
    """For entries at positions ``idx_of_entries`` (old indices), every new index that
    selects them: returns (entry number, new index) pairs (selection may repeat)."""
    sel = xp.asarray(selection, dtype=np.int64)
    order = xp.argsort(sel, kind="stable")
    ss = sel[order]
    lo = xp.searchsorted(ss, idx_of_entries, side="left")
    hi = xp.searchsorted(ss, idx_of_entries, side="right")
    cnt = (hi - lo).astype(np.int64)
    entry = owners(cnt, xp)
    if entry.size == 0:
        return entry, entry
    first = xp.cumsum(cnt) - cnt
    offs = xp.arange(entry.size, dtype=np.int64) - first[entry]
    return entry, order[lo[entry] + offs]


def _decision(x):
    return rule.Decision("extract/assign", True, x.fill,
                         "indexing moves stored entries; unstored entries stay unstored")


def extract(A, rows=None, cols=None, *, mask=None, accum=None, out=None, replace=False,
            dtype=None, backend="auto"):
    """``A(rows, cols)`` as a new Matrix, or ``v(rows)`` as a Vector (``cols`` unused)."""
    if isinstance(A, Vector) or getattr(A, "ndim", 2) == 1:
        v = as_vector(A)
        xp = v.xp
        idx = xp.asarray(S.index_list(rows, v.size, "indices"))
        if v.nvals == v.size:  # full: a gather, every selected entry is stored
            keys, vals = xp.arange(idx.size, dtype=np.int64), v._vals[idx]
        elif v.has_prepared("dense") or S.dense_space(v.size, v.nvals, idx.size):
            dv, pv = v.dense_parts()  # dense: gather values and presence, no sort
            keys = xp.flatnonzero(pv[idx]).astype(np.int64, copy=False)
            vals = dv[idx[keys]]
        else:
            entry, new = _remap(v._idx, idx, xp)
            order = xp.argsort(new, kind="stable")
            keys, vals = new[order], v._vals[entry[order]]
        shape = (int(idx.size),)
        mask = as_mask(mask, shape, "extract")
        out = _check_out(out, Vector, shape, "extract")
        dt = T.result_dtype(out, dtype, [v.dtype], [])
        return finish(Vector, keys, vals, shape, dt, v.fill, _decision(v), mask=mask,
                      accum=accum, out=out, replace=replace, on_device=v.on_device)
    A = as_matrix(A)
    xp = A.xp
    ri = xp.asarray(S.index_list(rows, A.nrows, "rows"))
    ci = xp.asarray(S.index_list(cols, A.ncols, "cols"))
    shape = (int(ri.size), int(ci.size))
    mask = as_mask(mask, shape, "extract")
    out = _check_out(out, Matrix, shape, "extract")
    dt = T.result_dtype(out, dtype, [A.dtype], [])
    csr = A._csr
    starts, ends = csr.indptr[ri].astype(np.int64), csr.indptr[ri + 1].astype(np.int64)
    lens = ends - starts
    new_row = owners(lens, xp)
    first = xp.cumsum(lens) - lens
    pos = xp.arange(new_row.size, dtype=np.int64) - first[new_row] + starts[new_row]
    entry, new_col = _remap(csr.indices[pos].astype(np.int64), ci, xp)
    keys = new_row[entry] * max(shape[1], 1) + new_col
    order = xp.argsort(keys, kind="stable")
    keys, vals = keys[order], csr.data[pos[entry[order]]]
    return finish(Matrix, keys, vals, shape, dt, A.fill, _decision(A), mask=mask, accum=accum,
                  out=out, replace=replace, on_device=A.on_device)


def assign(C, value, rows=None, cols=None, *, mask=None, accum=None, replace=False,
           backend="auto"):
    """``C(rows, cols) = value`` in place (returns C). ``value``: a Matrix (Vector, for a
    Vector C) of the region's shape, or a scalar stored at every position of the region.
    Duplicate indices are refused (the result would depend on the order)."""
    if not isinstance(C, (Matrix, Vector)):
        raise InputError("assign: C must be a gb.Matrix or gb.Vector (it is changed in place)",
                         got=type(C).__name__)
    xp = C.xp
    is_mat = isinstance(C, Matrix)
    ri = S.index_list(rows, C.shape[0], "rows")
    ci = S.index_list(cols, C.ncols, "cols") if is_mat else np.zeros(1, np.int64)
    for name, ix in (("rows", ri), ("cols", ci)):
        if np.unique(ix).size != ix.size:
            raise InputError(f"assign: duplicate {name} indices", got=str(ix.tolist()[:10]),
                             hint="each position of C may be assigned once")
    ri, ci = xp.asarray(ri), xp.asarray(ci)
    n = max(C.ncols, 1) if is_mat else 1
    region_shape = (int(ri.size), int(ci.size)) if is_mat else (int(ri.size),)
    if isinstance(value, (numbers.Number, np.generic)) or (
            hasattr(value, "ndim") and value.ndim == 0 and not isinstance(value, (Matrix, Vector))):
        # every position of the region
        rr = xp.repeat(ri, ci.size)
        cc = xp.tile(ci, ri.size)
        vkeys = rr * n + cc if is_mat else ri
        s = np.asarray(value)
        vvals = cast(xp.full(vkeys.shape, s.item()), C.dtype, xp)  # cast on write (saturating)
    else:
        V = as_matrix(value) if is_mat else as_vector(value)
        if tuple(V.shape) != region_shape:
            raise InputError("assign: the value's shape differs from the region's",
                             expected=str(region_shape), got=str(tuple(V.shape)))
        if V.on_device != C.on_device:
            raise InputError("assign: C and the value live on different devices")
        vk = V.keys()
        if is_mat:
            vn = max(V.ncols, 1)
            vkeys = ri[vk // vn] * n + ci[vk % vn]
        else:
            vkeys = ri[vk]
        vvals = cast(V._csr.data if is_mat else V._vals, C.dtype, xp)  # cast on write
    order = xp.argsort(vkeys, kind="stable")
    vkeys, vvals = vkeys[order], vvals[order]
    dt = np.dtype(C.dtype)
    # C's entries inside the region
    ck = C.keys()
    cv = C._csr.data if is_mat else C._vals
    in_rows = S.member(ck // n if is_mat else ck, xp.sort(ri), xp)
    in_cols = S.member(ck % n, xp.sort(ci), xp) if is_mat else in_rows
    inside = in_rows & in_cols
    if accum is not None:
        op = T.binary_arg(accum, "assign accum")
        tk, tv = S.merge_union(ck[inside], cv[inside], vkeys, vvals,
                               lambda a, b: binary(op, a, b, dt, xp), dt, xp)
    else:
        tk, tv = vkeys, xp.asarray(vvals).astype(dt)
    zk = xp.concatenate([ck[~inside], tk])
    zv = xp.concatenate([cv[~inside].astype(dt), xp.asarray(tv).astype(dt)])
    o = xp.argsort(zk, kind="stable")
    zk, zv = zk[o], zv[o]
    mask = as_mask(mask, C.shape, "assign")
    if mask is not None:  # C<M, replace> = Z, over the whole of C
        keep = mask.allows(zk)
        k2, v2 = zk[keep], zv[keep]
        if not replace:
            outside = ~mask.allows(ck)
            k2 = xp.concatenate([k2, ck[outside]])
            v2 = xp.concatenate([v2, cv[outside].astype(dt)])
            o = xp.argsort(k2, kind="stable")
            k2, v2 = k2[o], v2[o]
        zk, zv = k2, v2
    if is_mat:
        C._set(S.keys_csr(zk, zv, C.shape, C.on_device), dt)
    else:
        C._set(zk, zv, C.size, dt)
    C.decision = _decision(C)
    return C


def subassign(C, value, rows=None, cols=None, *, mask=None, accum=None, replace=False,
              backend="auto"):
    """GxB_subassign, python-graphblas's ``C[rows, cols](mask) << value``: in place (returns
    C). The mask has the *region's* shape and ``replace`` deletes only inside the region:
    ``C(rows, cols)<mask, replace> = accum(C(rows, cols), value)``; C outside the region
    is untouched. ``value``: a Matrix (Vector) of the region's shape or a scalar."""
    if not isinstance(C, (Matrix, Vector)):
        raise InputError("subassign: C must be a gb.Matrix or gb.Vector (it is changed in place)",
                         got=type(C).__name__)
    is_mat = isinstance(C, Matrix)
    region = extract(C, rows, cols) if is_mat else extract(C, rows)
    mask = as_mask(mask, region.shape, "subassign")
    xp = C.xp
    if isinstance(value, (numbers.Number, np.generic)) or (
            hasattr(value, "ndim") and value.ndim == 0 and not isinstance(value, (Matrix, Vector))):
        space = int(np.prod(region.shape))
        keys = xp.arange(space, dtype=np.int64)
        vals = cast(xp.full(space, np.asarray(value).item()), C.dtype, xp)
    else:
        V = as_matrix(value) if is_mat else as_vector(value)
        if tuple(V.shape) != tuple(region.shape):
            raise InputError("subassign: the value's shape differs from the region's",
                             expected=str(region.shape), got=str(V.shape))
        keys, vals = V.keys(), cast(V._csr.data if is_mat else V._vals, C.dtype, xp)
    if accum is not None:
        accum = T.binary_arg(accum, "subassign accum")
    finish(Matrix if is_mat else Vector, keys, vals, region.shape, np.dtype(C.dtype), C.fill,
           _decision(C), mask=mask, accum=accum, out=region, replace=replace,
           on_device=C.on_device)
    assign(C, region, rows, cols) if is_mat else assign(C, region, rows)
    C.decision = _decision(C)
    return C
