"""Formulas as plain data: *terms*, the form that is stored, keyed and evaluated without sympy.

A term is a sympy tree written as nested tuples of strings and booleans (the JSON of the
on-disk caches, with tuples for lists): ``("Add", ("Symbol", "x", False), ("Integer", "2"))``
is ``x + 2``. :func:`encode` writes one from a sympy formula and :func:`decode` rebuilds
the same formula, *as written* (no evaluation: ``x/x`` stays ``x/x``), for a whitelist of
node types; nothing is parsed with ``sympify``/``eval``. Every op carries its formula's
term, and what a run needs of an op reads the term, not sympy:

* :func:`text`: the formula's structural key (an op's key, hence every plan's and cache's);
* :func:`evaluate`: the formula on NumPy arrays with IEEE semantics, node for node what
  :func:`gbdist.algebra.evaluate.evaluate` does on the sympy tree (0/0 is NaN, log 0 is
  −inf, ``x * y**-1`` divided as written), so the runtime computes the same values
  whether the op was built by sympy in this process or read back from a stored record;
* :func:`from_json`: a term read from a file, checked (node types, arities, numbers) first.

Imports numpy only (sympy is imported by :func:`encode` and :func:`decode` alone).
"""
from __future__ import annotations

import functools
import json
import math
import re
import sys
from fractions import Fraction

import numpy as np

from .lazy import sympy as sp
from .missing import isnan as _isnan  # the one function node of its own (NaN: missing)

MAX_ARGS = 256  # arguments of one node
MAX_DIGITS = 100  # digits of one integer (numerator, denominator)
MAX_EXPONENT = 64  # |n| in a power of a number to a number n (decoding)

# node types with a fixed number of arguments
ARITY = {"Pow": 2, "Abs": 1, "log": 1, "exp": 1, "sign": 1, "Not": 1, "Equality": 2,
         "Unequality": 2, "StrictLessThan": 2, "LessThan": 2, "StrictGreaterThan": 2,
         "GreaterThan": 2, "ITE": 3, "isnan": 1}
FUNCTIONS = ("Add", "Mul", "Max", "Min", "And", "Or", "Xor") + tuple(ARITY)
# leaves that are sympy singletons: name -> float value (None: the two booleans)
CONSTANTS = {
    "Infinity": math.inf, "NegativeInfinity": -math.inf, "ComplexInfinity": math.nan,
    "NaN": math.nan, "BooleanTrue": None, "BooleanFalse": None, "Exp1": math.e, "Pi": math.pi,
    "Zero": 0.0, "One": 1.0, "NegativeOne": -1.0, "Half": 0.5,
}
_RATIONAL_CONSTANTS = {"Zero": Fraction(0), "One": Fraction(1), "NegativeOne": Fraction(-1),
                       "Half": Fraction(1, 2)}
_NOT_FINITE = ("Infinity", "NegativeInfinity", "ComplexInfinity", "NaN")

_SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_INTEGER = re.compile(r"-?[0-9]{1,%d}" % MAX_DIGITS)
_FLOAT = re.compile(r"-?(inf|nan|[0-9.eE+-]{1,40})")


class Unsupported(Exception):
    """A sympy tree holds a node a term does not represent (then it has no term)."""


class Invalid(ValueError):
    """Stored data that is not a well-formed term."""


# ---------------------------------------------------------------------------
# keys and stored data
# ---------------------------------------------------------------------------


def text(term) -> str:
    """The term as compact JSON: the structural key of its formula."""
    return json.dumps(term, separators=(",", ":"))


