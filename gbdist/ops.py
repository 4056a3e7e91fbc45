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

import functools
import inspect
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from .errors import DefinitionError, DomainError

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
        return sp.nsimplify(f) if f == int(f) else sp.Float(f)
    raise DefinitionError(
        "a scalar formula can only combine numbers and the op's parameters",
        got=f"{type(v).__name__} {v!r}",
        hint="inside gb.op(...) use the x, y arguments, numbers and gb.sqrt/gb.log/gb.where ...",
    )


class Sym:
    """A scalar formula under construction; Python operators build sympy trees."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = _expr(expr)

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
        return Sym(fn(b, a) if swap else fn(a, b))

    def __add__(self, o): return self._bin(o, lambda a, b: a + b)
    def __radd__(self, o): return self._bin(o, lambda a, b: a + b, True)
    def __sub__(self, o): return self._bin(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._bin(o, lambda a, b: a - b, True)
    def __mul__(self, o): return self._bin(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._bin(o, lambda a, b: a * b, True)
    def __truediv__(self, o): return self._bin(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._bin(o, lambda a, b: a / b, True)
    def __pow__(self, o): return self._bin(o, lambda a, b: a ** b)
    def __rpow__(self, o): return self._bin(o, lambda a, b: a ** b, True)
    def __neg__(self): return Sym(-self.expr)
    def __pos__(self): return self
    def __abs__(self): return Sym(sp.Abs(self.expr))
    def __eq__(self, o): return self._bin(o, sp.Eq)
    def __ne__(self, o): return self._bin(o, sp.Ne)
    def __lt__(self, o): return self._bin(o, sp.Lt)
    def __le__(self, o): return self._bin(o, sp.Le)
    def __gt__(self, o): return self._bin(o, sp.Gt)
    def __ge__(self, o): return self._bin(o, sp.Ge)
    def __and__(self, o): return self._bin(o, sp.And)
    def __or__(self, o): return self._bin(o, sp.Or)
    def __invert__(self): return Sym(sp.Not(self.expr))


# Scalar functions over Sym (the api module dispatches to these for scalars).

def s_sqrt(v): return Sym(sp.sqrt(_expr(v)))
def s_log(v): return Sym(sp.log(_expr(v)))
def s_exp(v): return Sym(sp.exp(_expr(v)))
def s_abs(v): return Sym(sp.Abs(_expr(v)))
def s_max(a, b): return Sym(sp.Max(_expr(a), _expr(b)))
def s_min(a, b): return Sym(sp.Min(_expr(a), _expr(b)))


def s_where(cond, a, b):
    c = _expr(cond)
    if not isinstance(c, (sp.logic.boolalg.Boolean, sp.core.relational.Relational)):
        raise DefinitionError(
            "where() needs a condition as its first argument",
            got=str(c),
            hint="compare with ==, !=, <, <=, >, >=, e.g. where(x + y == 0, 0, ...)",
        )
    return Sym(sp.Piecewise((_expr(a), c), (_expr(b), True)))


# ---------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------


def _derive_domain(formula: sp.Expr) -> str:
    """``nonnegative`` when the formula takes a root or a log of its inputs."""
    for node in sp.preorder_traversal(formula):
        if isinstance(node, sp.Pow) and node.exp.is_Rational and not node.exp.is_integer:
            if node.base.free_symbols & {X, Y}:
                return "nonnegative"
        if isinstance(node, sp.log) and node.args[0].free_symbols & {X, Y}:
            return "nonnegative"
    return "real"


@dataclass(frozen=True, eq=False)
class Op:
    """A scalar operator: a sympy formula over ``x`` (unary) or ``x, y`` (binary)."""

    name: str
    formula: sp.Expr
    arity: int
    domain: str = "real"
    doc: str = ""
    _key: tuple = field(default=(), repr=False, compare=False)

    def __post_init__(self):
        extra = self.formula.free_symbols - {X, Y}
        if extra:
            names = ", ".join(sorted(str(s) for s in extra))
            raise DefinitionError(
                f"op {self.name!r} uses names that are not its parameters",
                got=names, hint="an op's formula may only use x (and y) and numbers",
            )
        if self.arity == 1 and Y in self.formula.free_symbols:
            raise DefinitionError(f"unary op {self.name!r} uses y", got=str(self.formula))
        if self.domain not in DOMAINS:
            raise DefinitionError(f"unknown domain for op {self.name!r}", got=self.domain,
                                  hint="one of " + ", ".join(DOMAINS))
        object.__setattr__(self, "_key", ("op", self.arity, sp.srepr(self.formula), self.domain))

    @property
    def key(self) -> tuple:
        """Structural key: the formula and domain (the name is only a label)."""
        return self._key

    def __eq__(self, other):
        return isinstance(other, Op) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        args = "x" if self.arity == 1 else "x, y"
        return f"op {self.name}({args}) = {sp.sstr(self.formula)}"

    def __call__(self, *args):
        """Substitute scalar arguments (used when composing ops in formulas)."""
        if len(args) != self.arity:
            raise DefinitionError(f"op {self.name!r} takes {self.arity} argument(s)",
                                  got=f"{len(args)} argument(s)")
        subs = {X: _expr(args[0])}
        if self.arity == 2:
            subs[Y] = _expr(args[1])
        return Sym(self.formula.xreplace(subs))

    def at(self, x=None, y=None) -> sp.Expr:
        """The formula with x and/or y fixed to sympy values."""
        subs = {}
        if x is not None:
            subs[X] = _expr(x)
        if y is not None:
            subs[Y] = _expr(y)
        return self.formula.subs(subs)

    def check_domain(self, values: np.ndarray, what: str) -> None:
        """Raise DomainError if ``values`` fall outside this op's domain."""
        if self.domain == "nonnegative" and values.size and np.nanmin(values) < 0:
            raise DomainError(
                f"op {self.name!r} is defined for nonnegative inputs only",
                got=f"{what} holds a negative value ({np.nanmin(values):g})",
                hint="take abs() of the data first, or use a metric defined on reals",
            )


