"""Column operands in formulas: per-column vectors that an op reads at the entry's column.

A metric may take per-column vectors (weights, variances, ranges) as operands. In a
formula, the value of the column vector ``w`` at the column of the entry being combined
is a symbol of its own, ``w[col]`` in the text language and ``gb.column("w")`` in
Python; ⊗ is then f(x, y; w), one more operand indexed by the column. The symbol's name
says what the runtime needs to know about the vector, so that it is part of every key:

* ``col_w``: a nonnegative vector named ``w`` (the rule for every column operand: a
  weight, a reciprocal, an indicator; checked when it is bound);
* ``colpos_V``: a positive vector (a metric that says ``requires V > 0``, e.g. a variance
  it divides by);
* ``colrel_w``: a vector of *relative* weights (a metric that says ``requires mean(w) == 1``:
  SciPy's weighted averages Σ w·d / Σ w, unchanged when w is scaled): nonnegative, with a
  positive sum, and bound divided by its mean, so that Σ w is the number of columns k
  (``ncols(A)`` in the metric);
* a ``__var``, ``__range`` or ``__gap`` suffix: when the caller does not pass the vector, it
  is the column variances (ddof = 1, SciPy's ``seuclidean`` default), the column ranges
  (max − min, the Gower distance's) or the column gaps (the smallest difference between two
  distinct values of the column: Gower's categorical columns) of the two operands stacked.

Imports sympy only when a symbol is made (:func:`symbol`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .lazy import sympy as sp

STATISTICS = ("var", "range", "gap")
"""Defaults a column operand may have: computed from the data when it is not passed."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*")
_SYMBOL = re.compile(r"(col|colpos|colrel)_([A-Za-z][A-Za-z0-9_]*?)(?:__(var|range|gap))?")
MAX_NAME = 20  # a term's symbol names have at most 32 characters


@dataclass(frozen=True)
class Column:
    """What a column operand's symbol says: its input name, its domain, its default."""

    name: str
    positive: bool = False
    default: str | None = None  # one of STATISTICS, or None (must be given)
    relative: bool = False  # bound divided by its mean (Σ w = k); nonnegative, Σ w > 0

    @property
    def symbol_name(self) -> str:
        head = "colpos" if self.positive else "colrel" if self.relative else "col"
        return f"{head}_{self.name}" + (f"__{self.default}" if self.default else "")

    @property
    def domain(self) -> str:
        return "positive" if self.positive else "nonnegative"

    def describe(self) -> str:
        what = "> 0" if self.positive else ">= 0"
        if self.relative:
            what += ", relative: bound divided by its mean, so that its sum is k"
        what_stat = {"var": "variances", "range": "ranges", "gap": "gaps"}.get(self.default)
        extra = f", default: the column {what_stat}" \
            f" of the data" if self.default else ""
        return f"{self.name}[col] (a vector over the columns, {what}{extra})"


def check_name(name: str) -> str:
    """``name`` if it can name a column operand, else a DefinitionError."""
    from ..errors import DefinitionError
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > MAX_NAME \
            or "__" in name:
        raise DefinitionError("a column operand needs a plain name", got=repr(name),
                              expected=f"letters, digits and single underscores, at most "
                                       f"{MAX_NAME} characters, starting with a letter")
    return name


def symbol(name: str, positive: bool = False, default: str | None = None,
           relative: bool = False):
    """The sympy symbol of the column operand ``name`` (nonnegative, or positive; relative
    weights are nonnegative)."""
    check_name(name)
    if default is not None and default not in STATISTICS:
        from ..errors import DefinitionError
        raise DefinitionError("unknown default of a column operand", got=repr(default),
                              expected=", ".join(STATISTICS))
    col = Column(name, positive, default, bool(relative) and not positive)
    if positive:
        return sp.Symbol(col.symbol_name, positive=True)
    return sp.Symbol(col.symbol_name, nonnegative=True)


def parse(symbol_name: str) -> Column | None:
    """The column operand a symbol name stands for, or None (x, y, other symbols)."""
    m = _SYMBOL.fullmatch(symbol_name)
    if m is None or "__" in m.group(2):
        return None
    return Column(m.group(2), m.group(1) == "colpos", m.group(3), m.group(1) == "colrel")


def is_column(s) -> bool:
    """Whether the sympy symbol ``s`` is a column operand's."""
    return isinstance(getattr(s, "name", None), str) and parse(s.name) is not None


def columns_of(expr) -> tuple[Column, ...]:
    """The column operands a sympy formula reads, by name."""
    found = {}
    for s in getattr(expr, "free_symbols", ()):
        col = parse(getattr(s, "name", ""))
        if col is not None:
            found[s.name] = col
    return tuple(found[k] for k in sorted(found))


def columns_of_term(term) -> tuple[Column, ...]:
    """The column operands a term (:mod:`gbdist.algebra.terms`) reads, by name."""
    from . import terms
    out = [parse(n) for n in sorted(terms.symbol_names(term))]
    return tuple(c for c in out if c is not None)


_IN_TEXT = re.compile(r"\bcol(?:pos|rel)?_([A-Za-z][A-Za-z0-9_]*?)(?:__(?:var|range|gap))?\b")


def show(text: str) -> str:
    """A printed formula with each column operand's symbol written ``w[col]``."""
    return _IN_TEXT.sub(lambda m: f"{m.group(1)}[col]", text)


def merge(columns) -> dict:
    """name -> Column over several lists; a name seen with two domains or defaults is an
    error (one vector, one meaning)."""
    from ..errors import DefinitionError
    out: dict = {}
    for col in columns:
        prev = out.get(col.name)
        if prev is not None and prev != col:
            raise DefinitionError(f"the column operand {col.name!r} is read with two meanings",
                                  got=f"{prev.describe()} and {col.describe()}",
                                  hint="use one name per vector")
        out[col.name] = col
    return out
