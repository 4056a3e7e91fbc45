"""Which plans read NaN as a missing value (:mod:`gbdist.algebra.missing`).

A plan *absorbs* NaN when every read of every matrix operand's values goes through a chain
of unary ops one of which tests ``isnan`` and maps NaN to a finite number (``known``:
NaN → 0, ``missing``: NaN → 1; checked by evaluating the op at NaN, not by its name), so
that no NaN of the data reaches a product, a reduction or the epilogue; ``ncols(A)``
reads the shape only. Such a plan takes NaN in its inputs as a value: the input check
lets NaN through (±inf is still refused unless the caller allows it), and the runtime does
not recompute the rows holding NaN in the direct form (:class:`gbdist.runtime.direct.Repair`):
the kernels never see one. Decided once per expression.
"""
from __future__ import annotations

import math

from . import ir

_SEEN: dict = {}


def absorbs_nan(expr: ir.Node) -> bool:
    """Whether every read of the operands' values in ``expr`` maps NaN to a finite number
    through an op that tests ``isnan`` (see the module docstring)."""
    hit = _SEEN.get(expr.key)
    if hit is None:
        if len(_SEEN) > 1024:
            _SEEN.clear()
        hit = _SEEN[expr.key] = _tests_isnan(expr) and _absorbed(expr, False)
    return hit


def _op_absorbs(op) -> bool:
    from ..algebra.evaluate import apply_unary
    if getattr(op, "arity", 1) != 1 or not op_reads_missing(op):
        return False
    import numpy as np
    return math.isfinite(float(apply_unary(op, np.array([np.nan]))[0]))


def _tests_isnan(expr: ir.Node) -> bool:
    for n in ir.walk(expr):
        if isinstance(n, ir.Apply) and op_reads_missing(n.op):
            return True
        if isinstance(n, (ir.MxM, ir.MxV)) and op_reads_missing(n.semiring.mul):
            return True
    return False


def op_reads_missing(op) -> bool:
    """Whether an op's formula tests ``isnan``: from its stored term when it has one (read
    without sympy, so a warm process that binds a plan stays without it), else from the
    formula (:func:`gbdist.algebra.missing.reads_missing`)."""
    term = getattr(op, "term", None)
    if term is None:
        from ..algebra.missing import reads_missing
        return reads_missing(op.formula)
    from ..algebra import terms
    stack = [term]
    while stack:
        t = stack.pop()
        if t[0] == "isnan":
            return True
        if t[0] == "Piecewise":
            for e, c in t[1:]:
                stack += [e, c]
        elif t[0] in terms.FUNCTIONS:
            stack.extend(t[1:])
    return False


def _absorbed(node: ir.Node, absorbed: bool) -> bool:
    if isinstance(node, (ir.Matrix, ir.Vector)):
        return absorbed
    if isinstance(node, ir.NCols):
        return True  # the shape only
    if isinstance(node, ir.Apply):
        return _absorbed(node.arg, absorbed or _op_absorbs(node.op))
    if isinstance(node, ir.Transpose):
        return _absorbed(node.arg, absorbed)
    return all(_absorbed(c, False) for c in node.children)