def from_json(value) -> tuple:
    """A term read from JSON (lists), checked: known node types, arities, symbol names,
    numbers in canonical form (as :func:`encode` writes them). Recursive: the caller bounds
    the nesting first (:func:`gbdist.compiler.cache.check_shape`)."""
    if not isinstance(value, (list, tuple)) or not value or not isinstance(value[0], str):
        raise Invalid("a malformed term")
    head, args = value[0], value[1:]
    if len(args) > MAX_ARGS:
        raise Invalid(f"node {head!r} has too many arguments")
    if head in CONSTANTS:
        if args:
            raise Invalid(f"{head} takes no arguments")
        return (head,)
    if head == "Symbol":
        if len(args) != 2 or not isinstance(args[0], str) or not _SYMBOL_NAME.fullmatch(args[0]) \
                or not isinstance(args[1], bool):
            raise Invalid("a malformed symbol")
        return ("Symbol", args[0], args[1])
    if head == "Integer":
        if len(args) != 1:
            raise Invalid("a malformed integer")
        _int(args[0])
        return ("Integer", args[0])
    if head == "Rational":
        if len(args) != 2:
            raise Invalid("a malformed fraction")
        p, q = _int(args[0]), _int(args[1])
        if q <= 1 or math.gcd(p, q) != 1:
            raise Invalid("a fraction not in lowest terms")
        return ("Rational", args[0], args[1])
    if head == "Float":
        if len(args) != 1 or not isinstance(args[0], str) or not _FLOAT.fullmatch(args[0]):
            raise Invalid("a malformed float")
        try:
            if repr(float(args[0])) != args[0]:
                raise Invalid("a float not written as repr() writes it")
        except ValueError:
            raise Invalid("a malformed float") from None
        return ("Float", args[0])
    if head == "Piecewise":
        if not args:
            raise Invalid("an empty Piecewise")
        pairs = []
        for a in args:
            if not isinstance(a, (list, tuple)) or len(a) != 2:
                raise Invalid("a malformed Piecewise")
            pairs.append((from_json(a[0]), from_json(a[1])))
        return ("Piecewise", *pairs)
    if head in FUNCTIONS:
        if (head in ARITY and len(args) != ARITY[head]) or not args:
            raise Invalid(f"node {head!r} has the wrong number of arguments")
        return (head, *(from_json(a) for a in args))
    raise Invalid(f"node type {head!r} is not allowed in a term")


def _int(s) -> int:
    if not isinstance(s, str) or not _INTEGER.fullmatch(s) or str(int(s)) != s:
        raise Invalid("an integer that is malformed, too long or not canonical")
    return int(s)


def has_symbols(term) -> bool:
    """Whether the term reads x, y or another symbol (else it is a number)."""
    head = term[0]
    if head == "Symbol":
        return True
    if head == "Piecewise":
        return any(has_symbols(e) or has_symbols(c) for e, c in term[1:])
    if head in FUNCTIONS:
        return any(has_symbols(a) for a in term[1:])
    return False


def symbol_names(term) -> set:
    """The names of the symbols a term reads."""
    out, stack = set(), [term]
    while stack:
        t = stack.pop()
        if t[0] == "Symbol":
            out.add(t[1])
        elif t[0] == "Piecewise":
            for e, c in t[1:]:
                stack += [e, c]
        elif t[0] in FUNCTIONS:
            stack.extend(t[1:])
    return out


def guarded_bases(term) -> tuple:
    """(what, base term, variable) of each non-integer power and each log in ``term`` whose
    argument reads one variable, outside any ``where`` (Piecewise) branch: the arguments
    the data must keep nonnegative (the runtime checks them on the values; what the sympy
    walk in ``gbdist.inputs`` found, from the term)."""
    out = []
    stack = [term]
    while stack:
        t = stack.pop()
        head = t[0]
        if head == "Piecewise" or head not in FUNCTIONS:
            continue
        if head == "Pow" and not has_symbols(t[2]):
            ex = constant(t[2])
            if math.isfinite(ex) and ex != int(ex):
                names = symbol_names(t[1])
                if len(names) == 1:
                    r = rational(t[2])
                    shown = f"{r.numerator}/{r.denominator}" if r is not None else f"{ex:g}"
                    out.append((f"the power {shown}", t[1], next(iter(names))))
        if head == "log":
            names = symbol_names(t[1])
            if len(names) == 1:
                out.append(("the log", t[1], next(iter(names))))
        stack.extend(t[1:])
    return tuple(out)


# ---------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------


