"""Pruning derived from the algebra: the value of a pair of rows that share no column.

For a pair (i, j) whose rows store no column in common, every product of the plan that
is computed over the columns stored in both rows (an ``Intersect`` step: the dot
products, the intersection passes of the unions by correction) reduces over nothing,
so it is its monoid's identity e (0 for plus, −∞ for max ...). What is left of the
epilogue is a function of the rows' *summaries* — the row reductions the plan computes
anyway (norms, sums, counts of stored entries) and k:

    h(L_i, R_j) = epilogue[Intersect steps := e, col steps := L_i, row steps := R_j]

derived here symbolically from the lowered plan (no metric names): cosine gives 1,
manhattan ‖a‖₁ + ‖b‖₁, euclidean √(‖a‖² + ‖b‖²), canberra nnz(a) + nnz(b), jaccard 1.

**When the k best non-overlapping pairs of row i follow from the summaries.**

* h reads no summary of the index row j: every non-overlapping j is at the same value
  h(L_i), so the best are the lowest indices (ties go to the lower index): order
  ``"index"``;
* h reads exactly one summary r of the index row and is non-decreasing in it for every
  fixed L: ∂h/∂r ≥ 0 proven by sympy (under the summaries' domains: a sum of terms that
  are ≥ 0 is taken > 0, any other real ≠ 0) and h continuous in r on that domain. Then
  ordering the index rows by (r_j, j) orders their values: order ``"key"``;
* anything else does not prune, and :attr:`Pruning.reason` says why: a two-pass union
  (⊕ = max over the union of stored columns, chebyshev) reads a pair's entries even when
  no column is shared; h reads several summaries of the index row (correlation); sympy
  could not prove the monotonicity (a numeric check is not enough to skip pairs).

The proof is over the summaries' *regular* values (finite, nonzero, moderate): the
search (:mod:`gbdist.neighbors.pruned`) evaluates every pair of rows whose summaries are
not regular (empty rows, zero norms) through the plan instead.

Whether pruning *pays* is decided from the data (:func:`pays`): the number of products
Σ_c deg_X(c)·deg_Y(c) over the columns (it bounds the overlapping pairs) and the rows,
each at its measured cost, against the m·n pairs of the full search.

Compiler level: sympy over the IR, no runtime and no backend.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from . import cache, ir
from .plan import Plan
from .typecheck import row_operand
from ..algebra.lazy import sympy as sp
from ..errors import InputError

FORMAT = 2  # of the stored decisions
PROOF_BUDGET_S = 10.0  # seconds of sympy for one decision (no pruning after)
PRODUCT_COST = 50
ROW_COST = 2500
"""The planner rule's costs, in units of one pair of the full search (the compiled CPU
backend's fused kNN: about 5 ns a pair on the measuring machine): a product over a
shared column of the pruned search (triplet, reduction, epilogue, merge: about 0.25 µs)
and its fixed cost per query row (the k best of the rest: about 12 µs). Measured in
docs/neighbors.md."""
ENV = "GBDIST_PRUNE"  # auto (default) | always (whenever proven) | never

_CACHE: dict = {}


@dataclass(frozen=True)
class Pruning:
    """The decision for one plan: does a kNN need the pairs with no shared column?"""

    applies: bool
    order: str  # "index" | "key" | "" (does not apply)
    key: str | None  # the step (kind "row") whose values order the index rows, for "key"
    h: str  # h(L, R), as derived (sympy text), or "" where none was derived
    reason: str  # why it applies or why not
    left: tuple = ()  # steps (kind "col") h reads: their values must be regular
    right: tuple = ()  # steps (kind "row") h reads

    def __str__(self) -> str:
        head = "applies" if self.applies else "does not apply"
        return f"{head}: {self.reason}"


def pruning(plan: Plan) -> Pruning:
    """The pruning decision for ``plan`` (cached per lowered plan, in the process and in the
    on-disk analysis cache; a derivation cut short by its time budget is not kept, so it
    is tried again)."""
    key = (plan.lowered.key, tuple(sorted(plan.roles.items())),
           cache.code_digest("algebra", "compiler"))  # the lowered plan: a direct plan differs
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    disk = cache.key_of("pruning.decide", FORMAT, key)
    try:
        value = _decode(cache.load(disk))
    except (TypeError, KeyError, ValueError):
        mark = cache.cut_short()
        value = _decide(plan)
        if value is _UNFINISHED or cache.cut_short() != mark:
            return value
        cache.store(disk, _encode(value))
    _CACHE[key] = value
    return value


def _encode(p: Pruning) -> dict:
    return {"applies": p.applies, "order": p.order, "key": p.key, "h": p.h, "reason": p.reason,
            "left": list(p.left), "right": list(p.right)}


def _decode(r: dict) -> Pruning:
    if not isinstance(r, dict) or not isinstance(r["applies"], bool) or \
            r["order"] not in ("index", "key", "") or not isinstance(r["reason"], str):
        raise ValueError("a stored pruning decision")
    names = [str(x) for x in r["left"]] + [str(x) for x in r["right"]]
    if r["key"] is not None:
        names.append(str(r["key"]))
    if any(not n.startswith("t") or not n[1:].rstrip("ab").isdigit() for n in names):
        raise ValueError("a stored pruning decision names steps t0, t1, ...")
    return Pruning(r["applies"], r["order"], None if r["key"] is None else str(r["key"]),
                   str(r["h"]), r["reason"], tuple(str(x) for x in r["left"]),
                   tuple(str(x) for x in r["right"]))


def mode() -> str:
    """``GBDIST_PRUNE``: ``auto`` (prune when proven and :func:`pays`), ``always`` (whenever
    proven, whatever the data), ``never``."""
    v = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if v not in ("auto", "always", "never"):
        raise InputError(f"{ENV} must be auto, always or never", got=repr(v))
    return v


def pays(products: int, m: int, n: int) -> bool:
    """The planner rule: prune when the pruned search's cost, PRODUCT_COST per product over
    a shared column (Σ_c deg_X(c)·deg_Y(c), which bounds the overlapping pairs) and
    ROW_COST per query row, is at most the m·n pairs of the full search."""
    return PRODUCT_COST * products + ROW_COST * m <= m * n


def rule_text() -> str:
    return (f"a kNN prunes when {PRODUCT_COST}·Σ_c deg_X(c)·deg_Y(c) + {ROW_COST}·m ≤ m·n "
            f"(the products over shared columns and the rows, against the pairs; "
            f"{ENV}=auto|always|never)")


def summary(plan: Plan) -> str:
    """One paragraph: the decision, and when it applies, the planner rule."""
    p = pruning(plan)
    return f"{p}; {rule_text()}" if p.applies else str(p)


def explain_lines(plan: Plan) -> list[str]:
    """The lines ``explain`` shows about pruning (of the plan as analysed; a search decides
    on the plan its binding chose, :func:`gbdist.neighbors.pruned.explain_pruning`)."""
    p = pruning(plan)
    out = [f"  pruning (kNN)   {p}"]
    if p.applies:
        out.append(f"                  {rule_text()}")
    return out


# ---------------------------------------------------------------------------
# the derivation
# ---------------------------------------------------------------------------


@functools.cache
def _k():
    return sp.Symbol("k", positive=True, integer=True)


def _nonnegative(e) -> bool:
    """Whether a summary's element e(x) is ≥ 0 (sympy; each branch of a Piecewise)."""
    if isinstance(e, sp.Piecewise):
        return all(_nonnegative(v) for v, _ in e.args)
    if e.is_nonnegative:
        return True
    try:
        return bool(sp.simplify(e).is_nonnegative)
    except Exception:  # noqa: BLE001 - undecided: not known to be ≥ 0
        return False


