"""Formulas built as written: sympy constructors with automatic evaluation off, and a
structural text of any formula that never fails.

The lowest layer of :mod:`gbdist.algebra`'s formula code: :mod:`gbdist.algebra.formulas`
(the formula language) and :mod:`gbdist.algebra.mathtext` (the printer people read) both
build on it, so the printer can serve the formulas' own error messages without a cycle.
"""
from __future__ import annotations

from contextlib import nullcontext

import sympy as sp

from ..errors import DefinitionError


def building():
    """sympy's automatic evaluation off, for building formulas as written.

    Switching it clears sympy's whole cache (both ways), so a definition is built
    inside one such context (:func:`gbdist.algebra.ops.make_op`, the text front
    end's formula builder) and :func:`build` inside it switches nothing.
    """
    if not sp.core.parameters.global_parameters.evaluate:
        return nullcontext()
    return sp.evaluate(False)


def build(fn, *args):
    """Apply a sympy constructor without automatic simplification.

    sympy's automatic evaluation rewrites ``x/x`` to 1 and ``x - x`` to 0, which
    changes the IEEE value at singular points (0/0 is NaN). Formulas are kept as
    written; the analysis simplifies copies and checks every rewrite it uses
    against the written formula (see proofs.py).
    """
    try:
        with building():
            return fn(*args)
    except RecursionError:
        raise DefinitionError(
            "a scalar formula is too complex to build",
            got="sympy ran out of recursion depth on it",
            hint="split the formula into smaller ops, or nest fewer where() conditions") from None
    except (TypeError, ValueError) as e:
        raise DefinitionError("a scalar formula cannot be built", got=str(e)[:200],
                              hint="check the arguments of where(), comparisons and powers") from None


def structural_text(expr) -> str:
    """A formula as ``Type(args...)`` text, built without sympy's printers (which can
    fail on unevaluated trees); deterministic, so it serves as a key too."""
    if not isinstance(expr, sp.Basic):
        return repr(expr)
    if not expr.args:
        try:
            return sp.srepr(expr)
        except Exception:  # noqa: BLE001
            return f"{type(expr).__name__}({expr!s})"
    return f"{type(expr).__name__}({', '.join(structural_text(a) for a in expr.args)})"
