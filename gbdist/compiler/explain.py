"""Explanations: what the compiler decided, why, the proofs and the plan.

``gb.explain("manhattan")`` returns an :class:`Explanation` whose ``str`` is a
readable account a student can follow: for each product the values of
f(x, 0), f(0, y), f(0, 0), the strategy and why, the rewrite and its proof;
then the plan's steps and epilogue.
"""
from __future__ import annotations

from dataclasses import dataclass


from . import ir
from ..algebra.formulas import show
from .plan import Plan, ProductDecision
from ..algebra.proofs import Proof


@dataclass(frozen=True)
class ProductExplanation:
    """One product: its strategy, expansion rank and the reasoning behind them."""

    expression: str
    semiring: str
    strategy: str
    expansion_rank: int | None
    L: str
    R: str
    C: str
    g: str
    expansion: tuple
    reason: str
    override: str
    structural: bool
    clamped: bool
    proofs: tuple[Proof, ...]

    @classmethod
    def from_decision(cls, d: ProductDecision) -> "ProductExplanation":
        a = d.analysis
        exp = tuple((show(p), show(q)) for p, q in (a.expansion or ()))
        return cls(ir.to_text(d.node), repr(a.semiring), a.strategy, a.expansion_rank,
                   show(a.L), show(a.R), show(a.C), show(a.g), exp, a.reason,
                   a.override, a.structural, a.nonnegative and a.strategy == "union-correction",
                   a.proofs)

    def __str__(self) -> str:
        za, zb = ("absent", "absent") if self.structural else ("0", "0")
        lines = [
            f"product {self.expression}",
            f"  semiring   {self.semiring}",
            f"  f(x, {zb}) = {self.L}    f({za}, y) = {self.R}    f({za}, {zb}) = {self.C}",
            f"  strategy   {self.strategy}",
            f"  why        {self.reason}",
        ]
        if self.override:
            lines.append(f"  OVERRIDE   {self.override}")
        if self.strategy == "union-correction":
            lines.append(f"  rewrite    Σ_(A∪B) f = Σ_(A∩B) g + Σ_A (L − C) + Σ_B (R − C) + k·C,"
                         f" g(x, y) = {self.g}")
            if self.clamped:
                lines.append("  clamp      f ≥ 0 is proven, so the rewritten sum is clamped at 0")
        if self.expansion:
            terms = " + ".join(f"({p})·({q})" for p, q in self.expansion)
            lines.append(f"  expansion  rank {self.expansion_rank}: g(x, y) = {terms}"
                         " → stacked dot products")
        else:
            lines.append("  expansion  none (g does not split into x-only times y-only terms)"
                         if self.strategy != "two-pass-union" else "  expansion  n/a")
        lines.append("  proofs")
        lines.extend(f"    - {p}" for p in self.proofs)
        return "\n".join(lines)


@dataclass(frozen=True)
class Explanation:
    """The decisions for an expression: products, proofs and the plan."""

    title: str
    expression: str
    products: list
    proofs: list
    steps: list  # (name, text, kind)
    epilogue: str
    plan: Plan
    cuda: str | None = None

    @classmethod
    def from_plan(cls, plan: Plan, title: str = "") -> "Explanation":
        products = [ProductExplanation.from_decision(d) for d in plan.products]
        proofs = [p for d in plan.products for p in d.analysis.proofs]
        steps = [(s.name, ir.to_text(s.node), s.kind) for s in plan.steps]
        return cls(title or ir.to_text(plan.expr), ir.to_text(plan.expr), products, proofs,
                   steps, ir.to_text(plan.epilogue), plan)

    def with_cuda(self, source: str) -> "Explanation":
        return Explanation(self.title, self.expression, self.products, self.proofs, self.steps,
                           self.epilogue, self.plan, source)

    def __str__(self) -> str:
        out = [f"== {self.title}", f"expression  {self.expression}", ""]
        if not self.products:
            out.append("no products: only reductions and pointwise functions")
        for p in self.products:
            out.append(str(p))
            out.append("")
        out.append("plan")
        for name, text, kind in self.steps:
            out.append(f"  {name} = {text}    [{kind}]")
        out.append(f"  result = {self.epilogue}")
        from .exact import self_value
        from ..runtime.invariance import invariance  # a numeric check (a CPU run)
        out.append(f"  identical rows  {self_value(self.plan)}")
        out.append(f"  conditioning    {invariance(self.plan)}")
        if self.cuda:
            out += ["", "generated CUDA", self.cuda]
        return "\n".join(out)

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(str(self))