class _Summaries:
    """One symbol per distinct row summary of a side (equal elements and monoid: one)."""

    def __init__(self):
        self.entries: list = []  # (side, monoid name, element, symbol, [step names])

    def symbol(self, side: str, step, node: ir.RowReduce) -> sp.Symbol:
        from ..algebra.formulas import X
        from .exact import _chain
        _, _, chain = row_operand(node.arg)
        nonneg_x = any(op.domain == "nonnegative" for op in chain)
        x = sp.Symbol("x", nonnegative=True) if nonneg_x else sp.Symbol("x", real=True)
        return self.summary(side, step.name, _chain(chain, X).xreplace({X: x}), node.monoid)

    def summary(self, side: str, name: str, e, monoid) -> sp.Symbol:
        """The symbol of ⊕ (``monoid``) over a row of the element e (a formula in x)."""
        for s, mname, e2, sym, steps in self.entries:
            if s == side and mname == monoid.name and (e == e2 or sp.simplify(e - e2) == 0):
                steps.append(name)
                return sym
        # ≥ 0 where every element is: regular (nonzero) values are then > 0
        positive = monoid.name in ("plus", "max", "min") and _nonnegative(e)
        label = f"{'L' if side == 'col' else 'R'}{sum(1 for q in self.entries if q[0] == side)}"
        sym = sp.Symbol(label, positive=True) if positive else \
            sp.Symbol(label, real=True, nonzero=True)
        self.entries.append((side, monoid.name, e, sym, [name]))
        return sym

    def steps(self, sym) -> list:
        return next(q[4] for q in self.entries if q[3] is sym)


