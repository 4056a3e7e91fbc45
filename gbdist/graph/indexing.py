"""Extract and assign: sub-matrices and sub-vectors by row/column index lists.

``extract(A, rows, cols)`` is ``C(i', j') = A(rows[i'], cols[j'])`` (repeated indices
allowed); ``assign(C, value, rows, cols)`` is ``C(rows, cols) = value`` in place (a
Matrix/Vector of the region's shape, or a scalar stored at every position of the
region), with the GraphBLAS mask (over the whole of C), accumulator (inside the region)
and replace. Index arguments: None (all), a slice, an int, a sequence of ints, or a
gb.Vector whose stored values are the indices, in the order of their positions (GrB_extract
and GrB_assign with an index array taken from a vector: ``f[f]``, the grandparents of
FastSV, is ``extract(f, f)``). Duplicate indices in an assign are combined with the
accumulator, as if the assignments were made one after the other (SuiteSparse's rule;
``assign(f, h, rows=f, accum=min)`` is FastSV's hooking ``f(f(i)) min= h(i)``); without an
accumulator they are refused.
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


def index_array(spec, n: int, label: str, xp=np):
    """An index argument as an int64 array on ``xp``: a gb.Vector gives its stored values (in
    the order of their positions; integers, or floats that are whole numbers), anything
    else goes through :func:`gbdist.graph.sparse.index_list`."""
    if not isinstance(spec, Vector):
        return xp.asarray(S.index_list(spec, n, label))
    vals = spec.values
    if vals.dtype == np.bool_:
        raise InputError(f"{label}: an index vector holds integers", got="a bool vector",
                         hint="the stored values are the indices")
    if vals.dtype.kind == "f":
        whole = xp.isfinite(vals) & (vals == xp.floor(vals))
        if not bool(whole.all()):
            raise InputError(f"{label}: an index vector's values must be whole numbers",
                             got=f"{vals[~whole][0].item()!r}",
                             hint="compute it with dtype=int64")
    if xp is not spec.xp:
        vals = xp.asarray(vals.get() if hasattr(vals, "get") else vals)
    idx = vals.astype(np.int64)
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -n or hi >= n:
            raise InputError(f"{label} out of range", expected=f"indices in [-{n}, {n})",
                             got=f"min {lo}, max {hi}")
        if lo < 0:
            idx = xp.where(idx < 0, idx + n, idx)
    return idx


def _decision(x):
    return rule.Decision("extract/assign", True, x.fill,
                         "indexing moves stored entries; unstored entries stay unstored")


def extract(A, rows=None, cols=None, *, mask=None, accum=None, out=None, replace=False,
            dtype=None, backend="auto"):
    """``A(rows, cols)`` as a new Matrix, or ``v(rows)`` as a Vector (``cols`` unused)."""
    if isinstance(A, Vector) or getattr(A, "ndim", 2) == 1:
        v = as_vector(A)
        xp = v.xp
        idx = index_array(rows, v.size, "indices", xp)
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
    ri = index_array(rows, A.nrows, "rows", xp)
    ci = index_array(cols, A.ncols, "cols", xp)
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


def extract_line(A, axis: str, index, other=None):
    """Row ``index`` of A over the columns ``other`` (``axis="row"``), or column ``index``
    over the rows ``other`` (``"col"``), as a Vector: python-graphblas's ``A[i, :]``,
    ``A[:, j]``, ``A[i, cols]``. ``index``: a whole number (a float that is one, a NumPy
    scalar; negative counts from the end); ``other``: None (all) or an index argument of
    :func:`extract`. The text language's ``A[i, :]`` (gbdist/front/graph_ops.py)."""
    A = as_matrix(A)
    n, what = (A.nrows, "A[i, :]: the row") if axis == "row" else (A.ncols, "A[:, j]: the column")
    i = _whole_index(index, n, what)
    M = extract(A if axis == "row" else A.T, [i], other)  # 1 × k: its one row is the vector
    v = Vector._wrap(M._csr.indices.astype(np.int64), M._csr.data.copy(), M.ncols, M.fill,
                     M.on_device)
    v.decision = M.decision
    return v


def _whole_index(x, n: int, what: str) -> int:
    """One index in [-n, n) (a Python or NumPy number that is whole) as an int in [0, n)."""
    v = x.item() if hasattr(x, "item") else x
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not float(v).is_integer():
        raise InputError(f"{what} index is a whole number", got=repr(v))
    i = int(v)
    if not -n <= i < n:
        raise InputError(f"{what} index is out of range", expected=f"in [-{n}, {n})",
                         got=str(i))
    return i + n if i < 0 else i


