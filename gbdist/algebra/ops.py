"""Operators: binary and unary ops as sympy formulas with a domain, and monoids.

An :class:`Op` is a formula over ``x`` (and ``y``) plus the domain of inputs it
accepts. Its properties are derived from the formula, not declared: whether a
binary op is a monoid (:func:`as_monoid`: identity, idempotent, invertible,
commutative), proven with :mod:`gbdist.algebra.proofs`. The built-in ops
(``plus``, ``times``, ``absdiff`` ...) are defined at the end.
"""
from __future__ import annotations


import functools
import inspect
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from ..errors import DefinitionError, DomainError, GbdistError
from .formulas import (
    DOMAINS, MAX_FORMULA_DEPTH, MAX_FORMULA_SIZE, X, Y, _expr, _formula_key, _too_deep, build,
    building, evaluated, formula_depth, formula_size, guarded, piecewise, show, substitute)
from .sym import Sym, s_abs, s_exp, s_log, s_max, s_min, s_sqrt, s_where
from .evaluate import apply_binary, apply_unary, constant_value, evaluate  # noqa: F401 (gb.ops.evaluate ...)


# ---------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------


def _derive_domain(formula: sp.Expr) -> str:
    """``nonnegative`` when the formula takes a root or a log of its inputs, unless the
    argument is known to be nonnegative or the root sits in a ``where`` branch whose
    condition states it (``where(x >= 0, x^0.5, 0)`` is defined for every real x)."""
    stack = [(formula, frozenset())]
    while stack:
        node, guards = stack.pop()
        if isinstance(node, sp.Piecewise):
            for branch, cond in node.args:
                stack.append((branch, guards | _nonnegative_facts(cond)))
                stack.append((cond, guards))
            continue
        arg = None
        if isinstance(node, sp.Pow) and node.exp.is_Rational and not node.exp.is_integer:
            arg = node.base
        elif isinstance(node, sp.log):
            arg = node.args[0]
        if arg is not None and arg.free_symbols & {X, Y} and arg not in guards \
                and not _known_nonnegative(arg):
            return "nonnegative"
        stack.extend((a, guards) for a in node.args)
    return "real"


def _nonnegative_facts(cond) -> frozenset:
    """The expressions a branch condition states to be >= 0 (or > 0): ``e >= 0``,
    ``e > 0``, ``0 <= e``, ``0 < e``, and each term of a conjunction of them."""
    terms = cond.args if isinstance(cond, sp.And) else (cond,)
    out = set()
    for t in terms:
        if isinstance(t, (sp.GreaterThan, sp.StrictGreaterThan)) and t.rhs == 0:
            out.add(t.lhs)
        elif isinstance(t, (sp.LessThan, sp.StrictLessThan)) and t.lhs == 0:
            out.add(t.rhs)
    return frozenset(out)


def _known_nonnegative(e: sp.Expr) -> bool:
    try:
        return bool(evaluated(e).is_nonnegative)
    except Exception:  # noqa: BLE001 - unknown
        return False


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
        size = formula_size(self.formula)
        if size > MAX_FORMULA_SIZE:
            raise DefinitionError(
                f"op {self.name!r} is too large once written out",
                expected=f"at most {MAX_FORMULA_SIZE} nodes", got=f"more than {MAX_FORMULA_SIZE}",
                hint="a helper used many times is copied at each use; simplify the definition")
        depth = formula_depth(self.formula)
        if depth > MAX_FORMULA_DEPTH:
            raise _too_deep(depth)
        object.__setattr__(self, "_key", ("op", self.arity, _formula_key(self.formula), self.domain))

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
        return f"op {self.name}({args}) = {show(self.formula)}"

    def __call__(self, *args):
        """Substitute scalar arguments (used when composing ops in formulas)."""
        if len(args) != self.arity:
            raise DefinitionError(f"op {self.name!r} takes {self.arity} argument(s)",
                                  got=f"{len(args)} argument(s)")
        subs = {X: _expr(args[0])}
        if self.arity == 2:
            subs[Y] = _expr(args[1])
        return Sym(substitute(self.formula, subs))

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
    with guarded(f"op {name!r}"):
        if callable(formula) and not isinstance(formula, (Sym, sp.Basic)):
            try:
                params = inspect.signature(formula).parameters
            except (TypeError, ValueError):
                raise DefinitionError(f"op {name!r}: cannot read the formula's parameters") from None
            arity = len(params)
            if arity not in (1, 2):
                raise DefinitionError(f"op {name!r} must take one or two arguments",
                                      got=f"{arity} parameter(s)")
            with building():  # one switch of sympy's evaluation for the whole formula
                try:
                    result = formula(*(Sym(s) for s in (X, Y)[:arity]))
                except (GbdistError, RecursionError, MemoryError):
                    raise
                except Exception as e:  # noqa: BLE001 - the user's own callable failed
                    raise DefinitionError(
                        f"the formula of op {name!r} raised {type(e).__name__}", got=str(e)[:200],
                        hint="it is called once, with symbolic x and y: use gb.where, gb.sqrt, "
                             "gb.log, gb.maximum ... (not math.*, numpy or if/else)") from None
                expr = _expr(result)
        else:
            expr = _expr(formula)
            arity = 2 if Y in expr.free_symbols else 1
        if isinstance(expr, (sp.logic.boolalg.BooleanFunction, sp.logic.boolalg.BooleanAtom,
                             sp.core.relational.Relational)):  # a condition: 1 where it holds, else 0
            expr = piecewise((sp.Integer(1), expr), (sp.Integer(0), sp.true))
        return Op(name, expr, arity, domain or _derive_domain(expr), doc)



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
        got=show(op.formula), hint="use plus, times, min, max, lor, land or any",
    )