def rational(term) -> Fraction | None:
    """The exact value of a number leaf that sympy calls Rational (Integer, Rational, 0, 1,
    −1, ½), else None (floats, infinities, composite nodes)."""
    head = term[0]
    if head == "Integer":
        return Fraction(int(term[1]))
    if head == "Rational":
        return Fraction(int(term[1]), int(term[2]))
    return _RATIONAL_CONSTANTS.get(head)


def _exact(term) -> Fraction | None:
    """The exact value of a number built from rationals by +, ·, and integer powers (what
    sympy folds into one Rational when it evaluates), else None."""
    r = rational(term)
    if r is not None:
        return r
    head = term[0]
    if head in ("Add", "Mul"):
        values = [_exact(a) for a in term[1:]]
        if any(v is None for v in values):
            return None
        return sum(values, Fraction(0)) if head == "Add" else functools.reduce(
            lambda a, b: a * b, values, Fraction(1))
    if head == "Pow":
        base, ex = _exact(term[1]), _exact(term[2])
        if base is None or ex is None or ex.denominator != 1 or abs(ex) > MAX_EXPONENT \
                or (base == 0 and ex < 0):
            return None
        return base ** int(ex)
    return None


def _has_non_finite(term) -> bool:
    head = term[0]
    if head in _NOT_FINITE:
        return True
    if head == "Piecewise":
        return any(_has_non_finite(e) or _has_non_finite(c) for e, c in term[1:])
    if head in FUNCTIONS:
        return any(_has_non_finite(a) for a in term[1:])
    return False


def _negative_number(term) -> bool:
    """sympy's ``ex.is_number and ex.is_negative and not ex.has(oo, -oo, zoo, nan)``."""
    if has_symbols(term) or _has_non_finite(term):
        return False
    exact = _exact(term)
    if exact is not None:
        return exact < 0
    with np.errstate(all="ignore"):
        v = float(evaluate(term, {}))
    return v < 0


# ---------------------------------------------------------------------------
# evaluation with IEEE semantics (what gbdist.algebra.evaluate does on sympy trees)
# ---------------------------------------------------------------------------


def _dtype(env):
    return env.get("__dtype__", np.float64)


def _shape(env):
    return next((np.shape(v) for k, v in env.items() if k != "__dtype__"), ())


def _constant(term, dt):
    head = term[0]
    if head in ("NaN", "ComplexInfinity"):
        return dt(np.nan)
    if head == "Infinity":
        return dt(np.inf)
    if head == "NegativeInfinity":
        return dt(-np.inf)
    r = rational(term)
    if r is not None:
        if dt is not np.float64:
            return dt(r.numerator) / dt(r.denominator)
        return dt(float(r))
    if head == "Float":
        return dt(float(term[1]))
    return dt(CONSTANTS[head])  # e, π


def _pow(term, env):
    base = evaluate(term[1], env)
    ex = term[2]
    r = rational(ex)  # sympy's ex == 1/2, == 2, == -1 hold for these leaves only
    if r == Fraction(1, 2):
        return np.sqrt(base)
    if r == 2:
        return base * base
    if r == -1:
        return 1 / base
    if _negative_number(ex):
        # x^-p as 1 / x^p: one rounding less, and 1/x^p of a subnormal stays finite
        return 1 / _positive_pow(base, ex, env)
    return np.power(base, evaluate(ex, env))


def _positive_pow(base, negative_ex, env):
    """``base ** (-negative_ex)`` as sympy's ``_pos_pow(base, -ex)`` computes it: ``-ex``
    is evaluated by sympy, which folds a rational number into one Rational."""
    exact = _exact(negative_ex)
    if exact is None:  # a float or an irrational number: -ex is never 1, 1/2 or 2
        return np.power(base, -evaluate(negative_ex, env))
    r = -exact
    if r == 1:
        return base
    if r == Fraction(1, 2):
        return np.sqrt(base)
    if r == 2:
        return base * base
    dt = _dtype(env)
    value = dt(r.numerator) / dt(r.denominator) if dt is not np.float64 else dt(float(r))
    return np.power(base, value)


