"""CUDA C code generation: ops' sympy formulas become device code.

Two pieces:

* :class:`CudaPrinter`, a sympy C99 printer subclass that picks float or
  double math (``sqrtf``/``sqrt``), prints infinities portably, expands small
  integer powers into products, and raises on anything it does not know
  (``strict``) instead of emitting wrong code.
* :func:`generate`, which turns a Plan into one CUDA source: a ``Spec``
  struct per fused product kernel (the accumulators' ⊗ and ⊕ with the apply
  chains folded in, and the plan's epilogue) and an ``RSpec`` per row
  reduction, followed by the kernel templates from ``kernels/``. Kernels are
  instantiated with ``name_expressions`` such as ``gb_gather<Spec0, 4, 0>``.

Longer than 500 lines: the printer and the struct generator share one vocabulary (the
C types, the apply chains, the accumulator planes), and splitting them would make each
half refer to the other's private helpers.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import sympy as sp
from sympy.printing.c import C99CodePrinter

from ...compiler import ir
from ...algebra.rounding import float_bound
from ...errors import BackendError
from ...algebra.formulas import X, Y
from ...algebra.ops import Op
from ...compiler.plan import Plan, Step
from ...resources import read
from ...compiler.typecheck import row_operand
from . import genstore as _sw
from .genstore import Generated, knobs, sums_as_written  # noqa: F401 (codegen's names)

_A = sp.Symbol("a", real=True)
_B = sp.Symbol("b", real=True)


class CudaPrinter(C99CodePrinter):
    """C99 printer for CUDA device code in float or double."""

    def __init__(self, dtype, fast_div: bool = False):
        self.single = np.dtype(dtype) == np.float32
        # Divisions as gb_div (kernels/gbdist.cuh): n times a reciprocal refined from a
        # float seed, relative error below 2^-45. Only for ⊗ over float data in double.
        self.fast_div = fast_div and not self.single
        # No math macros (M_LN2, M_PI, ...): NVRTC has no <math.h> to define them.
        settings = {"strict": True, "math_macros": {}}
        if self.single:
            from sympy.codegen.ast import float32, real
            settings["type_aliases"] = {real: float32}
        super().__init__(settings)

    @property
    def T(self) -> str:
        return "float" if self.single else "double"

    def _print_Infinity(self, expr):
        return "GB_INF"

    def _print_NegativeInfinity(self, expr):
        return "(-GB_INF)"

    def _print_ComplexInfinity(self, expr):
        return "GB_INF"

    def _print_NaN(self, expr):
        return "GB_NAN"

    def _print_Symbol(self, expr):
        return {"x": "x", "y": "y", "a": "a", "b": "b"}.get(expr.name, super()._print_Symbol(expr))

    def _print_Mul(self, expr):
        if not self.fast_div:
            return super()._print_Mul(expr)
        num, den = [], []
        for f in sp.Mul.make_args(expr):
            if f.is_Pow and f.exp.is_Rational and f.exp.is_negative and f.exp != -sp.Rational(1, 2):
                den.append(f.base if f.exp == -1 else sp.Pow(f.base, -f.exp, evaluate=False))
            else:
                num.append(f)
        if not den:
            return super()._print_Mul(expr)
        n = self._print(sp.Mul(*num, evaluate=False)) if num else self._one()
        d = self._print(sp.Mul(*den, evaluate=False))
        return f"gb_div({n}, {d})"

    def _print_Pow(self, expr):
        base, ex = expr.base, expr.exp
        if self.fast_div and ex.is_Rational and ex.is_negative and ex != -sp.Rational(1, 2):
            return self._print_Mul(sp.Mul(expr, evaluate=False))
        if ex.is_Integer and 2 <= int(ex) <= 4:
            b = self.parenthesize(base, 100)
            return "*".join([f"({b})"] * int(ex))
        if ex == -1:
            return f"({self._one()}/({self._print(base)}))"
        if ex.is_number and ex.is_negative and ex != -sp.Rational(1, 2):
            # x^-p as 1 / x^p (as written: a subnormal x keeps a finite x^-p / y^-p ratio)
            return f"({self._one()}/({self._print(sp.Pow(base, -ex, evaluate=False))}))"
        if ex == sp.Rational(1, 2):
            return f"{'sqrtf' if self.single else 'sqrt'}({self._print(base)})"
        if ex == -sp.Rational(1, 2):
            return f"({self._one()}/{'sqrtf' if self.single else 'sqrt'}({self._print(base)}))"
        fn = "powf" if self.single else "pow"
        return f"{fn}({self._print(base)}, {self._print(sp.Float(ex) if ex.is_Rational else ex)})"

    def _print_Max(self, expr):
        out = self._print(expr.args[0])
        for a in expr.args[1:]:
            out = f"gb_max<{self.T}>({out}, {self._print(a)})"
        return out

    def _print_Min(self, expr):
        out = self._print(expr.args[0])
        for a in expr.args[1:]:
            out = f"gb_min<{self.T}>({out}, {self._print(a)})"
        return out

    def _print_sign(self, expr):
        return f"gb_sign<{self.T}>({self._print(expr.args[0])})"

    def _one(self) -> str:
        return "1.0F" if self.single else "1.0"

    def literal(self, v: float) -> str:
        if np.isposinf(v):
            return "GB_INF"
        if np.isneginf(v):
            return "(-GB_INF)"
        if np.isnan(v):
            return "GB_NAN"
        return self._print(sp.Float(float(v)))


def fold_constants(e: sp.Basic) -> sp.Basic:
    """Closed numeric subexpressions (log(2), sqrt(2), pi/4) become float literals.

    Device code must not call math functions on integer literals (``log(2)``
    resolves to a host-only overload) and NVRTC has no math macros.
    """
    from ...algebra.evaluate import constant_value

    def closed(s):
        return (isinstance(s, sp.Expr) and not s.free_symbols and not s.is_Atom
                and not isinstance(s, sp.logic.boolalg.Boolean))

    def value(s):
        # IEEE value of the subexpression as written (0/0 is NaN, log(0) is -inf)
        v = constant_value(s)
        if v != v:
            return sp.nan
        if v in (float("inf"), float("-inf")):
            return sp.oo if v > 0 else -sp.oo
        exact = s.evalf(20) if not s.has(sp.zoo, sp.nan) else None
        if exact is not None and exact.is_Float and float(exact) == v:
            return sp.Float(exact, 17)
        return sp.Float(v, 17)

    with sp.evaluate(False):
        return e.replace(closed, value)


def scalar(expr: sp.Expr, printer: CudaPrinter, names: dict | None = None) -> str:
    """A formula over x, y as a C expression (x, y renamed through ``names``)."""
    e = fold_constants(sp.sympify(expr))
    mapping = {}
    for s in e.free_symbols:
        if s.name in ("x", "y"):
            target = (names or {}).get(s.name, s.name)
            mapping[s] = sp.Symbol(target, real=True)
    with sp.evaluate(False):
        e = e.xreplace(mapping)
    try:
        return printer.doprint(e)
    except Exception as exc:  # sympy raises PrintMethodNotImplementedError and friends
        from ...algebra.mathtext import math
        raise BackendError("the CUDA code generator cannot print this formula",
                           got=f"{math(expr, 200)} ({exc})",
                           hint="use backend='cpu', or write the op with +, -, *, /, ^, abs, sqrt, "
                                "log, exp, min, max, where") from None


def chain_formula(chain: tuple[Op, ...], var: sp.Symbol) -> sp.Expr:
    """The composition of unary ops (inner to outer) applied to ``var``."""
    e: sp.Expr = var
    for op in chain:
        with sp.evaluate(False):
            e = op.formula.xreplace({X: e})
    return e


# ---------------------------------------------------------------------------
# Kernel specs
# ---------------------------------------------------------------------------


@dataclass
class Accumulator:
    step: Step
    mul: sp.Expr  # over x (dense-side raw value of the LEFT operand) and y (RIGHT raw value)
    add: Op
    identity: float
    union: bool
    corner: float | None  # for an absorbed two-pass union: ⊕ the corner at the end
    expansion: tuple | None = None  # ((φ_r(chainL(x)), ψ_r(chainR(x))), ...) over x, for "dense"
    # mul = f + h with f evaluated in float (plan.float_split)
    split: "Split | None" = None
    # a weighted step (TwoPassUnion.weight, ⊕ = plus): its row of the weight matrix the
    # kernel reads, each column's term multiplied by κ(w) at its column; None: unweighted
    weight: int | None = None
    # ⊗'s formula counted for the strategy models (a stored Generated keeps these, not mul):
    # sympy's count_ops, its divisions and its transcendentals (:func:`mul_counts`)
    ops: int = 0
    divs: int = 0
    trans: int = 0

    def __post_init__(self):
        self.ops, self.divs, self.trans = mul_counts(self.mul)


def mul_counts(mul) -> tuple[int, int, int]:
    """(sympy's count_ops, divisions, transcendentals) of a ⊗ formula: divisions are negative
    powers, transcendentals non-integer powers and functions other than Abs, Max, Min,
    Piecewise and sign (exp, log, trigonometric ...)."""
    div = trans = 0
    for e in sp.preorder_traversal(mul):
        if isinstance(e, sp.Pow):
            if e.exp.is_negative:
                div += 1
            if not e.exp.is_Integer:
                trans += 1
        elif isinstance(e, sp.Function) and not isinstance(e, (sp.Abs, sp.Max, sp.Min,
                                                               sp.Piecewise, sp.sign)):
            trans += 1
    return int(sp.count_ops(mul)), div, trans


@dataclass
class Split:
    """⊗ = f + h of a float split, valid for inputs 0 or within 2^±``exponent``: f in
    float over the stored float values, as written (``f``) or by a stable kernel
    (``kernel``, called at (y, x) when ``swapped``); h in the accumulator type."""

    f: sp.Expr | None
    h: sp.Expr
    exponent: int
    kernel: str | None = None
    swapped: bool = False


@dataclass
class Reduction:
    step: Step
    chain: tuple
    add: Op
    identity: float
    fill: float
    idempotent: bool
    kind: str  # col / row


def _monoid_kind(add) -> str:
    if add.invertible:
        return "plus"
    f = add.op.formula
    if f == X * Y:
        return "times"
    return "idempotent" if add.idempotent else "other"


def plan_operands(plan: Plan) -> tuple:
    """The (left, right) base operands shared by every product step, or raise."""
    pairs = {(row_operand(s.node.left)[:2], row_operand(s.node.right)[:2])
             for s in plan.steps if isinstance(s.node, (ir.Intersect, ir.TwoPassUnion))}
    if len(pairs) > 1:
        raise BackendError("the CUDA backend fuses products over one operand pair only",
                           got=", ".join(f"{l[0]}·{r[0]}" for l, r in sorted(pairs)),
                           hint="use backend='cpu' for this expression")
    return next(iter(pairs)) if pairs else None


def _structural_mismatch(steps) -> bool:
    flags = {bool(getattr(s.node, "structural", False)) for s in steps}
    return len(flags) > 1


def generate(plan: Plan, dtype, accumulate=None, split: bool = True) -> Generated:
    """Generate the CUDA source for ``plan`` at ``dtype`` (float32 or float64).

    ``accumulate`` is the type of the accumulators, the row reductions, every
    formula and the epilogue (default: ``dtype``). With float32 data and float64
    accumulation, values are stored (and held in shared memory) as float and
    widened to double as they are read; only the final result is rounded to float.
    A product step with a float split (compiler/plan.float_split) then evaluates its f
    in float, unless ``split`` is False (inputs outside the range its bound covers).
    """
    acc_dt = np.dtype(accumulate or dtype)
    pr = CudaPrinter(acc_dt)
    storage = "float" if np.dtype(dtype) == np.float32 else "double"
    T = pr.T
    acc_steps = [s for s in plan.steps if isinstance(s.node, (ir.Intersect, ir.TwoPassUnion))]
    red_steps = [s for s in plan.steps if isinstance(s.node, ir.RowReduce)]
    plan_operands(plan)
    if _structural_mismatch(acc_steps):
        raise BackendError("the CUDA backend cannot fuse structural and data products",
                           hint="use backend='cpu'")
    accs: list[Accumulator] = []
    weight_keys: list = []  # the weighted steps' κ(w) keys: the rows of the weight matrix
    for s in acc_steps:
        n = s.node
        _, _, lchain = row_operand(n.left)
        _, _, rchain = row_operand(n.right)
        # Fold the apply chains in: f(chainL(x), chainR(y)) on raw stored values.
        with sp.evaluate(False):  # as written: x/x must stay NaN at 0, x/y a division
            mul = n.mul.formula.xreplace({X: chain_formula(lchain, X), Y: chain_formula(rchain, Y)})
        union = isinstance(n, ir.TwoPassUnion)
        weighted = union and n.weight is not None
        if weighted and not (n.add.invertible and n.corner == 0):
            raise BackendError("the CUDA backend weights each column's term of a plus only",
                               got=f"⊕ = {n.add.name}, corner f₁(0, 0) = {n.corner:g}",
                               hint="use backend='cpu'")
        # a weighted step is a plus over the union too (gather's SKIP_SHARED pass), run
        # whatever DIRECT_UNION says: its tests are its own (test_weighted_gpu.py)
        if union and not n.add.idempotent and not (n.add.invertible and (_sw.DIRECT_UNION or weighted)):
            raise BackendError("the CUDA backend has no direct-union kernel for a ⊕ that is "
                               "not idempotent", got=f"⊕ = {n.add.name} over the union of stored columns "
                               "(chosen because the union correction would cancel)",
                               hint="use backend='cpu'")
        if union and not n.corner_absorbed and n.corner != n.add.identity_value:
            raise BackendError("the CUDA backend needs a two-pass union whose corner value is absorbed",
                               got=f"corner f(0, 0) = {n.corner:g} may change results",
                               hint="use backend='cpu'")
        expansion = None
        if not union and n.expansion and n.add.invertible and not n.structural:
            with sp.evaluate(False):
                expansion = tuple((phi.formula.xreplace({X: chain_formula(lchain, X)}),
                                   psi.formula.xreplace({X: chain_formula(rchain, X)}))
                                  for phi, psi in n.expansion)
        fsplit = None
        fs = getattr(n, "float_split", None)
        if fs is not None and split and _sw.FLOAT_SPLIT and storage == "float" and not pr.single:
            kernel = getattr(fs[2], "kernel", None)
            if kernel is not None:  # a stable kernel on the stored values (plan: no chain maps them)
                fsplit = Split(None, fs[1].formula, fs[2].exponent, kernel.name, fs[2].swapped)
            elif not (lchain or rchain):  # f as written, on the float32 inputs
                fsplit = Split(fs[0].formula, fs[1].formula, fs[2].exponent)
        wrow = None
        if weighted:
            if n.weight.key not in weight_keys:
                weight_keys.append(n.weight.key)
            wrow = weight_keys.index(n.weight.key)
        accs.append(Accumulator(s, mul, n.add.op, n.add.identity_value, union,
                                n.corner if union and n.corner_absorbed else None, expansion, fsplit,
                                wrow))
    reds: list[Reduction] = []
    for s in red_steps:
        _, _, chain = row_operand(s.node.arg)
        fill = float(_eval_const(chain_formula(chain, sp.Integer(0))))
        m = s.node.monoid
        reds.append(Reduction(s, chain, m.op, m.identity_value, fill, m.idempotent, s.kind))

    parts = [read("kernels", "gbdist.cuh")]
    if not _sw.SCATTER_FULL_OCCUPANCY:
        parts.append("#define GB_SCATTER_MIN_BLOCKS(TPB) 1\n")
    parts.append(f"typedef {storage} gb_real;\ntypedef {T} gb_acc;\n")
    structural = any(getattr(s.node, "structural", False) for s in acc_steps)
    union = any(a.union for a in accs)
    # a plus summed over the union (the accuracy rule's direct plan): pass 2 skips the
    # columns the dense side stores, which pass 1 has summed (gather.cuh, SKIP_SHARED)
    direct_union = any(isinstance(s.node, ir.TwoPassUnion) and not s.node.add.idempotent
                       for s in acc_steps)
    for r, red in enumerate(reds):
        parts.append(_rspec(f"RSpec{r}", red, pr))
    gather = None
    dense_maps = None
    if accs:
        gather = "Spec"
        # ⊗ runs once per pair of stored entries: over float data evaluated in double,
        # its divisions are gb_div (relative error < 2^-45, far below the 1e-6 bound).
        mul_pr = CudaPrinter(acc_dt, fast_div=_sw.FAST_DIV and storage == "float")
        parts.append(_spec(gather, accs, reds, plan, pr, structural, mul_pr, direct_union))
        if all(a.expansion for a in accs):
            dense_maps = []
            for k, a in enumerate(accs):
                terms = []
                for r, (phi, psi) in enumerate(a.expansion):
                    lname, rname = f"DMapL{k}_{r}", f"DMapR{k}_{r}"
                    parts.append(_map_struct(lname, phi, pr))
                    parts.append(_map_struct(rname, psi, pr))
                    terms.append(((lname, _eval_const(phi.xreplace({X: 0}))),
                                  (rname, _eval_const(psi.xreplace({X: 0})))))
                dense_maps.append(tuple(terms))
            dense_maps = tuple(dense_maps)
    sorted_order = _sorted_order(accs)
    if sorted_order:
        a = accs[0]
        parts.append(_map_struct("UKeyL", a.mul.xreplace({Y: sp.Integer(0)}), pr))
        parts.append(_map_struct("UKeyR", a.mul.xreplace({X: sp.Integer(0)}).xreplace({Y: X}), pr))
    dense_union = bool(accs) and all(_dense_union_ok(s.node, a) for s, a in zip(acc_steps, accs))
    for name in ("row_reduce.cuh", "gather.cuh", "scatter.cuh", "dense.cuh", "union_sorted.cuh"):
        parts.append(read("kernels", name))
    if dense_union:  # only these plans' sources change (and their compile keys)
        parts.append(read("kernels", "dense_union.cuh"))
    source = "\n".join(parts)
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    exps = [a.split.exponent for a in accs if a.split is not None]
    return Generated(source, gather, union, structural, accs, reds, key, dense_maps, sorted_order,
                     acc_dt.itemsize, min(exps) if exps else None,
                     any(a.split is not None for a in accs), direct_union, tuple(weight_keys),
                     dense_union)


def _dense_union_ok(node, acc: Accumulator) -> bool:
    """Whether the dense union (kernels/dense_union.cuh: ⊕ of ⊗ over every column, a column
    stored in neither row evaluated as f(0, 0)) gives what gather's two passes give for
    this step: an unweighted two-pass union with an idempotent ⊕, whose ⊗ at (0, 0) as
    written (the apply chains folded in, IEEE: 0/0 is NaN) is the value the two passes
    add for such a column anyway: the absorbed corner, which the epilogue ⊕s in, or the ⊕
    identity. Then seeing a column twice, once, or a neither-stored column any number of
    times leaves the result unchanged."""
    from ...algebra.evaluate import constant_value
    if not (isinstance(node, ir.TwoPassUnion) and node.add.idempotent and node.weight is None
            and not getattr(node, "structural", False)):
        return False
    with sp.evaluate(False):
        zero = acc.mul.xreplace({X: sp.Integer(0), Y: sp.Integer(0)})
    try:
        v = constant_value(zero)
    except Exception:  # a formula the evaluator cannot take at (0, 0): not offered
        return False
    if v != v:
        return False
    return v == (acc.corner if acc.corner is not None else acc.identity)


def _sorted_order(accs) -> str | None:
    """"desc"/"asc" when the plan is a single two-pass union with ⊕ = max/min."""
    if len(accs) != 1 or not accs[0].union:
        return None
    f = accs[0].add.formula
    if f == sp.Max(X, Y):
        return "desc"
    if f == sp.Min(X, Y):
        return "asc"
    return None


def _map_struct(name: str, expr, pr: CudaPrinter) -> str:
    """A unary map from stored values (T, gb_real) to accumulator values (A, gb_acc)."""
    return f"""
struct {name} {{
  typedef gb_real T;
  typedef gb_acc A;
  __device__ static A map(T xs) {{ const A x = (A)xs; return {scalar(expr, pr)}; }}
}};
"""


def _eval_const(e) -> float:
    from ...algebra.evaluate import constant_value
    return constant_value(sp.simplify(e))


def _comb(add: Op, a: str, b: str, pr: CudaPrinter) -> str:
    return scalar(add.formula, pr, {"x": a, "y": b})


def _rspec(name: str, red: Reduction, pr: CudaPrinter) -> str:
    T = pr.T
    chain = scalar(chain_formula(red.chain, X), pr)
    comb = _comb(red.add, "x", "y", pr)
    ident = pr.literal(red.identity)
    fill = pr.literal(red.fill)
    if red.fill == red.identity:
        finish = "acc"
    elif _monoid_kind_op(red) == "plus":
        finish = f"(missing > 0 ? acc + ({T})missing * {fill} : acc)"
    elif _monoid_kind_op(red) == "times":
        finish = f"(missing > 0 ? acc * {'powf' if pr.single else 'pow'}({fill}, ({T})missing) : acc)"
    elif red.idempotent:
        finish = f"(missing > 0 ? combine(acc, {fill}) : acc)"
    else:
        raise BackendError(f"the CUDA backend cannot reduce with {red.add.name} over a nonzero fill")
    return f"""
struct {name} {{
  typedef gb_real T;
  typedef {T} A;
  __device__ static A identity() {{ return {ident}; }}
  __device__ static A map(T xs) {{ const A x = (A)xs; return {chain}; }}
  __device__ static A combine(A x, A y) {{ return {comb}; }}
  __device__ static A finish(A acc, long long missing) {{ return {finish}; }}
}};
"""


def _atomic(add: Op, k: int, addr: str, value: str) -> str:
    """The atomic ⊕ of ``value`` into ``addr``: atomicAdd for plus, integer atomics for max
    and min (gb_atomic_max / gb_atomic_min), else a compare-and-swap loop on Comb{k}."""
    if add.formula == X + Y:
        return f"atomicAdd({addr}, {value});"
    for f, name in ((sp.Max(X, Y), "gb_atomic_max"), (sp.Min(X, Y), "gb_atomic_min")):
        if add.formula == f:
            return f"{name}({addr}, {value});"
    return f"gb_atomic_combine<Comb{k}>({addr}, {value});"


def _monoid_kind_op(red: Reduction) -> str:
    f = red.add.formula
    if f == X + Y:
        return "plus"
    if f == X * Y:
        return "times"
    return "other"


def _mul(a, pr: CudaPrinter, xs: str, ys: str) -> str:
    """⊗ of one pair as a C expression over x, y (accumulator type; xs, ys: the stored
    float values). With a float split, f runs in float (the backend has checked that
    every input lies in the range its rounding bound covers), or in its stable kernel,
    and f + h is summed in the accumulator type; h too is evaluated in float where it
    is exact there."""
    if _sw.MUL_IN_STORAGE and not pr.single:
        return f"((A)({scalar(a.mul, CudaPrinter(np.float32), {'x': xs, 'y': ys})}))"
    sp_ = a.split
    if sp_ is not None and sp_.kernel is not None:  # on the stored float values
        x, y = (ys, xs) if sp_.swapped else (xs, ys)
        return f"({sp_.kernel}({x}, {y}) + ({scalar(sp_.h, pr)}))"
    if sp_ is not None:
        single = CudaPrinter(np.float32)
        hb = float_bound(sp_.h)
        # h too in float where it is exact there (canberra's −[x ≠ 0] − [y ≠ 0]); the sum
        # f + h is in the accumulator type either way
        h_text = (f"(A)({scalar(sp_.h, single, {'x': xs, 'y': ys})})" if hb is not None and hb.k == 0
                  else f"({scalar(sp_.h, pr)})")
        return f"((A)({scalar(sp_.f, single, {'x': xs, 'y': ys})}) + {h_text})"
    return "(" + scalar(a.mul, pr) + ")"


def _spec(name: str, accs, reds, plan: Plan, pr: CudaPrinter, structural: bool,
          mul_pr: CudaPrinter, direct_union: bool = False) -> str:
    T = pr.T
    nacc = len(accs)
    lines = [f"struct {name} {{", "  typedef gb_real T;  // stored values", f"  typedef {T} A;  // accumulators, formulas, epilogue",
             f"  static constexpr int NACC = {nacc};",
             f"  static constexpr bool STRUCTURAL = {'true' if structural else 'false'};",
             f"  static constexpr bool SKIP_SHARED = {'true' if direct_union else 'false'};",
             f"  static constexpr int NW = {len({a.weight for a in accs if a.weight is not None})};"
             "  // rows of the weight matrix wts (NW × K): κ(w) of the weighted steps"]
    lines.append("  __device__ static void init(A* acc) {")
    for s, a in enumerate(accs):
        lines.append(f"    acc[{s}] = {pr.literal(a.identity)};")
    lines.append("  }")
    for swap in (False, True):
        fn = "step_swapped" if swap else "step"
        lines.append(f"  // {'pass 2: dense = right operand, streamed = left' if swap else 'dense = left operand, streamed = right'}")
        # col: the column of the pair (k-chunk offset included); wts: the weight matrix
        lines.append(f"  __device__ static void {fn}(A* acc, T d, T s, const A* __restrict__ wts, "
                     "long long K, long long col) {")
        lines.append(f"    const A x = (A){'s' if swap else 'd'};")
        lines.append(f"    const A y = (A){'d' if swap else 's'};")
        for k, a in enumerate(accs):
            if swap and not a.union:
                continue
            mul = _mul(a, mul_pr, "s" if swap else "d", "d" if swap else "s")
            if a.weight is not None:  # κ(w_col)·f₁(x, y) (compiler/colfactor.py)
                mul = f"({mul} * wts[{a.weight} * K + col])"
            lines.append(f"    acc[{k}] = {_comb(a.add, f'acc[{k}]', mul, pr)};")
        lines.append("    (void)x; (void)y; (void)wts; (void)K; (void)col;")
        lines.append("  }")
    for k, a in enumerate(accs):
        lines.append(f"  struct Comb{k} {{ __device__ static A op(A x, A y) {{ return {_comb(a.add, 'x', 'y', pr)}; }} }};")
    lines.append("  // scatter: atomically ⊕ f(x, y) into accumulator column j of each plane")
    lines.append("  __device__ static void scatter_step(A* acc, long long J, long long j, T xs, T ys) {")
    lines.append("    const A x = (A)xs;")
    lines.append("    const A y = (A)ys;")
    for k, a in enumerate(accs):
        if a.union:
            continue
        lines.append("    " + _atomic(a.add, k, f"&acc[{k} * J + j]", _mul(a, mul_pr, "xs", "ys")))
    lines.append("  }")
    if _sorted_order(accs):
        a = accs[0]
        lines.append(f"  __device__ static A union_identity() {{ return {pr.literal(a.identity)}; }}")
        lines.append(f"  __device__ static A union_combine(A x, A y) {{ return {_comb(a.add, 'x', 'y', pr)}; }}")
        lines.append(f"  __device__ static A union_L(T xs) {{ const A x = (A)xs; return {scalar(a.mul.xreplace({Y: sp.Integer(0)}), pr)}; }}")
        lines.append(f"  __device__ static A union_R(T ys) {{ const A y = (A)ys; return {scalar(a.mul.xreplace({X: sp.Integer(0)}), pr)}; }}")
        lines.append("  __device__ static void union_scatter(A* acc, long long j, T xs, T ys) {")
        lines.append("    const A x = (A)xs;")
        lines.append("    const A y = (A)ys;")
        lines.append("    " + _atomic(a.add, 0, "&acc[j]", _mul(a, mul_pr, "xs", "ys")))
        lines.append("  }")
    lines.append("  __device__ static void combine(A* acc, const A* other) {")
    for k, a in enumerate(accs):
        lines.append(f"    acc[{k}] = {_comb(a.add, f'acc[{k}]', f'other[{k}]', pr)};")
    lines.append("  }")
    # Epilogue: step results -> final value.
    lines.append("  __device__ static A epilogue(A* acc, long long i, long long j, long long n_left,"
                 " long long n_right, const A* colred, const A* rowred, long long K) {")
    for k, a in enumerate(accs):
        if a.corner is not None:
            lines.append(f"    acc[{k}] = {_comb(a.add, f'acc[{k}]', pr.literal(a.corner), pr)};")
    refs = {}
    for k, a in enumerate(accs):
        refs[a.step.name] = f"acc[{k}]"
    cols = [r for r in reds if r.kind == "col"]
    rows = [r for r in reds if r.kind == "row"]
    for c, r in enumerate(cols):
        refs[r.step.name] = f"colred[{c} * n_left + i]"
    for c, r in enumerate(rows):
        refs[r.step.name] = f"rowred[{c} * n_right + j]"
    lines.append(f"    return {epilogue_expr(plan.epilogue, refs, pr)};")
    lines.append("  }")
    lines.append("};")
    return "\n".join(lines) + "\n"


_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def epilogue_expr(node: ir.Node, refs: dict, pr: CudaPrinter) -> str:
    """The plan's epilogue as one C expression over the step results."""
    T = pr.T
    f = "f" if pr.single else ""
    if isinstance(node, ir.Ref):
        return refs[node.name]
    if isinstance(node, ir.Const):
        return pr.literal(node.value)
    if isinstance(node, ir.NCols):
        return f"(({T})K)"
    if not isinstance(node, ir.Pointwise):
        raise BackendError(f"unexpected node in an epilogue: {type(node).__name__}")
    a = [epilogue_expr(x, refs, pr) for x in node.args]
    fn = node.fn
    if fn in _INFIX:
        return f"({a[0]} {_INFIX[fn]} {a[1]})"
    if fn in _CMP:
        return f"(({T})({a[0]} {_CMP[fn]} {a[1]}))"
    table = {
        "neg": f"(-{a[0]})",
        "sqrt": f"sqrt{f}({a[0]})" if len(a) == 1 else None,
        "abs": f"fabs{f}({a[0]})" if len(a) == 1 else None,
        "log": f"log{f}({a[0]})" if len(a) == 1 else None,
        "exp": f"exp{f}({a[0]})" if len(a) == 1 else None,
        "asin": f"asin{f}({a[0]})" if len(a) == 1 else None,
        "pow": f"pow{f}({a[0]}, {a[1]})" if len(a) == 2 else None,
        "maximum": f"gb_max<{T}>({a[0]}, {a[1]})" if len(a) == 2 else None,
        "minimum": f"gb_min<{T}>({a[0]}, {a[1]})" if len(a) == 2 else None,
        "where": f"(({a[0]}) != 0 ? ({a[1]}) : ({a[2]}))" if len(a) == 3 else None,
    }
    out = table.get(fn)
    if out is None:
        raise BackendError(f"the CUDA code generator has no rule for {fn}()")
    return out


def kernel_names(gen: Generated, rows: int = 4, itype: str = "int",
                 groups: tuple[int, ...] = (8, 32)) -> tuple[str, ...]:
    """Template instantiations of this plan's kernels (for name_expressions / nvcc)."""
    names = tuple(f"gb_row_reduce<RSpec{r}, {itype}>" for r in range(len(gen.reductions)))
    if gen.gather:
        modes = (1, 2) if gen.union else (0,)
        names += tuple(f"gb_gather<Spec, {rows}, {m}, {g}, {itype}>" for m in modes for g in groups)
        names += (f"gb_chunk_ptr<{itype}>", "gb_mirror_lower<Spec>")
        if "scatter" in gen.strategies:
            names += (f"gb_scatter<Spec, {itype}, 512>", f"gb_scatter<Spec, {itype}, 1024>")
        if "dense" in gen.strategies:
            for terms in gen.dense_maps:
                for (lname, _), (rname, _) in terms:
                    names += (f"gb_densify<{lname}, {itype}>", f"gb_densify<{rname}, {itype}>")
            names += ("gb_epilogue<Spec>",)
        if "sorted" in gen.strategies:
            names += (f"gb_union_sorted<Spec, {itype}>", "gb_map_values<UKeyL>", "gb_map_values<UKeyR>")
        if "dense_union" in gen.strategies:
            names += (f"gb_densify<gb_raw_map<Spec>, {itype}>", "gb_dense_union_finish<Spec>")
            names += tuple(f"gb_dense_union<Spec, {tm}, {tn}, {bk}>" for tm, tn, bk in _sw.DENSE_UNION_TILES)
    return names


def standalone_source(gen: Generated, rows: int = 4, itype: str = "int") -> str:
    """The source plus explicit instantiations, so ``nvcc --ptx`` compiles every kernel."""
    keep = ", ".join(f"(const void*)&{n}" for n in kernel_names(gen, rows, itype)) or "0"
    return gen.source + f"\nconst void* gb_instantiate[] = {{ {keep} }};\n"


class _Codegen(type(sp)):
    """This module, its switches forwarded to :mod:`.genstore` (where the runtime reads them
    without sympy): ``codegen.DIRECT_UNION = False`` (or monkeypatch) sets them there, and
    deleting one (monkeypatch's undo: the module's own dict never holds them) restores its
    default."""

    def __getattr__(self, name):
        if name in _sw.SWITCHES:
            return getattr(_sw, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in _sw.SWITCHES:
            setattr(_sw, name, value)
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name):  # pytest's monkeypatch undoes a switch by deleting it
        if name in _sw.SWITCHES:
            setattr(_sw, name, _sw.DEFAULTS[name])
        else:
            super().__delattr__(name)


import sys as _sys  # noqa: E402
_sys.modules[__name__].__class__ = _Codegen
