"""Exact answers the algebra can prove: d(a, a) for identical rows.

A metric's value for two identical rows is computed, like every other pair,
as sums that cancel (``‖a‖² + ‖a‖² − 2⟨a, a⟩``), so rounding leaves ~1e-8·‖a‖
where the answer is exactly 0. This module proves, from the metric's IR, what
``d(a, a)`` is, and the runtimes write that value wherever a row of the left
operand equals a row of the right one (the diagonal of a self-join included).

**The proof** (:func:`self_value`) substitutes B := A in the source expression:

* a product ``mxm(A, B.T, ⊕/⊗)`` over identical rows becomes a row reduction
  ``⊕_k f(chainA(x_k), chainB(x_k))``: it is summarised by its element formula
  ``e(x) = f(…, …)``, its monoid and where it sums (all k columns, or only the
  stored ones for a structural product);
* a row reduction ``reduce(apply(…, A), ⊕)`` is summarised the same way;
* summaries with the same monoid and scope whose elements sympy proves equal
  are one symbol (so ``⟨a, a⟩`` and ``‖a‖²`` are the same ``S``); an element
  that is a constant c becomes ``k·c`` (⊕ = plus), ``c`` (idempotent ⊕);
* the epilogue over these symbols is simplified by sympy. When it is a
  constant c (or a ``Piecewise`` whose every defined branch is c — branches
  that are NaN or infinite are where the formula is undefined), then
  ``d(a, a) = c`` wherever the computed value is finite.

The proof is then checked numerically: the plan is run by the CPU reference
on random rows of the ops' domain and every finite diagonal entry must be
within rounding of c. A claim that fails is not used.

This module is symbolic (compiler level): it imports no runtime and no backend.
The numeric check is registered by the runtime (:func:`register_numeric_check`);
detecting identical rows and writing the value is array work, in
:mod:`gbdist.backends.rows`; the per-row invariances (conditioning) are checked
numerically in :mod:`gbdist.runtime.invariance`. Also here: ``apply(normalize, ·)``
(:class:`RowScale`) and which operands a plan reads normalised.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass

import numpy as np

from . import ir
from ..algebra.lazy import sympy as sp
from ..algebra.ops import RowScale
from .typecheck import row_operand

FORMAT = 6  # of the cached records below; bump when the proofs change
MAX_OPS = 300  # larger substituted expressions are not given to sympy's simplify
PROOF_BUDGET_S = 2.0  # seconds of sympy for one d(a, a) proof (it is optional: no claim after)


@functools.cache
def _k():
    """k, the number of columns, as a symbol."""
    return sp.Symbol("k", positive=True, integer=True)


@functools.cache
def _nnz():
    """The number of stored entries of the row, as a symbol."""
    return sp.Symbol("nnz", nonnegative=True, integer=True)


@dataclass(frozen=True)
class SelfValue:
    """What the algebra proves about d(a, a)."""

    value: float | None  # the proven constant, or None
    statement: str  # the substituted epilogue and its simplification, for explain
    checked: str  # how the claim was checked numerically ("" when there is no claim)

    def __str__(self) -> str:
        if self.value is None:
            return f"d(a, a) is not a constant: {self.statement}"
        return f"d(a, a) = {self.value:g} wherever it is finite: {self.statement} [{self.checked}]"


# ---------------------------------------------------------------------------
# the proof
# ---------------------------------------------------------------------------


def _chain(chain, var):
    from ..algebra.formulas import X
    e = var
    for op in chain:
        e = op.formula.xreplace({X: e})
    return e


def _const(v: float) -> sp.Expr:
    if np.isnan(v):
        return sp.nan
    if np.isinf(v):
        return sp.oo if v > 0 else -sp.oo
    return sp.Rational(float(v))


def _bool01(cond) -> sp.Expr:
    return sp.Piecewise((sp.Integer(1), cond), (sp.Integer(0), True))


@functools.cache
def _pointwise() -> dict:
    """The epilogue's pointwise functions over sympy expressions."""
    return {
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "neg": lambda a: -a,
        "sqrt": sp.sqrt, "abs": sp.Abs, "log": sp.log, "exp": sp.exp, "asin": sp.asin,
        "maximum": lambda a, b: sp.Max(a, b), "minimum": lambda a, b: sp.Min(a, b),
        "where": lambda c, a, b: sp.Piecewise((a, sp.Ne(c, 0)), (b, True)),
        "eq": lambda a, b: _bool01(sp.Eq(a, b)), "ne": lambda a, b: _bool01(sp.Ne(a, b)),
        "lt": lambda a, b: _bool01(a < b), "le": lambda a, b: _bool01(a <= b),
        "gt": lambda a, b: _bool01(a > b), "ge": lambda a, b: _bool01(a >= b),
    }