def make_op(name: str, formula, domain: str | None = None, doc: str = "") -> Op:
    """Build an op from a Python callable over Sym arguments, or a Sym/sympy formula.

    ``make_op("chi2", lambda x, y: gb.where(x + y == 0, 0, (x - y)**2 / (x + y)))``
    """
    if callable(formula) and not isinstance(formula, (Sym, sp.Basic)):
        try:
            params = inspect.signature(formula).parameters
        except (TypeError, ValueError):
            raise DefinitionError(f"op {name!r}: cannot read the formula's parameters") from None
        arity = len(params)
        if arity not in (1, 2):
            raise DefinitionError(f"op {name!r} must take one or two arguments",
                                  got=f"{arity} parameter(s)")
        result = formula(*(Sym(s) for s in (X, Y)[:arity]))
        expr = _expr(result)
    else:
        expr = _expr(formula)
        arity = 2 if Y in expr.free_symbols else 1
    if isinstance(expr, (sp.logic.boolalg.BooleanFunction, sp.core.relational.Relational)):
        expr = sp.Piecewise((1, expr), (0, True))
    return Op(name, expr, arity, domain or _derive_domain(expr), doc)


# ---------------------------------------------------------------------------
# Numeric evaluation of formulas (the CPU backend's scalar engine)
# ---------------------------------------------------------------------------


def _ev_piecewise(e, env):
    out = None
    taken = None
    for expr, cond in e.args:
        c = np.broadcast_to(evaluate(cond, env), _shape(env)).astype(bool)
        v = np.broadcast_to(evaluate(expr, env), _shape(env))
        if out is None:
            out = np.array(v, dtype=np.float64, copy=True)
            taken = c.copy()
        else:
            sel = c & ~taken
            out[sel] = v[sel]
            taken |= c
    out[~taken] = np.nan
    return out


def _shape(env):
    for v in env.values():
        return np.shape(v)
    return ()


def _ev_pow(e, env):
    base = evaluate(e.base, env)
    ex = e.exp
    if ex == sp.Rational(1, 2):
        return np.sqrt(base)
    if ex == 2:
        return base * base
    if ex == -1:
        return 1.0 / base
    return np.power(base, evaluate(ex, env))


_EVAL = {
    sp.Add: lambda e, env: functools.reduce(np.add, (evaluate(a, env) for a in e.args)),
    sp.Mul: lambda e, env: functools.reduce(np.multiply, (evaluate(a, env) for a in e.args)),
    sp.Pow: _ev_pow,
    sp.Abs: lambda e, env: np.abs(evaluate(e.args[0], env)),
    sp.exp: lambda e, env: np.exp(evaluate(e.args[0], env)),
    sp.log: lambda e, env: np.log(evaluate(e.args[0], env)),
    sp.sign: lambda e, env: np.sign(evaluate(e.args[0], env)),
    sp.Max: lambda e, env: functools.reduce(np.maximum, (evaluate(a, env) for a in e.args)),
    sp.Min: lambda e, env: functools.reduce(np.minimum, (evaluate(a, env) for a in e.args)),
    sp.Piecewise: _ev_piecewise,
    sp.Eq: lambda e, env: evaluate(e.lhs, env) == evaluate(e.rhs, env),
    sp.Ne: lambda e, env: evaluate(e.lhs, env) != evaluate(e.rhs, env),
    sp.StrictLessThan: lambda e, env: evaluate(e.lhs, env) < evaluate(e.rhs, env),
    sp.LessThan: lambda e, env: evaluate(e.lhs, env) <= evaluate(e.rhs, env),
    sp.StrictGreaterThan: lambda e, env: evaluate(e.lhs, env) > evaluate(e.rhs, env),
    sp.GreaterThan: lambda e, env: evaluate(e.lhs, env) >= evaluate(e.rhs, env),
    sp.And: lambda e, env: functools.reduce(np.logical_and, (evaluate(a, env) for a in e.args)),
    sp.Or: lambda e, env: functools.reduce(np.logical_or, (evaluate(a, env) for a in e.args)),
    sp.Not: lambda e, env: np.logical_not(evaluate(e.args[0], env)),
}