def _mul(term, env):
    """A product with its divisions done as written: (a·b) / (c·d), never a·b·c⁻¹·d⁻¹."""
    num, den = [], []
    for a in term[1:]:
        if a[0] == "Pow" and _negative_number(a[2]):
            den.append(_positive_pow(evaluate(a[1], env), a[2], env))
        else:
            num.append(evaluate(a, env))
    out = functools.reduce(np.multiply, num) if num else _dtype(env)(1)
    if den:
        out = out / functools.reduce(np.multiply, den)
    return out


def _piecewise(term, env):
    return first_true(term[1:], env, evaluate)


def first_true(branches, env, ev):
    """A piecewise value: each element takes the value of the first (expr, cond) branch whose
    condition holds there, NaN where none does; ``ev(node, env)`` evaluates a node (this
    module's terms, or sympy's in :mod:`gbdist.algebra.evaluate`). NumPy or CuPy arrays."""
    out = taken = None
    shape = _shape(env)  # CuPy for device arrays (the accuracy rule's statistics):
    xp = next((sys.modules["cupy"] for v in env.values() if type(v).__module__[:4] == "cupy"), np)
    for expr, cond in branches:
        c = xp.broadcast_to(xp.asarray(ev(cond, env)), shape).astype(bool)
        v = xp.broadcast_to(xp.asarray(ev(expr, env)), shape)
        if out is None:
            out = xp.array(v, dtype=_dtype(env), copy=True)
            taken = c.copy()
        else:
            sel = c & ~taken
            out[sel] = v[sel]
            taken |= c
    out[~taken] = np.nan
    return out


def _fold(fn):
    return lambda term, env: functools.reduce(fn, (evaluate(a, env) for a in term[1:]))


def _unary(fn):
    return lambda term, env: fn(evaluate(term[1], env))


def _binary(fn):
    return lambda term, env: fn(evaluate(term[1], env), evaluate(term[2], env))


_EVAL = {
    "Add": _fold(np.add),
    "Mul": _mul,
    "Pow": _pow,
    "Abs": _unary(np.abs),
    "exp": _unary(np.exp),
    "log": _unary(np.log),
    "sign": _unary(np.sign),
    "Max": _fold(np.maximum),
    "Min": _fold(np.minimum),
    "Piecewise": _piecewise,
    "ITE": lambda t, env: np.where(np.asarray(evaluate(t[1], env), dtype=bool),
                                   evaluate(t[2], env), evaluate(t[3], env)),
    "Equality": _binary(lambda a, b: a == b),
    "Unequality": _binary(lambda a, b: a != b),
    "StrictLessThan": _binary(lambda a, b: a < b),
    "LessThan": _binary(lambda a, b: a <= b),
    "StrictGreaterThan": _binary(lambda a, b: a > b),
    "GreaterThan": _binary(lambda a, b: a >= b),
    "And": _fold(np.logical_and),
    "Or": _fold(np.logical_or),
    "Xor": _fold(np.logical_xor),
    "Not": _unary(np.logical_not), "isnan": _unary(np.isnan),
}


def evaluate(term, env: dict):
    """The term on NumPy arrays: ``env`` maps symbol names ('x', 'y') to arrays, and
    optionally ``"__dtype__"`` to the floating type of constants (float64 by default).
    Callers silence NumPy's floating-point warnings (``np.errstate``)."""
    head = term[0]
    if head == "Symbol":
        return env[term[1]]
    if head == "BooleanTrue":
        return np.True_
    if head == "BooleanFalse":
        return np.False_
    fn = _EVAL.get(head)
    if fn is None:
        return _constant(term, _dtype(env))
    return fn(term, env)


def constant(term) -> float:
    """A closed term's value as a float (IEEE semantics; zoo is NaN)."""
    with np.errstate(all="ignore"):
        return float(evaluate(term, {}))


# ---------------------------------------------------------------------------
# sympy <-> terms
# ---------------------------------------------------------------------------

_CLASS_NAMES = {"Equality": "Eq", "Unequality": "Ne"}  # term name -> sympy attribute


