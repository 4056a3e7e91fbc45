"""The storage of hypersparse graphs (:mod:`.hyper`): :class:`HyperMatrix`,
:class:`HyperVector`, the relabelling of ids into one compact space, and element access
by ids (``H[i, j]``, ``H[i, :]``, ``H[rows, cols]``, :func:`select_ids`) with no array of
the dimension's size: an index list is sorted and each stored id looked up in it
(``searchsorted``, O(entries · log)), a slice is arithmetic on the ids.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
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
    hypersparse = True  # ordinary operations refuse it by this flag (.objects)

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

    def __getitem__(self, index):
        """``H[i, j]`` a Scalar, ``H[i, :]`` / ``H[:, j]`` HyperVectors, ``H[rows, cols]``
        (ids; :func:`getitem`)."""
        return getitem(self, index)

    def __repr__(self):
        return (f"gr.HyperMatrix({self.nrows}×{self.ncols}, nvals={self.nvals}, "
                f"dtype={self.dtype}, {self.row_ids.size} rows × {self.col_ids.size} columns "
                "stored)")


class HyperVector:
    """``HyperVector.from_coo(ids, values, size)``: a sparse vector over a huge index space."""

    ndim = 1
    hypersparse = True

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

    def __getitem__(self, index):
        return getitem(self, index)

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




# --- element access by ids --------------------------------------------------------------


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def selection(spec, n: int, label: str):
    """An index argument over a dimension ``n`` (up to 2⁶³ − 1) as (its length, a map):
    ``map(ids)`` gives, for int64 ids, (the positions in ``ids`` that are selected, their
    new indices), with repeats when a list names an id twice. ``spec``: None (all), a slice
    (arithmetic on the ids), an int or a sequence of ints (negative ones count from the
    end, as in NumPy). Nothing of size ``n`` is made."""
    if spec is None:
        spec = slice(None)
    if isinstance(spec, slice):
        start, stop, step = spec.indices(n)
        size = len(range(start, stop, step))
        return size, lambda ids: _in_range(ids, start, step, size)
    if _is_int(spec):
        spec = [spec]
    arr = np.asarray(spec)
    if arr.ndim > 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise InputError(f"{label} of a hypersparse operand: None, a slice, an int or a "
                         "sequence of ints", got=f"{arr.dtype} array of shape {arr.shape}",
                         hint="a boolean mask of the dimension's size has no place here: "
                              "give the indices")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > MAX_DIM:
        raise InputError(f"{label} out of range", expected=f"indices in [-{n}, {n})",
                         got=str(int(arr.max())))
    sel = arr.astype(np.int64).ravel()
    if sel.size and (int(sel.min()) < -n or int(sel.max()) >= n):
        raise InputError(f"{label} out of range", expected=f"indices in [-{n}, {n})",
                         got=f"min {int(sel.min())}, max {int(sel.max())}")
    if sel.size and int(sel.min()) < 0:
        sel = np.where(sel < 0, sel + n, sel)
    from .indexing import _remap
    return int(sel.size), lambda ids: _remap(ids, sel, np)


def _in_range(ids, start: int, step: int, size: int):
    """The ids on ``range(start, start + size * step, step)`` and their positions in it:
    differences of ids in [0, 2⁶³) never overflow int64."""
    if size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    last = start + (size - 1) * step
    lo, hi = min(start, last), max(start, last)
    off = ids - start if step > 0 else start - ids
    keep = (ids >= lo) & (ids <= hi) & (off % abs(step) == 0)
    where = np.flatnonzero(keep)
    return where, off[where] // abs(step)


def select_ids(H, rows=None, cols=None):
    """``H(rows, cols)`` (a vector: ``H(rows)``) as a new HyperMatrix (HyperVector) of
    the selection's shape, entries renumbered by their place in it (GrB_extract)."""
    if isinstance(H, HyperVector):
        size, pick = selection(rows, H.size, "indices")
        ids, vals = H.to_coo()
        e, new = pick(ids)
        return HyperVector.from_coo(new, vals[e], size, dtype=H.dtype)
    m, pick_r = selection(rows, H.nrows, "rows")
    n, pick_c = selection(cols, H.ncols, "cols")
    er, nr = pick_r(H.row_ids)  # the stored rows selected (with repeats), their new rows
    csr = H.compact.to_host()._csr
    starts = csr.indptr[er].astype(np.int64)
    lens = csr.indptr[er + 1].astype(np.int64) - starts
    own = np.repeat(np.arange(er.size), lens)  # the entries of those rows only
    pos = np.arange(own.size) - (np.cumsum(lens) - lens)[own] + starts[own]
    ec, nc = pick_c(H.col_ids[csr.indices[pos]])
    return HyperMatrix.from_coo(nr[own[ec]], nc, csr.data[pos[ec]], (m, n), dtype=H.dtype)


def getitem(H, index):
    """``h[i]`` / ``H[i, j]`` a :class:`~.scalar.Scalar`, ``H[i, :]`` / ``H[:, j]``
    HyperVectors, ``h[idx]`` / ``H[rows, cols]`` by :func:`select_ids` (python-graphblas's
    indexing, on ids)."""
    from .scalar import Scalar
    if isinstance(H, HyperVector):
        if _is_int(index):
            got = select_ids(H, index)
            return Scalar(H.dtype, got.compact.values[0].item() if got.nvals else None)
        return select_ids(H, index)
    if not isinstance(index, tuple) or len(index) != 2:
        raise InputError("a HyperMatrix is indexed by two indices", got=repr(index),
                         hint="H[i, j] (a Scalar), H[i, :] (a HyperVector), H[rows, cols]")
    r, c = index
    if _is_int(r) and _is_int(c):
        got = select_ids(H, r, c)
        return Scalar(H.dtype, got.compact.to_coo()[2][0].item() if got.nvals else None)
    if _is_int(r) or _is_int(c):  # one row (column) as a vector over the columns (rows)
        M = select_ids(H, r, c)
        _, ids, v = M.to_coo() if _is_int(r) else M.T.to_coo()
        return HyperVector.from_coo(ids, v, M.ncols if _is_int(r) else M.nrows, dtype=H.dtype)
    return select_ids(H, r, c)
