"""Semirings: ⊗ (a binary op) and ⊕ (a monoid), with an optional declared annihilator.

A semiring with a declared ``annihilator`` value uses *structural* (GraphBLAS)
semantics: absent entries do not take part. ``annihilator=None`` forbids the
intersection shortcut; left unset, the analysis (gbdist.compiler.analysis) decides.
The built-in semirings (``plus_times``, ``min_plus`` ...) are at the end.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from . import ops as _ops
import difflib

from ..errors import DefinitionError, UnknownAttributeError, UnknownNameError
from .ops import Monoid, Op, as_monoid


class _Unset:
    def __repr__(self):
        return "UNSET"


UNSET = _Unset()



@dataclass(frozen=True, eq=False)
class Semiring:
    """⊗ (``mul``, a binary op) and ⊕ (``add``, a monoid), mul first as in the paper."""

    mul: Op
    add: Monoid
    annihilator: object = UNSET  # UNSET: derive; None: forbid the shortcut; value: structural
    name: str = ""

    @property
    def key(self) -> tuple:
        ann = self.annihilator
        ann_key = "unset" if ann is UNSET else "none" if ann is None else sp.srepr(sp.sympify(ann))
        return ("semiring", self.mul.key, self.add.key, ann_key)

    @property
    def structural(self) -> bool:
        return self.annihilator is not UNSET and self.annihilator is not None

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
    o = _ops
    return _Namespace(
        plus_times=semiring(o.times, o.plus, name="plus_times"),
        plus_pair=semiring(o.pair, o.plus, annihilator=0, name="plus_pair"),
        min_plus=semiring(o.plus, o.min, annihilator=sp.oo, name="min_plus"),
        max_plus=semiring(o.plus, o.max, annihilator=-sp.oo, name="max_plus"),
        max_times=semiring(o.times, o.max, annihilator=0, name="max_times"),
        min_times=semiring(o.times, o.min, annihilator=0, name="min_times"),
        max_min=semiring(o.min, o.max, annihilator=0, name="max_min"),
        lor_land=semiring(o.land, o.lor, annihilator=0, name="lor_land"),
        any_pair=semiring(o.pair, o.any, annihilator=0, name="any_pair"),
        plus_absdiff=semiring(o.absdiff, o.plus, name="plus_absdiff"),
        plus_sqdiff=semiring(o.sqdiff, o.plus, name="plus_sqdiff"),
        max_absdiff=semiring(o.absdiff, o.max, name="max_absdiff"),
        plus_ne=semiring(o.ne, o.plus, name="plus_ne"),
    )


semirings = _builtin_semirings()