class _Symbols:
    """Row summaries ⊕_k e(x_k) of the one row a, identified up to sympy equality."""

    def __init__(self):
        self.entries: list[tuple[sp.Expr, str, str, sp.Symbol]] = []  # (e, monoid, scope, symbol)

    def get(self, e: sp.Expr, monoid, scope: str, nonneg_x: bool) -> sp.Expr:
        from ..algebra.formulas import X
        x = sp.Symbol("x", nonnegative=True) if nonneg_x else sp.Symbol("x", real=True)
        e = _bounded_simplify(e.xreplace({X: x}))
        kind = "plus" if monoid.invertible else "idempotent" if monoid.idempotent else "other"
        if scope == "stored" and _bounded_simplify(e.xreplace({x: 0}) - monoid.identity) == 0:
            scope = "all"  # unstored entries add the identity: the same sum
        if not e.free_symbols:
            count = _k() if scope == "all" else _nnz()
            if kind == "plus":
                return count * e
            if kind == "idempotent":
                return e
        for e2, m2, s2, sym in self.entries:
            if m2 == monoid.name and s2 == scope and e2.free_symbols == e.free_symbols:
                if e == e2 or _bounded_simplify(e - e2) == 0:
                    return sym
        nonneg = kind == "plus" and bool(e.is_nonnegative)
        sym = sp.Symbol(f"r{len(self.entries) + 1}", nonnegative=True) if nonneg else \
            sp.Symbol(f"r{len(self.entries) + 1}", real=True)
        self.entries.append((e, monoid.name, scope, sym))
        return sym

    def legend(self, used) -> str:
        """What each row summary in ``used`` stands for, as mathematics: ``r1 = Σ_k a_k²``
        (over the k columns) or ``r1 = Σ a_k² over the row's stored entries``."""
        from ..algebra.mathtext import text
        a_k = sp.Symbol("a_k")
        out = []
        for e, monoid, scope, sym in self.entries:
            if sym not in used:
                continue
            big = {"plus": "Σ_k", "times": "Π_k"}.get(monoid, f"{monoid}_k")
            body = text(e.xreplace({s: a_k for s in e.free_symbols if s.name == "x"}))
            out.append(f"{sym} = {big} {body}" + (" over a's stored entries" if scope == "stored"
                                                  else ""))
        return "; ".join(out)


def _bounded_simplify(e: sp.Expr) -> sp.Expr:
    """``simplify(piecewise_fold(e))`` within the symbolic budget (size and time), or
    ``e`` itself: a formula too large for sympy gets no simplification (and so,
    usually, no claim), never an unbounded wait."""
    from ..algebra.formulas import formula_size
    from ..algebra.proofs import budget, small_enough
    if formula_size(e, MAX_OPS) > MAX_OPS or not small_enough(e):
        return e
    try:
        with budget(PROOF_BUDGET_S):
            return sp.simplify(sp.piecewise_fold(e))
    except Exception:  # noqa: BLE001 - BudgetExceeded or sympy failing: no simplification
        return e


def _structural(plan, node) -> bool:
    for d in plan.products:
        if d.node.key == node.key:
            return bool(d.analysis.structural)
    return False


