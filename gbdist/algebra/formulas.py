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

Formulas are built from Python code through :class:`gbdist.algebra.sym.Sym`, a thin wrapper whose
operators build sympy trees (``x + y == 0`` builds ``Eq(x + y, 0)``, not a
Python bool). No user text is ever passed to ``sympify`` or ``eval``.
"""
from __future__ import annotations

import builtins
from contextlib import contextmanager

import numpy as np
import sympy as sp

from ..errors import DefinitionError, GbdistError
from .mathtext import math
from .written import build, building, structural_text  # noqa: F401 (re-exported)

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


class Built:
    """What :class:`gbdist.algebra.sym.Sym` is: a formula under construction whose sympy
    tree is its ``expr`` (kept here, below Sym, so that :func:`_expr` can read one)."""

    __slots__ = ()
    expr: sp.Basic


def _expr(v) -> sp.Basic:
    if isinstance(v, Built):
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


@contextmanager
def guarded(what: str, error=DefinitionError):
    """Turn any exception that is not a :class:`GbdistError` (sympy's ZeroDivisionError,
    KeyError, RecursionError ... on a formula it cannot handle) into ``error`` about
    ``what`` (e.g. "op 'chi2'"): the boundary of building and analysing a definition,
    so nothing untyped reaches the user."""
    try:
        yield
    except GbdistError:
        raise
    except MemoryError:
        raise
    except RecursionError:
        raise error(f"{what} is too complex to analyse", got="sympy ran out of recursion depth on it",
                    hint="split the formula into smaller ops") from None
    except Exception as e:  # noqa: BLE001 - the boundary: everything else becomes typed
        raise error(f"{what} could not be built or analysed",
                    got=f"{type(e).__name__} from the symbolic analysis: {str(e)[:160]}",
                    hint="this is a limitation of gbdist's analysis; writing the formula "
                         "differently (fewer nested where() conditions, helper ops) may avoid it "
                         "- please report the definition") from None


# ---------------------------------------------------------------------------
# where(): conditions without Piecewise inside, substitution that keeps it so
# ---------------------------------------------------------------------------
#
# sympy's Piecewise rewrites a condition that holds a Piecewise (a where() inside a
# comparison: where(where(x == 0, -1, y) == 0, 0, 1)) through sets and ITE, which
# fails on formulas as simple as that one (ZeroDivisionError, or KeyError for a
# constant condition such as 4 < 1). gbdist folds such a condition itself, exactly:
# a comparison R(where(c, a, b)) is (c and R(a)) or (not c and R(b)) -- c decides as
# it would have (a comparison is never NaN, so `not c` is exact), and the value is
# the same at every point, NaN and infinities included. (sympy's ITE would say it
# with c once, but its constructor rewrites ITE(Eq(0, 0), ...) to the else branch.)


def _outer_piecewise(e: sp.Basic):
    """A Piecewise inside ``e`` that is not itself inside another Piecewise, or None."""
    stack = list(reversed(e.args))
    while stack:
        node = stack.pop()
        if isinstance(node, sp.Piecewise):
            return node
        stack.extend(reversed(node.args))
    return None


def _too_large():
    return DefinitionError(
        "a where() condition grows too large once the where() inside it is unfolded",
        expected=f"at most {MAX_FORMULA_SIZE} nodes",
        hint="compare a where() with a value in fewer places, or define helper ops")


def _fold_relational(rel, left: list):
    p = _outer_piecewise(rel)
    if p is None:
        if _decided(*rel.args):
            return relational(rel.func, *rel.args)
        left[0] -= formula_size(rel)
        if left[0] < 0:
            raise _too_large()
        return rel
    pairs = list(p.args)
    if pairs[-1].cond == sp.true:
        tail = _fold_relational(build(rel.xreplace, {p: pairs[-1].expr}), left)
        pairs = pairs[:-1]
    else:  # no branch holds: the where is NaN there
        tail = _fold_relational(build(rel.xreplace, {p: sp.nan}), left)
    for e_i, c_i in reversed(pairs):
        tail = _select(_fold(c_i, left), _fold_relational(build(rel.xreplace, {p: e_i}), left), tail)
    return tail


def _select(c, a, b):
    """The condition ``a if c else b``, as And/Or/Not (constants decided now)."""
    if c is sp.true or a == b:
        return a
    if c is sp.false:
        return b
    return logic(sp.Or, logic(sp.And, c, a), logic(sp.And, negation(c), b))


def _fold(c, left: list):
    if not isinstance(c, sp.Basic) or not c.has(sp.Piecewise):
        return c
    if isinstance(c, sp.core.relational.Relational):
        return _fold_relational(c, left)
    if isinstance(c, sp.Piecewise):  # a where() whose branches are conditions
        pairs = list(c.args)
        tail = _fold(pairs[-1].expr, left) if pairs[-1].cond == sp.true else sp.false
        if pairs[-1].cond == sp.true:
            pairs = pairs[:-1]
        for e_i, c_i in reversed(pairs):
            tail = _select(_fold(c_i, left), _fold(e_i, left), tail)
        return tail
    if isinstance(c, sp.ITE):
        return _select(*(_fold(a, left) for a in c.args))
    if isinstance(c, (sp.And, sp.Or)):
        return logic(c.func, *(_fold(a, left) for a in c.args))
    if isinstance(c, sp.Not):
        return negation(_fold(c.args[0], left))
    if isinstance(c, sp.Xor):
        return build(c.func, *(_fold(a, left) for a in c.args))
    raise DefinitionError("a where() condition holds a where() where gbdist cannot unfold it",
                          got=math(c, 200), hint="compare the where() with ==, !=, <, <=, >, >=")


def condition(c: sp.Basic) -> sp.Basic:
    """``c`` with every where() inside it folded away (exactly: see above)."""
    if not isinstance(c, sp.Basic) or not c.has(sp.Piecewise):
        return c
    return _fold(c, [MAX_FORMULA_SIZE])


def piecewise(*pairs) -> sp.Basic:
    """``Piecewise(*pairs)`` as written, its conditions folded (:func:`condition`)."""
    return build(sp.Piecewise, *((e, condition(c)) for e, c in pairs))


def _decided(a, b) -> bool:
    """Both sides are plain numbers (ints, exact binary fractions, ±inf): a comparison
    of them is decided exactly, as IEEE decides it."""
    return (isinstance(a, sp.Basic) and isinstance(b, sp.Basic) and a.is_Number and b.is_Number
            and sp.nan not in (a, b) and sp.zoo not in (a, b))


def relational(func, a, b):
    """``func(a, b)`` (Eq, Lt ...) as written, or true/false when both are numbers."""
    if _decided(a, b):
        return sp.true if bool(func(a, b, evaluate=True)) else sp.false
    return build(func, a, b)


def logic(func, *args):
    """And/Or of conditions, constants decided now. sympy's And/Or filter their arguments
    even unevaluated (and fail on some: Eq(x, oo) | Eq(oo, oo) raises); when they fail,
    the node is made as written."""
    zero, unit = (sp.false, sp.true) if func is sp.And else (sp.true, sp.false)
    kept = []
    for a in args:
        if a == zero:
            return zero
        if a != unit and a not in kept:
            kept.append(a)
    if not kept:
        return unit
    if len(kept) == 1:
        return kept[0]
    try:
        return build(func, *kept)
    except GbdistError:
        obj = sp.Basic.__new__(func, *sp.ordered(kept))
        obj._argset = frozenset(kept)
        return obj


def negation(a):
    """Not(a), a constant decided now."""
    if a is sp.true or a is sp.false:
        return sp.false if a is sp.true else sp.true
    return build(sp.Not, a)


def substitute(expr: sp.Basic, mapping: dict) -> sp.Basic:
    """``expr.xreplace(mapping)`` as written (no evaluation), except that a comparison of
    two numbers is decided (exactly: ``f(oo, y)`` has ``Eq(oo, oo)``, which is true) and
    every where() condition stays free of Piecewise when a value substituted into one
    holds a where()."""
    return build(lambda: bottom_up(expr, _rebuilt, mapping.get))


def _rebuilt(node, args):
    """``node`` with new arguments, as written (see :func:`substitute`)."""
    if isinstance(node, sp.functions.elementary.piecewise.ExprCondPair):
        return (args[0], condition(args[1]))  # built by its Piecewise
    if isinstance(node, sp.Piecewise):
        pairs = []
        for e, c in args:
            if c is sp.false:
                continue
            if c is sp.true and not pairs:
                return e
            pairs.append((e, c))
            if c is sp.true:
                break
        return sp.Piecewise(*pairs) if pairs else sp.nan
    if all(a is b for a, b in zip(args, node.args)):
        return node
    if isinstance(node, sp.core.relational.Relational):
        return relational(node.func, *args)
    if isinstance(node, (sp.And, sp.Or)):
        return logic(node.func, *args)
    if isinstance(node, sp.Not):
        return negation(args[0])
    return node.func(*args)


class _Printer(sp.printing.str.StrPrinter):
    """sympy's str printer, with the exact binary value of a float shown as the float."""

    def _print_Rational(self, e):
        if e.q > 64 and (e.q & (e.q - 1)) == 0:
            return repr(float(e))
        return super()._print_Rational(e)

    def _print_Integer(self, e):
        # 1e200 written in a formula is the integer 99999999999999996973...(201 digits)
        if abs(e.p) > 2 ** 53 and e.p.bit_length() <= 1024 and int(float(e.p)) == e.p:
            return repr(float(e.p))
        return super()._print_Integer(e)