def _no(reason: str, h: str = "") -> Pruning:
    return Pruning(False, "", None, h, reason)


_UNFINISHED = _no("the derivation did not finish within its budget (sympy): every pair is "
                  "evaluated")


def _decide(plan: Plan) -> Pruning:
    from ..algebra.proofs import analysis_budget
    from .exact import operand_pair
    if plan.output_kind != "matrix" or operand_pair(plan) is None:
        return _no("not a pairwise (matrix) result over one pair of row operands")
    if any(isinstance(n, ir.Mapped) for st in plan.steps for n in ir.walk(st.node)):
        # whiten / sphere map each row to another (dense) row when bound: which columns two
        # rows share is not read off the operands the search sees
        return _no("a row transform (mahalanobis, haversine) maps the rows before the "
                   "products: the stored columns of the mapped rows are not the operands'")
    if any(getattr(st.node, "weight", None) is not None for st in plan.steps):
        return _no("a column-weighted product (κ(w) read at each column): its row summaries "
                   "would need the weights too")
    try:
        with analysis_budget(PROOF_BUDGET_S):
            return _derive(plan)
    except Exception:  # noqa: BLE001 - sympy failing or out of time: no pruning (this time)
        return _UNFINISHED


def _derive(plan: Plan) -> Pruning:
    from .exact import _const, _pointwise
    sums = _Summaries()
    values: dict = {}
    empty = []
    for st in plan.steps:
        node = st.node
        if isinstance(node, ir.TwoPassUnion):
            v = _union_empty(st, node, sums)
            if isinstance(v, str):
                return _no(v)
            values[st.name] = v
            empty.append(f"{st.name} = {sp.sstr(v)}")
        elif isinstance(node, ir.Intersect):
            e = _const(float(node.add.identity_value))
            values[st.name] = e
            empty.append(f"{st.name} = {sp.sstr(e)}")
        elif isinstance(node, ir.RowReduce) and st.kind in ("col", "row"):
            values[st.name] = sums.symbol(st.kind, st, node)
        else:
            return _no(f"{st.name} = {ir.to_text(node)} is not a product or a row summary")

    def value(n):
        if isinstance(n, ir.Ref):
            return values[n.name]
        if isinstance(n, ir.Const):
            return _const(float(n.value))
        if isinstance(n, ir.NCols):
            return _k()
        if isinstance(n, ir.Pointwise):
            return _pointwise()[n.fn](*(value(a) for a in n.args))
        raise ValueError(type(n).__name__)

    h = value(plan.epilogue)
    try:
        h = sp.simplify(sp.piecewise_fold(h))
    except Exception:  # noqa: BLE001 - as written
        pass
    text = sp.sstr(h)
    cols = sorted((s for s in h.free_symbols if s.name.startswith("L")), key=str)
    rows = sorted((s for s in h.free_symbols if s.name.startswith("R")), key=str)
    left = tuple(n for s in cols for n in sums.steps(s))
    right = tuple(n for s in rows for n in sums.steps(s))
    where = "; ".join(empty) + " (no shared column)"
    if len(rows) > 1:
        return _no(f"h = {text} reads {len(rows)} summaries of the index row "
                   f"({', '.join(right)}): its best pairs follow no one order of the index "
                   "rows", text)
    if h.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        return _no(f"h = {text} is not finite everywhere: every pair is evaluated", text)
    if not rows:
        return Pruning(True, "index", None, text, f"{where}, so h = {text} reads no summary "
                       "of the index row: every pair with no shared column is at the same "
                       "value, the lowest indices are its best", left, right)
    r = rows[0]
    proved, how = _monotone(h, r)
    if not proved:
        return _no(f"h = {text} is not proven non-decreasing in {r} ({how})", text)
    key = sums.steps(r)[0]
    return Pruning(True, "key", key, text,
                   f"{where}, so h = {text}; ∂h/∂{r} = {how} ≥ 0 and h is continuous in {r} "
                   f"(proven by sympy, {r} = {key}): the best pairs with no shared column are "
                   f"the index rows of least {key}, ties by index", left, right)


