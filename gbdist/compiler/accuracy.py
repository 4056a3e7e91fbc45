"""Accuracy as a planner rule: the rounding bound of a rewritten product, and the plan
that evaluates every product as written.

A product ``P[i, j] = Σ_k f(a_ik, b_jk)`` that the planner rewrites (the union
correction ``Σ_∩ g + Σ_A (L − C) + Σ_B (R − C) + k·C``, an expansion of g or f into
``Σ_r φ_r(x)·ψ_r(y)`` of rank ≥ 2) is a sum of terms much larger than the result
when the rows are far from the origin compared with their distance, and the
difference of those terms is all that is left of P: SciPy, which sums f as written,
keeps every bit that the rewrite cancels away. This module reads the rewrite off the
plan (any metric, built-in or a user's: nothing here names one) as a :class:`Guard`:

* the terms the rewrite adds, whose magnitudes bound its absolute rounding error
  (Higham, ch. 3, with the probabilistic constant of Higham & Mary 2019)::

      |P̂ − P| ≤ γ·(M_A(a_i) + M_B(b_j)),   γ = 4·u·√k,  u = 2⁻⁵³,

  where ``M_A(a) = w·Σ_A |L − C| + ½·Σ_r ‖φ_r(a)‖²/c_r + ½·k·|C|`` (w = 2 when g is
  summed as written: |g| ≤ |f| + |L − C| + |R − C| + |C|; 1 with an expansion, whose
  cross terms Σ_∩ |φ_r ψ_r| ≤ ‖φ_r(a)‖ ‖ψ_r(b)‖ ≤ ½(‖φ_r(a)‖²/c_r + c_r ‖ψ_r(b)‖²) by
  Cauchy–Schwarz and the AM–GM inequality, c_r balancing the two sides), and
  ``M_B`` likewise;
* the *resolution* of a row: ``S(a) = Σ_stored |f(a_k, a_k − ρ·(a_k − μ_k))|``, the
  product between the row and the point a fraction ρ = :data:`RESOLUTION` of the
  way from it towards the data's centre μ (the right operand's column means). For
  f = |x − y|^p it is ρ^p·Σ|a − μ|^p: the order to which f vanishes near the
  diagonal, which decides how much a rewrite can cancel, is read off the data
  rather than declared.

The runtime (:mod:`gbdist.runtime.accuracy`) takes the rewrite when every row of both
operands has ``γ·M(a)/S(a) ≤`` :data:`TOLERANCE`: every pair whose value is at least
max(S(a_i), S(b_j)) — rows at least ρ of their distance to the centre apart — is then
within 2·TOLERANCE of its value. Else it centres both operands by μ, where the metric
is proven invariant under a common translation of the columns
(:mod:`gbdist.runtime.invariance`) and the operands are dense enough that centring
costs no storage, and checks again; else it runs :func:`direct_plan`: every
rewritten product summed as written over the union of stored columns (a two-pass
union with ⊕ = plus) or over the intersection, with no cancellation but the peers'.

This module is symbolic-free at run time: it reads ops and nodes of a plan, stored
plans included (their ops evaluate from terms, without sympy).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from . import ir
from .exact import _per_plan
from .plan import Plan, _canonical, split
from .typecheck import row_operand
from ..algebra.evaluate import apply_binary, apply_unary

RESOLUTION = 1e-3
"""ρ: a rewrite must resolve pairs whose value is that of rows ρ of their distance to
the data's centre apart (for f = |x − y|^p: ρ^p of the row's Σ|a − μ|^p)."""

FEW_COLUMNS = 8
"""At most this many columns, every rewrite that cancels is summed as written: the direct
sum then costs as few operations as the rewrite (at most this many terms a pair), and the
resolution test above cannot see pairs far closer than ρ of their distance to the centre
(haversine between points 1e-6 rad apart took 2e-3 relative error through
‖a‖² + ‖b‖² − 2⟨a, b⟩ of their unit vectors; summed as written, ~1e-10)."""

TOLERANCE = 1e-6
"""The relative error the rewrite may have at that resolution (the 1e-6 of the float32
guarantee, docs/metrics.md *Precision*)."""

UNIT = 2.0 ** -53  # float64: every rewrite is computed (accumulated) in float64


def gamma(ncols: int) -> float:
    """γ = 4·u·√k: the probabilistic rounding constant of a sum of k float64 terms."""
    return 4.0 * UNIT * math.sqrt(max(int(ncols), 1))


def terms(ncols: int, longest_left: int, longest_right: int) -> int:
    """The k of :func:`gamma` for one pair: the most terms any one of its sums adds. Each
    sum of a rewrite runs over the stored entries of one row (a row summary), of both (the
    intersection), or over the columns (k·C, one product): at most the two rows' longest
    lengths, plus the few additions that join the sums (4); a sum never has more terms
    than there are columns (a stored 0 or a skipped column adds no rounding)."""
    return max(1, min(int(ncols), int(longest_left) + int(longest_right) + 4))


@dataclass(frozen=True)
class Guard:
    """One rewritten product of a plan: what bounds the rounding error of its rewrite."""

    f: object  # ⊗ as written (an Op): the direct evaluation sums it
    left: ir.Node  # the row operands, canonical (apply chain over Matrix / Transpose)
    right: ir.Node
    correction: bool  # a union correction: Σ_A (L − C) and Σ_B (R − C) are added
    expansion: tuple | None  # ((φ_r, ψ_r) unary Ops, ...) or None (g summed as written)
    corner: float  # C = f(za, zb), added k times

    @property
    def weight(self) -> float:
        """How many times the correction sums bound |terms|: 2 when g is summed as
        written (|g| ≤ |f| + |L − C| + |R − C| + |C|), 1 with an expansion."""
        return 1.0 if self.expansion else 2.0

    def describe(self) -> str:
        parts = []
        if self.correction:
            parts.append(f"{self.weight:g}·(Σ_A |L − C| + Σ_B |R − C|)")
        if self.expansion:
            parts.append("Σ_r ‖φ_r(a)‖·‖ψ_r(b)‖" + f" (rank {len(self.expansion)})")
        if self.corner:
            parts.append(f"k·|C| = k·{abs(self.corner):g}")
        return (f"Σ_k {self.f.name}(a_k, b_k) rewritten: |error| ≤ 4·2⁻⁵³·√k·("
                + " + ".join(parts) + ")")


def _chain(node: ir.Node) -> tuple:
    return row_operand(node)[2]


def _rewritten(node: ir.Intersect) -> bool:
    """An intersection pass that is part of a rewrite: a union correction's g (named
    ``<op>_g``) or an expansion of rank ≥ 2 (a rank-1 expansion is the product itself)."""
    if node.structural or not node.add.invertible:
        return False
    return node.mul.name.endswith("_g") or (node.expansion is not None and len(node.expansion) > 1)


@_per_plan
def guards(plan: Plan) -> tuple[Guard, ...]:
    """The rewritten products of ``plan`` and their rounding bounds."""
    out = []
    for step in plan.steps:
        n = step.node
        if not isinstance(n, ir.Intersect) or not _rewritten(n):
            continue
        correction = n.mul.name.endswith("_g")
        f = _product_op(plan, n.mul.name[:-2] if correction else n.mul.name, n, correction)
        if f is None:
            continue  # not one of the plan's products (cannot happen for a made plan)
        out.append(Guard(f, n.left, n.right, correction, n.expansion if n.expansion else None,
                         _corner(f, n.left, n.right)))
    return tuple(out)


def _product_op(plan: Plan, name: str, node=None, correction: bool = False):
    """The ⊗ of the product the step ``node`` computes: by its op's name, else (an analysis
    is shared by the ops of one formula in a process, so its op may carry another op's
    name, e.g. a column-free core op's) the one product of the step's kind over the same
    operands."""
    for d in plan.products:
        if d.analysis.semiring.mul.name == name:
            return d.analysis.semiring.mul
    if node is None:
        return None
    kind = "union-correction" if correction else "intersection"
    same = [d for d in plan.products if d.analysis.strategy == kind
            and _operands(d.node) == (_names(node.left), _names(node.right))]
    return same[0].analysis.semiring.mul if len(same) == 1 else None


def _names(node) -> str:
    return row_operand(node)[0]


def _operands(mxm) -> tuple:
    left = getattr(mxm, "left", None)
    right = getattr(mxm, "right", None)
    if left is None or right is None:
        return ()
    return (row_operand(left, False)[0], row_operand(right, True)[0])


def fill_of(node: ir.Node) -> float:
    """The value of an unstored entry of a row operand: 0 through its apply chain,
    evaluated as written in float64 (no sympy)."""
    z = np.zeros(1)
    for op in _chain(node):
        z = apply_unary(op, z)
    return float(z[0])


def _corner(f, left: ir.Node, right: ir.Node) -> float:
    return float(apply_binary(f, np.array([fill_of(left)]), np.array([fill_of(right)]))[0])


# ---------------------------------------------------------------------------
# the plan that evaluates every product as written
# ---------------------------------------------------------------------------


def _needs_direct(analysis) -> bool:
    if analysis.structural or not analysis.semiring.add.invertible:
        return False
    if analysis.strategy == "union-correction":
        return True
    return analysis.strategy == "intersection" and (analysis.expansion_rank or 0) > 1


@_per_plan
def direct_plan(plan: Plan) -> Plan:
    """``plan`` with every rewritten product (:func:`guards`) summed as written: a union
    correction becomes a two-pass union with ⊕ = plus (each column of the union once,
    k − |union| columns adding C), an expansion becomes the intersection of f itself.
    Other products are lowered as the planner lowers them; nothing here needs sympy
    (the fills and C are evaluated in float64, as the kernels evaluate them)."""
    if not guards(plan):
        return plan
    decisions = {d.node.key: d.analysis for d in plan.products}

    kept = {(s.node.left.key, s.node.right.key, s.node.mul.name): s.node for s in plan.steps
            if isinstance(s.node, (ir.Intersect, ir.TwoPassUnion))}

    def lower(node):
        if isinstance(node, (ir.MxM, ir.MxV)):
            a = decisions[node.key]
            if isinstance(node, ir.MxM):
                left, right = _canonical(node.left), _canonical(node.right, transpose=True)
            else:
                left, right = _canonical(node.matrix), _canonical(node.vector)
            sr = a.semiring
            if not _needs_direct(a):  # lowered as the planner lowered it
                return kept.get((left.key, right.key, sr.mul.name))
            if a.strategy == "union-correction":
                return ir.TwoPassUnion(left, right, sr.mul, sr.add, _corner(sr.mul, left, right),
                                       False)
            return ir.Intersect(left, right, sr.mul, sr.add, None, False)
        if isinstance(node, ir.RowReduce):
            return ir.RowReduce(_canonical(node.arg), node.monoid)
        return None

    lowered = ir.rewrite(plan.expr, lower)
    if any(isinstance(n, (ir.MxM, ir.MxV)) for n in ir.walk(lowered)):
        return plan  # a product whose lowering was not found (cannot happen for a made plan)
    steps, epilogue = split(lowered, plan.typing)
    return Plan(plan.expr, plan.typing, lowered, steps, epilogue, plan.products, None)


@dataclass(frozen=True)
class Decided(Plan):
    """A plan whose accuracy decision is already made for the data it runs on (the blocks
    of a partitioned run: decided once from the whole index's statistics,
    :mod:`gbdist.dask.accuracy`): the runtime shifts the guarded row operands by
    ``centre`` (a dense column vector, or None) and applies no rule of its own."""

    centre: object = field(default=None, compare=False)


def decided(plan: Plan, centre=None) -> Decided:
    """``plan`` (as analysed) with its accuracy decision made: centred by ``centre``, or
    taken as it is (None). A decision for the direct plan is :func:`direct_plan` itself."""
    return Decided(**{f.name: getattr(plan, f.name) for f in fields(Plan)}, centre=centre)


def undecided(plan: Plan) -> Plan:
    """``plan`` as analysed: a :class:`Decided` plan without its decision (what is proven
    of a plan, d(a, a) among it, is keyed by its structure and must not depend on one
    data set's centre)."""
    if isinstance(plan, Decided):
        return Plan(**{f.name: getattr(plan, f.name) for f in fields(Plan)})
    return plan


def rule_text(plan: Plan) -> str:
    """The accuracy rule as ``explain`` shows it: each rewrite's rounding bound and what
    the runtime does with it."""
    gs = guards(plan)
    if not gs:
        return "no rewrite that cancels: products are summed as written or as one dot product"
    bounds = "; ".join(g.describe() for g in gs)
    return (f"{bounds}. Taken on data where every row has γ·M(a)/S(a) ≤ {TOLERANCE:g} "
            f"(S(a): the value between a row and the point {RESOLUTION:g} of the way to the "
            "data's centre); else both operands are centred by the column means where the "
            "metric is invariant under a common translation, else every product is summed "
            f"as written; on data of at most {FEW_COLUMNS} columns always summed as written "
            "(docs/decision.md, *Accuracy*)")
