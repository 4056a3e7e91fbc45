"""Reductions beyond monoids: ``count`` (stored entries per row / column) and ``argmin`` /
``argmax`` (the position of the smallest / largest stored value per row or column, or of
a vector), as python-graphblas's ``agg.count`` and ``agg.ss.argmin`` / ``argmax``.

Ties go to the lowest index (python-graphblas's rule, checked in the tests); a row whose
stored values are all NaN has no argmin (no value equals the NaN-ignoring minimum).
Rows (columns) without stored entries have no entry in the result. Array work on the
operand's ``xp``: the same code on the host and the device.
"""
from __future__ import annotations

import numpy as np

from ..algebra import ops
from ..compiler import graph as rule
from ..errors import InputError
from .objects import Matrix, Vector

_AXES = ("rows", "cols")


def _axis(A, axis, what):
    if axis not in _AXES:
        raise InputError(f"{what}: unknown axis", got=repr(axis), expected="'rows' or 'cols'")
    return A if axis == "rows" else A.T


def _dec(what):
    return rule.Decision(what, True, rule.ABSENT, "counts and positions of stored entries: "
                                                  "only stored entries take part")


def count(A, axis="rows"):
    """Stored entries per row (``axis="rows"``) or column: an int64 Vector, present where
    there is at least one; of a Vector, its ``nvals`` (an int)."""
    from .indexunary import operand
    A = operand(A)
    if A.ndim == 1:
        return int(A.nvals)
    M = _axis(A, axis, "count")
    xp = M.xp
    deg = xp.diff(M._csr.indptr).astype(np.int64)
    keys = xp.flatnonzero(deg).astype(np.int64, copy=False)
    res = Vector._wrap(keys, deg[keys], M.nrows, rule.ABSENT, M.on_device)
    res.decision = _dec(f"count ({axis})")
    return res


def argmin(A, axis="rows"):
    """Per row (column), the column (row) of the smallest stored value, ties to the lowest;
    of a Vector, the index (an int; None when nothing is stored)."""
    return _arg(A, axis, ops.min, "argmin")


def argmax(A, axis="rows"):
    """As :func:`argmin`, for the largest value."""
    return _arg(A, axis, ops.max, "argmax")


def _arg(A, axis, op, what):
    from .indexunary import operand
    from .operations import reduce_rows
    A = operand(A)
    if A.dtype == np.bool_:
        A = A.dup(dtype=np.int64)  # GraphBLAS orders bools as 0 < 1
    if A.ndim == 1:
        xp = A.xp
        if A.nvals == 0:
            return None
        vals = A._vals
        numbers = vals[~xp.isnan(vals)] if vals.dtype.kind == "f" else vals
        if numbers.size == 0:  # every value NaN: no position
            return None
        best = numbers.min() if op is ops.min else numbers.max()
        return int(A._idx[int(xp.flatnonzero(vals == best)[0])])
    M = _axis(A, axis, what)
    if M.fill != rule.ABSENT:
        M = Matrix._wrap(M._csr, rule.ABSENT, M.on_device)  # stored entries only
    xp = M.xp
    best = reduce_rows(M, op)  # fmin / fmax: NaN ignored
    bv = best.to_dense(fill=0)  # from its full or bitmap form: no keys made
    keys = M.keys()
    n = max(M.ncols, 1)
    rows = keys // n
    cand = xp.flatnonzero(M._csr.data == bv[rows])
    r = rows[cand]
    first = xp.ones(r.shape, dtype=bool)
    first[1:] = r[1:] != r[:-1]
    cand = cand[first]
    res = Vector._wrap(rows[cand], (keys[cand] - rows[cand] * n).astype(np.int64), M.nrows,
                       rule.ABSENT, M.on_device)
    res.decision = _dec(f"{what} ({axis})")
    return res