def show(expr) -> str:
    """A formula as text for people (explain, errors): 5e-09, not 3022314549036573/2**79."""
    try:
        return _Printer().doprint(expr)
    except Exception:  # noqa: BLE001 - sympy's printers fail on some unevaluated trees
        return structural_text(expr)


def _formula_key(expr) -> str:
    """The structural key of a formula (:func:`structural_text`: about six times faster
    than ``srepr``, and it never fails)."""
    return structural_text(expr)


def evaluated(expr: sp.Basic) -> sp.Basic:
    """``expr`` rebuilt with sympy's automatic evaluation (generic algebra).

    For the symbolic side of the analysis only: it may change values at
    singular points (x/x becomes 1), which the special-point checks catch.
    """
    return bottom_up(expr, _evaluated_node)


def _evaluated_node(node, args):
    try:
        return node.func(*args)
    except Exception:  # noqa: BLE001 - sympy cannot evaluate it: keep it as written
        try:
            return node.func(*args, evaluate=False)
        except Exception:  # noqa: BLE001
            return node


def bottom_up(expr: sp.Basic, rebuild, replaced=lambda node: None) -> sp.Basic:
    """``expr`` rebuilt from its leaves up without recursion: a node ``replaced`` gives a
    value for (not None) is that value, a leaf stays, any other node becomes
    ``rebuild(node, its rebuilt arguments)``; shared subtrees are rebuilt once."""
    done: dict = {}
    stack = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if node in done:
            continue
        value = replaced(node)
        if value is not None:
            done[node] = value
        elif not node.args:
            done[node] = node
        elif ready:
            done[node] = rebuild(node, [done[a] for a in node.args])
        else:
            stack.append((node, True))
            stack.extend((a, False) for a in node.args if a not in done)
    return done[expr]


def guarded_bases(formula) -> tuple:
    """(what, base, variable) of each non-integer power and log in ``formula`` whose
    argument depends on one variable, outside any ``where`` (Piecewise) branch (the sympy
    walk of :func:`gbdist.algebra.terms.guarded_bases`, for a formula without a term)."""
    out = []
    stack = [formula]
    while stack:
        e = stack.pop()
        if isinstance(e, sp.Piecewise):
            continue
        if isinstance(e, sp.Pow) and e.exp.is_number:
            ex = float(e.exp)
            if ex != int(ex) if np.isfinite(ex) else False:
                syms = e.base.free_symbols
                if len(syms) == 1:
                    txt = sp.sstr(e.exp) if e.exp.is_Rational else f"{ex:g}"
                    out.append((f"the power {txt}", e.base, next(iter(syms)).name))
        if isinstance(e, sp.log) and len(e.args[0].free_symbols) == 1:
            out.append(("the log", e.args[0], next(iter(e.args[0].free_symbols)).name))
        stack.extend(e.args)
    return tuple(out)
