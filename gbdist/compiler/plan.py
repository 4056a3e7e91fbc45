"""Planning: turn a typed expression into a Plan of primitive steps.

Every product is analysed (``algebra.analyze``) and rewritten into the
primitives the backends execute:

* ``intersection``     → ``Intersect(left, right, f, ⊕, expansion)``
* ``union-correction`` → ``Intersect(g) + RowReduce(L − C on A) + RowReduce(R − C on B) + k·C``
                          (clamped at 0 when f ≥ 0 is proven)
* ``two-pass-union``   → ``TwoPassUnion(left, right, f, ⊕, C)``

A union correction's intersection pass also carries a *float split* of g = f + h
(h = −L − R + C) when evaluating f in float32 provably costs no accuracy the
result can see (:func:`float_split`): f ≥ 0 and its float32 rounding error is
bounded relative to f itself, so Σ f over the union keeps that relative bound,
and the product is consumed only by operations that keep a relative error (×, ÷,
√, max, min, |·|, −). The bound comes from the rounding analysis of f as written
(``algebra.rounding``) or, where that refuses, from a *stable kernel* proven to
compute f (``algebra.stable``: the Jensen–Shannon term, whose logs cancel as
written, as a series of positive terms). Relative errors add over the uses of
split products (P·P has twice P's) and halve through a square root (√P has half
of P's), so their k times their weighted uses must stay within one budget of
FLOAT_SPLIT_MAX_K for the whole expression. A backend accumulating float32 data
in float64 then evaluates f in float32 and only h and the sums in float64.

The rewritten expression is then split into *steps* (the primitives, each run
by a backend kernel) and an *epilogue* (the pointwise expression over the step
results, which the CUDA backend fuses into the kernel that finishes a tile).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import ir
from .decision import Analysis
from ..errors import GbdistError
from ..algebra.lazy import sympy as sp
from ..algebra.ops import Op, RowScale, as_monoid, plus
from ..algebra.evaluate import constant_value
from ..algebra.rounding import float_bound
from ..algebra.stable import stable_kernel
from .typecheck import Typing, infer, row_operand

if TYPE_CHECKING:
    from ..algebra.proofs import Proof

PRIMITIVES = (ir.Intersect, ir.TwoPassUnion, ir.RowReduce)


@dataclass(frozen=True)
class Step:
    """One primitive to execute: its result is named and referenced by the epilogue."""

    name: str
    node: ir.Node
    kind: str  # "matrix" (i, j), "col" (i), "row" (j)

    @functools.cached_property  # a frozen step's sides never change; read on every call
    def sides(self) -> list[tuple[str, tuple]]:
        """(side, (name, transposed)) of each operand this step reads: "left" operands
        index the output rows (they are sliced into row blocks), "right" the columns."""
        node = self.node
        if isinstance(node, ir.RowReduce):
            return [("left" if self.kind == "col" else "right", row_operand(node.arg)[:2])]
        return [("left", row_operand(node.left)[:2]), ("right", row_operand(node.right)[:2])]


@dataclass(frozen=True)
class ProductDecision:
    """A product of the source expression and what the analysis decided for it."""

    node: ir.Node  # the MxM / MxV
    analysis: Analysis

    @property
    def strategy(self) -> str:
        return self.analysis.strategy

    @property
    def expansion_rank(self) -> int | None:
        return self.analysis.expansion_rank


@dataclass(frozen=True)
class Plan:
    expr: ir.Node
    typing: Typing
    lowered: ir.Node
    steps: tuple[Step, ...]
    epilogue: ir.Node
    products: tuple[ProductDecision, ...]
    # The rounding bound of the whole plan run in float32 (:func:`float32_plan`), or None
    float32: object = None

    @property
    def output_kind(self) -> str:
        return self.typing.output

    @property
    def roles(self) -> dict:
        return self.typing.roles

    @property
    def proofs(self) -> tuple[Proof, ...]:
        out = []
        for p in self.products:
            out.extend(p.analysis.proofs)
        return tuple(out)


# ---------------------------------------------------------------------------


def operand_fill(node: ir.Node) -> sp.Expr:
    """The implicit value of unstored entries: 0, transformed by each apply()."""
    _, _, chain = row_operand(node)
    z = sp.Integer(0)
    for op in chain:
        # as written, with IEEE values (log 0 = −inf, 0/0 = NaN), then exact
        v = constant_value(_at(op.formula, z))
        z = _fill_expr(v, op.formula, z)
    return z


def _at(formula: sp.Expr, z: sp.Expr) -> sp.Expr:
    from ..algebra.formulas import X
    with sp.evaluate(False):
        return formula.xreplace({X: z})


def _fill_expr(v: float, formula: sp.Expr, z: sp.Expr) -> sp.Expr:
    """The fill after one apply(): exact when sympy's value agrees with IEEE's."""
    if v != v:
        return sp.nan
    if v in (float("inf"), float("-inf")):
        return sp.oo if v > 0 else -sp.oo
    from ..algebra.formulas import X
    try:
        s = sp.simplify(formula.subs(X, z))
        if s.is_number and float(s) == v and constant_value(s) == v:  # also in float64
            return s
    except Exception:  # noqa: BLE001 - the float value is exact anyway
        pass
    from ..algebra.formulas import _expr
    return _expr(v)


def _canonical(node: ir.Node, transpose: bool = False) -> ir.Node:
    """Rows-of form: apply chain over Matrix or Transpose(Matrix)."""
    name, flipped, chain = row_operand(node, transpose)
    base = ir.base_operand(node)
    out: ir.Node = ir.Transpose(base) if flipped else base
    for op in chain:
        out = ir.Apply(op, out)
    return out


def _unary(name: str, expr: sp.Expr, domain: str) -> Op:
    """A unary op from a formula in x (or in y, renamed to x)."""
    from ..algebra.formulas import X, Y
    return Op(name, sp.sympify(expr).xreplace({Y: X}), 1, domain)


def _binary(name: str, expr: sp.Expr, domain: str) -> Op:
    return Op(name, sp.sympify(expr), 2, domain)


def _expansion_ops(a: Analysis, domain: str):
    if a.expansion is None:
        return None
    name = a.semiring.mul.name
    return tuple((_unary(f"{name}_phi{r}", phi, domain), _unary(f"{name}_psi{r}", psi, domain))
                 for r, (phi, psi) in enumerate(a.expansion))


FLOAT_SPLIT_MAX_K = 8
"""Budget of float32 rounding for the float splits of one expression, in units of 2^-24:
Σ k·uses over its split products ≤ 8 (a use through a square root weighs ½), so the
result's relative error from them is at most 8·2^-24 = 4.8e-7, half the 1e-6 guarantee
(docs/metrics.md)."""

# Pointwise functions through which a value's relative error passes unamplified
# (a square root halves it).
RELATIVE_FNS = frozenset({"mul", "div", "sqrt", "neg", "abs", "maximum", "minimum"})


def _costly(g: sp.Expr) -> bool:
    """Whether g does work that float64 makes expensive (a division, a root, a power
    other than a small integer, a function call): only then is the split worth it."""
    for node in sp.preorder_traversal(g):
        if isinstance(node, sp.Pow) and not (node.exp.is_Integer and 0 < int(node.exp) <= 4):
            return True
        if isinstance(node, sp.Function) and not isinstance(node, (sp.Abs, sp.Max, sp.Min,
                                                                   sp.Piecewise, sp.sign)):
            return True
    return False


def float_split(left: ir.Node, right_rows: ir.Node, sr, a: Analysis, max_k: float):
    """``(f, h, bound)`` for a union correction's intersection pass, or None.

    Requires: the product is consumed relatively, and each of its (weighted) uses may add
    ``max_k`` units of relative error (0: no split); f ≥ 0 with a float32 bound of at
    most ``max_k`` units; and g costly in float64. f runs on the stored float32 values,
    so no apply chain may map them (a row scaling such as ``normalize`` is applied when
    the operand is bound, and leaves stored values). The bound is
    :func:`gbdist.algebra.rounding.float_bound`'s for f as written, or, where that
    refuses or exceeds the budget, a stable kernel's
    (:func:`gbdist.algebra.stable.stable_kernel`, proven to compute f)."""
    if max_k <= 0 or a.strategy != "union-correction" or a.structural or not _costly(a.g):
        return None
    lchain, rchain = row_operand(left)[2], row_operand(right_rows)[2]
    dom = sr.mul.domain
    f = sr.mul.formula
    bound = None
    if not (lchain or rchain):
        bound = float_bound(f, dom)
        if bound is not None and not bound.nonnegative:
            bound = None
    if (bound is None or bound.k > max_k) and _stored_values(lchain) and _stored_values(rchain):
        kernel = stable_kernel(f, dom)
        if kernel is not None:
            bound = kernel
    if bound is None or bound.k > max_k:
        return None
    name = sr.mul.name
    return (_binary(f"{name}_f", f, dom), _binary(f"{name}_h", -a.L - a.R + a.C, dom), bound)


def _stored_values(chain: tuple) -> bool:
    """Whether an apply chain leaves the stored values as they are (only row scalings,
    whose formula is x: the backends scale the rows when the operand is bound)."""
    from ..algebra.formulas import X
    return all(isinstance(op, RowScale) and op.formula == X for op in chain)


def relative_products(expr: ir.Node) -> dict:
    """{key: weighted number of uses} of the products whose every use reaches the result
    through RELATIVE_FNS only (so each use passes the product's relative error on,
    unamplified; uses add up: P·P carries twice P's; a square root halves: √P carries
    half of P's)."""
    uses: dict = {}
    bad = set()

    def walk(node, ok, weight):
        if isinstance(node, (ir.MxM, ir.MxV)):
            if ok:
                uses[node.key] = uses.get(node.key, 0) + weight
            else:
                bad.add(node.key)
            ok = False  # its operands are not its result
        elif not (isinstance(node, ir.Pointwise) and node.fn in RELATIVE_FNS):
            ok = False
        elif node.fn == "sqrt":
            weight = weight / 2
        for c in node.children:
            walk(c, ok, weight)

    walk(expr, True, 1.0)
    return {k: n for k, n in uses.items() if k not in bad}


def lower_product(left: ir.Node, right_rows: ir.Node, sr, a: Analysis,
                  max_k: float = 0) -> ir.Node:
    """The primitive expression computing one analysed product (``max_k``: the float32
    rounding, in units of 2^-24, that a float split of it may add; 0: none)."""
    dom = sr.mul.domain
    if a.strategy == "intersection":
        return ir.Intersect(left, right_rows, sr.mul, sr.add, _expansion_ops(a, dom), a.structural)
    if a.strategy == "two-pass-union":
        return ir.TwoPassUnion(left, right_rows, sr.mul, sr.add, constant_value(a.C), a.corner_absorbed)
    # union-correction
    plus_m = as_monoid(plus)
    terms: list[ir.Node] = []
    # The intersection pass is kept even when g = 0: it is what gives the result
    # both of its dimensions (f = 2·y still makes an (n_A, n_B) matrix).
    terms.append(ir.Intersect(left, right_rows, _binary(f"{sr.mul.name}_g", a.g, dom), plus_m,
                              _expansion_ops(a, dom), False,
                              float_split(left, right_rows, sr, a, max_k)))
    lc, rc = a.L - a.C, a.R - a.C
    if lc != 0:
        terms.append(ir.RowReduce(ir.Apply(_unary(f"{sr.mul.name}_L", lc, dom), left), plus_m))
    if rc != 0:
        terms.append(ir.RowReduce(ir.Apply(_unary(f"{sr.mul.name}_R", rc, dom), right_rows), plus_m))
    if a.C != 0:
        terms.append(ir.NCols(left) * constant_value(a.C))
    out = terms[0] if terms else ir.Const(0.0)
    for t in terms[1:]:
        out = out + t
    if a.nonnegative:
        out = ir.Pointwise("maximum", (out, ir.Const(0.0)))
    return out


def weighted_product(left: ir.Node, right_rows: ir.Node, node: ir.MxM, a: Analysis) -> ir.Node:
    """A weighted product (compiler/columns.py: ⊕_c κ(w_c)·f₁(a_c, b_c), ⊕ = plus): summed
    directly over the union, each column's term multiplied by κ(w_c) as the kernel reads it;
    a column stored in neither row adds κ(w)·f₁(za, zb), which must be 0."""
    from ..errors import AnalysisError
    corner = constant_value(a.C)
    if node.semiring.add.name != "plus" or corner != 0:
        raise AnalysisError("a column-weighted product needs ⊕ = plus and f₁(za, zb) = 0",
                            got=f"⊕ = {node.semiring.add.name}, f₁(za, zb) = {corner:g}",
                            hint="weight a ⊗ that is 0 where neither row stores the column")
    return ir.TwoPassUnion(left, right_rows, node.semiring.mul, node.semiring.add, 0.0, True,
                           node.weight)


def make_plan(expr: ir.Node, default_roles: dict | None = None) -> Plan:
    """Type-check, analyse every product, lower, and split into steps + epilogue."""
    from .analysis import analyze
    from .columns import eliminate
    expr = eliminate(expr)  # column operands become scaled operands (compiler/columns.py)
    typing = infer(expr, default_roles)
    products: list[ProductDecision] = []
    relative = relative_products(expr)
    split_k: dict = {}  # product key -> the k its float split spends per use (0: none)

    def budget(node) -> float:
        """k per use left for this product's float split (the same for every occurrence)."""
        if node.key in split_k:
            return split_k[node.key]
        left = FLOAT_SPLIT_MAX_K - sum(k * relative.get(key, 0) for key, k in split_k.items())
        return left / relative[node.key] if node.key in relative else 0.0

    def lower_split(node, lowered):
        if node.key not in split_k:
            splits = [n.float_split for n in ir.walk(lowered)
                      if isinstance(n, ir.Intersect) and n.float_split is not None]
            split_k[node.key] = splits[0][2].k if splits else 0.0
        return lowered

    def lower(node):
        try:
            return _lower(node)
        except GbdistError as e:  # point at the product in the user's text
            raise e.with_span(getattr(node, "span", None)) from None

    def _lower(node):
        if isinstance(node, ir.MxM):
            left, right = _canonical(node.left), _canonical(node.right, transpose=True)
            a = analyze(node.semiring, operand_fill(node.left), operand_fill(right))
            products.append(ProductDecision(node, a))
            if node.weight is not None:
                return weighted_product(left, right, node, a)
            return lower_split(node, lower_product(left, right, node.semiring, a, budget(node)))
        if isinstance(node, ir.MxV):
            left, right = _canonical(node.matrix), _canonical(node.vector)
            a = analyze(node.semiring, operand_fill(node.matrix), operand_fill(node.vector))
            products.append(ProductDecision(node, a))
            return lower_split(node, lower_product(left, right, node.semiring, a, budget(node)))
        if isinstance(node, ir.RowReduce):
            return ir.RowReduce(_canonical(node.arg), node.monoid)
        return None

    lowered = ir.rewrite(expr, lower)
    steps, epilogue = split(lowered, typing)
    return Plan(expr, typing, lowered, steps, epilogue, tuple(products),
                float32_plan(steps, epilogue))


def split(lowered: ir.Node, typing: Typing) -> tuple[tuple[Step, ...], ir.Node]:
    """The steps (each primitive of the lowered expression, named t0, t1, ...) and the
    epilogue (the lowered expression over their results); also how a stored plan is
    reassembled (:mod:`gbdist.compiler.stored`)."""
    steps: list[Step] = []
    names: dict = {}
    for node in ir.walk(lowered):
        if isinstance(node, PRIMITIVES):
            kind = _step_kind(node, typing)
            names[node.key] = ir.Ref(f"t{len(steps)}", kind)
            steps.append(Step(f"t{len(steps)}", node, kind))
    return tuple(steps), ir.rewrite(lowered, lambda n: names.get(n.key))


# Epilogue functions that round nothing: a plan whose epilogue has only these may run in
# float32 (its products' bounds are then the result's).
EXACT_FNS = frozenset({"maximum", "minimum", "abs", "neg"})


def float32_plan(steps: tuple, epilogue: ir.Node):
    """The float32 bound of a plan that may run in float32 whole, or None.

    Such a plan's every step is a product whose ⊕ is max or min, whose ⊗ f ≥ 0 has a
    rounding bound of at most FLOAT_SPLIT_MAX_K units on the stored values
    (:func:`gbdist.algebra.rounding.float_bound`; no apply chain), and whose epilogue
    rounds nothing (max, min, |·|, − of the products and constants). A max or min of
    nonnegative terms each within k units of itself is within k units of the max or
    min, in any type, so the result keeps the largest k. Chebyshev's max |x − y| is the
    case: one rounding, so float32 accumulation keeps it within 2^-24. A backend may
    then accumulate in float32, for inputs 0 or within 2^±E (the bound's range)."""
    bounds = []
    for st in steps:
        n = st.node
        if not isinstance(n, (ir.Intersect, ir.TwoPassUnion)) or not n.add.idempotent:
            return None
        if row_operand(n.left)[2] or row_operand(n.right)[2]:
            return None
        b = float_bound(n.mul.formula, n.mul.domain)
        if b is None or not b.nonnegative or b.k > FLOAT_SPLIT_MAX_K:
            return None
        bounds.append(b)
    if not bounds:
        return None
    for node in ir.walk(epilogue):
        if isinstance(node, ir.Pointwise):
            if node.fn not in EXACT_FNS:
                return None
        elif not isinstance(node, (ir.Ref, ir.Const)):
            return None
    return max(bounds, key=lambda b: b.k)


def _step_kind(node, typing: Typing) -> str:
    if isinstance(node, ir.RowReduce):
        name, flipped, _ = row_operand(node.arg)
        role = typing.roles.get((name, flipped))
        return {"i": "col", "j": "row", "v": "row"}.get(role, "col")
    name, flipped, _ = row_operand(node.right)
    return "col" if typing.roles.get((name, flipped)) == "v" else "matrix"


@functools.lru_cache(maxsize=256)
def cached_plan(expr: ir.Node, roles_items: tuple = ()) -> Plan:
    """Plans cached by the expression's structural key (and default roles)."""
    from ..algebra.formulas import guarded
    from ..errors import AnalysisError
    with guarded("the expression " + ir.to_text(expr)[:200], AnalysisError):
        return make_plan(expr, dict(roles_items) or None)
