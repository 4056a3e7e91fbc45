"""``gr.Scalar`` (a value that may be empty, GraphBLAS's GrB_Scalar) and element access:
``A[i, j]`` is a Scalar, ``A[i, :]`` / ``A[:, j]`` Vectors, ``A[rows, cols]`` a Matrix,
``v[i]`` a Scalar and ``v[idx]`` a Vector (python-graphblas's ``A[i, j].new()`` …).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import InputError
from . import sparse as S


class Scalar:
    """A typed value or nothing: ``Scalar.from_value(3.0)``, ``Scalar(np.int64)`` (empty).
    ``.value`` is a NumPy scalar or None, ``.is_empty``, ``.nvals`` (0 or 1)."""

    def __init__(self, dtype=np.float64, value=None):
        self._dtype = S.check_dtype(dtype, "the scalar")
        self._value = None if value is None else self._dtype.type(value)

    @classmethod
    def from_value(cls, value, dtype=None):
        if value is None:
            return cls(np.float64 if dtype is None else dtype)
        v = np.asarray(value)
        if v.ndim:
            raise InputError("Scalar.from_value takes one value", got=f"shape {v.shape}")
        return cls(v.dtype if dtype is None else dtype, v.item())

    dtype = property(lambda self: self._dtype)
    value = property(lambda self: self._value)
    is_empty = property(lambda self: self._value is None)
    nvals = property(lambda self: 0 if self._value is None else 1)
    ndim = 0

    def clear(self):
        self._value = None

    def isequal(self, other) -> bool:
        other = other if isinstance(other, Scalar) else Scalar.from_value(other)
        if self.is_empty or other.is_empty:
            return self.is_empty and other.is_empty
        a, b = self._value, other._value
        return bool(a == b or (a != a and b != b))

    def __bool__(self):
        return bool(self._value) if self._value is not None else False

    def __float__(self):
        if self._value is None:
            raise InputError("float() of an empty Scalar")
        return float(self._value)

    def __int__(self):
        if self._value is None:
            raise InputError("int() of an empty Scalar")
        return int(self._value)

    def __repr__(self):
        return f"gr.Scalar({'empty' if self.is_empty else self._value!r}, dtype={self._dtype})"


def _is_int(x) -> bool:
    return isinstance(x, (numbers.Integral, np.integer)) and not isinstance(x, bool)


def _one(i, n, label) -> int:
    i = int(i)
    if not -n <= i < n:
        raise InputError(f"{label} out of range", expected=f"in [-{n}, {n})", got=str(i))
    return i + n if i < 0 else i


def getitem(x, index):
    """``x[index]`` of a Matrix or Vector (module docstring)."""
    from .indexing import extract
    if x.ndim == 1:
        if _is_int(index):
            i = _one(index, x.size, "index")
            pos, found = S.locate(x.xp.asarray([i], dtype=np.int64), x._idx, x.xp)
            return Scalar(x.dtype, x._vals[int(pos[0])].item() if bool(found[0]) else None)
        return extract(x, index)
    if not isinstance(index, tuple) or len(index) != 2:
        raise InputError("a Matrix is indexed by two indices", got=repr(index),
                         hint="A[i, j] (a Scalar), A[i, :] (a Vector), A[rows, cols]")
    r, c = index
    if _is_int(r) and _is_int(c):
        i, j = _one(r, x.nrows, "row"), _one(c, x.ncols, "column")
        csr = x._csr
        lo, hi = int(csr.indptr[i]), int(csr.indptr[i + 1])
        cols = csr.indices[lo:hi]
        p = int(x.xp.searchsorted(cols, x.xp.asarray([j], dtype=cols.dtype))[0]) if hi > lo else 0
        hit = p < hi - lo and int(cols[p]) == j
        return Scalar(x.dtype, csr.data[lo + p].item() if hit else None)
    if _is_int(r):
        M = extract(x, [_one(r, x.nrows, "row")], c)
        return _row_vector(M)
    if _is_int(c):
        return _row_vector(extract(x.T, [_one(c, x.ncols, "column")], r))
    return extract(x, r, c)


def _row_vector(M):
    """The single row of a 1 × n Matrix as a Vector."""
    from .objects import Vector
    v = Vector._wrap(M._csr.indices.astype(np.int64), M._csr.data.copy(), M.ncols, M.fill,
                     M.on_device)
    v.decision = M.decision
    return v
