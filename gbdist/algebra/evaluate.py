"""Numeric evaluation of formulas with IEEE semantics: the scalar oracle.

:func:`evaluate` walks a sympy formula over NumPy arrays (0/0 is NaN, log 0 is
-inf, as written); the proofs check special points with it. The NumPy backend maps
stored values with :func:`apply_unary` and :func:`apply_binary`, which evaluate an op's
*term* (:func:`gbdist.algebra.terms.evaluate`, the same walk over the formula as plain
data), so they need no sympy: an op read back from a stored plan computes exactly what
the op built by sympy computes.
"""
from __future__ import annotations

import functools

import numpy as np

from . import terms
from .lazy import sympy as sp
from ..errors import DefinitionError


# ---------------------------------------------------------------------------
# Numeric evaluation of formulas (the CPU backend's scalar engine)
# ---------------------------------------------------------------------------


def _ev_piecewise(e, env):
    return terms.first_true(e.args, env, evaluate)


def _shape(env):
    for k, v in env.items():
        if k != "__dtype__":
            return np.shape(v)
    return ()


def _dtype(env):
    return env.get("__dtype__", np.float64)


def _ev_pow(e, env):
    base = evaluate(e.base, env)
    ex = e.exp
    if ex == sp.Rational(1, 2):
        return np.sqrt(base)
    if ex == 2:
        return base * base
    if ex == -1:
        return 1 / base
    if ex.is_number and ex.is_negative and not ex.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        # x^-p as 1 / x^p: one rounding less, and 1/x^p of a subnormal stays finite
        return 1 / _pos_pow(base, -ex, env)
    return np.power(base, evaluate(ex, env))


def _pos_pow(base, ex, env):
    if ex == 1:
        return base
    if ex == sp.Rational(1, 2):
        return np.sqrt(base)
    if ex == 2:
        return base * base
    return np.power(base, evaluate(ex, env))


def _ev_mul(e, env):
    """A product with its divisions done as written: (a·b) / (c·d), never a·b·c⁻¹·d⁻¹.

    ``x * y**-1`` computed as a multiplication by 1/y overflows for a subnormal y
    (1/1e-310 = inf) where x / y is finite.
    """
    num, den = [], []
    for a in e.args:
        if (isinstance(a, sp.Pow) and a.exp.is_number and a.exp.is_negative
                and not a.exp.has(sp.oo, -sp.oo, sp.zoo, sp.nan)):
            den.append(_pos_pow(evaluate(a.base, env), -a.exp, env))
        else:
            num.append(evaluate(a, env))
    out = functools.reduce(np.multiply, num) if num else _dtype(env)(1)
    if den:
        out = out / functools.reduce(np.multiply, den)
    return out


def _ev_ite(e, env):
    c, a, b = (evaluate(t, env) for t in e.args)
    return np.where(np.asarray(c, dtype=bool), a, b)


def _ev_xor(e, env):
    return functools.reduce(np.logical_xor, (evaluate(a, env) for a in e.args))


_EVAL: dict = {}  # sympy node type -> its evaluation


def _table() -> dict:
    """The table above, made on first use (sympy is imported then)."""
    if not _EVAL:
        _EVAL.update(_build_table())
    return _EVAL


def _build_table() -> dict:
    from .missing import isnan_class
    return {
        isnan_class(): lambda e, env: np.isnan(evaluate(e.args[0], env)),
        sp.Add: lambda e, env: functools.reduce(np.add, (evaluate(a, env) for a in e.args)),
        sp.Mul: _ev_mul,
        sp.Pow: _ev_pow,
        sp.Abs: lambda e, env: np.abs(evaluate(e.args[0], env)),
        sp.exp: lambda e, env: np.exp(evaluate(e.args[0], env)),
        sp.log: lambda e, env: np.log(evaluate(e.args[0], env)),
        sp.sign: lambda e, env: np.sign(evaluate(e.args[0], env)),
        sp.Max: lambda e, env: functools.reduce(np.maximum, (evaluate(a, env) for a in e.args)),
        sp.Min: lambda e, env: functools.reduce(np.minimum, (evaluate(a, env) for a in e.args)),
        sp.Piecewise: _ev_piecewise,
        sp.ITE: _ev_ite,
        sp.Eq: lambda e, env: evaluate(e.lhs, env) == evaluate(e.rhs, env),
        sp.Ne: lambda e, env: evaluate(e.lhs, env) != evaluate(e.rhs, env),
        sp.StrictLessThan: lambda e, env: evaluate(e.lhs, env) < evaluate(e.rhs, env),
        sp.LessThan: lambda e, env: evaluate(e.lhs, env) <= evaluate(e.rhs, env),
        sp.StrictGreaterThan: lambda e, env: evaluate(e.lhs, env) > evaluate(e.rhs, env),
        sp.GreaterThan: lambda e, env: evaluate(e.lhs, env) >= evaluate(e.rhs, env),
        sp.And: lambda e, env: functools.reduce(np.logical_and, (evaluate(a, env) for a in e.args)),
        sp.Or: lambda e, env: functools.reduce(np.logical_or, (evaluate(a, env) for a in e.args)),
        sp.Xor: _ev_xor,
        sp.Not: lambda e, env: np.logical_not(evaluate(e.args[0], env)),
    }


