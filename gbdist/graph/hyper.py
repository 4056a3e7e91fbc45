"""Hypersparse graphs: dimensions far beyond the stored entries (2⁶⁰ vertices keyed by
hashes), with no array of the dimension's size anywhere.

A :class:`HyperMatrix` stores the sorted ids of its non-empty rows and columns (int64,
anywhere in ``[0, nrows)`` / ``[0, ncols)``, up to 2⁶³ − 1) and a *compact* ordinary
:class:`~.objects.Matrix` over them (``len(row_ids) × len(col_ids)``: SuiteSparse's
hypersparse format, with the column ids compressed too). A :class:`HyperVector` stores
its ids and a compact Vector. Every operation relabels its operands into one compact
space (``searchsorted`` on the ids: O(entries · log)), runs the ordinary operation there
(:mod:`.operations`, whatever kernels and backend it picks) and maps the result's
positions back to ids, dropping rows and columns left empty:

* ``mxm(A, B)``: only inner ids stored on both sides can meet, so A keeps those columns
  and B those rows; the result lives on A's row ids × B's column ids;
* ``mxv(A, u)`` / ``vxm(u, A)``: u's entries at A's column (row) ids;
* ``ewise_add`` / ``ewise_mult``: both operands on the union (intersection) of their ids;
* ``reduce_rows`` / ``reduce_cols`` / ``reduce_scalar``, ``apply`` (a unary op or a
  bound scalar): on the compact matrix itself.

A mask is a hypersparse operand's ``H.S`` / ``H.V`` (``~`` complements it), mapped onto
the result's compact space (an entry outside it cannot be in the result, so a complement
needs nothing beyond it). ``out=`` (a HyperMatrix / HyperVector of the result's shape,
changed in place), ``accum=`` and ``replace=`` write as GraphBLAS does,
``out<mask, replace> = accum(out, T)``, on the union of T's and out's ids
(:func:`_writes`). Results are graphs (fill ``"absent"``); their ``decision`` is the
compact operation's.
"""
from __future__ import annotations

import functools

import numpy as np

from ..errors import InputError
from . import operations as ops_
from .masks import Mask
from .objects import Matrix, Vector

MAX_DIM = 2 ** 63 - 1


def _check_dim(n, what):
    n = int(n)
    if not 0 <= n <= MAX_DIM:
        raise InputError(f"a hypersparse {what} is in [0, 2**63 - 1]", got=str(n))
    return n


def _ids(x, n, what):
    x = np.asarray(x).ravel()
    if x.dtype == np.uint64:
        if x.size and int(x.max()) > MAX_DIM:
            raise InputError(f"{what} out of range", got=str(int(x.max())))
    if x.size and x.dtype.kind not in "iu":
        raise InputError(f"{what} must be integers", got=str(x.dtype))
    x = x.astype(np.int64, copy=False)
    if x.size and (int(x.min()) < 0 or int(x.max()) >= n):
        raise InputError(f"{what} out of range", expected=f"in [0, {n})",
                         got=f"[{int(x.min())}, {int(x.max())}]")
    return x


