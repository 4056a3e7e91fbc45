"""Graph operands: :class:`Matrix` and :class:`Vector` (:mod:`.vector`), which know their
semantics.

Each holds its data where it lives (a canonical SciPy CSR / NumPy arrays on the host,
cupyx CSR / CuPy arrays on the device), its dtype (bool, int32, int64, float32,
float64) and its *fill*: ``"absent"`` (a graph: only stored entries exist, a stored 0
is an edge of weight 0) or ``0`` (data: unstored entries are zeros). Prepared forms
(the transpose, entry keys, value patterns, dense vector forms, anything a kernel wants)
are cached on the object under a version number that every in-place change bumps, so
repeated operations copy nothing and a changed object never serves a stale form. A
prepared form that is itself an object (``A.T``) is read-only: writing into it is an
InputError.

What can change an object, and how each change reaches its prepared forms:

* gbdist's writes (``out=``, ``gr.assign``) replace its storage through ``_set``, which
  bumps the version: every prepared form (and ``A.T``, which remembers the version it was
  made from) is rebuilt on next use. gbdist never writes into an object's arrays in place,
  so objects that share storage (``gb.Matrix(B)``, ``A.T.T``) stay independent.
* The caller's arrays are never shared: a SciPy/CuPy matrix or NumPy/CuPy array given to
  ``gb.Matrix`` / ``gb.Vector`` is copied (a canonical CSR once, with no other work), so
  changing it afterwards (``S.data *= 2``, ``S[i, j] = v``, ``S.eliminate_zeros()``)
  changes nothing here.
* What the object hands out on the host is read-only: ``A.csr``, ``A.to_scipy()``,
  ``v.indices`` and ``v.values`` are views whose arrays refuse writes (``ValueError:
  assignment destination is read-only``; ``.copy()`` gives a writable copy). On the
  device CuPy has no read-only arrays: do not write into what ``to_cupy()`` returns.

A ``dtype=`` at construction (``Matrix``, ``Vector``, ``from_coo``, ``dup``) casts as
every other cast (:func:`~gbdist.backends.graph_reference.cast`).
"""
from __future__ import annotations


import numpy as np
import scipy.sparse as sps

from ..backends.graph_reference import cast as _cast
from ..errors import InputError
from ..inputs import is_cupy
from . import sparse as S
from .masks import Mask
from .construct import (ABSENT, _Cached, _check_fill, _dedup, _family, _readonly_csr,  # noqa: F401
                        _refuse_hypersparse, _transpose)
from .vector import Vector

# The prepared forms that hold what is known of a matrix's symmetry (:meth:`Matrix.known_symmetry`)
SYMMETRIC_PATTERN = "pattern symmetric"  # bool: every stored (i, j) has a stored (j, i)
SYMMETRIC_VALUES = "values symmetric"    # True: and the same value, bit for bit (never False)


