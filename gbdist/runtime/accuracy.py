"""The accuracy rule at bind time: take a plan's rewrites only where the data keeps them
accurate (:mod:`gbdist.compiler.accuracy` states the bound).

For each rewritten product (a :class:`~gbdist.compiler.accuracy.Guard`) and each row of
its two operands, two sums over the row's stored entries, computed once per operand
(and per centre) and kept with a prepared operand:

* ``M(a)``: the magnitudes of the terms the rewrite adds (its rounding error is at
  most γ·(M(a_i) + M(b_j)));
* ``S(a)``: the product between the row and the point ρ of the way from it to the
  data's centre μ (the right operand's column means).

:func:`decide` keeps the plan when ``max γ·M/S ≤ TOLERANCE`` over the rows of both
operands; else centres both operands by μ (when the metric is invariant under a common
translation of the columns and both operands store at least half of their entries, so
that the dense centred form costs no storage) and checks again; else returns the
direct plan (every rewritten product summed as written). Cost: O(stored entries ×
(rank + 3)) evaluations of the guard's ops per operand, in NumPy, on the host (a
device operand's values are copied once for it, and the result kept with a prepared
operand); nothing at all for a plan without a rewrite that cancels.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

import numpy as np

from ..algebra.evaluate import apply_binary, apply_unary
from ..compiler import accuracy as rule
from ..compiler.typecheck import row_operand
from ..inputs import is_cupy

DENSE_ENOUGH = 0.5  # centring stores every entry: only operands storing at least half

_LOG = logging.getLogger("gbdist.accuracy")


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` chose, and why (for logs, tests and explain)."""

    plan: object  # the plan to run (the given one or its direct plan)
    centre: object  # the column vector both operands were shifted by, or None
    centred: dict  # {(name, flipped): the centred operand} when centred, else {}
    ratio: float  # max γ·M/S of the data as run (before centring when not centred)
    why: str


def _host(x):
    """A CSR's (values, indices, row ids) on the host, in float64."""
    data, indices, indptr = x.data, x.indices, x.indptr
    if is_cupy(data):
        data, indices, indptr = data.get(), indices.get(), indptr.get()
    rows = np.repeat(np.arange(x.shape[0]), np.diff(np.asarray(indptr)))
    return np.asarray(data, dtype=np.float64), np.asarray(indices), rows


def column_stats(x) -> np.ndarray:
    """(columns, μ, σ) over the columns ``x`` stores: their means and standard deviations
    over every row (unstored entries are 0), float64, on the host; σ in two passes (no
    cancellation of offset columns). Columns stored nowhere have μ = σ = 0 (nothing of
    size k is allocated: wide inputs). A NaN is a missing value (for the metrics that test
    isnan, gbdist.algebra.missing; the others refuse NaN): left out of its column's μ and
    σ, which are then over the rows where the column is present."""
    values, indices, _ = _host(x)
    cols, where, count = np.unique(indices, return_inverse=True, return_counts=True)
    nan = np.isnan(values)
    if nan.any():
        lost = np.bincount(where[nan], minlength=cols.size)
        values, where, count = values[~nan], where[~nan], count - lost
    else:
        lost = np.zeros(cols.size)
    m = np.maximum(x.shape[0] - lost, 1)
    mu = np.bincount(where, weights=values, minlength=cols.size) / m
    dev = np.bincount(where, weights=(values - mu[where]) ** 2, minlength=cols.size)
    var = (dev + (x.shape[0] - lost - count) * mu * mu) / m
    return np.stack([cols.astype(np.float64), mu, np.sqrt(np.maximum(var, 0.0))])


