"""Scalar operators as sympy formulas.

Every operator gbdist knows is a formula over the symbols ``x`` (and ``y``),
plus a *domain* (``real``, ``nonnegative`` or ``boolean``) that states which
inputs it accepts. Conventions such as ``0 * log 0 = 0`` or ``0 / 0 = 0`` are
written into the formula as explicit ``Piecewise`` branches, so the compiler
sees them.

Properties are derived from the formula, not declared: whether a binary op is a
monoid (and its identity), idempotent, invertible, commutative. The derivation
uses sympy and, where sympy cannot decide, a seeded numeric check (see
``proofs.py``).

Formulas are built from Python code through :class:`Sym`, a thin wrapper whose
operators build sympy trees (``x + y == 0`` builds ``Eq(x + y, 0)``, not a
Python bool). No user text is ever passed to ``sympify`` or ``eval``.
"""
from __future__ import annotations

import builtins

import numpy as np
import sympy as sp

from ..errors import DefinitionError

X = sp.Symbol("x", real=True)
Y = sp.Symbol("y", real=True)

DOMAINS = ("real", "nonnegative", "boolean")


def domain_symbols(domain: str) -> tuple[sp.Symbol, sp.Symbol]:
    """The (x, y) symbols carrying the assumptions of ``domain``."""
    if domain == "nonnegative":
        return sp.Symbol("x", nonnegative=True), sp.Symbol("y", nonnegative=True)
    return X, Y


def on_domain(expr: sp.Expr, domain: str) -> sp.Expr:
    """``expr`` with x, y replaced by the symbols of ``domain``."""
    xd, yd = domain_symbols(domain)
    return expr.xreplace({X: xd, Y: yd})


def off_domain(expr: sp.Expr) -> sp.Expr:
    """Map domain symbols back to the canonical real ``X``, ``Y``."""
    mapping = {}
    for s in expr.free_symbols:
        if s.name == "x":
            mapping[s] = X
        elif s.name == "y":
            mapping[s] = Y
    return expr.xreplace(mapping)


# ---------------------------------------------------------------------------
# Building formulas from Python
# ---------------------------------------------------------------------------