def encode(e) -> tuple:
    """A sympy tree as a term; raises :class:`Unsupported` for node types, symbols or numbers
    a term does not represent exactly (so two formulas never share a term)."""
    name = type(e).__name__
    if name in CONSTANTS:
        return (name,)
    if isinstance(e, sp.Symbol):
        nonneg = e == _decode(("Symbol", e.name, True))  # colpos_*: positive (algebra.columns)
        if not (nonneg or e == sp.Symbol(e.name, real=True)) or not _SYMBOL_NAME.fullmatch(e.name):
            raise Unsupported(f"symbol {e!r} with other assumptions")
        return ("Symbol", e.name, nonneg)
    if isinstance(e, sp.Rational) and len(str(max(abs(e.p), e.q))) > MAX_DIGITS:
        raise Unsupported("a number longer than a term holds (1e-310 as an exact fraction)")
    if isinstance(e, sp.Integer):
        return ("Integer", str(int(e)))
    if isinstance(e, sp.Rational):
        return ("Rational", str(e.p), str(e.q))
    if isinstance(e, sp.Float):
        if e._prec != 53:
            raise Unsupported("a float of another precision than float64")
        return ("Float", repr(float(e)))
    if isinstance(e, sp.Piecewise):
        return ("Piecewise", *((encode(a.expr), encode(a.cond)) for a in e.args))
    if name in FUNCTIONS:
        return (name, *(encode(a) for a in e.args))
    raise Unsupported(name)


def _sympy_constant(name: str):
    return {"Infinity": sp.oo, "NegativeInfinity": -sp.oo, "ComplexInfinity": sp.zoo,
            "NaN": sp.nan, "BooleanTrue": sp.true, "BooleanFalse": sp.false, "Exp1": sp.E,
            "Pi": sp.pi, "Zero": sp.Integer(0), "One": sp.Integer(1),
            "NegativeOne": sp.Integer(-1), "Half": sp.Rational(1, 2)}[name]


def decode(term):
    """The sympy formula of a term, rebuilt as written (the inverse of :func:`encode`).
    Recursive: a term read from a file is checked (:func:`from_json`) first."""
    from .formulas import building
    with building():  # one switch of sympy's evaluation (each clears its cache)
        return _decode(term)


def _decode(t):
    head, args = t[0], t[1:]
    if head in CONSTANTS:
        return _sympy_constant(head)
    if head == "Symbol":  # a positive column operand's name says so (gbdist.algebra.columns)
        pos = {"positive": True} if args[0].startswith("colpos_") else {"nonnegative": True}
        return sp.Symbol(args[0], **pos) if args[1] else sp.Symbol(args[0], real=True)
    if head == "Integer":
        return sp.Integer(int(args[0]))
    if head == "Rational":
        return sp.Rational(int(args[0]), int(args[1]))
    if head == "Float":
        return sp.Float(float(args[0]))
    if head == "Piecewise":
        return sp.Piecewise(*((_decode(e), _decode(c)) for e, c in args))
    values = [_decode(a) for a in args]
    if head == "Pow" and values[0].is_number and values[1].is_Rational \
            and not _modest_exponent(values[1].p, values[1].q):
        raise Invalid("a power of a number with a huge exponent")
    out = _isnan(*values) if head == "isnan" else getattr(sp, _CLASS_NAMES.get(head, head))(*values)
    if out.is_Rational and max(abs(out.p), out.q).bit_length() > 8 * MAX_DIGITS:
        raise Invalid("a number in the term is too large")
    return out


def _modest_exponent(p: int, q: int) -> bool:
    """An exponent sympy may raise a number to without a huge result or root: at most
    MAX_EXPONENT in size, over a denominator of at most MAX_EXPONENT or a power of two (the
    exact value of a float, such as Minkowski's p = 5.8 = 6530219459687219 / 2**50)."""
    if abs(p) > MAX_EXPONENT * q:
        return False
    return q <= MAX_EXPONENT or (q & (q - 1) == 0 and q.bit_length() <= 1075)
