"""The mathematics of an explanation: formulas tidied for reading, printed as text or LaTeX.

Everything here works on sympy expressions and returns sympy expressions or
strings; nothing is evaluated from text. Three jobs:

* :func:`tidy` — a formula as a student would write it: ``Max(0, x) - Min(0, x)``
  becomes ``|x|`` (only where the two are checked equal), ``Eq(Abs(x), 0)``
  becomes ``x = 0``, and a branch whose IEEE value is a constant infinity
  (``x·log(x/0)`` for x > 0) is shown as ``∞`` instead of sympy's ``zoo``.
* :func:`exact_constant` — a float from the IR shown exactly (``√2``, ``log 2``)
  when a short closed form has exactly that binary value.
* :func:`text` / :func:`latex` — one-line Unicode text for terminals (``|x − y|``,
  ``√x``, ``x²``, cases in braces) and LaTeX for notebooks and Markdown.

:func:`symbolic` turns an IR expression over products and reductions into a
sympy expression over named leaves (``P1``, ``S1``, ``k``, ``t0`` ...), so the
metric and the plan's epilogue print as mathematics too.
"""
from __future__ import annotations

import math

import numpy as np
import sympy as sp

from . import ir
from ..algebra.formulas import build
from ..algebra.mathtext import flatten, text



# ---------------------------------------------------------------------------
# Tidying
# ---------------------------------------------------------------------------


def tidy(expr, domain: str = "real"):
    """``expr`` rewritten for reading; every rewrite is one the values allow.

    The |x| rewrite is applied only when ``proofs.check`` confirms it (sympy or
    the special points); the other rewrites are exact by construction.
    """
    if not isinstance(expr, sp.Basic):
        return expr
    out = expr
    try:
        out = _ieee_branches(out, domain)
        out = _abs_conditions(out)
        out = _max_min_as_abs(out, domain)
    except Exception:  # noqa: BLE001 - tidying is cosmetic: the formula as it was is shown
        return expr
    return out


def _abs_conditions(expr):
    """``Eq(|u|, 0)`` is ``Eq(u, 0)``; ``Ne(|u|, 0)`` is ``Ne(u, 0)`` (exact for reals)."""
    def fix(rel):
        if isinstance(rel, (sp.Eq, sp.Ne)) and rel.rhs == 0 and isinstance(rel.lhs, sp.Abs):
            return build(type(rel), rel.lhs.args[0], sp.Integer(0))
        return rel
    return expr.replace(lambda e: isinstance(e, (sp.Eq, sp.Ne)), fix)


def _max_min_as_abs(expr, domain: str):
    """``Max(0, u) - Min(0, u)`` (in any order) shown as ``|u|``, when checked equal."""
    from ..algebra.proofs import check
    if not expr.has(sp.Max) or not expr.has(sp.Min):
        return expr
    u = sp.Wild("u")
    candidate = expr.replace(sp.Max(0, u) - sp.Min(0, u), sp.Abs(u))
    candidate = candidate.replace(-sp.Min(0, u) + sp.Max(0, u), sp.Abs(u))
    if candidate == expr:
        return expr
    return candidate if check("", candidate, expr, domain).holds else expr


def _ieee_branches(expr, domain: str):
    """A Piecewise branch (or a whole formula in one variable) whose IEEE value is the
    same infinity at every sample point is shown as that infinity."""
    def fix(pw):
        args = []
        for value, cond in pw.args:
            if cond is not sp.true and value.free_symbols:
                v = _constant_infinity(value, domain)
                if v is not None:
                    value = v
            elif cond is sp.true and value.free_symbols:
                v = _constant_infinity(value, domain)
                if v is not None:
                    value = v
            args.append((value, cond))
        return build(sp.Piecewise, *args)
    return expr.replace(lambda e: isinstance(e, sp.Piecewise), fix)


def _constant_infinity(value, domain: str):
    from ..algebra.evaluate import evaluate
    if not value.has(sp.zoo) and not any(
            isinstance(p, sp.Pow) and p.exp.is_negative and p.base == 0
            for p in sp.preorder_traversal(value)):
        return None  # only a division by zero can make a branch a constant infinity
    pts = np.array([0.25, 0.5, 1.0, 2.0, 3.75, 7.0, 1e3])
    if domain == "real":
        pts = np.concatenate([pts, -pts])
    with np.errstate(all="ignore"):
        vals = np.broadcast_to(np.asarray(evaluate(value, {"x": pts, "y": pts}), dtype=float),
                               pts.shape)
    if np.all(vals == np.inf):
        return sp.oo
    if np.all(vals == -np.inf):
        return -sp.oo
    return None


