"""Semirings: ⊗ (a binary op) and ⊕ (a monoid), with an optional declared annihilator.

A semiring with a declared ``annihilator`` value uses *structural* (GraphBLAS)
semantics: absent entries do not take part. ``annihilator=None`` forbids the
intersection shortcut; left unset, the analysis (gbdist.compiler.analysis) decides.
The built-in semirings (``plus_times``, ``min_plus`` ...) are at the end; they are made
without sympy (their monoids come from the stored built-ins of :mod:`gbdist.algebra.ops`,
their annihilators are written as terms).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from . import ops as _ops
from . import terms
from .lazy import Deferred, without_class_defaults
from .lazy import sympy as sp
from ..errors import DefinitionError, UnknownAttributeError, UnknownNameError
from .ops import Monoid, Op, as_monoid


class _Unset:
    def __repr__(self):
        return "UNSET"


UNSET = _Unset()



@dataclass(frozen=True, eq=False)
class Semiring(Deferred):
    """⊗ (``mul``, a binary op) and ⊕ (``add``, a monoid), mul first as in the paper."""

    mul: Op
    add: Monoid
    annihilator: object = UNSET  # UNSET: derive; None: forbid the shortcut; value: structural
    name: str = ""

    def __post_init__(self):
        ann, term = self.annihilator, None
        if ann is UNSET or ann is None:
            text = "unset" if ann is UNSET else "none"
        else:
            try:
                term = terms.encode(sp.sympify(ann))
                text = terms.text(term)
            except terms.Unsupported:
                text = "sympy:" + sp.srepr(sp.sympify(ann))
        object.__setattr__(self, "_annihilator_key", text)
        object.__setattr__(self, "_annihilator_term", term)

    @classmethod
    def stored(cls, mul: Op, add: Monoid, annihilator, name: str = "") -> "Semiring":
        """A semiring whose annihilator is UNSET, None or a term (rebuilt as sympy when read)."""
        sr = object.__new__(cls)
        for k, v in (("mul", mul), ("add", add), ("name", name)):
            object.__setattr__(sr, k, v)
        if annihilator is UNSET or annihilator is None:
            object.__setattr__(sr, "annihilator", annihilator)
            object.__setattr__(sr, "_annihilator_key", "unset" if annihilator is UNSET else "none")
        else:
            if terms.has_symbols(annihilator):
                raise terms.Invalid("an annihilator is a number")
            object.__setattr__(sr, "_deferred", {"annihilator": annihilator})
            object.__setattr__(sr, "_annihilator_key", terms.text(annihilator))
            object.__setattr__(sr, "_annihilator_term", annihilator)
        return sr

    def _rebuild(self, name: str, data):
        return terms.decode(data)  # "annihilator"

    @property
    def annihilator_term(self) -> tuple | None:
        """A structural semiring's annihilator as a term (None for the others, and when no
        term represents it)."""
        return self.__dict__.get("_annihilator_term")

    @property
    def key(self) -> tuple:
        return ("semiring", self.mul.key, self.add.key, self.__dict__["_annihilator_key"])

    @property
    def structural(self) -> bool:
        return self.__dict__["_annihilator_key"] not in ("unset", "none")

    def __eq__(self, other):
        return isinstance(other, Semiring) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        ann = "" if self.annihilator is UNSET else f", annihilator={self.annihilator}"
        label = f"{self.name}: " if self.name else ""
        return f"{label}semiring({self.mul.name}, {self.add.name}{ann})"


def semiring(mul: Op, add, annihilator=UNSET, name: str = "") -> Semiring:
    """``semiring(mul, add, annihilator=...)``: ⊗ first, then ⊕ (a monoid)."""
    if isinstance(mul, Monoid) and isinstance(add, Op) and not _is_monoid(add):
        raise _swapped(mul, add)
    if not isinstance(mul, Op) or mul.arity != 2:
        raise DefinitionError("a semiring's mul (⊗) must be a binary op",
                              got=repr(mul), hint="e.g. gb.ops.times, gb.ops.absdiff")
    if isinstance(add, Op):
        try:
            add = as_monoid(add)
        except DefinitionError:
            if _is_monoid(mul):
                raise _swapped(mul, add) from None
            raise
    if not isinstance(add, Monoid):
        raise DefinitionError("a semiring's add (⊕) must be a monoid", got=repr(add),
                              hint="plus, times, min, max, lor, land or any")
    if annihilator is not UNSET and annihilator is not None:
        annihilator = _ops._expr(annihilator)
    return Semiring(mul, add, annihilator, name)


def _is_monoid(op) -> bool:
    if isinstance(op, Monoid):
        return True
    try:
        as_monoid(op)
    except DefinitionError:
        return False
    return True


def _swapped(mul, add) -> DefinitionError:
    """``semiring(plus, absdiff)``: python-graphblas's order (monoid first) given to gbdist."""
    first = mul.op.name if isinstance(mul, Monoid) else mul.name
    return DefinitionError(
        f"semiring({first}, {add.name}): {add.name!r} is not a monoid, so it cannot be the add "
        f"(⊕); the arguments look like python-graphblas's order (the monoid first), but gbdist "
        f"takes the multiply op (⊗) first, then the add monoid (⊕)",
        expected="semiring(mul, add), e.g. semiring(absdiff, plus) for Σ |x − y| "
                 "(python-graphblas writes the monoid first; gbdist follows the paper, ⊗ first)",
        got=f"mul = {first}, add = {add.name} (no identity e with "
            f"{add.name}(x, e) = {add.name}(e, x) = x)",
        hint=f"write semiring({add.name}, {first})")


