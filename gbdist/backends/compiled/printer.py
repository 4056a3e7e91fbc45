"""Printing the checked IR as Python source for Numba (the CPU sibling of the CUDA printer).

Two printers, both driven by tables, both strict (an unknown node raises
:class:`~gbdist.errors.BackendError` instead of emitting a guess):

* :class:`NumbaPrinter` turns an op's sympy formula (over ``x``, ``y``) into one
  Python expression over float64 scalars. It follows the NumPy evaluator of
  :mod:`gbdist.ops` (the oracle) node for node, so the two agree to rounding:

  - ``Piecewise`` is a chain of conditional expressions, NaN when no branch
    holds (the conventions ``0/0 = 0``, ``0·log 0 = 0`` are such branches);
  - divisions are done as written (``x / y``, never ``x · y⁻¹``), powers
    ``½``, ``2``, ``−1`` and negative powers as the evaluator does them;
  - ``Max``/``Min`` propagate NaN like ``np.maximum``/``np.minimum``;
  - infinities and NaN are the module constants ``INF`` and ``NAN``; every number
    is printed as a float literal (``repr`` of its correctly rounded double).

  The generated module is compiled with ``error_model="numpy"``, so ``1/0`` is
  ``inf`` and ``0/0`` NaN as in NumPy, and ``math.log(0)`` is ``-inf``.
* :func:`epilogue_expr` prints a plan's epilogue (``ir.Pointwise`` over step
  results) with the semantics of ``backends/cpu.py``'s ``POINTWISE_NUMPY``.

Only the checked IR reaches these printers: ops' formulas are sympy trees built
from the parse tree or Python operators, never from user text.
"""
from __future__ import annotations

import math

import sympy as sp

from ...compiler import ir
from ...errors import BackendError
from ...algebra.missing import isnan_class

# Helpers the generated module defines (see codegen.PRELUDE).
_MAX, _MIN, _SIGN = "gb_max", "gb_min", "gb_sign"


def float_literal(v: float) -> str:
    """A double as Python source: ``INF``, ``-INF``, ``NAN`` or its exact repr."""
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INF" if v > 0 else "(-INF)"
    return f"({v!r})" if v < 0 or (v == 0 and math.copysign(1.0, v) < 0) else repr(v)


def _number(e: sp.Expr) -> float:
    from ...algebra.evaluate import constant_value
    return constant_value(e)


