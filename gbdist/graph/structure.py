"""Structure: ``kronecker``, ``diag``, ``concat`` / ``split`` and ``resize``.

python-graphblas's meanings: ``kronecker(A, B, op)`` is ``A.kronecker(B, op)``;
``diag(v, k)`` a square Matrix with v on the k-th diagonal (``v.diag(k)``) and
``diag(A, k)`` A's k-th diagonal as a Vector (``A.diag(k)``); ``concat(tiles)`` and
``split(A, chunks)`` are ``gb.ss.concat`` and ``A.ss.split``; ``resize(A, m, n)`` changes
A in place (entries outside the new shape are dropped), as ``A.resize``. All are
sorted-key array work on the operand's ``xp`` (host or device alike).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..backends.graph_reference import binary
from ..compiler import graph as rule
from ..errors import InputError
from . import sparse as S
from . import types as T
from .indexunary import operand
from .objects import Matrix, Vector


def _dec(what):
    return rule.Decision(what, True, rule.ABSENT, "moves stored entries; unstored entries stay "
                                                  "unstored")


def _matrix(keys, vals, shape, on_device, what):
    xp = S.xp_of(on_device)
    order = xp.argsort(keys, kind="stable")
    res = Matrix._wrap(S.keys_csr(keys[order], vals[order], shape, on_device), rule.ABSENT,
                       on_device)
    res.decision = _dec(what)
    return res


def kronecker(A, B, op, *, dtype=None):
    """``C(iA·mB + iB, jA·nB + jB) = op(A(iA, jA), B(iB, jB))`` over stored pairs."""
    A, B = operand(A), operand(B)
    op = T.binary_arg(op, "kronecker")
    if A.ndim != 2 or B.ndim != 2:
        raise InputError("kronecker takes two matrices", got=f"{A!r}, {B!r}")
    if A.on_device != B.on_device:
        raise InputError("kronecker: operands live on different devices")
    xp = A.xp
    dt = T.domain(dtype, [A.dtype, B.dtype], [op])
    (m1, n1), (m2, n2) = A.shape, B.shape
    shape = (m1 * m2, n1 * n2)
    ka, kb = A.keys(), B.keys()
    ia, ja = ka // max(n1, 1), ka % max(n1, 1)
    ib, jb = kb // max(n2, 1), kb % max(n2, 1)
    rows = (ia[:, None] * m2 + ib[None, :]).ravel()
    cols = (ja[:, None] * n2 + jb[None, :]).ravel()
    va = xp.repeat(A._csr.data, kb.size)
    vb = xp.tile(B._csr.data, ka.size)
    return _matrix(rows * shape[1] + cols, binary(op, va, vb, dt, xp), shape, A.on_device,
                   "kronecker")


def diag(x, k: int = 0):
    """A Vector → the square Matrix (size + |k|) with it on the k-th diagonal; a Matrix →
    its k-th diagonal as a Vector (entry ``i`` from row i for k ≥ 0, column i for k < 0)."""
    x = operand(x)
    k = int(k)
    xp = x.xp
    if x.ndim == 1:
        n = x.size + abs(k)
        idx = x._idx
        rows, cols = (idx, idx + k) if k >= 0 else (idx - k, idx)
        return _matrix(rows * n + cols, x._vals.copy(), (n, n), x.on_device, "diag")
    m, n = x.shape
    size = max(0, min(m, n - k)) if k >= 0 else max(0, min(m + k, n))
    keys = x.keys()
    i, j = keys // max(n, 1), keys % max(n, 1)
    on = xp.flatnonzero(j - i == k)
    idx = (i if k >= 0 else j)[on].astype(np.int64)
    res = Vector._wrap(idx, x._csr.data[on], size, rule.ABSENT, x.on_device)
    res.decision = _dec("diag")
    return res


def concat(tiles):
    """``gb.ss.concat``: a 2-D list of Matrices (tiles of one row share their row count,
    of one column their column count) as one Matrix; a 1-D list of Vectors as one Vector."""
    if not isinstance(tiles, (list, tuple)) or not tiles:
        raise InputError("concat takes a non-empty list (of lists) of tiles", got=repr(tiles))
    if all(isinstance(t, Vector) or getattr(t, "ndim", 2) == 1 for t in tiles) and \
            not isinstance(tiles[0], (list, tuple)):
        vs = [operand(t) for t in tiles]
        xp = vs[0].xp
        off = np.cumsum([0] + [v.size for v in vs])
        idx = xp.concatenate([v._idx + int(o) for v, o in zip(vs, off[:-1])])
        vals = xp.concatenate([v._vals for v in vs])
        res = Vector._wrap(idx, vals, int(off[-1]), rule.ABSENT, vs[0].on_device)
        res.decision = _dec("concat")
        return res
    grid = [[operand(t) for t in row] for row in tiles]
    heights = [row[0].nrows for row in grid]
    widths = [t.ncols for t in grid[0]]
    for r, row in enumerate(grid):
        if len(row) != len(widths) or any(t.ndim != 2 for t in row):
            raise InputError("concat: every row of tiles holds as many matrices",
                             got=f"row {r} has {len(row)}, row 0 has {len(widths)}")
        for c, t in enumerate(row):
            if t.shape != (heights[r], widths[c]):
                raise InputError("concat: tile shapes do not line up", got=f"tile ({r}, {c}) "
                                 f"is {t.shape}", expected=f"{(heights[r], widths[c])}")
    dt = np.result_type(*[t.dtype for row in grid for t in row])
    xp = grid[0][0].xp
    ro, co = np.cumsum([0] + heights), np.cumsum([0] + widths)
    shape = (int(ro[-1]), int(co[-1]))
    keys, vals = [], []
    for r, row in enumerate(grid):
        for c, t in enumerate(row):
            kk = t.keys()
            i, j = kk // max(t.ncols, 1), kk % max(t.ncols, 1)
            keys.append((i + int(ro[r])) * shape[1] + j + int(co[c]))
            vals.append(t._csr.data.astype(dt, copy=False))
    return _matrix(xp.concatenate(keys), xp.concatenate(vals), shape, grid[0][0].on_device,
                   "concat")


def _sizes(spec, n, what):
    if isinstance(spec, numbers.Integral):
        if spec <= 0:
            raise InputError(f"split: {what} chunk size must be positive", got=str(spec))
        return [min(spec, n - s) for s in range(0, n, spec)] or [0]
    sizes = [int(s) for s in spec]
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise InputError(f"split: the {what} chunk sizes must add up to the {what}",
                         expected=str(n), got=str(sizes))
    return sizes


def split(A, chunks):
    """``A.ss.split(chunks)``: ``chunks`` an int (square tiles, the last ones smaller), or
    (rows, cols), each an int or a list of sizes; a list of lists of Matrices (a Vector:
    a list of Vectors)."""
    from .indexing import extract
    A = operand(A)
    if A.ndim == 1:
        sizes = _sizes(chunks, A.size, "size")
        off = np.cumsum([0] + sizes)
        return [extract(A, slice(int(a), int(b))) for a, b in zip(off[:-1], off[1:])]
    rc = (chunks, chunks) if isinstance(chunks, numbers.Integral) else tuple(chunks)
    if len(rc) != 2:
        raise InputError("split: chunks is an int or (rows, cols)", got=repr(chunks))
    ro = np.cumsum([0] + _sizes(rc[0], A.nrows, "rows"))
    co = np.cumsum([0] + _sizes(rc[1], A.ncols, "cols"))
    return [[extract(A, slice(int(r0), int(r1)), slice(int(c0), int(c1)))
             for c0, c1 in zip(co[:-1], co[1:])] for r0, r1 in zip(ro[:-1], ro[1:])]


def resize(A, nrows, ncols=None):
    """Change A's shape in place (returns A): entries outside the new shape are dropped,
    as python-graphblas's ``A.resize``; a Vector takes ``resize(v, size)``."""
    if not isinstance(A, (Matrix, Vector)):
        raise InputError("resize changes a gb.Matrix / gb.Vector in place", got=type(A).__name__)
    if A.ndim == 1:
        keep = A._idx < int(nrows)
        A._set(A._idx[keep], A._vals[keep], int(nrows), A.dtype)
        return A
    m, n = int(nrows), int(A.ncols if ncols is None else ncols)
    if m < 0 or n < 0:
        raise InputError("resize: a negative dimension", got=f"{(m, n)}")
    keys = A.keys()
    i, j = keys // max(A.ncols, 1), keys % max(A.ncols, 1)
    keep = (i < m) & (j < n)
    A._set(S.keys_csr(i[keep] * n + j[keep], A._csr.data[keep], (m, n), A.on_device), A.dtype)
    return A