# ---------------------------------------------------------------------------
# Built-in semirings
# ---------------------------------------------------------------------------


class _Namespace:
    def __init__(self, **items):
        self.__dict__.update(items)

    def __iter__(self):
        return iter(self.__dict__.values())

    def __getitem__(self, name):
        try:
            return self.__dict__[name]
        except (KeyError, TypeError):
            raise self._unknown(name, UnknownNameError) from None

    def __getattr__(self, name):  # only called for names that are not attributes
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._unknown(name, UnknownAttributeError)

    def _unknown(self, name, error):
        known = sorted(self.__dict__)
        close = difflib.get_close_matches(str(name), known, n=1)
        return error(
            f"unknown semiring {name!r} in gb.semirings", got=repr(name),
            expected="one of " + ", ".join(known),
            hint=(f"did you mean {close[0]!r}? " if close else "") +
                 "or build one: gb.semiring(mul, add), e.g. gb.semiring(gb.ops.plus, gb.ops.min)")

    def __contains__(self, name):
        return name in self.__dict__


def _builtin_semirings() -> _Namespace:
    """The built-in semirings, made without sympy: ⊕ from the stored monoids of the built-in
    ops, each annihilator as the term ``gb.semiring(..., annihilator=v)`` would give it
    (``0``, ``oo``, ``-oo``)."""
    o = _ops
    zero, inf, minus_inf = ("Zero",), ("Infinity",), ("NegativeInfinity",)

    def make(mul, add, annihilator, name):
        return Semiring.stored(mul, as_monoid(add), annihilator, name)

    return _Namespace(
        plus_times=make(o.times, o.plus, UNSET, "plus_times"),
        plus_pair=make(o.pair, o.plus, zero, "plus_pair"),
        min_plus=make(o.plus, o.min, inf, "min_plus"),
        max_plus=make(o.plus, o.max, minus_inf, "max_plus"),
        max_times=make(o.times, o.max, zero, "max_times"),
        min_times=make(o.times, o.min, zero, "min_times"),
        max_min=make(o.min, o.max, zero, "max_min"),
        lor_land=make(o.land, o.lor, zero, "lor_land"),
        any_pair=make(o.pair, o.any, zero, "any_pair"),
        plus_absdiff=make(o.absdiff, o.plus, UNSET, "plus_absdiff"),
        plus_sqdiff=make(o.sqdiff, o.plus, UNSET, "plus_sqdiff"),
        max_absdiff=make(o.absdiff, o.max, UNSET, "max_absdiff"),
        plus_ne=make(o.ne, o.plus, UNSET, "plus_ne"),
        **_positional_semirings(),
    )


def _positional_semirings() -> dict:
    """``any_secondi``, ``min_firstj``, ``plus_firsti1`` …: ⊕ in any / min / max / plus /
    times, ⊗ a positional op (:mod:`gbdist.algebra.positional`, python-graphblas's names).
    No annihilator (``None``): no value annihilates an index."""
    from .positional import POSITIONAL
    out = {}
    for add in ("any", "min", "max", "plus", "times"):
        for mul in POSITIONAL.values():
            name = f"{add}_{mul.name}"
            out[name] = Semiring.stored(mul, as_monoid(getattr(_ops, add)), None, name)
    return out


without_class_defaults(Semiring, "annihilator")
semirings = _builtin_semirings()