@functools.lru_cache(maxsize=None)
def as_monoid(op: Op) -> Monoid:
    """Derive the monoid structure of a binary op, or raise if it has none."""
    if isinstance(op, Monoid):
        return op
    if not isinstance(op, Op) or op.arity != 2:
        raise DefinitionError("a monoid needs a binary op", got=repr(op))
    with guarded(f"the monoid structure of op {op.name!r}"):
        return _as_monoid(op)


def _as_monoid(op: Op) -> Monoid:
    from .proofs import equivalent

    if op.name == "any":
        # `any` returns either argument: it has no two-sided identity to derive.
        # GraphBLAS's convention (an empty reduction is 0) is declared here.
        return Monoid(op, sp.Integer(0), True, False, True, identity_declared=True)
    # Associativity is not checked: it needs a third symbol and sympy often
    # cannot decide it for Piecewise formulas. An identity is required.
    identity = None
    candidates = (sp.Integer(0), sp.Integer(1)) if op.domain == "boolean" else _IDENTITY_CANDIDATES
    for e in _possible_identities(op, candidates):
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


# A few of the special points every proof evaluates (proofs._BASE_SPECIALS): a candidate
# identity that fails at one of them would fail its proof there too.
_SCREEN = np.array([0.0, 1.0, -1.0, 2.0, -2.0, 0.5, 3.75, 7.0])


def _possible_identities(op: Op, candidates) -> list:
    """The candidates e for which f(x, e) = f(e, x) = x holds at a few points, the formula
    evaluated as written (one vectorised evaluation for all of them): most ops have no
    identity among the candidates, and this refutes each in microseconds instead of a
    sympy substitution and a proof. A necessary test only; the proof decides."""
    xs = _SCREEN
    if op.domain == "nonnegative":
        xs = xs[xs >= 0]
    elif op.domain == "boolean":
        xs = np.array([0.0, 1.0])
    es = np.array([constant_value(e) for e in candidates])
    x_all, e_all = np.tile(xs, len(es)), np.repeat(es, len(xs))
    try:
        with np.errstate(all="ignore"):
            right, left = apply_binary(op, x_all, e_all), apply_binary(op, e_all, x_all)
    except Exception:  # noqa: BLE001 - not evaluable here: let the proofs decide
        return list(candidates)
    tol = 1e-9 * np.maximum(np.abs(x_all), 1.0)
    ok = ((np.abs(right - x_all) <= tol) & (np.abs(left - x_all) <= tol)).reshape(len(es), len(xs))
    return [e for e, good in zip(candidates, ok.all(axis=1)) if good]


def monoid(op: Op, identity=None) -> Monoid:
    """``gb.monoid(op, identity=None)``: a user monoid (⊕ of a semiring, or a reduction).

    Without ``identity`` it is derived (:func:`as_monoid`); a declared identity e is
    checked: ``op(x, e) = op(e, x) = x`` must hold, else a DefinitionError. E.g.
    probabilistic or: ``gb.monoid(gb.op("por", lambda x, y: x + y - x*y))`` (identity 0)."""
    if isinstance(op, Monoid):
        op = op.op
    if not isinstance(op, Op) or op.arity != 2:
        raise DefinitionError("a monoid needs a binary op", got=repr(op))
    if identity is None:
        return as_monoid(op)
    with guarded(f"the monoid of op {op.name!r}"):
        return _declared_monoid(op, _expr(identity))


def _declared_monoid(op: Op, e) -> Monoid:
    from .proofs import equivalent

    if not (equivalent(op.at(y=e), X, op.domain)
            and equivalent(op.at(x=e).xreplace({Y: X}), X, op.domain)):
        raise DefinitionError(
            f"{show(e)} is not an identity of {op.name!r}",
            expected=f"{op.name}(x, e) = {op.name}(e, x) = x", got=f"e = {show(e)}",
            hint="leave identity=None to derive it")
    idempotent = equivalent(op.formula.xreplace({Y: X}), X, op.domain)
    invertible = op.domain != "boolean" and equivalent(op.formula, X + Y, op.domain)
    commutative = equivalent(op.formula, op.formula.xreplace({X: Y, Y: X}), op.domain)
    return Monoid(op, e, idempotent, invertible, commutative, identity_declared=True)


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


# ---------------------------------------------------------------------------
# Row ops: apply(normalize, A)
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RowScale(Op):
    """``apply(normalize, A)``: every row of A divided by its sum (a plus-reduction of
    the row), SciPy's normalisation of probability vectors (``jensenshannon``).

    Its formula is ``x``: the division by the row's sum needs that per-row scalar, so
    it is done once when the operand is bound (``gbdist.backends.rows.normalise_rows``, on the host or
    the device), after which every formula, proof and kernel sees normalised values.
    It must be the first op applied to the data, and every use of that operand in
    one expression must be normalised (else the operand would need two bindings)."""

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "_key", ("row_scale", "sum", self.domain))


normalize = RowScale("normalize", X, 1, "nonnegative",
                     "each row divided by its sum (rows of nonnegative values)")
ROW_OPS = {"normalize": normalize}
"""Built-in ops that act on whole rows (bound once per operand, not per entry)."""