def assign(C, value, rows=None, cols=None, *, mask=None, accum=None, replace=False,
           backend="auto"):
    """``C(rows, cols) = value`` in place (returns C). ``value``: a Matrix (Vector, for a
    Vector C) of the region's shape, or a scalar stored at every position of the region.
    Duplicate indices need ``accum``: the values assigned to one position are combined with
    it, in order, as if assigned one after the other (``accum`` must be a monoid's op: min,
    plus …); without it they are refused (the result would depend on the order)."""
    if not isinstance(C, (Matrix, Vector)):
        raise InputError("assign: C must be a gb.Matrix or gb.Vector (it is changed in place)",
                         got=type(C).__name__)
    xp = C.xp
    is_mat = isinstance(C, Matrix)
    ri = index_array(rows, C.shape[0], "rows", xp)
    ci = index_array(cols, C.ncols, "cols", xp) if is_mat else xp.zeros(1, np.int64)
    duplicates = False
    for name, ix in (("rows", ri), ("cols", ci)):
        if _repeats(ix, C.shape[0] if name == "rows" else (C.ncols if is_mat else 1), xp):
            if accum is None:
                raise InputError(f"assign: duplicate {name} indices", got=str(ix[:10].tolist()),
                                 hint="each position of C may be assigned once, or give "
                                      "accum= (e.g. accum=min) to combine the values")
            duplicates = True
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
    if duplicates:
        vkeys, vvals = _combine(vkeys, vvals, accum, C, backend)
    dt = np.dtype(C.dtype)
    ck = C.keys()
    cv = C._csr.data if is_mat else C._vals
    op = T.binary_arg(accum, "assign accum") if accum is not None else None
    if not is_mat and S.dense_space(C.size, C.nvals, vkeys.size):
        zk, zv = _assign_dense(C, ri, vkeys, vvals, op, dt, xp)
    else:
        # C's entries inside the region
        in_rows = S.member(ck // n if is_mat else ck, xp.sort(ri), xp)
        in_cols = S.member(ck % n, xp.sort(ci), xp) if is_mat else in_rows
        inside = in_rows & in_cols
        if op is not None:
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


def _assign_dense(C, ri, vkeys, vvals, op, dt, xp):
    """A vector's assign through dense arrays of its size (unique sorted ``vkeys``): the
    region emptied (no accumulator) or merged with ``op``, then the value scattered."""
    dv, pv = C.dense_parts()
    dv, pv = dv.astype(dt, copy=True), pv.copy()
    vvals = xp.asarray(vvals).astype(dt)
    if op is None:
        pv[ri] = False
    else:
        both = pv[vkeys]
        if bool(both.any()):
            vvals = vvals.copy()
            vvals[both] = binary(op, dv[vkeys[both]], vvals[both], dt, xp)
    dv[vkeys] = vvals
    pv[vkeys] = True
    zk = xp.flatnonzero(pv).astype(np.int64, copy=False)
    return zk, dv[zk]


def _repeats(ix, n: int, xp) -> bool:
    """Whether the index array ``ix`` (values in [0, n)) holds an index twice: counted in a
    dense array when n is not far above the indices' number, else by sorting."""
    if ix.size < 2:
        return False
    if n <= 4 * ix.size + 1024:
        return bool(xp.bincount(ix, minlength=n).max() > 1)
    s = xp.sort(ix)
    return bool((s[1:] == s[:-1]).any())


def _combine(keys, vals, accum, C, backend):
    """Sorted keys with repeats → each key once, its values folded in order with ``accum``'s
    monoid (a segment reduction of the backend's kernels)."""
    from ..algebra.monoids import as_monoid
    from ..errors import DefinitionError
    from .dispatch import get_kernels
    xp = C.xp
    if keys.size == 0:
        return keys, vals
    op = T.binary_arg(accum, "assign accum")
    try:
        monoid = as_monoid(op)
    except DefinitionError:
        raise InputError("assign: duplicate indices are combined with accum=, which must be a "
                         "monoid's op", got=op.name, hint="e.g. accum=min, plus, max, lor") from None
    starts = xp.flatnonzero(xp.concatenate([xp.ones(1, bool), keys[1:] != keys[:-1]]))
    indptr = xp.concatenate([starts, xp.asarray([keys.size])]).astype(np.int64)
    K = get_kernels(backend, C.on_device, work=int(keys.size))
    out, _ = K.segment_reduce(indptr, vals, monoid, out_dtype=np.dtype(C.dtype))
    return keys[starts], xp.asarray(out).astype(C.dtype, copy=False)


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