def evaluate(expr: sp.Basic, env: dict) -> np.ndarray:
    """Evaluate a sympy formula on NumPy arrays by walking its tree.

    ``env`` maps symbols (by name: 'x', 'y') to arrays. Only the node types in
    the table above are accepted; anything else raises instead of guessing.
    """
    if expr.is_Symbol:
        return env[expr.name]
    if expr is sp.true:
        return np.True_
    if expr is sp.false:
        return np.False_
    if expr.is_Number or expr.is_NumberSymbol or expr in (sp.oo, -sp.oo, sp.zoo, sp.nan):
        if expr is sp.zoo:
            return np.float64(np.inf)
        return np.float64(float(expr))
    for cls in type(expr).__mro__:
        fn = _EVAL.get(cls)
        if fn is not None:
            with np.errstate(all="ignore"):
                return fn(expr, env)
    raise DefinitionError("the CPU backend cannot evaluate this formula node",
                          got=f"{type(expr).__name__}: {expr}")


def apply_unary(op: Op, values: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = evaluate(op.formula, {"x": values})
    return np.broadcast_to(np.asarray(out, dtype=np.float64), np.shape(values))


def apply_binary(op: Op, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(all="ignore"):
        out = evaluate(op.formula, {"x": a, "y": b})
    return np.broadcast_to(np.asarray(out, dtype=np.float64), a.shape)


def constant_value(expr: sp.Basic) -> float:
    """A closed sympy expression as a float (inf for oo/zoo)."""
    return float(evaluate(sp.sympify(expr) if not isinstance(expr, sp.Basic) else expr, {}))


# ---------------------------------------------------------------------------
# Monoids: binary ops whose identity and flags are derived from the formula
# ---------------------------------------------------------------------------

_IDENTITY_CANDIDATES = (sp.Integer(0), sp.Integer(1), sp.oo, -sp.oo)


@dataclass(frozen=True, eq=False)
class Monoid:
    """A binary op with an identity: the ⊕ of a semiring, or a row reduction."""

    op: Op
    identity: sp.Expr
    idempotent: bool
    invertible: bool
    commutative: bool
    identity_declared: bool = False

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def key(self) -> tuple:
        return ("monoid", self.op.key, sp.srepr(self.identity))

    def __eq__(self, other):
        return isinstance(other, Monoid) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        flags = [n for n, v in (("idempotent", self.idempotent), ("invertible", self.invertible),
                                ("commutative", self.commutative)) if v]
        return f"monoid {self.name} (identity {self.identity}; {', '.join(flags) or 'no flags'})"

    @property
    def identity_value(self) -> float:
        return constant_value(self.identity)

    @property
    def ufunc(self):
        """The NumPy ufunc that implements this monoid on the CPU backend."""
        return _monoid_ufunc(self.op)


_UFUNCS = [
    (X + Y, np.add),
    (X * Y, np.multiply),
    (sp.Max(X, Y), np.maximum),
    (sp.Min(X, Y), np.minimum),
]


def _monoid_ufunc(op: Op):
    from .proofs import equivalent  # local: proofs depends on this module

    for formula, ufunc in _UFUNCS:
        if equivalent(op.formula, formula, op.domain):
            return ufunc
    if op.domain == "boolean" or op.name == "any":
        return np.maximum if op.name in ("lor", "any") else np.minimum
    raise DefinitionError(
        f"monoid {op.name!r} has no NumPy implementation on the CPU backend",
        got=sp.sstr(op.formula), hint="use plus, times, min, max, lor, land or any",
    )


@functools.lru_cache(maxsize=None)
def as_monoid(op: Op) -> Monoid:
    """Derive the monoid structure of a binary op, or raise if it has none."""
    from .proofs import equivalent

    if isinstance(op, Monoid):
        return op
    if not isinstance(op, Op) or op.arity != 2:
        raise DefinitionError("a monoid needs a binary op", got=repr(op))
    if op.name == "any":
        # `any` returns either argument: it has no two-sided identity to derive.
        # GraphBLAS's convention (an empty reduction is 0) is declared here.
        return Monoid(op, sp.Integer(0), True, False, True, identity_declared=True)
    # Associativity is not checked: it needs a third symbol and sympy often
    # cannot decide it for Piecewise formulas. An identity is required.
    identity = None
    candidates = (sp.Integer(0), sp.Integer(1)) if op.domain == "boolean" else _IDENTITY_CANDIDATES
    for e in candidates:
        if equivalent(op.at(y=e), X, op.domain) and equivalent(op.at(x=e).xreplace({Y: X}), X, op.domain):
            identity = e
            break
    if identity is None:
        raise DefinitionError(
            f"op {op.name!r} is not a monoid: no identity e with f(x, e) = f(e, x) = x was found",
            got=repr(op), hint="use plus, times, min, max, lor, land or any as ⊕",
        )
    idempotent = equivalent(op.formula.xreplace({Y: X}), X, op.domain)
    invertible = op.domain != "boolean" and equivalent(op.formula, X + Y, op.domain)
    commutative = equivalent(op.formula, op.formula.xreplace({X: Y, Y: X}), op.domain)
    return Monoid(op, identity, idempotent, invertible, commutative)


# ---------------------------------------------------------------------------
# Built-in operators
# ---------------------------------------------------------------------------

_x, _y = Sym(X), Sym(Y)


def _where(c, a, b):
    return s_where(c, a, b)


plus = make_op("plus", _x + _y, doc="x + y")
minus = make_op("minus", _x - _y, doc="x - y")
times = make_op("times", _x * _y, doc="x * y")
div = make_op("div", _x / _y, doc="x / y")
min = make_op("min", s_min(_x, _y), doc="min(x, y)")  # noqa: A001 (GraphBLAS name)
max = make_op("max", s_max(_x, _y), doc="max(x, y)")  # noqa: A001
absdiff = make_op("absdiff", abs(_x - _y), doc="|x - y|")
sqdiff = make_op("sqdiff", (_x - _y) ** 2, doc="(x - y)^2")
power = make_op("power", _x ** _y, doc="x ^ y")
ne = make_op("ne", _where(_x != _y, 1, 0), doc="1 where x != y, else 0")
eq = make_op("eq", _where(_x == _y, 1, 0), doc="1 where x == y, else 0")
lor = make_op("lor", _where((_x != 0) | (_y != 0), 1, 0), domain="boolean", doc="x or y")
land = make_op("land", _where((_x != 0) & (_y != 0), 1, 0), domain="boolean", doc="x and y")
any = make_op("any", lambda x, y: x, doc="either argument (GraphBLAS ANY)")  # noqa: A001
first = make_op("first", lambda x, y: x, doc="x")
second = make_op("second", lambda x, y: y, doc="y")
pair = Op("pair", sp.Integer(1), 2, "real", "1 (GraphBLAS PAIR / ONEB)")

abs = make_op("abs", s_abs(_x), doc="|x|")  # noqa: A001
sqrt = make_op("sqrt", s_sqrt(_x), doc="sqrt(x), x >= 0")
square = make_op("square", _x ** 2, doc="x^2")
log = make_op("log", s_log(_x), doc="natural log, x >= 0")
exp = make_op("exp", s_exp(_x), doc="e^x")
identity = make_op("identity", _x, doc="x")
neg = make_op("neg", -_x, doc="-x")
nonzero = make_op("nonzero", _where(_x != 0, 1, 0), doc="1 where the stored value is nonzero")


def pow(p) -> Op:  # noqa: A001 (the issue names it pow(p))
    """Unary ``x ^ p`` for a number ``p`` (e.g. ``gb.apply(ops.pow(3), A)``)."""
    return make_op(f"pow{p:g}", _x ** p, doc=f"x ^ {p:g}")


def absdiff_pow(p) -> Op:
    """Binary ``|x - y| ^ p``: Minkowski's ⊗."""
    return make_op(f"absdiff_pow{p:g}", abs(_x - _y) ** p, doc=f"|x - y| ^ {p:g}")


BUILTIN_BINARY = (plus, minus, times, div, min, max, absdiff, sqdiff, power, ne, eq,
                  lor, land, any, first, second, pair)
BUILTIN_UNARY = (abs, sqrt, square, log, exp, identity, neg, nonzero)
BY_NAME = {op.name: op for op in BUILTIN_BINARY + BUILTIN_UNARY}