def _at(stats: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """μ and σ at the column ``indices`` (0 where the stats' operand stores nothing)."""
    cols = stats[0]
    pos = np.minimum(np.searchsorted(cols, indices), max(cols.size - 1, 0))
    hit = cols.size > 0
    found = (cols[pos] == indices) if hit else np.zeros(indices.shape, dtype=bool)
    mu = np.where(found, stats[1][pos], 0.0) if hit else np.zeros(indices.shape)
    sigma = np.where(found, stats[2][pos], 0.0) if hit else np.zeros(indices.shape)
    return mu, sigma


def _dense_centre(stats: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros(k)
    out[stats[0].astype(np.int64)] = stats[1]
    return out


def _chain(values: np.ndarray, chain) -> np.ndarray:
    for op in chain:
        values = apply_unary(op, values)
    return values


def _row_sums(rows: np.ndarray, values: np.ndarray, m: int) -> np.ndarray:
    values = np.where(np.isnan(values), np.inf, np.abs(values))
    return np.bincount(rows, weights=values, minlength=m)


def row_stats(guard, side: str, x, stats: np.ndarray) -> tuple:
    """(corr, Φ (rank × m), S) of the rows of ``x`` on ``side`` ("left"/"right") of
    ``guard``: Σ|L − C| (Σ|R − C| on the right; L(x) = f(x, fill)), Σ φ_r² (Σ ψ_r²) per
    r, and the resolution S = Σ |f(a, a − ρ·d)| (f(b − ρ·d, b) on the right), the step
    d = sign(a − μ)·max(|a − μ|, σ) per stored entry: ρ of the way to the data's centre,
    or of the column's spread for an entry near it."""
    values, indices, rows = _host(x)
    m = x.shape[0]
    mu, sigma = _at(stats, indices)
    node = guard.left if side == "left" else guard.right
    other = guard.right if side == "left" else guard.left
    own = _chain(values, row_operand(node)[2])
    with np.errstate(all="ignore"):
        if guard.correction:
            fill = np.full_like(own, rule.fill_of(other))
            edge = apply_binary(guard.f, own, fill) if side == "left" else \
                apply_binary(guard.f, fill, own)
            c = _row_sums(rows, edge - guard.corner, m)
        else:
            c = np.zeros(m)
        phis = []
        for phi, psi in guard.expansion or ():
            t = apply_unary(phi if side == "left" else psi, own)
            phis.append(_row_sums(rows, t * t, m))
        off = values - mu
        step = np.where(off < 0, -1.0, 1.0) * np.maximum(np.abs(off), sigma)
        near = _chain(values - rule.RESOLUTION * step, row_operand(other)[2])
        f = apply_binary(guard.f, own, near) if side == "left" else apply_binary(guard.f, near, own)
    s = np.bincount(rows, weights=np.nan_to_num(np.abs(f), nan=0.0, posinf=np.finfo(float).max),
                    minlength=m)
    return c, np.array(phis).reshape(len(phis), m), s


def ratio(guard, left_stats, right_stats, ncols: int) -> float:
    """max over the rows of both operands of γ·M(row)/S(row)."""
    (cl, pl, sl), (cr, pr, sr) = left_stats, right_stats
    ml = guard.weight * cl + 0.5 * ncols * abs(guard.corner)
    mr = guard.weight * cr + 0.5 * ncols * abs(guard.corner)
    for r in range(pl.shape[0]):
        top_l = float(pl[r].max()) if pl[r].size else 0.0
        top_r = float(pr[r].max()) if pr[r].size else 0.0
        if top_l > 0 and top_r > 0:
            c = np.sqrt(top_l / top_r)  # balances ½(Φ/c + cΨ): ≥ ‖φ(a)‖‖ψ(b)‖ for any c > 0
            ml = ml + 0.5 * pl[r] / c
            mr = mr + 0.5 * c * pr[r]
    worst = 0.0
    with np.errstate(all="ignore"):
        for mm, s in ((ml, sl), (mr, sr)):
            if mm.size:
                q = np.where(mm == 0, 0.0, mm / s)
                worst = max(worst, float(np.nanmax(np.where(np.isnan(q), np.inf, q))))
    return rule.gamma(ncols) * worst


def _digest(v: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(v, dtype=np.float64).tobytes(),
                           digest_size=12).hexdigest()


def _dense_enough(x) -> bool:
    m, k = x.shape
    return m * k > 0 and x.nnz >= DENSE_ENOUGH * m * k


def centred(x, centre: np.ndarray):
    """``x`` − centre on every column, as a CSR storing every entry (SciPy or cupyx,
    x's dtype)."""
    dense = x.toarray()
    if is_cupy(dense):
        import cupy
        import cupyx.scipy.sparse as cps
        d = (dense.astype(cupy.float64) - cupy.asarray(centre)).astype(dense.dtype)
        m, k = d.shape
        out = cps.csr_matrix((d.ravel(), cupy.tile(cupy.arange(k, dtype=x.indices.dtype), m),
                              cupy.arange(0, m * k + 1, k, dtype=x.indptr.dtype)), shape=d.shape)
        out.has_canonical_format = True
        return out
    import scipy.sparse as sps
    d = (dense.astype(np.float64) - centre).astype(dense.dtype)
    m, k = d.shape
    idx = np.dtype(x.indices.dtype)
    return sps.csr_matrix((d.ravel(), np.tile(np.arange(k, dtype=idx), m),
                           np.arange(0, m * k + 1, k, dtype=idx)), shape=d.shape)


def decide(plan, operands: dict, remember, translate: bool, ncols: int) -> Decision:
    """The plan to run on ``operands`` ({(name, flipped): CSR} of every row operand the
    guards read) and whether to centre. ``remember(key, what, build)`` keeps a per-operand
    result (``what`` names it) with the operand; ``translate``: the metric is invariant
    under a common translation of the columns (numerically checked)."""
    guards = rule.guards(plan)
    if not guards:
        return Decision(plan, None, {}, 0.0, "no rewrite that cancels")
    right = guards[0].right
    rkey = row_operand(right)[:2]
    stats = remember(rkey, ("column stats",), lambda: column_stats(operands[rkey]))
    tag = _digest(stats)

    def worst(centre_stats, label, mats):
        out = 0.0
        for g in guards:
            lk, rk = row_operand(g.left)[:2], row_operand(g.right)[:2]
            ident = (g.left.key, g.right.key, g.f.key)
            stats = [remember(k, ("accuracy", label, tag, ident, side),
                              lambda k=k, side=side: row_stats(g, side, mats[k], centre_stats))
                     for k, side in ((lk, "left"), (rk, "right"))]
            out = max(out, ratio(g, stats[0], stats[1], ncols))
        return out

    if ncols <= rule.FEW_COLUMNS:
        return Decision(rule.direct_plan(plan), None, {}, 0.0,
                        f"{ncols} columns (≤ {rule.FEW_COLUMNS}): every product is summed as "
                        "written, at the cost of the rewrite and without its cancellation")
    raw = worst(stats, "raw", operands)
    if raw <= rule.TOLERANCE:
        return Decision(plan, None, {}, raw, f"rounding bound {raw:.1e} ≤ {rule.TOLERANCE:g}: "
                                         "the rewrite is taken")
    keys = {row_operand(n)[:2] for g in guards for n in (g.left, g.right)}
    if translate and all(not k[1] and _dense_enough(operands[k]) for k in keys):
        mu = _dense_centre(stats, ncols)
        mats = {k: remember(k, ("centred", tag), lambda k=k: centred(operands[k], mu))
                for k in keys}
        after = worst(np.stack([stats[0], np.zeros_like(stats[1]), stats[2]]), "centred", mats)
        if after <= rule.TOLERANCE:
            why = (f"rounding bound {raw:.1e} > {rule.TOLERANCE:g} as given, {after:.1e} with the "
                   "columns centred (the metric is invariant under a common translation): "
                   "centred, and the rewrite is taken")
            return Decision(plan, mu, mats, after, why)
        why = (f"rounding bound {raw:.1e} as given and {after:.1e} centred, both > "
               f"{rule.TOLERANCE:g}: every product is summed as written")
    else:
        why = (f"rounding bound {raw:.1e} > {rule.TOLERANCE:g} and the operands cannot be "
               "centred" + ("" if translate else " (no translation invariance)")
               + ": every product is summed as written")
    return Decision(rule.direct_plan(plan), None, {}, raw, why)


def log(decision: Decision) -> None:
    if _LOG.isEnabledFor(logging.DEBUG):
        _LOG.debug("accuracy rule: %s", decision.why)


def log_skipped(why: str) -> None:
    if _LOG.isEnabledFor(logging.DEBUG):
        _LOG.debug("accuracy rule not applied: %s", why)
