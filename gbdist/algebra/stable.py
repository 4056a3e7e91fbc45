"""Stable kernels: formulas with a float32 evaluation whose error is bounded by hand.

:mod:`gbdist.algebra.rounding` proves float32 bounds by structural induction, and
so refuses what it cannot see through: a logarithm, or a difference of rounded
values. Some formulas that users write are accurate in float32 all the same, when
evaluated another way than as written: x log(2x/(x+y)) + y log(2y/(x+y)) is
s·ψ(d), with s = x + y, d = |x − y|/s and ψ(d) = Σ d²ⁿ/(2n(2n−1)) a series of
positive terms, where the two logs as written cancel. A *stable kernel* is such
an evaluation, written once as a device function (``kernels/gbdist.cuh``) on
float32 inputs, with its relative error bound derived in docs/cuda.md (*Stable
kernels*) and measured against long double by
``tests/backends/test_stable_kernels_gpu.py``.

The compiler uses a kernel for a formula only when :mod:`~gbdist.algebra.proofs`
proves the formula equal to the kernel's (sympy, plus the special points as
written: 0 log 0 = 0 must agree too) on the formula's domain, so a user who
writes the same function in another form gets the kernel, and a formula that
merely looks alike does not. The planner (``compiler/plan.float_split``) then
treats the kernel's bound as it treats :func:`~gbdist.algebra.rounding.float_bound`'s:
for the stored float32 values, 0 or within 2^±32 (the backend checks).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import terms
from .lazy import Deferred
from .lazy import sympy as sp
from .rounding import EXPONENT

if TYPE_CHECKING:
    from . import proofs


@dataclass(frozen=True)
class StableKernel(Deferred):
    """A device function ``name(x, y)`` (kernels/gbdist.cuh) computing ``formula`` in float
    on float32 inputs of ``domain`` that are 0 or within 2^±32, with relative error
    ≤ k·2^-24."""

    name: str
    formula: sp.Expr  # over X, Y, as the front end builds it
    domain: str
    k: float
    text: str  # the formula in words, for explain

    @classmethod
    def stored(cls, name: str, formula: tuple, domain: str, k: float, text: str) -> "StableKernel":
        """A kernel of a stored plan: its formula is a term, rebuilt as sympy when read."""
        kern = object.__new__(cls)
        for a, v in (("name", name), ("domain", domain), ("k", k), ("text", text),
                     ("_deferred", {"formula": formula})):
            object.__setattr__(kern, a, v)
        return kern

    def _rebuild(self, name: str, data):
        return terms.decode(data)  # "formula"

    @property
    def key(self) -> tuple:
        return ("stable_kernel", self.name, self.domain, self.k)

    def __eq__(self, other):
        return isinstance(other, StableKernel) and other.key == self.key

    def __hash__(self):
        return hash(self.key)


@dataclass(frozen=True)
class KernelBound(Deferred):
    """The bound of f evaluated by a stable kernel: the interface of
    :class:`~gbdist.algebra.rounding.FloatBound` (``k``, ``exponent``, ``nonnegative``,
    ``describe``), with the kernel and the proof that f is its formula."""

    kernel: StableKernel
    proof: proofs.Proof
    swapped: bool  # f(x, y) is the kernel at (y, x)

    @classmethod
    def stored(cls, kernel: StableKernel, proof: tuple, swapped: bool) -> "KernelBound":
        """The bound of a stored plan: ``proof`` is the proof's record (claim, lhs and rhs
        terms, domain, method, holds, detail), rebuilt with sympy when read (explain)."""
        b = object.__new__(cls)
        for a, v in (("kernel", kernel), ("swapped", bool(swapped)), ("_deferred", {"proof": proof})):
            object.__setattr__(b, a, v)
        return b

    def _rebuild(self, name: str, data):
        from .proofs import Proof
        claim, lhs, rhs, domain, method, holds, detail = data
        return Proof(claim, terms.decode(lhs), terms.decode(rhs), domain, method, holds, detail)

    @property
    def key(self) -> tuple:
        """What identifies the bound (a plan's key holds it): the kernel and the orientation
        (the proof is the reason, not a part of the computation)."""
        return ("kernel_bound", self.kernel.key, self.swapped)

    def __eq__(self, other):
        return isinstance(other, KernelBound) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    @property
    def k(self) -> float:
        return self.kernel.k

    exponent = EXPONENT  # inputs 0 or within 2^±32, as the rounding analysis's bounds
    nonnegative = True  # every kernel computes a function ≥ 0 on its domain

    @property
    def relative_error(self) -> float:
        return self.k * 2.0 ** -24

    def describe(self) -> str:
        return (f"evaluated in float32 by the stable kernel {self.kernel.name}: relative error ≤ "
                f"{self.k:g}·2⁻²⁴ = {self.relative_error:.1e} for inputs 0 or within 2^±{self.exponent} "
                f"(derived in docs/cuda.md), f ≥ 0; f = {self.kernel.text} proven "
                f"({self.proof.method})")


def _js_term() -> sp.Expr:
    """x log(2x/(x+y)) + y log(2y/(x+y)) with 0 log 0 = 0, as the front end builds
    ``where(x == 0, 0, x * log(2 * x / (x + y))) + where(y == 0, 0, ...)``."""
    from .formulas import X, Y
    with sp.evaluate(False):
        s = X + Y
        term = lambda v: sp.Piecewise((sp.Integer(0), sp.Eq(v, 0)),
                                      (v * sp.log(2 * v / s), True))
        return term(X) + term(Y)


@functools.lru_cache(maxsize=1)
def kernels() -> tuple[StableKernel, ...]:
    return (
        StableKernel("gb_js_term", _js_term(), "nonnegative", k=13,
                     text="x log(2x/(x+y)) + y log(2y/(x+y))"),
    )


def _looks_alike(f: sp.Expr, g: sp.Expr) -> bool:
    """A cheap filter before a proof: the same variables and the same functions."""
    funcs = lambda e: {type(n) for n in sp.preorder_traversal(e) if isinstance(n, sp.Function)
                       and not isinstance(n, sp.Piecewise)}
    return f.free_symbols == g.free_symbols and funcs(f) == funcs(g)


@functools.lru_cache(maxsize=256)
def stable_kernel(f: sp.Expr, domain: str) -> KernelBound | None:
    """The stable kernel proven to compute ``f`` on ``domain``, or None. A kernel's
    domain must be f's; the proof must be symbolic (sympy), not numeric."""
    from . import proofs
    from .formulas import X, Y
    for kern in kernels():
        if kern.domain != domain or not _looks_alike(f, kern.formula):
            continue
        for swapped in (False, True):
            g = kern.formula.xreplace({X: Y, Y: X}) if swapped else kern.formula
            proof = proofs.check(f"f is {kern.name}'s formula", f, g, domain)
            if proof.holds and proof.method == "sympy":
                return KernelBound(kern, proof, swapped)
    return None