class NumbaPrinter:
    """A sympy formula over x, y as one Python expression (float64 semantics)."""

    def __init__(self, names: dict | None = None):
        self.names = {"x": "x", "y": "y"}
        self.names.update(names or {})
        self._table = {
            sp.Add: self._add, sp.Mul: self._mul, sp.Pow: self._pow,
            sp.Abs: lambda e: f"abs({self.p(e.args[0])})",
            sp.exp: lambda e: f"math.exp({self.p(e.args[0])})",
            sp.log: self._log,
            sp.sign: lambda e: f"{_SIGN}({self.p(e.args[0])})",
            sp.Max: lambda e: self._fold(_MAX, e.args),
            sp.Min: lambda e: self._fold(_MIN, e.args),
            sp.Piecewise: self._piecewise,
            sp.ITE: lambda e: f"({self.p(e.args[1])} if {self.p(e.args[0])} else {self.p(e.args[2])})",
            sp.Eq: lambda e: self._rel("==", e), sp.Ne: lambda e: self._rel("!=", e),
            sp.StrictLessThan: lambda e: self._rel("<", e), sp.LessThan: lambda e: self._rel("<=", e),
            sp.StrictGreaterThan: lambda e: self._rel(">", e),
            sp.GreaterThan: lambda e: self._rel(">=", e),
            sp.And: lambda e: "(" + " and ".join(self.p(a) for a in e.args) + ")",
            sp.Or: lambda e: "(" + " or ".join(self.p(a) for a in e.args) + ")",
            sp.Xor: self._xor,
            sp.Not: lambda e: f"(not {self.p(e.args[0])})",
            isnan_class(): lambda e: f"math.isnan({self.p(e.args[0])})",
        }

    def doprint(self, expr) -> str:
        try:
            return self.p(sp.sympify(expr))
        except BackendError:
            raise
        except RecursionError:
            raise BackendError("a formula is too deeply nested for the compiled CPU backend",
                               hint="use backend='cpu' with the NumPy evaluator") from None

    def p(self, e) -> str:
        if e is sp.true:
            return "True"
        if e is sp.false:
            return "False"
        if e.is_Symbol:
            if e.name not in self.names:
                raise BackendError("the compiled CPU printer met an unknown symbol", got=e.name)
            return self.names[e.name]
        if e.is_Number or e.is_NumberSymbol or e in (sp.oo, -sp.oo, sp.zoo, sp.nan):
            return float_literal(_number(e))
        for cls in type(e).__mro__:
            fn = self._table.get(cls)
            if fn is not None:
                return fn(e)
        raise BackendError("the compiled CPU printer has no rule for this formula node",
                           got=f"{type(e).__name__}: {e}",
                           hint="write the op with +, -, *, /, ^, abs, sqrt, log, exp, min, max, where")

    # -- nodes -----------------------------------------------------------------

    def _add(self, e) -> str:
        return "(" + " + ".join(self.p(a) for a in e.args) + ")"

    @staticmethod
    def _negative_power(a) -> bool:
        return (isinstance(a, sp.Pow) and a.exp.is_number and a.exp.is_negative
                and not a.exp.has(sp.oo, -sp.oo, sp.zoo, sp.nan))

    def _mul(self, e) -> str:
        """(a·b) / (c·d) as written, like ops._ev_mul; −1·a as −a (the same value)."""
        if len(e.args) == 2 and e.args[0] == -1 and not self._negative_power(e.args[1]):
            return f"(-{self.p(e.args[1])})"
        num = [self.p(a) for a in e.args if not self._negative_power(a)]
        den = [self._pos_pow(a.base, -a.exp) for a in e.args if self._negative_power(a)]
        out = "(" + " * ".join(num) + ")" if num else "1.0"
        if den:
            out = f"({out} / ({' * '.join(den)}))"
        return out

    def _pos_pow(self, base, ex) -> str:
        b = self.p(base)
        if ex == 1:
            return b
        if ex == sp.Rational(1, 2):
            return f"math.sqrt({b})"
        if ex == 2:
            return f"({b} * {b})"
        return f"({b} ** {self.p(ex)})"

    def _pow(self, e) -> str:
        base, ex = e.base, e.exp
        b = self.p(base)
        if ex == sp.Rational(1, 2):
            return f"math.sqrt({b})"
        if ex == 2:
            return f"({b} * {b})"
        if ex == -1:
            return f"(1.0 / {b})"
        if self._negative_power(e):
            return f"(1.0 / {self._pos_pow(base, -ex)})"
        return f"({b} ** {self.p(ex)})"

    def _log(self, e) -> str:
        if len(e.args) != 1:
            raise BackendError("log with a base is not supported by the compiled CPU printer",
                               got=str(e))
        return f"gb_log({self.p(e.args[0])})"

    def _fold(self, fn: str, args) -> str:
        out = self.p(args[0])
        for a in args[1:]:
            out = f"{fn}({out}, {self.p(a)})"
        return out

    def _piecewise(self, e) -> str:
        out = "NAN"
        for value, cond in reversed(e.args):
            if cond is sp.true:
                out = self.p(value)
            else:
                out = f"({self.p(value)} if {self.p(cond)} else {out})"
        return out

    def _rel(self, op: str, e) -> str:
        return f"({self.p(e.lhs)} {op} {self.p(e.rhs)})"

    def _xor(self, e) -> str:
        parts = [f"bool({self.p(a)})" for a in e.args]
        out = parts[0]
        for q in parts[1:]:
            out = f"({out} != {q})"
        return out