def _substituted(plan, syms=None) -> sp.Expr | None:
    """The source expression with both operands set to the same row, over row summaries
    (``syms``: the summaries, named r1, r2, …)."""
    from ..algebra.formulas import X, Y
    syms = _Symbols() if syms is None else syms
    values: dict = {}
    for node in ir.walk(plan.expr):
        if isinstance(node, (ir.Matrix, ir.Vector, ir.Transpose, ir.Apply)):
            continue
        if isinstance(node, ir.MxM):
            _, _, cl = row_operand(node.left)
            _, _, cr = row_operand(node.right, transpose=True)
            sr = node.semiring
            nonneg = any(op.domain == "nonnegative" for op in cl + cr + (sr.mul,))
            e = sr.mul.formula.subs({X: _chain(cl, X), Y: _chain(cr, X)}, simultaneous=True)
            scope = "stored" if _structural(plan, node) else "all"
            values[node.key] = syms.get(e, sr.add, scope, nonneg)
        elif isinstance(node, ir.RowReduce):
            _, _, chain = row_operand(node.arg)
            nonneg = any(op.domain == "nonnegative" for op in chain)
            values[node.key] = syms.get(_chain(chain, X), node.monoid, "all", nonneg)
        elif isinstance(node, ir.NCols):
            values[node.key] = _k()
        elif isinstance(node, ir.Const):
            values[node.key] = _const(node.value)
        elif isinstance(node, ir.Pointwise):
            fn = _pointwise().get(node.fn)
            if fn is None:
                return None
            values[node.key] = fn(*(values[a.key] for a in node.args))
        else:  # MxV and anything else: no claim
            return None
    return values.get(plan.expr.key)


def _undefined(e: sp.Expr) -> bool:
    return e.has(sp.nan, sp.zoo, sp.oo, -sp.oo)


def _constant_of(e: sp.Expr) -> float | None:
    """c when ``e`` is the constant c wherever it is defined, else None."""
    if e.is_number:
        return None if _undefined(e) else float(e)
    if isinstance(e, sp.Piecewise):
        # a branch whose value or condition holds NaN or ∞ is where the formula is
        # undefined (a division by zero, 0/0): it never yields a finite value exactly
        vals = {v for v, c in e.args if not _undefined(v) and not _undefined(sp.sympify(c))}
        if len(vals) == 1:
            v = vals.pop()
            if v.is_number:
                return float(v)
    return None


def _simplified(e: sp.Expr):
    """Canonical forms of ``e``, cheapest first (sympy's simplify alone misses
    Max(u, 0) / u; folding Max/Min into Piecewise branches often decides it unaided)."""
    from ..algebra.proofs import budget
    attempts = (lambda z: z,
                lambda z: sp.piecewise_fold(z.rewrite(sp.Piecewise)),
                lambda z: sp.simplify(sp.piecewise_fold(z)),
                lambda z: sp.simplify(sp.piecewise_fold(z.rewrite(sp.Piecewise))))
    if sp.count_ops(e) > MAX_OPS:  # bounded time: a large expression gets no claim
        attempts = attempts[:2]
    for attempt in attempts:
        try:
            with budget(PROOF_BUDGET_S):
                out = attempt(e)
        except Exception:  # noqa: BLE001 — sympy failing to decide (or its budget) means no claim
            continue
        yield out


def _self_value_uncached(plan) -> SelfValue:
    from ..algebra.proofs import analysis_budget
    if plan.output_kind != "matrix" or operand_pair(plan) is None:
        return SelfValue(None, "not a pairwise (matrix) result over two row operands", "")
    syms = _Symbols()
    with analysis_budget(PROOF_BUDGET_S):  # the symbolic part, bounded in time as a whole
        try:
            e = _substituted(plan, syms)
        except Exception:  # noqa: BLE001 — a part the proof cannot read means no claim
            e = None
        if e is None:
            return SelfValue(None, "the expression has a part the proof does not cover", "")
        value = None
        shown = e
        for s in _simplified(e):
            shown = s
            value = _constant_of(s)
            if value is not None:
                break
    statement = _statement(e, shown, syms)
    if value is None:
        return SelfValue(None, statement, "")
    ok, how = _numeric_check(plan, value)
    if not ok:
        return SelfValue(None, f"{statement}; not claimed: {how}", "")
    return SelfValue(value, statement, how)