class Matrix(_Cached):
    """A sparse matrix operand: ``gb.Matrix(x, fill="absent", dtype=None)``.

    ``x``: a SciPy sparse matrix/array (any format), a cupyx sparse matrix, a 2-D NumPy
    or CuPy array (its nonzeros are stored), or a Matrix (shares its data). Duplicates in
    a COO input are summed (SciPy's rule); use :meth:`from_coo` to refuse or combine them.
    """

    def __init__(self, x=None, fill=ABSENT, dtype=None, *, _csr=None):
        self._init_cache()
        self._fill = _check_fill(fill)
        if _csr is None:
            _refuse_hypersparse(x, "Matrix")
            _csr = _as_csr(x)
        self._transpose_of = None
        self._set(_csr, dtype)
        if isinstance(x, Matrix):  # its storage, or a cast of each value
            self._inherit_symmetry(x, values=True)

    def _set(self, csr, dtype=None):
        """Replace the storage (a canonical CSR gbdist owns) and bump the version."""
        self._check_writable()
        dt = S.check_dtype(csr.dtype if dtype is None else dtype, "the matrix")
        on_device = is_cupy(csr.indptr)
        if csr.dtype != dt:  # GraphBLAS's typecast (NaN → 0, saturating), not astype
            csr = S.make_csr(_cast(csr.data, dt, S.xp_of(on_device)), csr.indices, csr.indptr,
                             csr.shape, on_device)
        self._store(csr, on_device)
        self._changed()

    def _store(self, csr, on_device):
        self._csr = csr
        self._on_device = on_device
        self._xp = S.xp_of(on_device)
        self._shape = (int(csr.shape[0]), int(csr.shape[1]))
        self._nvals = int(csr.indptr[-1]) if not on_device else int(csr.nnz)
        full = self._nvals == self._shape[0] * self._shape[1]
        self._kind = (None if full else self._fill, self._fill, csr.data.dtype)

    @classmethod
    def _wrap(cls, csr, fill, on_device=False) -> "Matrix":
        """A new Matrix holding ``csr`` (a canonical CSR of a graph dtype that gbdist made
        and no one else holds), without the checks of ``__init__``: results of operations."""
        self = cls.__new__(cls)
        self._version, self._cache = 0, {}
        self._fill = fill
        self._transpose_of = None
        self._store(csr, on_device)
        return self

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def from_coo(cls, rows, cols, values, shape, dtype=None, dup_op=None, fill=ABSENT,
                 on_device=False):
        """A matrix from coordinates. Duplicates are an InputError unless ``dup_op`` (a
        binary op, e.g. ``gb.ops.plus``) combines them (in the order given)."""
        xp = S.xp_of(on_device)
        m, n = (int(shape[0]), int(shape[1]))
        rows = xp.asarray(rows).astype(np.int64, copy=False).ravel()
        cols = xp.asarray(cols).astype(np.int64, copy=False).ravel()
        values = xp.asarray(values)
        if values.ndim == 0:
            values = xp.ascontiguousarray(xp.broadcast_to(values, rows.shape))
        values = values.ravel()
        if not (rows.size == cols.size == values.size):
            raise InputError("from_coo: rows, cols and values differ in length",
                             got=f"{rows.size}, {cols.size}, {values.size}")
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= m or int(cols.min()) < 0
                          or int(cols.max()) >= n):
            raise InputError("from_coo: an index is outside the shape", expected=f"shape {(m, n)}",
                             got=f"rows in [{int(rows.min())}, {int(rows.max())}], "
                                 f"cols in [{int(cols.min())}, {int(cols.max())}]")
        dt = S.check_dtype(values.dtype if dtype is None else dtype, "values")
        keys, vals = _dedup(rows * n + cols, values, dt, dup_op, xp)
        return cls(fill=fill, _csr=S.keys_csr(keys, vals, (m, n), on_device))

    @classmethod
    def sparse(cls, shape, dtype=np.float64, fill=ABSENT, on_device=False):
        """An empty matrix (no stored entries)."""
        xp = S.xp_of(on_device)
        z = xp.zeros(0, dtype=np.int64)
        return cls(fill=fill, _csr=S.keys_csr(z, xp.zeros(0, dtype=S.check_dtype(dtype, "dtype")),
                                             (int(shape[0]), int(shape[1])), on_device))

    def dup(self, dtype=None, fill=None) -> "Matrix":
        """A copy (data copied), optionally cast / with another fill."""
        return Matrix(fill=self._fill if fill is None else fill, dtype=dtype,
                      _csr=self._csr.copy())._inherit_symmetry(self, values=True)

    # --- properties -----------------------------------------------------------------------

    shape = property(lambda self: self._shape)
    nrows = property(lambda self: self._shape[0])
    ncols = property(lambda self: self._shape[1])
    nvals = property(lambda self: self._nvals)
    dtype = property(lambda self: self._csr.data.dtype)
    fill = property(lambda self: self._fill)
    on_device = property(lambda self: self._on_device)
    ndim = 2

    xp = property(lambda self: self._xp)  # NumPy or CuPy: where the arrays live

    @property
    def csr(self):
        """The canonical CSR, shared with the matrix: on the host its arrays are read-only
        views (``A.csr.copy()`` for a writable copy); on the device do not modify it."""
        if self._on_device:
            return self._csr
        return self.prepared("read-only csr", lambda: _readonly_csr(self._csr))

    @property
    def effective_fill(self):
        """The fill, or None when every entry is stored (the fill then means nothing)."""
        return None if self._nvals == self._shape[0] * self._shape[1] else self._fill

    @property
    def T(self) -> "Matrix":
        """The transpose (cached on this matrix; ``A.T.T is A``). Read-only: ``out=`` or
        ``assign`` into it is an InputError (write into ``A.T.dup()``)."""
        if self._transpose_of is not None and self._transpose_of._version == self._made_at:
            return self._transpose_of

        def build():
            t = Matrix._wrap(_transpose(self._csr, self._on_device), self._fill, self._on_device)
            t._transpose_of, t._made_at = self, self._version
            t._view_of = self  # read-only: written into, it would go stale (issue 24)
            return t._inherit_symmetry(self, values=True)  # A == Aᵀ exactly when Aᵀ == A
        return self.prepared("T", build)

    def has_transpose(self) -> bool:
        """Whether ``self.T`` is at hand without computing it."""
        return self.has_prepared("T") or (self._transpose_of is not None
                                          and self._transpose_of._version == self._made_at)

    SYMMETRIC_PATTERN, SYMMETRIC_VALUES = SYMMETRIC_PATTERN, SYMMETRIC_VALUES

    # --- what is known of A == Aᵀ (prepared forms: dropped on every change) -------------

    def known_symmetry(self):
        """What this matrix already knows of its symmetry, computing nothing: ``"values"``
        (equal to its transpose, values bit for bit), ``"pattern"`` (every stored (i, j) has
        a stored (j, i); values not known), ``False`` (the pattern is not symmetric) or None
        (not known). Known from a check (``algorithms.pattern_is_symmetric``) or carried from
        the operand by an operation that keeps it (:meth:`_inherit_symmetry`), or known of
        its transpose (A and Aᵀ are symmetric together) when that is at hand."""
        k = self._own_symmetry()
        if k is None:  # A.T made before A was checked, or A checked after A.T was made
            if self._transpose_of is not None and self._transpose_of._version == self._made_at:
                k = self._transpose_of._own_symmetry()
            elif self.has_prepared("T"):
                k = self.known("T")._own_symmetry()
        return k

    def _own_symmetry(self):
        if self.known(SYMMETRIC_VALUES):
            return "values"
        p = self.known(SYMMETRIC_PATTERN)
        return None if p is None else ("pattern" if p else False)

    def _inherit_symmetry(self, src, values: bool, subset: bool = False) -> "Matrix":
        """Carry ``src``'s known symmetry to this matrix, which has ``src``'s pattern (or its
        transpose's; ``subset``: the part of it a selection that keeps or drops (i, j) and
        (j, i) together kept): the pattern's flag (only a True one for a subset, as a
        subset of an asymmetric pattern may be symmetric); the values' only when ``values``
        (each value here is a function of the value at the same place in ``src`` alone) and
        src's values are known symmetric (a value-changing op may make unequal values
        equal, so "not symmetric" is not carried). Returns self."""
        k = src.known_symmetry() if isinstance(src, Matrix) else None
        if k is not None and self.shape == src.shape and (k is not False or not subset):
            self._know(SYMMETRIC_PATTERN, k is not False)
            if values and k == "values":
                self._know(SYMMETRIC_VALUES, True)
        return self

    def keys(self):
        """Sorted int64 keys ``i * ncols + j`` of the stored entries (cached)."""
        return self.prepared("keys", lambda: S.csr_keys(self._csr, self.xp))

    @property
    def S(self) -> Mask:
        return Mask(self, structural=True)

    @property
    def V(self) -> Mask:
        return Mask(self, structural=False)

    # --- conversion -----------------------------------------------------------------------

    def to_scipy(self) -> sps.csr_matrix:
        """A SciPy CSR on the host: the matrix's own arrays as read-only views when it lives
        there (``.copy()`` for a writable one), else a read-only host copy (kept)."""
        if self._on_device:
            return self.prepared("host", lambda: _readonly_csr(self._csr.get()))
        return self.csr

    def to_cupy(self):
        return self._csr if self.on_device else self.prepared(
            "device", lambda: S.to_device_csr(self._csr))

    def to_dense(self, fill=0):
        """A dense array (``xp``) with ``fill`` where nothing is stored."""
        xp = self.xp
        dt = np.result_type(self.dtype, np.asarray(fill).dtype) if fill != 0 else self.dtype
        out = xp.full(self.shape, fill, dtype=dt)
        keys = self.keys()
        n = max(self.ncols, 1)
        out[keys // n, keys % n] = self._csr.data
        return out

    def to_coo(self):
        """``(rows, cols, values)``, row-major."""
        keys = self.keys()
        n = max(self.ncols, 1)
        return keys // n, keys % n, self._csr.data.copy()

    def to_device(self) -> "Matrix":
        return self if self._on_device else Matrix(
            fill=self._fill, _csr=self.to_cupy())._inherit_symmetry(self, values=True)

    def to_host(self) -> "Matrix":
        return Matrix(fill=self._fill, _csr=self._csr.get())._inherit_symmetry(
            self, values=True) if self._on_device else self

    def isequal(self, other) -> bool:
        """Same shape, pattern and values, dtypes of the same family (bool / int / float)."""
        other = other if isinstance(other, Matrix) else Matrix(other)
        if self.shape != other.shape or self.nvals != other.nvals:
            return False
        if _family(self.dtype) != _family(other.dtype):
            return False
        a, b = self.to_host(), other.to_host()
        return bool(np.array_equal(a.keys(), b.keys())
                    and np.array_equal(a._csr.data, b._csr.data, equal_nan=a.dtype.kind == "f"))

    def __repr__(self):
        where = "device" if self.on_device else "host"
        return (f"gb.Matrix({self.nrows}×{self.ncols}, nvals={self.nvals}, dtype={self.dtype}, "
                f"fill={self._fill!r}, {where})")

    def __eq__(self, other):  # an object, not an elementwise comparison
        return self is other

    def __getitem__(self, index):
        """``A[i, j]`` a :class:`~.scalar.Scalar`, ``A[i, :]`` / ``A[:, j]`` Vectors,
        ``A[rows, cols]`` a Matrix (:func:`.scalar.getitem`)."""
        return self._graph_operation("_getitem")(self, index)

    __hash__ = object.__hash__


# ---------------------------------------------------------------------------------------


def _as_csr(x):
    """The canonical CSR of ``x``, in arrays no one else holds: the caller's SciPy/CuPy
    matrix is copied (or converted, which copies), never wrapped (module docstring)."""
    if isinstance(x, Matrix):
        return x._csr  # gbdist's own storage, never written in place: shared
    if isinstance(x, S.DeviceCSR):
        return x.copy()
    if is_cupy(x):
        cps = S.cupyx_sparse()
        if cps.issparse(x):
            csr = x.tocsr()
            if csr is x or csr.data is x.data:
                csr = csr.copy()
        else:
            if x.ndim != 2:
                raise InputError("a Matrix needs 2-D data", got=f"{x.ndim}-D array")
            arr = x.astype(S.check_dtype(x.dtype, "the matrix"), copy=False)
            rows, cols = S.cupy().nonzero(arr)
            keys = rows.astype(np.int64) * arr.shape[1] + cols
            return S.keys_csr(keys, arr[rows, cols], arr.shape, True)
        if not csr.has_canonical_format:
            csr.sum_duplicates()
        return csr
    if sps.issparse(x):
        if x.format == "csr":  # the caller's arrays: copied once (one pass, no other work)
            csr = sps.csr_matrix((x.data.copy(), x.indices.copy(), x.indptr.copy()),
                                 shape=x.shape)
            if x.has_canonical_format:  # known already: not checked again
                csr.has_canonical_format = True
        else:
            csr = sps.csr_matrix(x.tocsr())  # a conversion makes new arrays
        if not csr.has_canonical_format:
            csr.sum_duplicates()
        return csr
    if isinstance(x, np.ndarray) or isinstance(x, (list, tuple)):
        arr = np.asarray(x)
        if arr.ndim != 2:
            raise InputError("a Matrix needs 2-D data", got=f"{arr.ndim}-D array")
        return sps.csr_matrix(arr.astype(S.check_dtype(arr.dtype, "the matrix"), copy=False))
    raise InputError("cannot make a gb.Matrix from this", got=type(x).__name__,
                     expected="SciPy/cupyx sparse, a 2-D NumPy/CuPy array, or a gb.Matrix")


def as_matrix(x, label="A") -> Matrix:
    return x if isinstance(x, Matrix) else Matrix(x)


def as_vector(x, label="u") -> Vector:
    return x if isinstance(x, Vector) else Vector(x)


def square_symmetry(res, A, B, sr, mask, domain) -> None:
    """Mark ``res`` = A ⊕.⊗ B (under ``mask``) symmetric, values bit for bit, where that
    follows from the algebra without a check: B is A, A is symmetric (its values, or only
    its pattern when ⊗ reads no value), ⊗ commutes, the mask (complemented or not) is
    symmetric, and the domain is integer or bool (⊕ gives the same bits whatever order a
    kernel adds in; in floats a sum's rounding, a max's ±0 or NaN payload may not). C(i, j)
    and C(j, i) then add the same terms. An iterated masked square (ktruss) then skips the
    next product's symmetry check."""
    from ..compiler.graph import mul_symmetry
    if B is not A or not isinstance(A, Matrix) or A.nrows != A.ncols:
        return
    commutes, reads = mul_symmetry(sr.mul)
    known = A.known_symmetry()
    if not commutes or known not in ("values", "pattern") or (reads and known != "values"):
        return
    if np.dtype(domain).kind not in "biu":
        return
    if mask is not None:
        m = mask.source.known_symmetry() if isinstance(mask.source, Matrix) else None
        if m not in ("values", "pattern") or (not mask.structural and m != "values"):
            return
    res._know(SYMMETRIC_PATTERN, True)
    res._know(SYMMETRIC_VALUES, True)