def __getattr__(name: str):
    """``EVALUABLE``: the sympy node types the evaluator (and the CUDA printer) accept
    (a tuple of sympy classes: made on first read, which imports sympy)."""
    if name == "EVALUABLE":
        return tuple(_table())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _constant(expr, dt):
    if expr is sp.nan or expr is sp.zoo:
        # zoo is sympy's unsigned (complex) infinity, e.g. simplify(log(0)): no real
        # value, so NaN. Formulas as written are substituted without evaluation and
        # keep IEEE's signed infinities (log(0) = -inf); a simplified copy holding
        # zoo disagrees with them and is never used.
        return dt(np.nan)
    if expr is sp.oo:
        return dt(np.inf)
    if expr is -sp.oo:
        return dt(-np.inf)
    if expr.is_Rational and dt is not np.float64:
        return dt(int(expr.p)) / dt(int(expr.q))
    return dt(float(expr))


def evaluate(expr: sp.Basic, env: dict) -> np.ndarray:
    """Evaluate a sympy formula on NumPy arrays by walking its tree (IEEE semantics).

    ``env`` maps symbols (by name: 'x', 'y') to arrays, and optionally
    ``"__dtype__"`` to the floating type of constants (float64 by default; the
    proofs also evaluate in long double). Only the node types in the table
    above are accepted; anything else raises instead of guessing. Divisions are
    computed as written (x / y), not as x · y⁻¹.
    """
    if expr.is_Symbol:
        return env[expr.name]
    if expr is sp.true:
        return np.True_
    if expr is sp.false:
        return np.False_
    if expr.is_Number or expr.is_NumberSymbol or expr in (sp.oo, -sp.oo, sp.zoo, sp.nan):
        return _constant(expr, _dtype(env))
    table = _table()
    for cls in type(expr).__mro__:
        fn = table.get(cls)
        if fn is not None:
            with np.errstate(all="ignore"):
                return fn(expr, env)
    from .mathtext import math
    raise DefinitionError("the CPU backend cannot evaluate this formula node",
                          got=f"{type(expr).__name__}: {math(expr, 200)}")


def evaluable(expr: sp.Basic) -> bool:
    """True when every node of ``expr`` is one the evaluator accepts."""
    for node in sp.preorder_traversal(expr):
        if node.is_Symbol or node in (sp.true, sp.false, sp.oo, -sp.oo, sp.nan):
            continue
        if node.is_Number or node.is_NumberSymbol:
            continue
        if isinstance(node, (sp.core.containers.Tuple, sp.functions.elementary.piecewise.ExprCondPair)):
            continue
        if not isinstance(node, tuple(_table())):
            return False
    return True


def evaluate_formula(formula, env: dict):
    """A term (:mod:`gbdist.algebra.terms`) or a sympy formula on NumPy arrays."""
    if isinstance(formula, tuple):
        return terms.evaluate(formula, env)
    return evaluate(formula, env)


def formula_text(formula) -> str:
    """A term or a sympy formula as sympy prints it (a term is rebuilt by sympy: for
    messages, which are rare)."""
    return str(terms.decode(formula) if isinstance(formula, tuple) else formula)


def evaluate_op(op, env: dict):
    """An op's formula on NumPy arrays: its term when it has one (every op whose formula
    a term represents: :attr:`gbdist.algebra.ops.Op.term`), else the sympy walk."""
    term = getattr(op, "term", None)
    if term is not None:
        return terms.evaluate(term, env)
    return evaluate(op.formula, env)


def apply_unary(op, values: np.ndarray) -> np.ndarray:
    """A unary op (anything with a ``formula`` over x: an :class:`~gbdist.algebra.ops.Op`)
    on an array of values, as written."""
    with np.errstate(all="ignore"):
        out = evaluate_op(op, {"x": values})
    return np.broadcast_to(np.asarray(out, dtype=np.float64), np.shape(values))


def apply_binary(op, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A binary op (a ``formula`` over x and y) on two arrays, broadcast, as written."""
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(all="ignore"):
        out = evaluate_op(op, {"x": a, "y": b})
    return np.broadcast_to(np.asarray(out, dtype=np.float64), a.shape)


def constant_value(expr) -> float:
    """A closed sympy expression (or a term) as a float (IEEE semantics; zoo is NaN)."""
    if isinstance(expr, tuple):
        return terms.constant(expr)
    return float(evaluate(sp.sympify(expr) if not isinstance(expr, sp.Basic) else expr, {}))