def _expr(v) -> sp.Basic:
    if isinstance(v, Sym):
        return v.expr
    if isinstance(v, sp.Basic):
        return v
    if isinstance(v, (bool, np.bool_)):
        return sp.true if v else sp.false
    if isinstance(v, (int, np.integer)):
        return sp.Integer(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f == float("inf"):
            return sp.oo
        if f == float("-inf"):
            return -sp.oo
        if f != f:
            return sp.nan
        if f == 0 and np.signbit(f):
            return build(sp.Mul, sp.Integer(-1), sp.Integer(0))  # IEEE -0.0: -1 · 0
        # Exactly the binary value the user wrote: no decimal rounding, no tolerance.
        return sp.Integer(int(f)) if f == int(f) and builtins.abs(f) < 2**53 else sp.Rational(f)
    raise DefinitionError(
        "a scalar formula can only combine numbers and the op's parameters",
        got=f"{type(v).__name__} {v!r}",
        hint="inside gb.op(...) use the x, y arguments, numbers and gb.sqrt/gb.log/gb.where ...",
    )


MAX_FORMULA_DEPTH = 200
"""Deepest nesting of a scalar formula (a where() inside a where() ... counts one per level)."""

MAX_FORMULA_SIZE = 20000
"""Most nodes in a scalar formula written out as a tree (shared helpers count each use)."""


def formula_depth(expr: sp.Basic) -> int:
    """Nesting depth of a sympy tree, computed without recursion."""
    depth = {}
    stack = [(expr, False)]
    while stack:
        node, done = stack.pop()
        if node in depth:
            continue
        if done:
            depth[node] = 1 + builtins.max((depth[a] for a in node.args), default=0)
            continue
        stack.append((node, True))
        stack.extend((a, False) for a in node.args if a not in depth)
    return depth[expr]


def formula_size(expr: sp.Basic, limit: int = MAX_FORMULA_SIZE) -> int:
    """Number of nodes of the tree written out (a shared subtree counts once per use).

    Computed over the DAG with memoisation; stops counting at ``limit + 1``.
    """
    size = {}
    stack = [(expr, False)]
    while stack:
        node, done = stack.pop()
        if node in size:
            continue
        if done:
            size[node] = builtins.min(limit + 1, 1 + sum(size[a] for a in node.args))
            continue
        stack.append((node, True))
        stack.extend((a, False) for a in node.args if a not in size)
    return size[expr]


def _too_deep(depth: int):
    return DefinitionError(
        "a scalar formula is nested too deeply",
        expected=f"at most {MAX_FORMULA_DEPTH} levels of nesting",
        got=f"{depth} levels",
        hint="write the formula with fewer nested calls (define helper ops, or flatten sums)")


def build(fn, *args):
    """Apply a sympy constructor without automatic simplification.

    sympy's automatic evaluation rewrites ``x/x`` to 1 and ``x - x`` to 0, which
    changes the IEEE value at singular points (0/0 is NaN). Formulas are kept as
    written; the analysis simplifies copies and checks every rewrite it uses
    against the written formula (see proofs.py).
    """
    try:
        with sp.evaluate(False):
            return fn(*args)
    except RecursionError:
        raise DefinitionError(
            "a scalar formula is too complex to build",
            got="sympy ran out of recursion depth on it",
            hint="split the formula into smaller ops, or nest fewer where() conditions") from None
    except (TypeError, ValueError) as e:
        raise DefinitionError("a scalar formula cannot be built", got=str(e)[:200],
                              hint="check the arguments of where(), comparisons and powers") from None


class _Printer(sp.printing.str.StrPrinter):
    """sympy's str printer, with the exact binary value of a float shown as the float."""

    def _print_Rational(self, e):
        if e.q > 64 and (e.q & (e.q - 1)) == 0:
            return repr(float(e))
        return super()._print_Rational(e)


def show(expr) -> str:
    """A formula as text for people (explain, errors): 5e-09, not 3022314549036573/2**79."""
    try:
        return _Printer().doprint(expr)
    except Exception:  # noqa: BLE001 - sympy's printers fail on some unevaluated trees
        return structural_text(expr)


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


def _formula_key(expr) -> str:
    try:
        return sp.srepr(expr)
    except Exception:  # noqa: BLE001 - see structural_text
        return structural_text(expr)


def evaluated(expr: sp.Basic) -> sp.Basic:
    """``expr`` rebuilt with sympy's automatic evaluation (generic algebra).

    For the symbolic side of the analysis only: it may change values at
    singular points (x/x becomes 1), which the special-point checks catch.
    """
    done: dict = {}
    stack = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if node in done:
            continue
        if not node.args or isinstance(node, (sp.Symbol, sp.Number)):
            done[node] = node
            continue
        if ready:
            try:
                done[node] = node.func(*(done[a] for a in node.args))
            except Exception:  # noqa: BLE001 - sympy cannot evaluate it: keep it as written
                try:
                    done[node] = node.func(*(done[a] for a in node.args), evaluate=False)
                except Exception:  # noqa: BLE001
                    done[node] = node
            continue
        stack.append((node, True))
        stack.extend((a, False) for a in node.args if a not in done)
    return done[expr]


class Sym:
    """A scalar formula under construction; Python operators build sympy trees."""

    __slots__ = ("expr", "depth")

    def __init__(self, expr, depth: int | None = None):
        self.expr = _expr(expr)
        if depth is None:
            depth = expr.depth if isinstance(expr, Sym) else formula_depth(self.expr)
        if depth > MAX_FORMULA_DEPTH:
            raise _too_deep(depth)
        self.depth = depth

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

    def _chain(self, other, head, fn):
        """``self + other`` (``head`` = sp.Add) or ``self * other`` (sp.Mul), extending a
        chain built left to right into one n-ary node (its arguments in written order),
        so ``x*y + x*y + ...`` (3,000 terms) is one level deep, not 3,000."""
        a, b = self.expr, _expr(other)
        if not isinstance(a, head):
            return self._bin(other, fn)
        d = builtins.max(self.depth,
                         1 + (other.depth if isinstance(other, Sym) else formula_depth(b)))
        if d > MAX_FORMULA_DEPTH:
            raise _too_deep(d)
        return Sym(build(head, *a.args, b), d)

    def __add__(self, o): return self._chain(o, sp.Add, lambda a, b: a + b)
    def __radd__(self, o): return self._bin(o, lambda a, b: a + b, True)
    def __sub__(self, o): return self._bin(o, lambda a, b: a - b)
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
    def __eq__(self, o): return self._bin(o, sp.Eq)
    def __ne__(self, o): return self._bin(o, sp.Ne)
    def __lt__(self, o): return self._bin(o, sp.Lt)
    def __le__(self, o): return self._bin(o, sp.Le)
    def __gt__(self, o): return self._bin(o, sp.Gt)
    def __ge__(self, o): return self._bin(o, sp.Ge)
    def __and__(self, o): return self._bin(o, sp.And)
    def __or__(self, o): return self._bin(o, sp.Or)
    def __invert__(self): return _un(sp.Not, self)


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
def s_min(a, b): return _un(sp.Min, a, b)


def s_where(cond, a, b):
    c = _expr(cond)
    if not isinstance(c, (sp.logic.boolalg.Boolean, sp.core.relational.Relational)):
        raise DefinitionError(
            "where() needs a condition as its first argument",
            got=str(c),
            hint="compare with ==, !=, <, <=, >, >=, e.g. where(x + y == 0, 0, ...)",
        )
    return _un(lambda c_, a_, b_: sp.Piecewise((a_, c_), (b_, True)), c, a, b)
