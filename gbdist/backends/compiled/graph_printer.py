"""Printing an op's formula for the generated graph kernels (:mod:`.graph_codegen`): one
Python expression over ``x``, ``y`` whose value, cast into the domain, is the op evaluated
in that domain as the reference evaluates it (:mod:`gbdist.backends.graph_reference`).

* float64 / float32 / bool: :class:`GraphNumbaPrinter` (the compiled backend's
  :class:`.printer.NumbaPrinter` with ``Max`` / ``Min`` as C's fmax / fmin; float32 with
  float32 constants; bool on 0/1 in float64);
* int32 / int64: :class:`IntPrinter` (integer-valued nodes wrapped to ``WT``, the rest a
  float64 formula over them).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ..graph_reference import _TRUTH, _wrap_int, float_parts, integer_valued
from .printer import NumbaPrinter, _number, float_literal


class GraphNumbaPrinter(NumbaPrinter):
    """:class:`NumbaPrinter` with ``Max`` / ``Min`` as C's fmax / fmin (``gb_fmax`` /
    ``gb_fmin``, :mod:`.graph_helpers`): a NaN argument is ignored, as SuiteSparse's
    MAX / MIN and the reference (:func:`gbdist.backends.graph_reference._minmax_parts`).
    Graph formulas only: the distance half's printer keeps NumPy's NaN-propagating max."""

    def __init__(self, names: dict | None = None):
        super().__init__(names)
        self._table[sp.Max] = lambda e: self._fold("gb_fmax", e.args)
        self._table[sp.Min] = lambda e: self._fold("gb_fmin", e.args)


class IntPrinter:
    """A formula over x, y as a Python expression in an integer domain ``WT`` (module
    docstring): integer-valued nodes wrapped to ``WT``, the other nodes printed by
    :class:`GraphNumbaPrinter` over float64 conversions of their integer-valued parts."""

    _REL = {sp.Eq: "==", sp.Ne: "!=", sp.StrictLessThan: "<", sp.LessThan: "<=",
            sp.StrictGreaterThan: ">", sp.GreaterThan: ">="}

    def __init__(self, bits: int):
        self.dt = np.dtype(f"int{bits}")

    def value(self, e) -> str:
        if isinstance(e, _TRUTH):
            return f"WT({self.cond(e)})"
        if e.is_Symbol:
            return e.name
        if e.is_Number or e.is_NumberSymbol or e in (sp.oo, -sp.oo, sp.zoo, sp.nan):
            if e.is_Integer:
                return f"({int(_wrap_int(int(e), self.dt))})"
            return float_literal(_number(e))
        if integer_valued(e):
            return self._int(e)
        f, parts = float_parts(e)
        names = {s.name: (self.cond(sub) if isinstance(sub, _TRUTH)
                          else f"np.float64({self.value(sub)})") for s, sub in parts}
        return GraphNumbaPrinter(names).doprint(f)

    def _int(self, e) -> str:
        a = e.args
        # + and × on uint64 (U): Numba's signed arithmetic is `nsw`, so an overflow would
        # be undefined (LLVM folded abs(x - y) to the wrong sign); unsigned wraps
        if isinstance(e, sp.Add):
            return "WT(" + " + ".join(f"U({self.value(t)})" for t in a) + ")"
        if isinstance(e, sp.Mul):
            return "WT(" + " * ".join(f"U({self.value(t)})" for t in a) + ")"
        if isinstance(e, sp.Pow):
            return f"WT(gb_upow(U({self.value(e.base)}), {int(e.exp)}))"
        if isinstance(e, sp.Abs):
            return f"WT(abs({self.value(a[0])}))"
        if isinstance(e, sp.sign):
            return f"WT(gb_sign({self.value(a[0])}))"
        if isinstance(e, (sp.Max, sp.Min)):
            fn = "gb_max" if isinstance(e, sp.Max) else "gb_min"
            out = self.value(a[0])
            for t in a[1:]:
                out = f"{fn}({out}, {self.value(t)})"
            return f"WT({out})"
        if isinstance(e, sp.Piecewise):
            out = self.value(a[-1].expr)
            for p in reversed(a[:-1]):
                out = f"({self.value(p.expr)} if {self.cond(p.cond)} else {out})"
            return f"WT({out})"
        if isinstance(e, sp.ITE):
            return f"WT(({self.value(a[1])} if {self.cond(a[0])} else {self.value(a[2])}))"
        raise AssertionError(f"not integer-valued: {e}")  # pragma: no cover

    def cond(self, c) -> str:
        if c is sp.true:
            return "True"
        if c is sp.false:
            return "False"
        for cls, op in self._REL.items():
            if isinstance(c, cls):
                return f"({self.value(c.lhs)} {op} {self.value(c.rhs)})"
        if isinstance(c, sp.And):
            return "(" + " and ".join(self.cond(t) for t in c.args) + ")"
        if isinstance(c, sp.Or):
            return "(" + " or ".join(self.cond(t) for t in c.args) + ")"
        if isinstance(c, sp.Not):
            return f"(not {self.cond(c.args[0])})"
        if isinstance(c, sp.Xor):
            out = f"bool({self.cond(c.args[0])})"
            for t in c.args[1:]:
                out = f"({out} != bool({self.cond(t)}))"
            return out
        return f"({self.value(c)} != 0)"


class Float32Printer(GraphNumbaPrinter):
    """:class:`GraphNumbaPrinter` with float32 constants, so float32 values stay float32 (the
    reference evaluates float32 formulas with float32 constants)."""

    def p(self, e) -> str:
        if isinstance(e, sp.Expr) and (e.is_Number or e.is_NumberSymbol
                                       or e in (sp.oo, -sp.oo, sp.zoo, sp.nan)):
            return f"np.float32({float_literal(_number(e))})"
        return super().p(e)


def print_op(expr, domain: str) -> str:
    """An op's formula as a Python expression over x, y (values of ``domain``) whose
    value, after the module's cast into the domain, is the op evaluated in the domain."""
    expr = sp.sympify(expr)
    if domain == "float64":
        return GraphNumbaPrinter().doprint(expr)
    if domain == "float32":
        return Float32Printer().doprint(expr)
    if domain == "bool":
        return GraphNumbaPrinter({"x": "np.float64(x)", "y": "np.float64(y)"}).doprint(expr)
    try:
        return IntPrinter(int(domain[3:])).value(expr)
    except RecursionError:
        from ...errors import BackendError
        raise BackendError("a formula is too deeply nested for the compiled CPU backend",
                           hint="use backend='reference'") from None