class HyperMatrix:
    """``HyperMatrix.from_coo(rows, cols, values, shape)``: ids may be as large as the
    shape (2⁶⁰ and beyond); memory and time follow the stored entries alone."""

    ndim = 2

    def __init__(self, row_ids, col_ids, compact: Matrix, shape, _pruned=False):
        self.row_ids, self.col_ids = row_ids, col_ids
        self.compact = compact
        self.shape = (int(shape[0]), int(shape[1]))
        if not _pruned:
            self._prune()
        self.decision = getattr(compact, "decision", None)

    def _prune(self):
        """Drop ids whose row / column holds nothing (results of operations): a flag per
        compact row and column, O(entries)."""
        C = self.compact
        n = max(C.ncols, 1)
        keys = C.keys()
        r, c = keys // n, keys % n
        used_r = np.bincount(r, minlength=C.nrows) > 0
        used_c = np.bincount(c, minlength=C.ncols) > 0
        if used_r.all() and used_c.all():
            return
        new_r = np.cumsum(used_r) - 1
        new_c = np.cumsum(used_c) - 1
        self.row_ids, self.col_ids = self.row_ids[used_r], self.col_ids[used_c]
        dec = C.decision
        self.compact = Matrix.from_coo(new_r[r], new_c[c], C.to_coo()[2],
                                       (self.row_ids.size, self.col_ids.size), dtype=C.dtype)
        self.compact.decision = dec

    @classmethod
    def from_coo(cls, rows, cols, values, shape, dtype=None, dup_op=None):
        m, n = _check_dim(shape[0], "row count"), _check_dim(shape[1], "column count")
        rows, cols = _ids(rows, m, "row ids"), _ids(cols, n, "column ids")
        values = np.asarray(values)
        if values.ndim == 0:
            values = np.broadcast_to(values, rows.shape)
        if not rows.size == cols.size == values.size:
            raise InputError("from_coo: rows, cols and values differ in length",
                             got=f"{rows.size}, {cols.size}, {values.size}")
        rid, ri = np.unique(rows, return_inverse=True)
        cid, ci = np.unique(cols, return_inverse=True)
        C = Matrix.from_coo(ri, ci, values, (rid.size, cid.size), dtype=dtype, dup_op=dup_op)
        return cls(rid, cid, C, (m, n), _pruned=True)

    nrows = property(lambda self: self.shape[0])
    ncols = property(lambda self: self.shape[1])
    nvals = property(lambda self: self.compact.nvals)
    dtype = property(lambda self: self.compact.dtype)

    def to_coo(self):
        """(row ids, column ids, values), row-major by id."""
        r, c, v = self.compact.to_coo()
        return self.row_ids[r], self.col_ids[c], v

    S = property(lambda self: Mask(self, structural=True))
    V = property(lambda self: Mask(self, structural=False))

    @property
    def T(self) -> "HyperMatrix":
        return HyperMatrix(self.col_ids, self.row_ids, self.compact.T.dup(),
                           (self.ncols, self.nrows), _pruned=True)

    def isequal(self, other) -> bool:
        return (isinstance(other, HyperMatrix) and self.shape == other.shape
                and np.array_equal(self.row_ids, other.row_ids)
                and np.array_equal(self.col_ids, other.col_ids)
                and self.compact.isequal(other.compact))

    def __repr__(self):
        return (f"gr.HyperMatrix({self.nrows}×{self.ncols}, nvals={self.nvals}, "
                f"dtype={self.dtype}, {self.row_ids.size} rows × {self.col_ids.size} columns "
                "stored)")


class HyperVector:
    """``HyperVector.from_coo(ids, values, size)``: a sparse vector over a huge index space."""

    ndim = 1

    def __init__(self, ids, compact: Vector, size):
        keep = compact.indices
        self.ids = ids if keep.size == ids.size else ids[keep]
        self.compact = compact if keep.size == ids.size else Vector.from_coo(
            np.arange(keep.size), compact.values, keep.size, dtype=compact.dtype)
        self.size = int(size)
        self.decision = getattr(compact, "decision", None)

    @classmethod
    def from_coo(cls, ids, values, size, dtype=None, dup_op=None):
        size = _check_dim(size, "size")
        ids = _ids(ids, size, "ids")
        values = np.asarray(values)
        if values.ndim == 0:
            values = np.broadcast_to(values, ids.shape)
        uid, inv = np.unique(ids, return_inverse=True)
        c = Vector.from_coo(inv, values, uid.size, dtype=dtype, dup_op=dup_op)
        return cls(uid, c, size)

    nvals = property(lambda self: self.compact.nvals)
    dtype = property(lambda self: self.compact.dtype)
    shape = property(lambda self: (self.size,))
    S = property(lambda self: Mask(self, structural=True))
    V = property(lambda self: Mask(self, structural=False))

    def to_coo(self):
        return self.ids.copy(), np.asarray(self.compact.to_dense())

    def isequal(self, other) -> bool:
        return (isinstance(other, HyperVector) and self.size == other.size
                and np.array_equal(self.ids, other.ids) and self.compact.isequal(other.compact))

    def __repr__(self):
        return f"gr.HyperVector(size={self.size}, nvals={self.nvals}, dtype={self.dtype})"


# --- relabelling ----------------------------------------------------------------------


def _positions(ids, among):
    """Positions of ``ids`` in the sorted ``among`` and whether each is there."""
    if among.size == 0:
        return np.zeros(ids.shape, np.int64), np.zeros(ids.shape, bool)
    pos = np.minimum(np.searchsorted(among, ids), among.size - 1)
    return pos, among[pos] == ids


