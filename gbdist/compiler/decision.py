"""The record of one product's decision (:class:`Analysis`), apart from the analysis that
makes it (:mod:`gbdist.compiler.analysis`, sympy and proofs), so that a plan read back from
a stored record (:mod:`gbdist.compiler.stored`) holds analyses without importing sympy.

A stored analysis (:class:`gbdist.compiler.stored.StoredAnalysis`) carries what a run
reads (the semiring, the strategy and its flags, the expansion's rank); its formulas and
proofs (L, R, C, g, the expansion, the proofs: what ``explain`` shows) are the analysis
itself, made again when first read, from the on-disk analysis cache when it holds them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..algebra.lazy import Deferred

STRATEGIES = ("intersection", "union-correction", "two-pass-union")
"""The decisions an analysis can record (gbdist.compiler.analysis makes them)."""

# the fields a stored analysis rebuilds by analysing again
SYMBOLIC = ("fill_left", "fill_right", "L", "R", "C", "g", "expansion", "proofs")


@dataclass(frozen=True)
class Analysis(Deferred):
    """What the compiler decided for one product, and why."""

    semiring: object  # gbdist.algebra.semirings.Semiring
    strategy: str
    fill_left: object  # sympy: the fills the decision used (the annihilator if structural)
    fill_right: object
    L: object  # f(x, zb)
    R: object  # f(za, y)
    C: object  # f(za, zb)
    g: object  # the function summed over the intersection
    expansion: tuple | None  # ((φ_r(x), ψ_r(y)), ...) sympy formulas, or None
    proofs: tuple  # gbdist.algebra.proofs.Proof
    structural: bool
    override: str = ""  # a declared property that the analysis could not confirm
    nonnegative: bool = False  # f >= 0 proven: the rewritten sum is clamped at 0
    corner_absorbed: bool = False  # two-pass union: ⊕(C, f) == f for every f value
    reason: str = ""

    @property
    def expansion_rank(self) -> int | None:
        if "_expansion_rank" in self.__dict__ and "expansion" not in self.__dict__:
            return self.__dict__["_expansion_rank"]
        return None if self.expansion is None else len(self.expansion)

    @property
    def identity(self):
        return self.semiring.add.identity