def _union_empty(st, node: ir.TwoPassUnion, sums: _Summaries):
    """A two-pass union at a pair with no shared column: every column stored in a row of A
    meets B's fill and the other way round, so it is ⊕ of two row summaries,
    ⊕_A f(x, z_B) and ⊕_B f(z_A, y) (the symbols of steps ``<name>a`` and ``<name>b``,
    computed by the search), and of the corner f(z_A, z_B) for the columns stored in
    neither row — absorbed by ⊕ (or its identity) here, else a reason (str): its count
    would be a third summary."""
    from ..algebra.formulas import X, Y
    from .exact import _chain
    from .plan import operand_fill
    add = node.add
    if not (add.idempotent or add.name == "plus"):
        return f"{st.name} = {ir.to_text(node)}: a union under ⊕ = {add.name}"
    e = float(add.identity_value)
    if not (node.corner_absorbed or node.corner == e):
        return (f"{st.name} = {ir.to_text(node)}: the columns stored in neither row add "
                f"f(z_A, z_B) = {node.corner:g}, so a pair's value reads how many there are")
    _, _, lchain = row_operand(node.left)
    _, _, rchain = row_operand(node.right)
    za, zb = operand_fill(node.left), operand_fill(node.right)
    nonneg = node.mul.domain == "nonnegative" or any(
        op.domain == "nonnegative" for op in lchain + rchain)
    x = sp.Symbol("x", nonnegative=True) if nonneg else sp.Symbol("x", real=True)
    f = node.mul.formula
    ea = f.subs({X: _chain(lchain, X), Y: zb}, simultaneous=True).xreplace({X: x})
    eb = f.subs({X: za, Y: _chain(rchain, X)}, simultaneous=True).xreplace({X: x})
    a = sums.summary("col", f"{st.name}a", sp.simplify(ea), add)
    b = sums.summary("row", f"{st.name}b", sp.simplify(eb), add)
    return {"max": sp.Max, "min": sp.Min}.get(add.name, lambda p, q: p + q)(a, b)


def _monotone(h, r) -> tuple[bool, str]:
    """(proven, text): h non-decreasing in r over r's domain (sympy: the derivative is
    ≥ 0 and h is continuous there)."""
    from sympy.calculus.util import continuous_domain
    domain = sp.Interval.open(0, sp.oo) if r.is_positive else sp.Reals - sp.FiniteSet(0)
    d = sp.diff(h, r)
    # a step (the derivative of max / min / |·|) is ≥ 0 wherever it is defined
    step = sp.Symbol("H", nonnegative=True)
    nonneg = d.replace(sp.Heaviside, lambda *a: step).is_nonnegative
    if not nonneg:
        d = sp.simplify(d)
        nonneg = d == 0 or d.is_nonnegative
    if not nonneg:
        return False, f"∂h/∂{r} = {sp.sstr(d)} is not proven ≥ 0"
    if not r.is_positive:  # both signs: monotone across 0 needs h continuous at 0 too
        domain = sp.Reals
    if continuous_domain(h, r, domain) != domain:
        return False, f"h is not proven continuous in {r} on {domain}"
    return True, sp.sstr(d)