def _union(a, b):
    """Sorted union of two sorted unique id arrays."""
    c = np.concatenate([a, b])
    c.sort()
    keep = np.ones(c.size, dtype=bool)
    keep[1:] = c[1:] != c[:-1]
    return c[keep]


def _intersect(a, b):
    """Sorted intersection of two sorted unique id arrays."""
    if a.size > b.size:
        a, b = b, a
    _, found = _positions(a, b)
    return a[found]


def _onto(H: HyperMatrix, rows, cols) -> Matrix:
    """H's entries whose row and column ids are in ``rows`` / ``cols`` (sorted), as a
    compact Matrix over them: each stored row and column id is looked up once (not once
    per entry); the map keeps the order, so the keys stay sorted."""
    if rows is H.row_ids and cols is H.col_ids:
        return H.compact
    r, c, v = H.compact.to_coo()
    pr, fr = _positions(H.row_ids, rows)
    pc, fc = _positions(H.col_ids, cols)
    keep = fr[r] & fc[c]
    if not keep.all():
        r, c, v = r[keep], c[keep], v[keep]
    return Matrix.from_coo(pr[r], pc[c], v, (rows.size, cols.size), dtype=H.dtype)


def _vector_onto(h: HyperVector, ids) -> Vector:
    pos, found = _positions(h.ids, ids)
    return Vector.from_coo(pos[found], np.asarray(h.compact.values)[found], ids.size,
                           dtype=h.dtype)


def _plain(kwargs, what, rows=None, cols=None, shape=None):
    """Map a hypersparse mask onto the result's compact space (``rows`` × ``cols`` ids, or
    ``rows`` alone for a vector result); accum= and out= are :func:`_writes`'."""
    mask = kwargs.get("mask")
    if mask is None:
        return
    if rows is None:
        raise InputError(f"{what} on hypersparse operands takes no mask=")
    kwargs["mask"] = _mask_onto(mask, rows, cols, shape, what)


def _mask_onto(mask, rows, cols, shape, what) -> Mask:
    if isinstance(mask, (HyperMatrix, HyperVector)):
        mask = mask.V
    src = getattr(mask, "source", None)
    want = HyperVector if cols is None else HyperMatrix
    if not isinstance(mask, Mask) or not isinstance(src, want) or src.shape != shape:
        raise InputError(f"{what}: the mask of a hypersparse result is a {want.__name__} "
                         "of its shape (H.S, H.V, ~H.S)", got=repr(src if src is not None else mask),
                         expected=f"a {want.__name__} of shape {shape}")
    mapped = _vector_onto(src, rows) if cols is None else _onto(src, rows, cols)
    return Mask(mapped, mask.structural, mask.complement)


def _writes(fn):
    """An operation with GraphBLAS's write-back: ``out<mask, replace> = accum(out, T)``. T is
    computed (with the mask) as before; then T, ``out`` and the mask are relabelled onto
    the union of T's and out's ids (no entry of the result lies outside it) and written by
    the ordinary ``apply(identity, T, mask=, accum=, out=, replace=)``. ``out`` (a
    HyperMatrix / HyperVector of the result's shape) is changed in place and returned."""
    @functools.wraps(fn)
    def run(*args, out=None, accum=None, replace=False, **kw):
        what = fn.__name__
        if out is None:
            if accum is not None:
                raise InputError(f"{what}(accum=...) on hypersparse operands needs out=: the "
                                 "accumulator combines the result with out's entries")
            return fn(*args, replace=replace, **kw) if replace else fn(*args, **kw)
        T = fn(*args, **kw)
        return _write_back(what, T, out, kw.get("mask"), accum, replace)
    return run


def _write_back(what, T, out, mask, accum, replace):
    from ..algebra.ops import BY_NAME
    kind = type(T)
    if not isinstance(out, kind) or out.shape != T.shape:
        raise InputError(f"{what}: out= is a {kind.__name__} of the result's shape",
                         expected=f"a {kind.__name__} of shape {T.shape}", got=repr(out))
    identity = BY_NAME["identity"]
    if kind is HyperVector:
        ids = _union(T.ids, out.ids)
        m = None if mask is None else _mask_onto(mask, ids, None, T.shape, what)
        Z = ops_.apply(identity, _vector_onto(T, ids), mask=m, accum=accum,
                       out=_vector_onto(out, ids), replace=replace)
        res = HyperVector(ids, Z, T.size)
        out.ids, out.compact = res.ids, res.compact
    else:
        rows, cols = _union(T.row_ids, out.row_ids), _union(T.col_ids, out.col_ids)
        m = None if mask is None else _mask_onto(mask, rows, cols, T.shape, what)
        Z = ops_.apply(identity, _onto(T, rows, cols), mask=m, accum=accum,
                       out=_onto(out, rows, cols).dup(), replace=replace)
        res = HyperMatrix(rows, cols, Z, T.shape)
        out.row_ids, out.col_ids, out.compact = res.row_ids, res.col_ids, res.compact
    out.decision = T.decision
    return out