def exact_constant(v: float) -> sp.Expr:
    """A float shown exactly when a short closed form has exactly its value (√2, log 2, π),
    else the float itself (as its shortest decimal)."""
    if isinstance(v, sp.Basic):
        return v
    if not math.isfinite(v):
        return sp.oo if v > 0 else -sp.oo if v < 0 else sp.nan
    if v == int(v) and abs(v) < 2**53:
        return sp.Integer(int(v))
    try:
        c = sp.nsimplify(v, [sp.pi, sp.E])
        if float(c) == v and sp.count_ops(c) <= 4 and not (c.is_Rational and c.q > 1000):
            return c
        for n in range(2, 13):  # 1/√n, √n/n: nsimplify's rounding can miss these
            for cand in (1 / sp.sqrt(n), sp.sqrt(n) / n, sp.sqrt(n)):
                if float(cand) == v:
                    return cand
    except Exception:  # noqa: BLE001 - no closed form: the float
        pass
    return sp.Float(repr(v), 6)


# ---------------------------------------------------------------------------
# IR -> sympy over named leaves
# ---------------------------------------------------------------------------

_FUNCS = {
    "add": lambda a, b: sp.Add(a, b), "sub": lambda a, b: sp.Add(a, sp.Mul(-1, b)),
    "mul": lambda a, b: sp.Mul(a, b), "div": lambda a, b: sp.Mul(a, sp.Pow(b, -1)),
    "pow": lambda a, b: sp.Pow(a, b), "neg": lambda a: sp.Mul(-1, a),
    "sqrt": lambda a: sp.Pow(a, sp.Rational(1, 2)), "abs": sp.Abs, "log": sp.log, "exp": sp.exp,
    "asin": sp.asin,
    "maximum": sp.Max, "minimum": sp.Min,
    # a comparison is a value, 1 or 0 (the Iverson bracket [a = b]), as the IR computes it:
    # correlation adds two of them; where() reads it back as the condition
    "eq": lambda a, b: _iverson(sp.Eq(a, b)), "ne": lambda a, b: _iverson(sp.Ne(a, b)),
    "lt": lambda a, b: _iverson(sp.Lt(a, b)), "le": lambda a, b: _iverson(sp.Le(a, b)),
    "gt": lambda a, b: _iverson(sp.Gt(a, b)), "ge": lambda a, b: _iverson(sp.Ge(a, b)),
    "where": lambda c, a, b: sp.Piecewise((a, _condition(c)), (b, True)),
}


class Bracket(sp.Function):
    """[c]: 1 where the condition c holds, else 0 (the Iverson bracket), kept as written."""

    nargs = 1

    def _sympystr(self, printer):
        return f"[{printer._print(self.args[0])}]"

    def _latex(self, printer):
        return r"\left[" + printer._print(self.args[0]) + r"\right]"


def _iverson(cond) -> sp.Expr:
    return build(Bracket, cond)


def _condition(c):
    """where()'s first argument as a condition: the comparison inside a bracket [c], or
    c ≠ 0 for any other value."""
    if isinstance(c, Bracket):
        return c.args[0]
    if isinstance(c, (sp.core.relational.Relational, sp.logic.boolalg.Boolean)):
        return c
    return sp.Ne(c, 0)


class Leaves:
    """Names for the non-pointwise nodes of an expression, in order of first use."""

    def __init__(self, names: dict | None = None):
        self.names: dict = dict(names or {})  # node key -> (Symbol, node)
        self.counts = {"P": 0, "S": 0}

    def symbol(self, node: ir.Node) -> sp.Symbol:
        if node.key in self.names:
            return self.names[node.key][0]
        if isinstance(node, ir.Ref):
            s = sp.Symbol(node.name)
        elif isinstance(node, ir.NCols):
            s = sp.Symbol("k")
        else:
            prefix = "P" if isinstance(node, (ir.MxM, ir.MxV, ir.Intersect, ir.TwoPassUnion)) else "S"
            self.counts[prefix] += 1
            s = sp.Symbol(f"{prefix}{self.counts[prefix]}")
        self.names[node.key] = (s, node)
        return s

    def legend(self) -> list[tuple[sp.Symbol, ir.Node]]:
        return [(s, n) for s, n in self.names.values()
                if not isinstance(n, ir.NCols) and not isinstance(n, ir.Ref)]


def symbolic(node: ir.Node, leaves: Leaves) -> sp.Expr:
    """The IR expression as sympy, built as written (no simplification), over named leaves."""
    if node.key in leaves.names:
        return leaves.names[node.key][0]
    if isinstance(node, ir.Const):
        return exact_constant(node.value)
    if isinstance(node, ir.Pointwise):
        args = [symbolic(a, leaves) for a in node.args]
        return build(_FUNCS[node.fn], *args)
    return leaves.symbol(node)


# ---------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------


def latex(expr) -> str:
    """LaTeX (no surrounding $), with ``oo`` as ∞ and cases for conventions."""
    if not isinstance(expr, sp.Basic):
        return r"\text{" + str(expr) + "}"
    try:
        return sp.latex(flatten(expr))
    except Exception:  # noqa: BLE001
        return r"\text{" + text(expr) + "}"


# What one step's result holds, said by its index: the plan's kinds "col" (a column
# vector, one value per output row i) and "row" (one per output column j) read backwards.
STEP_SHAPE = {"matrix": "i × j: one per pair", "col": "one per row i of A",
              "row": "one per row j of B"}


__all__ = ["STEP_SHAPE", "tidy", "exact_constant", "symbolic", "Leaves", "text", "latex"]