def _statement(e: sp.Expr, shown: sp.Expr, syms: _Symbols) -> str:
    """The proof in words: the expression with B := A, its simplification when that differs,
    and what each row summary r1, r2, … stands for."""
    from ..algebra.mathtext import text
    written, simple = text(e), text(shown)
    out = f"with B := A the expression is {written}"
    if simple != written:
        out += f" = {simple}"
    legend = syms.legend(e.free_symbols | shown.free_symbols)
    return out + (f", where {legend}" if legend else "")


_CACHE: dict = {}


def self_value(plan) -> SelfValue:
    """The proven value of d(a, a) for ``plan`` (cached by the plan's structural key, in
    the process and in the on-disk analysis cache, gbdist/cache.py)."""
    from . import cache
    return cache.remembered(
        _CACHE, "exact.self_value", FORMAT, (plan.expr.key, tuple(sorted(plan.roles.items())),
                                             cache.code_digest("algebra", "compiler")),
        lambda r: SelfValue(None if r["value"] is None else float(r["value"]), str(r["statement"]),
                            str(r["checked"])),
        lambda: _self_value_uncached(plan),
        lambda sv: {"value": sv.value, "statement": sv.statement, "checked": sv.checked})


_NUMERIC_CHECK: list = []  # the runtime's checker (a CPU run), registered at its import


def register_numeric_check(fn) -> None:
    """``fn(plan, value) -> (holds, how)`` checks a claimed d(a, a) numerically
    (:func:`gbdist.runtime.invariance.check_self_value`). Registered by the runtime, so
    that this module (compiler level) imports no runtime and no backend."""
    _NUMERIC_CHECK[:] = [fn]


def _numeric_check(plan, value: float) -> tuple[bool, str]:
    if not _NUMERIC_CHECK:  # no runtime loaded: no claim rather than an unchecked one
        return False, "no numeric check available (gbdist.runtime not imported)"
    return _NUMERIC_CHECK[0](plan, value)


def _per_plan(fn):
    """``fn(plan)`` remembered per plan object (plans are immutable; the plan is kept with
    its answer so that its id is not reused): read on every call of the runtime."""
    memo: dict = {}

    @functools.wraps(fn)
    def cached(plan):
        hit = memo.get(id(plan))
        if hit is not None and hit[0] is plan:
            return hit[1]
        value = fn(plan)
        if len(memo) >= 512:  # plans compiled per call (callables) must not pile up
            memo.clear()
        memo[id(plan)] = (plan, value)
        return value

    cached.cache_clear = memo.clear
    return cached


@_per_plan
def operand_pair(plan) -> tuple[tuple, tuple] | None:
    """((left name, flipped), (right name, flipped)): the one operand indexing the output
    rows and the one indexing its columns, or None when the plan has other shapes."""
    lefts, rights = set(), set()
    for step in plan.steps:
        for side, key in step.sides:
            (lefts if side == "left" else rights).add(key)
    if len(lefts) != 1 or len(rights) != 1:
        return None
    return next(iter(lefts)), next(iter(rights))



# ---------------------------------------------------------------------------
# row normalisation: apply(normalize, A)
# ---------------------------------------------------------------------------


@_per_plan
def normalised_names(plan) -> tuple[str, ...]:
    """Names of the operands that ``plan`` reads as ``apply(normalize, ·)``."""
    from ..errors import TypeCheckError
    uses: dict = {}
    for step in plan.steps:
        node = step.node
        operands = [node.arg] if isinstance(node, ir.RowReduce) else [node.left, node.right]
        for operand in operands:
            name, flipped, chain = row_operand(operand)
            scaled = bool(chain) and isinstance(chain[0], RowScale)
            if any(isinstance(op, RowScale) for op in chain[1:]) or (scaled and flipped):
                raise TypeCheckError("normalize must be the first op applied to a matrix's rows",
                                     got=ir.to_text(operand),
                                     hint="write apply(f, apply(normalize, A)), and normalise A "
                                          "rather than A.T")
            uses.setdefault(name, set()).add(scaled)
    mixed = sorted(n for n, u in uses.items() if len(u) > 1)
    if mixed:
        raise TypeCheckError("an operand is used both normalised and as given",
                             got=", ".join(mixed),
                             hint="use apply(normalize, A) everywhere A appears, or nowhere")
    return tuple(n for n, u in uses.items() if u == {True})