def _same(a, b, what):
    if a != b:
        raise InputError(f"{what}: dimensions differ", got=f"{a} and {b}")


# --- operations -------------------------------------------------------------------------


@_writes
def mxm(A: HyperMatrix, B: HyperMatrix, sr, **kw) -> HyperMatrix:
    _same(A.ncols, B.nrows, "mxm")
    _plain(kw, "mxm", A.row_ids, B.col_ids, (A.nrows, B.ncols))
    inner = _intersect(A.col_ids, B.row_ids)
    C = ops_.mxm(_onto(A, A.row_ids, inner), _onto(B, inner, B.col_ids), sr, **kw)
    return HyperMatrix(A.row_ids, B.col_ids, C, (A.nrows, B.ncols))


@_writes
def mxv(A: HyperMatrix, u: HyperVector, sr, **kw) -> HyperVector:
    _same(A.ncols, u.size, "mxv")
    _plain(kw, "mxv", A.row_ids, None, (A.nrows,))
    w = ops_.mxv(A.compact, _vector_onto(u, A.col_ids), sr, **kw)
    return HyperVector(A.row_ids, w, A.nrows)


@_writes
def vxm(u: HyperVector, A: HyperMatrix, sr, **kw) -> HyperVector:
    _same(A.nrows, u.size, "vxm")
    _plain(kw, "vxm", A.col_ids, None, (A.ncols,))
    w = ops_.vxm(_vector_onto(u, A.row_ids), A.compact, sr, **kw)
    return HyperVector(A.col_ids, w, A.ncols)


def _ewise(fn, A, B, op, union, kw):
    pick = _union if union else _intersect
    if isinstance(A, HyperVector):
        _same(A.size, B.size, fn.__name__)
        ids = pick(A.ids, B.ids)
        _plain(kw, fn.__name__, ids, None, A.shape)
        w = fn(_vector_onto(A, ids), _vector_onto(B, ids), op, **kw)
        return HyperVector(ids, w, A.size)
    _same(A.shape, B.shape, fn.__name__)
    rows, cols = pick(A.row_ids, B.row_ids), pick(A.col_ids, B.col_ids)
    _plain(kw, fn.__name__, rows, cols, A.shape)
    C = fn(_onto(A, rows, cols), _onto(B, rows, cols), op, **kw)
    return HyperMatrix(rows, cols, C, A.shape)


@_writes
def ewise_add(A, B, op, **kw):
    return _ewise(ops_.ewise_add, A, B, op, True, kw)


@_writes
def ewise_mult(A, B, op, **kw):
    return _ewise(ops_.ewise_mult, A, B, op, False, kw)


@_writes
def apply(op, A, **kw):
    if isinstance(A, HyperVector):
        _plain(kw, "apply", A.ids, None, A.shape)
        return HyperVector(A.ids, ops_.apply(op, A.compact, **kw), A.size)
    _plain(kw, "apply", A.row_ids, A.col_ids, A.shape)
    return HyperMatrix(A.row_ids, A.col_ids, ops_.apply(op, A.compact, **kw), A.shape)


@_writes
def reduce_rows(A: HyperMatrix, monoid, **kw) -> HyperVector:
    _plain(kw, "reduce_rows", A.row_ids, None, (A.nrows,))
    return HyperVector(A.row_ids, ops_.reduce_rows(A.compact, monoid, **kw), A.nrows)


@_writes
def reduce_cols(A: HyperMatrix, monoid, **kw) -> HyperVector:
    _plain(kw, "reduce_cols", A.col_ids, None, (A.ncols,))
    return HyperVector(A.col_ids, ops_.reduce_cols(A.compact, monoid, **kw), A.ncols)


def reduce_scalar(A, monoid, **kw):
    return ops_.reduce_scalar(A.compact, monoid, **kw)
