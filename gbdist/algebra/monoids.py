"""Monoids: binary ops whose identity and flags are derived from the formula.

A :class:`Monoid` is the ⊕ of a semiring or a row reduction: an op with an identity
``e`` (``f(x, e) = f(e, x) = x``) and the flags the compiler decides with (idempotent,
invertible, commutative), each proven by :mod:`gbdist.algebra.proofs` (:func:`as_monoid`),
or, for an identity the user declares, checked (:func:`monoid`). The monoids of the
built-in ops are proved once and read back from their stored record
(:mod:`gbdist.algebra.ops`, which fills :data:`_PROVEN`). ``gb.ops.Monoid`` and
``gb.ops.as_monoid`` are these.

Takes any op (:class:`gbdist.algebra.ops.Op`: a ``formula``, ``arity``, ``domain``,
``term`` and ``key``) and imports no op module: ``ops`` imports this one.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import terms
from .evaluate import apply_binary, constant_value
from .lazy import Deferred
from .lazy import sympy as sp
from ..errors import DefinitionError


class OpBase:
    """What a monoid is made of: :class:`gbdist.algebra.ops.Op` derives from this (so that
    this module needs no import of it)."""

    __slots__ = ()


def _is_binary_op(op) -> bool:
    return isinstance(op, OpBase) and op.arity == 2


def _identity_candidates(boolean: bool) -> tuple:
    if boolean:
        return sp.Integer(0), sp.Integer(1)
    return sp.Integer(0), sp.Integer(1), sp.oo, -sp.oo


@dataclass(frozen=True, eq=False)
class Monoid(Deferred):
    """A binary op with an identity: the ⊕ of a semiring, or a row reduction."""

    op: OpBase  # gbdist.algebra.ops.Op
    identity: sp.Expr
    idempotent: bool
    invertible: bool
    commutative: bool
    identity_declared: bool = False

    def __post_init__(self):
        try:
            term = terms.encode(self.identity)
        except terms.Unsupported:
            term = None
        object.__setattr__(self, "_identity_term", term)

    @classmethod
    def stored(cls, op, identity: tuple, idempotent: bool, invertible: bool,
               commutative: bool, identity_declared: bool, ufunc: str | None) -> "Monoid":
        """The monoid of a stored record: its identity is the term ``identity`` (rebuilt as
        sympy when read), ``ufunc`` the name of its NumPy ufunc (None: it has none)."""
        if terms.has_symbols(identity) or (ufunc is not None and ufunc not in _UFUNC_NAMES):
            raise terms.Invalid(f"a stored monoid {op.name!r} is malformed")
        m = object.__new__(cls)
        for k, v in (("op", op), ("idempotent", bool(idempotent)), ("invertible", bool(invertible)),
                     ("commutative", bool(commutative)),
                     ("identity_declared", bool(identity_declared)), ("_identity_term", identity),
                     ("_ufunc", ufunc), ("_deferred", {"identity": identity})):
            object.__setattr__(m, k, v)
        return m

    def _rebuild(self, name: str, data):
        return terms.decode(data)  # "identity"

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def identity_term(self) -> tuple | None:
        """The identity as a term (None when a term does not represent it)."""
        return self.__dict__["_identity_term"]

    @property
    def key(self) -> tuple:
        k = self.__dict__.get("_key")
        if k is None:
            t = self.identity_term
            k = ("monoid", self.op.key, terms.text(t) if t is not None else
                 "sympy:" + sp.srepr(self.identity))
            object.__setattr__(self, "_key", k)
        return k

    def __eq__(self, other):
        return isinstance(other, Monoid) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        flags = [n for n, v in (("idempotent", self.idempotent), ("invertible", self.invertible),
                                ("commutative", self.commutative)) if v]
        from .mathtext import math
        return f"monoid {self.name} (identity {math(self.identity)}; " \
               f"{', '.join(flags) or 'no flags'})"

    @property
    def identity_value(self) -> float:
        t = self.identity_term
        return terms.constant(t) if t is not None else constant_value(self.identity)

    @property
    def ufunc(self):
        """The NumPy ufunc that implements this monoid on the CPU backend (found by proof
        once, then remembered with the monoid and in its stored record)."""
        name = self.__dict__.get("_ufunc", "")
        if name is None or name == "":
            ufunc = _monoid_ufunc(self.op)  # raises for a monoid without one
            object.__setattr__(self, "_ufunc", ufunc.__name__)
            return ufunc
        return getattr(np, name)

    def ufunc_name(self) -> str | None:
        """The name of :attr:`ufunc`, or None when the monoid has no NumPy ufunc."""
        try:
            return self.ufunc.__name__
        except DefinitionError:
            return None


_UFUNC_NAMES = ("add", "multiply", "maximum", "minimum")


def _monoid_ufunc(op):
    from .formulas import X, Y
    from .proofs import equivalent  # local: proofs depends on this module

    for formula, ufunc in ((X + Y, np.add), (X * Y, np.multiply), (sp.Max(X, Y), np.maximum),
                           (sp.Min(X, Y), np.minimum)):
        if equivalent(op.formula, formula, op.domain):
            return ufunc
    if op.domain == "boolean" or op.name == "any":
        return np.maximum if op.name in ("lor", "any") else np.minimum
    raise DefinitionError(
        f"monoid {op.name!r} has no NumPy implementation on the CPU backend",
        got=_show(op.formula), hint="use plus, times, min, max, lor, land or any",
    )


def _show(formula) -> str:
    from .mathtext import math
    return math(formula)


_PROVEN: dict = {}  # op key -> the Monoid (None: not a monoid) of the stored built-ins


@functools.lru_cache(maxsize=None)
def as_monoid(op) -> Monoid:
    """Derive the monoid structure of a binary op, or raise if it has none (a built-in op's
    is read from the stored record of the built-ins: :func:`_builtins`)."""
    if isinstance(op, Monoid):
        return op
    if not _is_binary_op(op):
        raise DefinitionError("a monoid needs a binary op", got=repr(op))
    known = _PROVEN.get(op.key)
    if known is not None:  # a built-in's: as stored (an equal op gets it, as from the cache)
        return known
    from .formulas import guarded
    with guarded(f"the monoid structure of op {op.name!r}"):
        return _as_monoid(op)


def _as_monoid(op) -> Monoid:
    from .formulas import X, Y
    from .proofs import equivalent

    if op.name == "any":
        # `any` returns either argument: it has no two-sided identity to derive.
        # GraphBLAS's convention (an empty reduction is 0) is declared here.
        return Monoid(op, sp.Integer(0), True, False, True, identity_declared=True)
    # Associativity is not checked: it needs a third symbol and sympy often
    # cannot decide it for Piecewise formulas. An identity is required.
    identity = None
    candidates = _identity_candidates(op.domain == "boolean")
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


def _possible_identities(op, candidates) -> list:
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


def monoid(op, identity=None) -> Monoid:
    """``gb.monoid(op, identity=None)``: a user monoid (⊕ of a semiring, or a reduction).

    Without ``identity`` it is derived (:func:`as_monoid`); a declared identity e is
    checked: ``op(x, e) = op(e, x) = x`` must hold, else a DefinitionError. E.g.
    probabilistic or: ``gb.monoid(gb.op("por", lambda x, y: x + y - x*y))`` (identity 0)."""
    if isinstance(op, Monoid):
        op = op.op
    if not _is_binary_op(op):
        raise DefinitionError("a monoid needs a binary op", got=repr(op))
    if identity is None:
        return as_monoid(op)
    from .formulas import _expr, guarded
    with guarded(f"the monoid of op {op.name!r}"):
        return _declared_monoid(op, _expr(identity))


def _declared_monoid(op, e) -> Monoid:
    from .formulas import X, Y
    from .mathtext import math as show
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