def formula(expr, names: dict | None = None) -> str:
    """``expr`` (over x, y) as a Python expression, x and y renamed through ``names``."""
    return NumbaPrinter(names).doprint(expr)


# --- the epilogue ---------------------------------------------------------------------

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def epilogue_expr(node: ir.Node, refs: dict, ncols: str = "Kf") -> str:
    """The plan's epilogue as one Python expression over the step results (``refs``
    maps a step name to the source of its value at (i, j)), with the semantics of
    ``backends/cpu.py``'s ``POINTWISE_NUMPY``. Shared subexpressions are printed
    once per use (epilogues are small)."""
    memo: dict = {}
    for n in ir.walk(node):
        memo[n.key] = _epi(n, memo, refs, ncols)
    return memo[node.key]


def _epi(node, memo, refs, ncols) -> str | None:
    if isinstance(node, ir.Ref):
        return refs[node.name]
    if isinstance(node, ir.Const):
        return float_literal(node.value)
    if isinstance(node, ir.NCols):
        return ncols
    if not isinstance(node, ir.Pointwise):
        return None  # operands below NCols: not values
    a = [memo[x.key] for x in node.args]
    fn = node.fn
    if fn in _INFIX:
        return f"({a[0]} {_INFIX[fn]} {a[1]})"
    if fn in _CMP:
        return f"(1.0 if {a[0]} {_CMP[fn]} {a[1]} else 0.0)"
    table = {
        "neg": lambda: f"(-{a[0]})",
        "sqrt": lambda: f"math.sqrt({a[0]})",
        "abs": lambda: f"abs({a[0]})",
        "log": lambda: f"gb_log({a[0]})",
        "exp": lambda: f"math.exp({a[0]})",
        "asin": lambda: f"math.asin({a[0]})",
        "pow": lambda: f"({a[0]} ** {a[1]})",
        "maximum": lambda: f"{_MAX}({a[0]}, {a[1]})",
        "minimum": lambda: f"{_MIN}({a[0]}, {a[1]})",
        "where": lambda: f"({a[1]} if {a[0]} != 0.0 else {a[2]})",
    }
    out = table.get(fn)
    if out is None:
        raise BackendError(f"the compiled CPU printer has no rule for {fn}()")
    return out()


def epilogue_parts(node: ir.Node, refs: dict, axes: dict, ncols: str = "Kf"):
    """The epilogue split by what each subexpression varies with, so the kernel computes
    each once: ``(per_row, per_col, expr)``.

    ``axes`` maps a step name to the output axes its value varies along ("i", "j",
    "ij"). ``per_row`` is a list of ``(name, source)`` to compute once per output row i
    (``ei<N>``, e.g. ``sqrt(‖a‖²)``); ``per_col`` a list of ``(name, source)`` to
    compute once per call for every j into arrays ``ej<N>`` (``source`` over ``j``);
    ``expr`` the remaining per-(i, j) expression over them."""
    memo: dict = {}
    deps: dict = {}
    per_row: list = []
    per_col: list = []
    for n in ir.walk(node):
        if isinstance(n, ir.Ref):
            deps[n.key] = frozenset(axes[n.name])
        elif isinstance(n, ir.Pointwise):
            deps[n.key] = frozenset().union(*(deps[a.key] for a in n.args))
        else:
            deps[n.key] = frozenset()
        src = _epi(n, memo, refs, ncols)
        if isinstance(n, ir.Pointwise) and deps[n.key] == {"i"}:
            name = f"ei{len(per_row)}"
            per_row.append((name, src))
            src = name
        elif isinstance(n, ir.Pointwise) and deps[n.key] == {"j"}:
            name = f"ej{len(per_col)}"
            per_col.append((name, src))
            src = f"{name}[j]"
        memo[n.key] = src
    return per_row, per_col, memo[node.key]
