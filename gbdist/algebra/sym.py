"""Formulas built from Python code: :class:`Sym`, a thin wrapper whose operators build
sympy trees (``x + y == 0`` builds ``Eq(x + y, 0)``, not a Python bool), and the scalar
functions over it (``s_sqrt``, ``s_where`` ...) that the Python API dispatches to. No user
text is ever passed to ``sympify`` or ``eval``; the trees are the ones
:mod:`gbdist.algebra.formulas` defines (conditions, size and depth limits).
"""
from __future__ import annotations

import builtins

import sympy as sp

from ..errors import DefinitionError
from .formulas import (MAX_FORMULA_DEPTH, Built, _decided, _expr, _too_deep, build, condition, formula_depth,
                       logic, negation, relational)


class Sym(Built):
    """A scalar formula under construction; Python operators build sympy trees.

    A chain ``a + b - c + ...`` (or ``a * b * ...``) built left to right becomes one
    n-ary node, its arguments in written order. Its sympy node is built only when it
    is needed (:attr:`expr`): each ``+`` appends to a list the chain shares with the
    partial sums before it, so an n-term sum costs O(n), not O(n²).
    """

    __slots__ = ("_expr", "_pending", "depth")

    def __init__(self, expr, depth: int | None = None):
        self._pending = None
        self._expr = _expr(expr)
        if depth is None:
            depth = expr.depth if isinstance(expr, Sym) else formula_depth(self._expr)
        if depth > MAX_FORMULA_DEPTH:
            raise _too_deep(depth)
        self.depth = depth

    @classmethod
    def _chained(cls, head, args: list, n: int, depth: int) -> "Sym":
        s = object.__new__(cls)
        s._expr, s._pending, s.depth = None, (head, args, n), depth
        return s

    @property
    def expr(self) -> sp.Basic:
        if self._expr is None:
            head, args, n = self._pending
            self._expr = build(head, *args[:n])
        return self._expr

    def __repr__(self):
        return f"Sym({self.expr})"

    def __bool__(self):
        raise DefinitionError(
            "a formula has no truth value while it is being defined",
            got=f"`if`/`and`/`or` on {self.expr}",
            hint="use gb.where(cond, a, b), & and | instead of if/and/or",
        )

    __hash__ = object.__hash__

    def _bin(self, other, fn, swap=False):
        a, b = self.expr, _expr(other)
        d = 1 + builtins.max(self.depth, other.depth if isinstance(other, Sym) else formula_depth(b))
        if d > MAX_FORMULA_DEPTH:
            raise _too_deep(d)
        return Sym(build(fn, b, a) if swap else build(fn, a, b), d)

    def _chain(self, other, head, fn, negate=False):
        """``self + other`` (``head`` = sp.Add; ``negate``: ``self - other``) or
        ``self * other`` (sp.Mul), extending a chain into one n-ary node, so
        ``x*y + x*y + ...`` (3,000 terms) is one level deep, not 3,000."""
        if self._pending is not None and self._pending[0] is head:
            _, args, n = self._pending
            if len(args) != n:  # the shared list was extended from here already: branch off
                args = args[:n]
        elif isinstance(self._expr, head):
            args = list(self._expr.args)
            n = len(args)
        else:
            return self._bin(other, fn)
        b = _expr(other)
        bd = other.depth if isinstance(other, Sym) else formula_depth(b)
        if negate:
            b = build(lambda v: -v, b)
            bd += 0 if b.is_Number else 1
        d = builtins.max(self.depth, 1 + bd)
        if d > MAX_FORMULA_DEPTH:
            raise _too_deep(d)
        args.append(b)
        return Sym._chained(head, args, n + 1, d)

    def _cmp(self, other, fn):
        """A comparison; two numbers compare now (exactly: they are the binary values
        written), so ``where(4 < 1, x, 2)`` is ``2`` and never a condition to analyse."""
        if _decided(self.expr, _expr(other)):
            return Sym(relational(fn, self.expr, _expr(other)), 1)
        return self._bin(other, fn)

    def _logic(self, other, func, swap=False):
        a, b = self.expr, _expr(other)
        d = 1 + builtins.max(self.depth, other.depth if isinstance(other, Sym) else formula_depth(b))
        if d > MAX_FORMULA_DEPTH:
            raise _too_deep(d)
        return Sym(logic(func, b, a) if swap else logic(func, a, b), d)

    def __add__(self, o): return self._chain(o, sp.Add, lambda a, b: a + b)
    def __radd__(self, o): return self._bin(o, lambda a, b: a + b, True)
    def __sub__(self, o): return self._chain(o, sp.Add, lambda a, b: a - b, negate=True)
    def __rsub__(self, o): return self._bin(o, lambda a, b: a - b, True)
    def __mul__(self, o): return self._chain(o, sp.Mul, lambda a, b: a * b)
    def __rmul__(self, o): return self._bin(o, lambda a, b: a * b, True)
    def __truediv__(self, o): return self._bin(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._bin(o, lambda a, b: a / b, True)
    def __pow__(self, o): return self._bin(o, lambda a, b: a ** b)
    def __rpow__(self, o): return self._bin(o, lambda a, b: a ** b, True)
    def __neg__(self): return Sym(-self.expr) if self.expr.is_Number and self.expr != 0 else _un(sp.Mul, sp.Integer(-1), self)
    def __pos__(self): return self
    def __abs__(self): return _un(sp.Abs, self)
    def __eq__(self, o): return self._cmp(o, sp.Eq)
    def __ne__(self, o): return self._cmp(o, sp.Ne)
    def __lt__(self, o): return self._cmp(o, sp.Lt)
    def __le__(self, o): return self._cmp(o, sp.Le)
    def __gt__(self, o): return self._cmp(o, sp.Gt)
    def __ge__(self, o): return self._cmp(o, sp.Ge)
    def __and__(self, o): return self._logic(o, sp.And)
    def __rand__(self, o): return self._logic(o, sp.And, True)
    def __or__(self, o): return self._logic(o, sp.Or)
    def __ror__(self, o): return self._logic(o, sp.Or, True)
    def __invert__(self): return Sym(negation(self.expr))


def _un(fn, *args) -> Sym:
    """``fn(*args)`` built as written, with the nesting depth checked."""
    depth = 1 + builtins.max((a.depth if isinstance(a, Sym) else formula_depth(_expr(a)) for a in args),
                    default=0)
    if depth > MAX_FORMULA_DEPTH:
        raise _too_deep(depth)
    return Sym(build(fn, *(_expr(a) for a in args)), depth)


# Scalar functions over Sym (the api module dispatches to these for scalars).

def s_sqrt(v): return _un(lambda e: sp.Pow(e, sp.Rational(1, 2)), v)
def s_log(v): return _un(sp.log, v)
def s_exp(v): return _un(sp.exp, v)
def s_abs(v): return _un(sp.Abs, v)
def s_max(a, b): return _un(sp.Max, a, b)
def s_isnan(v):  # a condition (gbdist.algebra.missing)
    from .missing import isnan
    return _un(isnan, v)
def s_min(a, b): return _un(sp.Min, a, b)


def s_where(cond, a, b):
    c = _expr(cond)
    if isinstance(c, sp.Symbol):  # where(x, a, b): x nonzero (sympy would read x as a boolean)
        c = build(sp.Ne, c, sp.Integer(0))
    if not isinstance(c, (sp.logic.boolalg.Boolean, sp.core.relational.Relational)):
        raise DefinitionError(
            "where() needs a condition as its first argument",
            got=str(c),
            hint="compare with ==, !=, <, <=, >, >=, e.g. where(x + y == 0, 0, ...)",
        )
    a, b = _value(a), _value(b)
    if c is sp.true or c is sp.false:  # decided now (4 < 1): the chosen branch only
        chosen = a if c is sp.true else b
        return chosen if isinstance(chosen, Sym) else Sym(chosen)
    return _un(lambda c_, a_, b_: sp.Piecewise((a_, c_), (b_, True)), condition(c), a, b)


def _value(v):
    """A where() branch: a condition there is its value 1 or 0 (as a whole op's formula is)."""
    e = _expr(v)
    if isinstance(e, (sp.logic.boolalg.BooleanFunction, sp.logic.boolalg.BooleanAtom,
                      sp.core.relational.Relational)):
        return s_where(e, 1, 0)
    return v


def column(name: str, positive: bool = False, relative: bool = False) -> Sym:
    """The value of the column operand ``name`` at the entry's column, inside an op's
    formula (the text language's ``name[col]``): ``gb.op("wsq", lambda x, y:
    gb.column("w") * (x - y)**2)``. The vector is passed by name when the metric runs
    (``pairwise_distances(X, metric=expr, w=weights)``). Column operands are nonnegative
    (``positive=True``: > 0, for a vector the op divides by; ``relative=True``: weights
    bound divided by their mean, so that they sum to the number of columns); see
    :mod:`gbdist.algebra.columns`."""
    from .columns import symbol
    return Sym(symbol(name, bool(positive), relative=bool(relative)))
