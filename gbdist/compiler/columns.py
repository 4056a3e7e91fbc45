"""Column operands in products: the rewrite that leaves no column vector to the kernels.

A product whose ⊗ reads column operands, ``⊕_c f(a_ic, b_jc; w_c)`` (a weight, a
variance, a range: :mod:`gbdist.algebra.columns`), is analysed with w symbolic. The rule
here, the one every weighted metric of SciPy's that gbdist has rests on, is a *column
scaling*: when

    f(x, y; w) = f₁(s(w)·x, s(w)·y)        for all x, y and every w in its domain,

with f₁ = f at w = 1 (the op without its column operands) and s(w) ≥ 0, the product is
the column-free product of f₁ over the operands with column c scaled by s(w_c). The
scale is found from the algebra, not per metric: κ(w) = f / f₁ must not read x or y,
f₁ must be positively homogeneous of some degree d > 0 (f₁(t·x, t·y) = t^d·f₁(x, y) for
t > 0), and then s = κ^(1/d); the identity is checked (sympy, else a seeded numeric
check over x, y and w with w = 0 included) before it is used. Weighted Minkowski
(s = w^(1/p)), weighted squared Euclidean and cosine (s = √w), cityblock and Bray–Curtis
(s = w), SciPy's weighted Chebyshev (s = [w > 0]), seuclidean (s = 1/√V) and Gower's
numeric part (s = w/r) all come out of it. An ``apply`` of a unary op that reads column
operands is scaled the same way (u(x; w) = u₁(s(w)·x)).

Because s(0) = 0 maps the fill 0 to 0, the fills, the identities, the annihilators and
so the decision of the product (intersection, union correction, expansion ...) are those
of f₁: a weight that is 0 or positive changes no decision. f(x, 0; w), f(0, y; w) and
f(0, 0; w) are kept, with w symbolic, for ``explain``.

A ⊗ ⊕-ed by plus that reads a column operand otherwise, as a *column factor* (degree 0:
a weighted count Σ w·[x ≠ y], Canberra's w·|x − y|/(|x| + |y|), Gower's clipped term
w·min(|x − y|·s, 1)),

    f(x, y; w) = κ(w)·f₁(x, y)        with κ read off a factor of column operands only,

is a *weighted* product: the column-free f₁ with each column's term multiplied by κ(w_c)
(:attr:`ir.MxM.weight`), which the planner sums directly over the union
(:class:`ir.TwoPassUnion` with a weight; the kernels read κ(w) at each column as a bound
vector). It needs f₁(0, 0) = 0 (a column stored in neither row adds nothing); the identity
is proven like a scaling. Any other use of a column operand is refused with an
AnalysisError that says so. Each scaled operand is one binding (its name keeps the
operand's), so an operand may be read with one scale per expression.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import colfactor, ir
from ..algebra import columns as cols
from ..algebra.lazy import sympy as sp
from ..errors import AnalysisError
from .colfactor import _check, _tidy, _written_core  # noqa: F401 - shared with colfactor


@dataclass(frozen=True)
class ColumnDecision:
    """How one product or apply that reads column operands was made column-free."""

    written: str  # the product / apply as written
    columns: tuple  # the column operands (gbdist.algebra.columns.Column)
    formula: object  # f(x, y; w) (sympy)
    core: object  # f₁ = f at w = 1
    degree: object  # d: f₁(t·x, t·y) = t^d·f₁(x, y)
    scale: object  # s(w)
    fills: tuple  # (f(x, 0; w), f(0, y; w), f(0, 0; w)) for a product; () for an apply
    proof: object  # the Proof of f₁(s·x, s·y) = f(x, y; w) (of κ(w)·f₁ = f when weighted)
    weighted: bool = False  # scale is the column factor κ(w): f = κ(w)·f₁ (MxM.weight)

    def lines(self) -> list[str]:
        show = _show
        out = [f"{self.written}: reads {', '.join(c.describe() for c in self.columns)}"]
        if self.weighted:
            return out + [f"  f = {show(self.formula)} = κ(w)·f₁ with f₁ = {show(self.core)} "
                          f"and the column factor κ(w) = {show(self.scale)}: each column's "
                          "term weighted by κ(w_c), summed directly over the union (no "
                          "correction; the kernels read κ(w) at each column)",
                          f"  proof: {_show(self.proof)}"]
        out = [out[0],
               f"  f = {show(self.formula)};  f₁ = f at w = 1 = {show(self.core)}, "
               + (f"homogeneous of degree {show(self.degree)}" if self.degree is not None
                  else "not homogeneous: s is the factor that scales the values inside f"),
               f"  column scaling s(w) = {show(self.scale)}: the product is f₁ over the "
               "operands with column c scaled by s(w_c) (bound once per call)"]
        if self.fills:
            L, R, C = self.fills
            out.append(f"  with w symbolic: f(x, 0; w) = {show(L)}, f(0, y; w) = {show(R)}, "
                       f"f(0, 0; w) = {show(C)}; s(w)·0 = 0 keeps the fills, so the "
                       "decision below (of f₁) holds for every w")
        out.append(f"  proof: {_show(self.proof)}")
        return out


def _show(e) -> str:
    from ..algebra.mathtext import math
    return cols.show(math(e) if not isinstance(e, str) and hasattr(e, "free_symbols")
                     else str(e))


# ---------------------------------------------------------------------------
# the scaling of one formula
# ---------------------------------------------------------------------------


def _variables(formula, arity: int, domain: str):
    from ..algebra.formulas import X, Y, domain_symbols
    xd, yd = domain_symbols(domain)
    return ((X, xd), (Y, yd))[:arity]


@functools.lru_cache(maxsize=256)
def scaling(op, what: str = "") -> tuple:
    """(f₁ op, s(w) op, d, proof, f₁ formula, s formula) for an op that reads column
    operands, or an AnalysisError naming why it has no column scaling."""
    from ..algebra.formulas import guarded
    from ..algebra.proofs import analysis_budget
    with analysis_budget(), guarded(f"the column operands of op {op.name!r}", AnalysisError):
        return _scaling(op, what or f"op {op.name!r}")


def _scaling(op, what: str):
    from ..algebra.formulas import X, Y
    from ..algebra.ops import Op
    from ..algebra.proofs import budget, simplify
    f = op.formula
    syms = [s for s in f.free_symbols if cols.is_column(s)]
    variables = _variables(f, op.arity, op.domain)
    on = {v: vd for v, vd in variables}
    back = {vd: v for v, vd in variables}
    f_on = f.xreplace(on)
    written = _written_core(f, syms)  # f at w = 1, as written (the op the kernels run)
    core = sp.piecewise_fold(written.xreplace(on))
    t = sp.Symbol("t", positive=True)
    why = None
    degree = kappa = None
    try:
        with budget():
            if core == 0:
                why = "f at w = 1 is 0"
            else:
                ratio = sp.simplify(core.xreplace({vd: t * vd for _, vd in variables}) / core)
                degree = sp.simplify(t * sp.diff(ratio, t) / ratio)
                if not degree.is_number or not degree.is_positive:
                    why = (f"f at w = 1 ({_show(core.xreplace(back))}) is not positively "
                           "homogeneous of a degree > 0 in its values")
                else:
                    kappa = sp.simplify(sp.piecewise_fold(f_on / core))
                    if kappa.free_symbols - set(syms):
                        why = "f / (f at w = 1) still reads the values x, y: w is not a weight"
    except Exception as e:  # noqa: BLE001 - sympy failed or ran out of time
        why = f"sympy could not decide it ({type(e).__name__})"
    if why is not None and core != 0:
        found = _inner_scaling(op, f, f_on, core, syms, variables, back)
        if found is not None:
            proof, scale = found
            core_op = Op(f"{op.name}_core", written, op.arity, op.domain)
            scale_op = Op(f"{op.name}_scale", scale, 1, "real")
            return core_op, scale_op, None, proof, written, scale, X, Y
    if why is not None:
        raise AnalysisError(
            f"{what} reads the column operand(s) {', '.join(sorted(c.name for c in cols.columns_of(f)))} "
            "in a way that is not a per-column scaling of its values",
            expected="f(x, y; w) = f₁(s(w)·x, s(w)·y): a weight of a ⊗ that is homogeneous in "
                     "(x, y) (|x − y|^p, (x − y)², x·y, ...)",
            got=f"{_show(f)}: {why}",
            hint="a weight that multiplies a ⊗ ⊕-ed by plus (w·[x ≠ y], w·Canberra's term, "
                 "with f(0, 0) = 0) is read at each column by the kernel: write it as a factor")
    scale = kappa if degree == 1 else sp.Pow(kappa, 1 / degree)
    scale = _tidy(scale)
    scaled = core.xreplace({vd: scale * vd for _, vd in variables})
    args = "x, y" if op.arity == 2 else "x"
    proof = _check(f"f₁(s(w)·x{', s(w)·y' if op.arity == 2 else ''}) = f({args}; w) for every "
                   "w in its domain", scaled.xreplace(back), f, op.domain)
    if not proof.holds:
        raise AnalysisError(f"{what}: the column scaling s(w) = {_show(scale)} does not "
                            "reproduce the op", got=str(proof.detail),
                            hint="write the weight as a factor of a homogeneous ⊗")
    core_op = Op(f"{op.name}_core", written, op.arity, op.domain)
    scale_op = Op(f"{op.name}_scale", scale, 1, "real")
    return core_op, scale_op, degree, proof, written, scale, X, Y


def _inner_scaling(op, f, f_on, core, syms, variables, back):
    """(proof, s) when f scales its values inside a term that is not homogeneous: f =
    f₁(s·x, s·y) with s read off a factor of column operands that multiplies the values
    (min(|x − y|·s, 1), Gower's clipped terms), checked like every scaling; else None.
    The candidates are only guesses: the proof decides."""
    from ..algebra.proofs import budget
    colset = set(syms)
    ones = {c: sp.Integer(1) for c in syms}
    seen = []
    for node in sp.preorder_traversal(f_on):
        if not isinstance(node, sp.Mul):
            continue
        factors = [a for a in node.args if a.free_symbols and a.free_symbols <= colset]
        rest = [a for a in node.args if a.free_symbols - colset]
        if not factors or not rest:
            continue
        c = sp.Mul(*factors)
        try:
            with budget():
                c1 = sp.simplify(c.xreplace(ones))
                if not c1.is_number or c1 == 0:
                    continue
                kappa = _tidy(c / c1)
        except Exception:  # noqa: BLE001 - not a candidate
            continue
        if any(kappa == k for k in seen):
            continue
        seen.append(kappa)
        scaled = core.xreplace({vd: kappa * vd for _, vd in variables})
        args = "x, y" if op.arity == 2 else "x"
        proof = _check(f"f₁(s(w)·x{', s(w)·y' if op.arity == 2 else ''}) = f({args}; w) for "
                       "every w in its domain (s read off the factor that scales the values)",
                       scaled.xreplace(back), f, op.domain)
        if proof.holds:
            return proof, kappa
    return None


# ---------------------------------------------------------------------------
# the rewrite of an expression
# ---------------------------------------------------------------------------


def _reads_columns(node) -> bool:
    if isinstance(node, (ir.MxM, ir.MxV)):
        return bool(node.semiring.mul.columns)
    if isinstance(node, ir.Apply):
        return bool(node.op.columns)
    return False


_DECISIONS: dict = {}  # key of a column-free expression -> its ColumnDecisions


def eliminate(expr: ir.Node) -> ir.Node:
    """``expr`` with every product and apply that reads column operands written over
    scaled operands (:class:`~gbdist.compiler.ir.ColScaled`); ``expr`` itself when none
    does. The decisions are kept for :func:`decisions`."""
    if not any(_reads_columns(n) for n in ir.walk(expr)):
        return expr
    made: list[ColumnDecision] = []

    def fn(node):
        if not _reads_columns(node):
            return None
        try:
            return _rewrite(node, made)
        except AnalysisError as e:
            raise e.with_span(getattr(node, "span", None)) from None

    out = _shapes_of_scaled(ir.rewrite(expr, fn))
    _one_form_per_operand(out)
    if len(_DECISIONS) > 1024:
        _DECISIONS.clear()
    _DECISIONS[out.key] = tuple(made)
    return out


def decisions(expr: ir.Node) -> tuple:
    """The column decisions that made the (column-free) ``expr``, when this process made
    it; () otherwise (a stored plan)."""
    return _DECISIONS.get(expr.key, ())


def _scaled(node: ir.Node, scale_op, what: str) -> ir.Node:
    """``node`` (a matrix, its transpose, or column-free applies over one) with column c
    scaled by s(w_c). Applies under the scaling (``apply(nonzero, A)``: the pattern, for
    weighted counts) are done first, when the operand is bound (:class:`ir.ColScaled`'s
    ``pre``): they must map 0 to 0, so the operand's unstored entries stay 0."""
    flipped = isinstance(node, ir.Transpose)
    base = node.arg if flipped else node
    chain = []
    while isinstance(base, ir.Apply) and not base.op.columns:
        chain.append(base.op)
        base = base.arg
    if chain and isinstance(base, ir.Transpose):
        flipped, base = not flipped, base.arg
    if type(base) is not ir.Matrix:
        raise AnalysisError(f"{what} reads column operands of an operand that is not a plain "
                            "matrix", got=ir.to_text(node),
                            hint="write the column operands into the op: mxm(A, B.T, "
                                 "semiring(op_with_w, plus)), over A, B or column-free "
                                 "applies of them (apply(nonzero, A))")
    pre = _composed(chain[::-1], what) if chain else None
    out = ir.ColScaled(base.name, base.span, scale_op, pre)
    return ir.Transpose(out) if flipped else out


def _composed(chain: list, what: str):
    """One unary op: the column-free ops of ``chain`` (innermost first) composed, checked
    to map 0 to 0."""
    from ..algebra.formulas import X
    from ..algebra.ops import Op, RowScale
    if any(isinstance(op, RowScale) for op in chain):
        raise AnalysisError(f"{what} reads column operands of a row-normalised operand",
                            got=", ".join(op.name for op in chain),
                            hint="normalize is bound with the operand; weight its product "
                                 "without a column operand")
    f = X
    for op in chain:
        f = op.formula.xreplace({X: f})
    at0 = sp.simplify(f.xreplace({X: 0}))
    if at0 != 0:
        raise AnalysisError(f"{what} reads column operands of apply({chain[-1].name}, ...), "
                            "which does not map 0 to 0", got=f"{chain[-1].name}(0) = {at0}",
                            hint="only applies that keep unstored entries at 0 (nonzero, abs, "
                                 "square, ...) can be scaled by a column operand")
    name = "_".join(op.name for op in chain)
    return Op(name, f, 1, chain[0].domain)


def _rewrite(node, made: list) -> ir.Node:
    from ..algebra.semirings import Semiring
    if isinstance(node, ir.MxV):
        raise AnalysisError("mxv with a ⊗ that reads column operands is not supported",
                            got=ir.to_text(node), hint="use mxm(A, B.T, ...)")
    if isinstance(node, ir.Apply):
        what = f"apply({node.op.name}, ...)"
        core, scale, degree, proof, f1, s, *_ = scaling(node.op, what)
        made.append(ColumnDecision(ir.to_text(node), node.op.columns, node.op.formula, f1,
                                   degree, s, (), proof))
        return ir.Apply(core, _scaled(node.arg, scale, what), node.span)
    sr = node.semiring
    what = f"the product {ir.to_text(node)}"
    if not isinstance(node.right, ir.Transpose):
        raise AnalysisError(f"{what}: column operands need the form mxm(A, B.T, ...)",
                            got=ir.to_text(node), hint="the column index k must be a column of "
                            "both operands")
    try:
        core, scale, degree, proof, f1, s, X, Y = scaling(sr.mul, what)
    except AnalysisError as not_scaled:
        found = colfactor.factor(sr.mul, what) if sr.add.name == "plus" else None
        if found is None:
            raise
        core, weight, proof, f1, kappa = found
        decision = ColumnDecision(ir.to_text(node), sr.mul.columns, sr.mul.formula, f1, None,
                                  kappa, (), proof, weighted=True)
        left, right = node.left, node.right
        if core.columns:  # f₁ reads column operands κ does not: a scaling makes it column-free
            reads = core.columns
            try:
                core, scale, degree, sproof, f1s, s, *_ = scaling(core, what)
            except AnalysisError:
                raise not_scaled from None  # neither form: the op as written is refused
            made.extend([decision, ColumnDecision(ir.to_text(node), reads, f1, f1s, degree, s,
                                                  (), sproof)])
            left, right = _scaled(left, scale, what), _scaled(right, scale, what)
        else:
            made.append(decision)
        return ir.MxM(left, right, Semiring(core, sr.add, sr.annihilator, sr.name), node.span,
                      weight)
    f = sr.mul.formula
    fills = (f.xreplace({Y: 0}), f.xreplace({X: 0}), f.xreplace({X: 0, Y: 0}))
    made.append(ColumnDecision(ir.to_text(node), sr.mul.columns, f, f1, degree, s,
                               tuple(sp.simplify(e) for e in fills), proof))
    new_sr = Semiring(core, sr.add, sr.annihilator, sr.name)
    return ir.MxM(_scaled(node.left, scale, what), _scaled(node.right, scale, what), new_sr,
                  node.span)


def _shapes_of_scaled(expr: ir.Node) -> ir.Node:
    """``ncols(A)`` reads A's shape only: over a scaled A, it reads the scaled operand (one
    binding per name)."""
    scaled = {n.name: n for n in ir.walk(expr) if isinstance(n, ir.ColScaled)}

    def fn(node):
        if isinstance(node, ir.NCols) and type(node.arg) is ir.Matrix and node.arg.name in scaled:
            return ir.NCols(scaled[node.arg.name], node.span)
        return None

    return ir.rewrite(expr, fn) if scaled else expr


def _one_form_per_operand(expr: ir.Node) -> None:
    """Each operand name is bound once: read plain or with one column scale, not both."""
    forms: dict = {}
    for n in ir.walk(expr):
        if isinstance(n, ir.Matrix):
            forms.setdefault(n.name, {})[n.key] = n
    for name, found in forms.items():
        if len(found) > 1:
            shown = sorted(ir.to_text(n) for n in found.values())
            raise AnalysisError(
                f"the operand {name} is read with {len(found)} different column scalings",
                got="; ".join(shown),
                expected="one form per operand: every product and apply that reads it uses the "
                         "same column operands the same way (s(w) is derived from each ⊗)",
                hint="write every use of the operand with the same weight (e.g. the norms of a "
                     "weighted cosine as reduce(apply(w_square(w), A), plus))")


def explain_lines(plan) -> list[str]:
    """How the products that read column operands were made column-free (``explain``):
    their decisions when this process made them, else the scaled operands of the (stored)
    plan."""
    found = decisions(plan.expr)
    if found:
        return ["column operands", *("  " + line for d in found for line in d.lines())]
    scaled = sorted({ir.to_text(n) for n in ir.walk(plan.expr) if isinstance(n, ir.ColScaled)})
    return ["column operands", *(f"  {t}: column c scaled by s(w_c), bound once per call"
                                 for t in scaled)] if scaled else []
