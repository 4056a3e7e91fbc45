"""Names in the text language: scopes, lookup, the built-in functions, and the
definitions that live only in the text front end (ops with parameters, helpers).

A name in a definition resolves, in order, to: a name bound in the expression
(a parameter, an operand, a ``let``), a definition above it in the same text
(its *scope*), a name registered globally (:mod:`gbdist.names`: earlier texts,
the built-in library, built-in ops and semirings, metrics), or nothing (an
error that suggests a close name). Nothing else is reachable: no attribute,
import or string.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..compiler import ir
from .. import names
from ..algebra.semirings import Semiring
from ..errors import ArityError, DSLSyntaxError, TypeCheckError, UnknownNameError
from ..names import Metric
from ..algebra.ops import Monoid, Op
from .syntax import MAX_NUMBER_CHARS, Source, suggest

if TYPE_CHECKING:
    from lark import Tree  # a parse tree (lark is imported when a text is parsed)


# ---------------------------------------------------------------------------
# Definitions that live only in the text front end
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ParamOp:
    """An op with numeric parameters: ``op absdiff_pow(x, y; p) = abs(x - y)^p``.

    ``absdiff_pow(3)`` (where an op is expected) builds the Op with p = 3
    (:func:`gbdist.front.formula.instantiate`).
    """

    name: str
    args: tuple[str, ...]
    params: tuple[str, ...]
    body: Tree = field(repr=False)
    src: Source = field(repr=False)
    scope: dict = field(repr=False)
    doc: str = ""

    def __repr__(self):
        return f"op {self.name}({', '.join(self.args)}; {', '.join(self.params)})"


@dataclass(frozen=True, eq=False)
class Helper:
    """``def name(M, ...) = expression``: inlined wherever it is called."""

    name: str
    params: tuple[str, ...]
    body: Tree = field(repr=False)
    src: Source = field(repr=False)
    scope: dict = field(repr=False)
    doc: str = ""

    def __repr__(self):
        return f"def {self.name}({', '.join(self.params)})"


# Built-in functions, by the level they work at: (signature, what it does).
FORMULA_FUNCTIONS = {
    "abs": ("abs(a)", "absolute value"),
    "sqrt": ("sqrt(a)", "square root (makes the op's domain nonnegative)"),
    "log": ("log(a)", "natural logarithm (makes the op's domain nonnegative)"),
    "exp": ("exp(a)", "e to the power a"),
    "min": ("min(a, b)", "the smaller of a and b"),
    "max": ("max(a, b)", "the larger of a and b"),
    "where": ("where(cond, a, b)", "a where cond holds, else b"),
    "isnan": ("isnan(a)", "the condition that a is NaN, a missing value (isnan(0) is false)"),
}
EXPR_FUNCTIONS = {
    "mxm": ("mxm(L, R, semiring)", "C[i, j] = ⊕_k L[i, k] ⊗ R[k, j]"),
    "mxv": ("mxv(M, v, semiring)", "y[i] = ⊕_k M[i, k] ⊗ v[k]"),
    "reduce": ("reduce(M, monoid)", "⊕ over each row of M (unstored entries hold the fill)"),
    "apply": ("apply(op, M)", "a unary op on every entry of M (the fill becomes op(0))"),
    "ncols": ("ncols(M)", "k, the number of columns of M"),
    "semiring": ("semiring(mul, add, annihilator=...)", "a semiring: ⊗ = mul, ⊕ = add (a monoid)"),
    "sqrt": ("sqrt(a)", "square root over the output grid"),
    "abs": ("abs(a)", "absolute value over the output grid"),
    "log": ("log(a)", "natural logarithm over the output grid"),
    "exp": ("exp(a)", "e^a over the output grid"),
    "asin": ("asin(a)", "arcsine over the output grid (haversine's), a in [-1, 1]"),
    "min": ("min(a, b)", "elementwise minimum (broadcasting)"),
    "max": ("max(a, b)", "elementwise maximum (broadcasting)"),
    "where": ("where(cond, a, b)", "a where cond is nonzero, else b"),
    "whiten": ("whiten(A, VI, mu)", "A's rows mapped to (a − mu)·L, VI = L·Lᵀ (k × k), when bound"),
    "sphere": ("sphere(A)", "rows (latitude, longitude) in radians mapped to unit 3-vectors"),
    "wcentre": ("wcentre(A, w)", "A's rows u mapped to √w·(u − Σ w·u / Σ w), when bound"),
}
CONSTANTS = ("inf", "None")
RESERVED = set(FORMULA_FUNCTIONS) | set(EXPR_FUNCTIONS) | set(CONSTANTS)

BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "^": "pow", "**": "pow"}
COMPARE = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "pow": np.power, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
          "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
          "sqrt": np.sqrt, "abs": np.abs, "log": np.log, "exp": np.exp, "asin": np.arcsin,
          "maximum": np.maximum, "minimum": np.minimum, "neg": np.negative}


def number_text(tree) -> str:
    """The text of a number literal, refused if it is too long or not a finite float64."""
    text = str(tree.children[0])
    if len(text) > MAX_NUMBER_CHARS:
        raise DSLSyntaxError(f"the number literal is too long ({len(text)} characters)",
                             expected=f"at most {MAX_NUMBER_CHARS} characters",
                             hint="write large or small numbers with an exponent, e.g. 1.5e300")
    if not math.isfinite(float(text)):
        raise DSLSyntaxError(f"the number {text[:40]}{'...' if len(text) > 40 else ''} is beyond "
                             "the float64 range (about 1.8e308)", hint="write inf for infinity")
    return text


def fold(fn: str, *args: float) -> float:
    """A pointwise function on plain numbers (constant folding, as Python would do it)."""
    with np.errstate(all="ignore"):
        return float(_NUMPY[fn](*(np.float64(a) for a in args)))


# ---------------------------------------------------------------------------
# Name lookup
# ---------------------------------------------------------------------------


def lookup(name: str, scope: dict):
    """What ``name`` means outside any parameter list, or None."""
    if name in scope:
        return scope[name]
    return names.lookup(name)


def known_names(scope: dict) -> list[str]:
    """Every name visible from ``scope`` (for close-match suggestions)."""
    return list(scope) + names.known_names()


def arity(op) -> int:
    return op.arity if isinstance(op, Op) else len(op.args)


def op_names(scope: dict) -> list[str]:
    """The names of the ops visible from ``scope``."""
    return [n for n in known_names(scope) if isinstance(lookup(n, scope), (Op, ParamOp))]


def describe(thing) -> str:
    if isinstance(thing, ir.Node):
        return f"the expression {ir.to_text(thing)}"
    if isinstance(thing, (Op, ParamOp)):
        return f"the op {thing.name!r}"
    if isinstance(thing, Semiring):
        return f"the semiring {thing.name or repr(thing)}"
    if isinstance(thing, Monoid):
        return f"the monoid {thing.name!r}"
    if isinstance(thing, Metric):
        return f"the metric {thing.name!r}"
    if isinstance(thing, Helper):
        return f"the helper {thing.name!r}"
    if thing is None:
        return "None"
    return f"the number {thing:g}" if isinstance(thing, float) else repr(thing)


def _is_sym(value) -> bool:
    """A formula under construction (:class:`gbdist.algebra.sym.Sym`; none can exist
    before that module, which imports sympy, is loaded)."""
    module = sys.modules.get("gbdist.algebra.sym")
    return module is not None and isinstance(value, module.Sym)


def number_of(value, what) -> float:
    """A parameter's value: a number, or a column operand (:class:`ir.ColVector`, passed on
    to the ops that read it as ``w[col]``)."""
    if isinstance(value, ir.ColVector):
        return value
    if _is_sym(value):  # a parameter of the enclosing op, already a number
        try:
            return float(value.expr)
        except TypeError:
            pass
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise TypeCheckError(f"the parameters of {describe(what)} must be numbers",
                         got=describe(value) if not _is_sym(value) else str(value.expr))


def bind_params(owner, positional: list, keywords: dict, defaults: dict | None = None) -> dict:
    """Match parameter values to ``owner.params`` (positional first, then by name)."""
    wanted = list(owner.params)
    if len(positional) > len(wanted):
        raise ArityError(f"{describe(owner)} takes {len(wanted)} parameter(s)",
                         expected=", ".join(wanted) or "none", got=f"{len(positional)}")
    values = dict(defaults or {})
    values.update(zip(wanted, positional))
    for k, v in keywords.items():
        if k not in wanted:
            raise UnknownNameError(f"{describe(owner)} has no parameter {k!r}",
                                   expected=", ".join(wanted) or "no parameters", hint=suggest(k, wanted))
        values[k] = v
    missing = [n for n in wanted if values.get(n) is None]
    if missing:
        raise ArityError(f"{describe(owner)} needs the parameter {missing[0]!r}",
                         expected=f"{owner.name}({'; ' if isinstance(owner, Metric) else ''}"
                                  f"{', '.join(wanted)})")
    return values
