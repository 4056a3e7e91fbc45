"""Numeric checks that need a run of the CPU reference: the per-row invariances a metric
has (conditioning, :func:`invariance`) and the check of a proven d(a, a)
(:func:`check_self_value`, registered with :mod:`gbdist.exact`, which is symbolic and
imports no runtime). Both are cached by the plan's structural key, in the process and
on disk (gbdist/cache.py)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compiler import cache, exact
from ..backends.cpu import CPUBackend
from ..errors import GbdistError
from ..compiler.exact import FORMAT, _per_plan, operand_pair
from .bind import bind_operands
from .columns import samples
from .memory import budget_of
from .tiles import evaluate


def run_reference(plan, inputs: dict, condition: bool = True) -> np.ndarray:
    """The plan by the CPU reference on host inputs, without the d(a, a) pass (the
    numeric checks here)."""
    be = CPUBackend()
    inputs = {**samples(plan, inputs), **inputs}  # column operands (runtime/columns.py)
    b = bind_operands(plan, inputs, drop_zeros=True,
                      conditioning=conditioned_names(plan) if condition else None)
    return evaluate(be, be.prepare(b, exact=False), b, budget_of(be, None, result=True))


_reference = run_reference


def check_self_value(plan, value: float) -> tuple[bool, str]:
    """Run the plan (CPU reference, no exact post-pass) on random rows against themselves:
    the plan as analysed (a decided plan's centre belongs to other data, of other widths,
    and the answer is cached by the plan's structure for every later call)."""
    import scipy.sparse as sps
    from ..compiler.accuracy import undecided
    plan = undecided(plan)
    nonneg = nonnegative_data(plan)
    rng = np.random.default_rng(12345)
    from .columns import required_width
    # more columns than the accuracy rule sums as written (compiler.accuracy.FEW_COLUMNS):
    # the check runs the plan as analysed, rewrites included
    dense = rng.uniform(0.25, 2.0, size=(12, required_width(plan, 9)))
    if not nonneg:
        dense *= rng.choice([-1.0, 1.0], size=dense.shape)
    dense[rng.random(dense.shape) < 0.3] = 0.0
    Xc = sps.csr_matrix(dense)
    left, right = operand_pair(plan)
    try:
        out = _reference(plan, {left[0]: Xc, right[0]: Xc})
    except Exception as e:  # noqa: BLE001 — a failed check withholds the claim
        why = e.message if isinstance(e, GbdistError) else type(e).__name__
        return False, f"the check could not run the metric on random rows ({why})"
    diag = np.diagonal(out)
    fin = np.isfinite(diag)
    if not fin.any():
        return False, "the check found no finite d(a, a) on random rows"
    err = float(np.max(np.abs(diag[fin] - value)))
    if err > 1e-6 * (1.0 + abs(value)):
        return False, f"on random rows the computed d(a, a) differs from it by {err:.2e}"
    return True, f"checked numerically on {int(fin.sum())} random rows (max deviation {err:.1e})"


exact.register_numeric_check(check_self_value)


def nonnegative_data(plan) -> bool:
    """Whether the numeric checks must draw nonnegative rows: an op of the plan (a product's
    ⊗ or an apply() on an operand) is defined for nonnegative inputs only."""
    from ..compiler import ir
    ops = [d.analysis.semiring.mul for d in plan.products]
    ops += [n.op for n in ir.walk(plan.expr) if isinstance(n, ir.Apply)]
    return any(getattr(op, "domain", None) == "nonnegative" for op in ops)



@dataclass(frozen=True)
class Invariance:
    """Per-row transformations of both operands that leave the metric's value unchanged.

    ``scale``: d(s·a, b) = d(a, t·b) = d(a, b) for s, t > 0 (cosine, correlation, the
    nonzero-pattern metrics). ``shift``: d(a + c·1, b) = d(a, b + c·1) = d(a, b) for any
    c, over all k columns (correlation). ``translate``: d(a + c, b + c) = d(a, b) for
    any column vector c added to both rows (every f(x − y): euclidean, minkowski,
    manhattan, chebyshev; the accuracy rule may centre the columns,
    :mod:`gbdist.runtime.accuracy`). Checked numerically on random rows (seeded,
    scales from 2^-40 to 2^40, shifts and translations of both signs) with the CPU
    reference. ``accuracy``: the plan's accuracy rule in words
    (:func:`gbdist.compiler.accuracy.rule_text`), for explain.
    """

    scale: bool
    shift: bool
    detail: str
    translate: bool = False
    accuracy: str = ""

    def __str__(self) -> str:
        what = [w for w, v in (("positive row scaling", self.scale), ("row shifts", self.shift),
                               ("a common translation of the columns", self.translate)) if v]
        return ("invariant under " + " and ".join(what) if what else "no row invariance") + \
            f" [{self.detail}]" + (f"; accuracy rule: {self.accuracy}" if self.accuracy else "")


def _raw_distances(plan, A, B) -> np.ndarray:
    """The plan on dense float64 rows by the CPU reference: no conditioning, no post-pass,
    every product summed as written (:func:`gbdist.compiler.accuracy.direct_plan`: an
    invariance is a property of the metric, which a rewrite's rounding must not hide)."""
    import scipy.sparse as sps
    from ..compiler.accuracy import direct_plan
    left, right = operand_pair(plan)
    return _reference(direct_plan(plan), {left[0]: sps.csr_matrix(A), right[0]: sps.csr_matrix(B)},
                      condition=False)


def _same(d0: np.ndarray, d1: np.ndarray) -> bool:
    """Equal NaN patterns and finite values within 1e-9 of the largest finite |d0| (a
    scale of the values themselves: no absolute floor, so results of size 1e-12 that
    double under scaling are told apart)."""
    if (np.isnan(d0) != np.isnan(d1)).any():
        return False
    ok = ~np.isnan(d0)
    fin = np.isfinite(d0)
    scale = float(np.max(np.abs(d0[fin]))) if fin.any() else 0.0
    return bool(np.all(np.abs(d1[fin] - d0[fin]) <= 1e-9 * scale)) and \
        bool(np.array_equal(d0[~fin & ok], d1[~fin & ok]))


def _invariance_uncached(plan) -> Invariance:
    if plan.output_kind != "matrix" or operand_pair(plan) is None:
        return Invariance(False, False, "not a pairwise result over two row operands")
    (ln, lf), (rn, rf) = operand_pair(plan)
    if lf or rf:
        return Invariance(False, False, "an operand is read by columns")
    nonneg = nonnegative_data(plan)
    rng = np.random.default_rng(777)
    from .columns import required_width
    k = required_width(plan, 9)
    A = rng.uniform(0.5, 2.0, size=(7, k))
    B = rng.uniform(0.5, 2.0, size=(6, k))
    if not nonneg:
        A *= rng.choice([-1.0, 1.0], size=A.shape)
        B *= rng.choice([-1.0, 1.0], size=B.shape)
    # unstored entries, so the fills (f(x, 0), f(0, y), the corner) take part; one row
    # of A stores every column (what a shift acts on)
    A[1:][rng.random((6, k)) < 0.4] = 0.0
    B[rng.random((6, k)) < 0.4] = 0.0
    B[0] = A[0]            # equal rows and equal entries: what value comparisons see
    B[1, :4] = A[1, :4]
    A[2, 5 % k] = B[2, 5 % k]
    try:
        d0 = _raw_distances(plan, A, B)
    except Exception:  # noqa: BLE001 — no claim without a reference value
        return Invariance(False, False, "the reference run failed")
    finite = d0[np.isfinite(d0)]
    # a (nearly) constant result shows nothing: the values must spread over at least a
    # millionth of their size, a thousand times the tolerance of the comparison below
    if np.unique(finite).size < 3 or \
            np.ptp(finite) <= 1e-6 * float(np.max(np.abs(finite))):
        return Invariance(False, False, "too little variation in the values to compare")
    s = 2.0 ** rng.choice([-40, -7, 3, 40], size=(7, 1)) * rng.uniform(0.6, 1.6, size=(7, 1))
    t = 2.0 ** rng.choice([-40, -7, 3, 40], size=(6, 1)) * rng.uniform(0.6, 1.6, size=(6, 1))
    c = rng.uniform(0.5, 3.0, size=(1, k)) * (1.0 if nonneg else rng.choice([-1.0, 1.0], size=(1, k)))
    moved = _try(lambda: _raw_distances(plan, A + c, B + c))
    checks = {"translate": moved is not None and moved.shape == d0.shape and _same(d0, moved)}
    for name, (A1, B1) in {"scale": ((s * A, B), (A, t * B)),
                           "shift": ((A - A[np.arange(7), np.arange(7) % k][:, None], B),
                                     (A, B - B[np.arange(6), (np.arange(6) + 3) % k][:, None]))
                           }.items():
        try:
            checks[name] = all(_same(d0, _raw_distances(plan, a1, b1)) for a1, b1 in (A1, B1))
        except Exception:  # noqa: BLE001 — e.g. a domain error after a shift: not invariant
            checks[name] = False
    return Invariance(checks["scale"], checks["shift"],
                      "checked numerically: seeded random sparse rows, CPU reference, 1e-9 relative",
                      checks["translate"])


def _try(fn):
    """``fn()``, or None when it raises (a domain error after a translation: no claim)."""
    try:
        return fn()
    except Exception:  # noqa: BLE001
        return None


_INV_CACHE: dict = {}


def invariance(plan) -> Invariance:
    """The per-row invariances of ``plan`` (cached by the plan's structural key, in the
    process and on disk), with the plan's accuracy rule in words."""
    from dataclasses import replace
    from ..compiler.accuracy import rule_text
    inv = cache.remembered(
        _INV_CACHE, "exact.invariance", FORMAT, (plan.expr.key, tuple(sorted(plan.roles.items())),
                                                 cache.code_digest("algebra", "compiler")),
        lambda r: Invariance(r["scale"] is True, r["shift"] is True, str(r["detail"]),
                             r.get("translate") is True),
        lambda: _invariance_uncached(plan),
        lambda inv: {"scale": inv.scale, "shift": inv.shift, "detail": inv.detail,
                     "translate": inv.translate})
    return replace(inv, accuracy=rule_text(plan))


@_per_plan
def conditioned_names(plan) -> tuple[Invariance, tuple[str, ...]]:
    """The invariance of ``plan`` and the operand names whose rows may be conditioned."""
    inv = invariance(plan)
    pair = operand_pair(plan)
    if pair is None or not (inv.scale or inv.shift):
        return inv, ()
    return inv, tuple(dict.fromkeys((pair[0][0], pair[1][0])))
