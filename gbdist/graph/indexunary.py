"""Index-unary ``select`` / ``apply`` and products over a positional ⊗.

An index-unary op (:class:`gbdist.algebra.positional.IndexUnaryOp`) is evaluated on the
stored entries' values, rows, columns (a vector's entry: its index, column 0) and the
thunk, as sorted-key array work on the operand's ``xp`` (NumPy or CuPy: the same code on
the host and the device). A product over a positional ⊗ (``any_secondi``,
``min_firstj`` …) is the algebra's rewrite (:func:`gbdist.algebra.positional.lower`):
the operand the index comes from is replaced by its index-valued form (an index-unary
apply, kept on the operand as a prepared form) and ⊗ by ``first`` / ``second``, run by
the value kernels of every backend; the result is int64 (python-graphblas's type) and
its decision says why the product is structural.
"""
from __future__ import annotations

import numpy as np

from ..algebra.positional import IndexUnaryOp, index_unary_arg, is_positional, lower
from ..algebra.semirings import Semiring
from ..compiler import graph as rule
from ..errors import InputError
from . import sparse as S
from .masks import as_mask
from .objects import Matrix, Vector, as_matrix, as_vector

_DEC = "{0} reads the entries' positions: only stored entries take part, unstored ones stay unstored"


def is_index_unary(op) -> bool:
    from ..algebra.positional import INDEX_UNARY
    return isinstance(op, IndexUnaryOp) or (isinstance(op, str) and op in INDEX_UNARY)


def operand(A):
    if isinstance(A, (Matrix, Vector)):
        return A
    return as_vector(A) if getattr(A, "ndim", 2) == 1 else as_matrix(A)


def positions(A, keys, row_vector=False):
    """(i, j) int64 of the entries ``keys`` of A: a matrix's row and column, a vector's
    index and 0 (``row_vector``: 0 and its index, a vector read as 1 × n)."""
    xp = A.xp
    if A.ndim == 1:
        z = xp.zeros(keys.shape, dtype=np.int64)
        return (z, keys) if row_vector else (keys, z)
    n = max(A.ncols, 1)
    i = keys // n
    return i, keys - i * n


def _thunk(op: IndexUnaryOp, thunk, A, what):
    if op.thunk == "none":
        return np.int64(0)
    if thunk is None:
        if op.thunk == "value":
            raise InputError(f"{what}: {op.name} compares values with a thunk; none given",
                             hint=f"e.g. gr.{what}(A, {op.name!r}, 0.5)")
        return np.int64(0)
    if op.thunk == "index":
        t = np.asarray(thunk)
        if t.ndim or t.dtype.kind not in "iubf" or (t.dtype.kind == "f" and not
                                                     float(t).is_integer()):
            raise InputError(f"{what}: {op.name}'s thunk is an index (an integer)", got=repr(thunk))
        return np.int64(t)
    from ..backends.graph_reference import cast
    return cast(np.asarray([thunk]), A.dtype)[0]  # the operand's own type (python-graphblas)


def evaluate(op, A, keys, vals, thunk, what, row_vector=False):
    op = index_unary_arg(op, what)
    i, j = positions(A, keys, row_vector)
    y = _thunk(op, thunk, A, what)
    return op, op.evaluate(vals, i, j, y, A.xp)


def select(A, op, thunk, *, mask, accum, out, replace, dtype):
    """``select`` with an index-unary op: the stored entries where it is true."""
    from . import memo
    from .results import _check_out, _vals, finish
    A = operand(A)
    kind = Matrix if A.ndim == 2 else Vector
    mask = as_mask(mask, A.shape, "select")
    out = _check_out(out, kind, A.shape, "select")
    dt = memo.domain(None, A.dtype, dtype)
    keys, vals = A.keys(), _vals(A)
    op, keep = evaluate(op, A, keys, vals, thunk, "select")
    keep = A.xp.asarray(keep) != 0
    dec = rule.Decision("select", True, A.fill, _DEC.format(f"select {op.name}")
                        + " (for fill=0 data a dropped entry becomes a 0)")
    return finish(kind, keys[keep], vals[keep], A.shape, dt, dec.result_fill, dec, mask=mask,
                  accum=accum, out=out, replace=replace, on_device=A.on_device)


def apply(op, A, thunk, *, mask, accum, out, replace, dtype, row_vector=False):
    """``apply`` with an index-unary op: its value at every stored entry (int64 for the
    index ops, bool for a predicate, NumPy's type of the formula for a user op)."""
    from .results import _check_out, _vals, finish
    A = operand(A)
    if A.effective_fill == 0:
        raise rule.GraphSemanticsError(
            "apply of an index-unary op to fill=0 data has no exact sparse result: every "
            "unstored 0 has a position too", got=repr(A),
            hint="use fill='absent' (a graph: only stored entries exist)")
    kind = Matrix if A.ndim == 2 else Vector
    mask = as_mask(mask, A.shape, "apply")
    out = _check_out(out, kind, A.shape, "apply")
    keys, vals = A.keys(), _vals(A)
    if mask is not None:
        keep = mask.allows(keys)
        keys, vals = keys[keep], vals[keep]
    op, res = evaluate(op, A, keys, vals, thunk, "apply", row_vector)
    res = A.xp.asarray(res)
    natural = {"bool": np.dtype(np.bool_), "int64": np.dtype(np.int64)}.get(
        op.result, res.dtype)
    dt = S.check_dtype(natural if dtype is None else dtype, "dtype=")
    dec = rule.Decision("apply", True, A.fill, _DEC.format(f"apply {op.name}"))
    C = finish(kind, keys, res.astype(natural, copy=False), A.shape, dt, dec.result_fill, dec,
               mask=mask, accum=accum, out=out, replace=replace, on_device=A.on_device)
    if kind is Matrix and mask is None and out is None:  # A's pattern; values by position
        C._inherit_symmetry(A, values=False)
    return C


# --- products over a positional ⊗ -----------------------------------------------------

_VALUE_SR: dict = {}


def _value_semiring(sr: Semiring, mul) -> Semiring:
    hit = _VALUE_SR.get(id(sr))
    if hit is not None and hit[0] is sr:
        return hit[1]
    out = Semiring.stored(mul, sr.add, None, f"{sr.add.name}_{mul.name}")
    _VALUE_SR[id(sr)] = (sr, out)
    return out


def _indexed(X, iop, row_vector):
    """X with its values replaced by ``iop``'s index (int64), kept on X."""
    key = ("positional-operand", iop.key, row_vector)
    return X.prepared(key, lambda: apply(iop, X, None, mask=None, accum=None, out=None,
                                         replace=False, dtype=None, row_vector=row_vector))


def product(name, fn, left, right, sr, kwargs):
    """``fn`` (mxm / mxv / vxm) of ``left``, ``right`` over the positional semiring ``sr``."""
    low = lower(sr.mul)
    dec = rule.product(name, sr, (left.effective_fill, right.effective_fill),
                       (left.fill, right.fill))  # the rule: structural, or refused on data
    if low.side == "first":
        left = _indexed(left, low.index_op, row_vector=(name == "vxm"))
    else:
        right = _indexed(right, low.index_op, row_vector=False)
    if kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": np.int64}
    res = fn(left, right, _value_semiring(sr, low.value_mul), **kwargs)
    res.decision = dec
    return res


__all__ = ["select", "apply", "product", "is_index_unary", "is_positional"]
