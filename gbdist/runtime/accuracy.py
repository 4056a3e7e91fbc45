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
import warnings
from dataclasses import dataclass

import numpy as np

from ..algebra.evaluate import apply_binary, apply_unary, evaluate_op
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


# The rule on device operands (CuPy statistics, below). On since 2026-11-27: on issue 29's
# four shapes (one H200) every decision took the rewrite at 1.00-1.20x the kNN without the
# rule, with identical answers, and the whole GPU suite passed with it and the CUDA
# direct-union pass (codegen.DIRECT_UNION) on (docs/decision.md, "Accuracy"). False: the
# GPU runs the plan as analysed.
DEVICE_RULE = True


def _xp(a):
    """NumPy for a host array, CuPy for a device one."""
    if is_cupy(a):
        import cupy
        return cupy
    return np


def _parts(x):
    """A CSR's (values in float64, indices, row ids) where it is (host or device), and its
    array module."""
    xp = _xp(x.data)
    data, indices, indptr = x.data, x.indices, x.indptr
    if xp is np:
        rows = np.repeat(np.arange(x.shape[0]), np.diff(np.asarray(indptr)))
    else:  # cupy.repeat takes no array of counts: each entry's row by a search of indptr
        rows = xp.searchsorted(indptr, xp.arange(indices.size), side="right") - 1
    return xp.asarray(data, dtype=xp.float64), xp.asarray(indices), rows, xp


def to_host(v) -> np.ndarray:
    """A statistic (small: one value per column or per row) on the host."""
    get = getattr(v, "get", None)
    return get() if callable(get) and not isinstance(v, np.ndarray) else np.asarray(v)


def _unary(op, values):
    if _xp(values) is np:
        return apply_unary(op, values)
    return _on_device(op, {"x": values}, values)


def _binary(op, a, b):
    if _xp(a) is np:
        return apply_binary(op, a, b)
    return _on_device(op, {"x": a, "y": b}, a)


def _on_device(op, env: dict, like):
    """An op evaluated elementwise on device arrays: the host evaluator's walk, whose NumPy
    ufuncs and functions CuPy arrays dispatch to CuPy; a node it cannot dispatch (CuPy
    refuses an implicit copy to the host) is evaluated on the host instead (a copy there
    and back, for that op only)."""
    xp = _xp(like)
    try:
        out = evaluate_op(op, env)
        return xp.broadcast_to(xp.asarray(out, dtype=xp.float64), like.shape)
    except (TypeError, ValueError, AttributeError, NotImplementedError):
        host = [to_host(v) for v in env.values()]
        return xp.asarray(apply_unary(op, *host) if len(host) == 1 else apply_binary(op, *host))


def column_stats(x):
    """(columns, μ, σ) over the columns ``x`` stores: their means and standard deviations
    over every row (unstored entries are 0), float64, where ``x`` is (NumPy on the host,
    CuPy on the device: a few O(stored entries) kernels); σ in two passes (no
    cancellation of offset columns). Columns stored nowhere have μ = σ = 0 (nothing of
    size k is allocated: wide inputs). A NaN is a missing value (for the metrics that test
    isnan, gbdist.algebra.missing; the others refuse NaN): left out of its column's μ and
    σ, which are then over the rows where the column is present."""
    values, indices, _, xp = _parts(x)
    cols, where, count = xp.unique(indices, return_inverse=True, return_counts=True)
    where = where.ravel()
    nan = xp.isnan(values)
    if bool(nan.any()):
        lost = xp.bincount(where[nan], minlength=cols.size)
        values, where, count = values[~nan], where[~nan], count - lost
    else:
        lost = xp.zeros(cols.size)
    m = xp.maximum(x.shape[0] - lost, 1)
    mu = xp.bincount(where, weights=values, minlength=cols.size) / m
    dev = xp.bincount(where, weights=(values - mu[where]) ** 2, minlength=cols.size)
    var = (dev + (x.shape[0] - lost - count) * mu * mu) / m
    return xp.stack([cols.astype(xp.float64), mu, xp.sqrt(xp.maximum(var, 0.0))])


def _at(stats, indices) -> tuple:
    """μ and σ at the column ``indices`` (0 where the stats' operand stores nothing)."""
    xp = _xp(stats)
    cols = stats[0]
    if cols.size == 0:
        return xp.zeros(indices.shape), xp.zeros(indices.shape)
    pos = xp.minimum(xp.searchsorted(cols, indices), cols.size - 1)
    found = cols[pos] == indices
    return xp.where(found, stats[1][pos], 0.0), xp.where(found, stats[2][pos], 0.0)


def _dense_centre(stats, k: int) -> np.ndarray:
    stats = to_host(stats)
    out = np.zeros(k)
    out[stats[0].astype(np.int64)] = stats[1]
    return out


def _chain(values, chain):
    for op in chain:
        values = _unary(op, values)
    return values


def _row_sums(rows, values, m: int):
    xp = _xp(values)
    values = xp.where(xp.isnan(values), xp.inf, xp.abs(values))
    return xp.bincount(rows, weights=values, minlength=m)


def row_stats(guard, side: str, x, stats) -> tuple:
    """(corr, Φ (rank × m), S) of the rows of ``x`` on ``side`` ("left"/"right") of
    ``guard``: Σ|L − C| (Σ|R − C| on the right; L(x) = f(x, fill)), Σ φ_r² (Σ ψ_r²) per
    r, and the resolution S = Σ |f(a, a − ρ·d)| (f(b − ρ·d, b) on the right), the step
    d = sign(a − μ)·max(|a − μ|, σ) per stored entry: ρ of the way to the data's centre,
    or of the column's spread for an entry near it. Where ``x`` is (host or device)."""
    values, indices, rows, xp = _parts(x)
    m = x.shape[0]
    mu, sigma = _at(stats, indices)
    node = guard.left if side == "left" else guard.right
    other = guard.right if side == "left" else guard.left
    own = _chain(values, row_operand(node)[2])
    with np.errstate(all="ignore"):
        if guard.correction:
            fill = xp.full_like(own, rule.fill_of(other))
            edge = _binary(guard.f, own, fill) if side == "left" else \
                _binary(guard.f, fill, own)
            c = _row_sums(rows, edge - guard.corner, m)
        else:
            c = xp.zeros(m)
        phis = []
        for phi, psi in guard.expansion or ():
            t = _unary(phi if side == "left" else psi, own)
            phis.append(_row_sums(rows, t * t, m))
        off = values - mu
        step = xp.where(off < 0, -1.0, 1.0) * xp.maximum(xp.abs(off), sigma)
        near = _chain(values - rule.RESOLUTION * step, row_operand(other)[2])
        f = xp.abs(_binary(guard.f, own, near) if side == "left" else _binary(guard.f, near, own))
        f = xp.where(xp.isnan(f), 0.0, xp.where(xp.isinf(f), np.finfo(float).max, f))
    s = xp.bincount(rows, weights=f, minlength=m)
    return c, (xp.stack(phis) if phis else xp.zeros((0, m))), s


def tops(stats) -> tuple:
    """max over the rows of one operand of each Σ φ_r² (its row statistics' Φ): what the
    balancing constants c_r read (a max: merged exactly over row blocks)."""
    phis = stats[1]
    return tuple(float(phis[r].max()) if phis[r].size else 0.0 for r in range(phis.shape[0]))


def worst(guard, stats, side: str, top_l: tuple, top_r: tuple, ncols: int,
          terms: int | None = None) -> float:
    """max over the rows of one operand (on ``side``) of γ·M(row)/S(row), the constants c_r
    balanced by both operands' :func:`tops`; γ of ``terms``
    (:func:`gbdist.compiler.accuracy.terms`; ``ncols`` when not given)."""
    corr, phis, s = stats
    xp = _xp(corr)
    mm = guard.weight * corr + 0.5 * ncols * abs(guard.corner)
    for r in range(phis.shape[0]):
        if top_l[r] > 0 and top_r[r] > 0:
            c = np.sqrt(top_l[r] / top_r[r])  # balances ½(Φ/c + cΨ): ≥ ‖φ(a)‖‖ψ(b)‖, any c > 0
            mm = mm + (0.5 * phis[r] / c if side == "left" else 0.5 * c * phis[r])
    if not mm.size:
        return 0.0
    with np.errstate(all="ignore"):
        q = xp.where(mm == 0, 0.0, mm / s)
        return rule.gamma(ncols if terms is None else terms) * \
            float(xp.max(xp.where(xp.isnan(q), xp.inf, q)))


def ratio(guard, left_stats, right_stats, ncols: int, terms: int | None = None) -> float:
    """max over the rows of both operands of γ·M(row)/S(row)."""
    top_l, top_r = tops(left_stats), tops(right_stats)
    return max(worst(guard, left_stats, "left", top_l, top_r, ncols, terms),
               worst(guard, right_stats, "right", top_l, top_r, ncols, terms))


def longest(x) -> int:
    """The most entries any row of the CSR ``x`` stores (0 for no rows)."""
    if not x.shape[0]:
        return 0
    return int(_xp(x.indptr).diff(x.indptr).max())


def _digest(v) -> str:
    """A cache key for a statistic (the operands' centred forms and row statistics are kept
    under it): BLAKE2b of a host array; of a device array, a multiply-add hash computed on
    the device (no copy to the host: on the 663K x 858K shape the copy and BLAKE2b of the
    column statistics took 36 ms of a 50 ms search)."""
    xp = _xp(v)
    if xp is np:
        return hashlib.blake2b(np.ascontiguousarray(v, dtype=np.float64).tobytes(),
                               digest_size=12).hexdigest()
    return "dev-" + _device_hash(xp, v)


def _device_hash(cp, v) -> str:
    """Two 64-bit sums of v's words times splitmix64 multipliers of their positions (odd),
    mod 2**64, with v's shape: equal statistics give equal keys; distinct ones collide with
    probability about 2**-64 per sum (a key within one process, not a checksum against an
    adversary)."""
    w = cp.ascontiguousarray(v, dtype=cp.float64).reshape(-1).view(cp.uint64)
    i = cp.arange(w.size, dtype=cp.uint64)
    out = [repr(tuple(v.shape))]
    for seed in (0x9E3779B97F4A7C15, 0xD1B54A32D192ED03):
        z = i * cp.uint64(seed) + cp.uint64(0x632BE59BD9B4E019)
        z = (z ^ (z >> cp.uint64(30))) * cp.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> cp.uint64(27))) * cp.uint64(0x94D049BB133111EB)
        z = (z ^ (z >> cp.uint64(31))) | cp.uint64(1)
        out.append(f"{int((w * z).sum(dtype=cp.uint64)):016x}")
    return "-".join(out)


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


def choose(plan, ncols: int, translate: bool, stats, measure, can_centre, direct: bool = True):
    """The accuracy rule's choice for ``plan``, from its data's statistics however they are
    gathered (one process: :func:`decide`; row blocks: :mod:`gbdist.dask.accuracy`):
    ``stats``: the right operand's :func:`column_stats`; ``measure(label, centre_stats,
    centre)``: max γ·M/S over the rows of every guarded operand ("raw": as given; "centred":
    shifted by ``centre``, their statistics ``centre_stats``); ``can_centre()``: every
    guarded operand is a row operand storing at least half its entries. ``direct``: the
    backend can sum a union as written (else the best rewrite runs, and ``why`` says so).
    Returns (plan, centre or None, ratio, why)."""
    if ncols <= rule.FEW_COLUMNS and direct:
        return (rule.direct_plan(plan), None, 0.0,
                f"{ncols} columns (≤ {rule.FEW_COLUMNS}): every product is summed as "
                "written, at the cost of the rewrite and without its cancellation")
    raw = measure("raw", stats, None)
    if raw <= rule.TOLERANCE:
        return plan, None, raw, f"rounding bound {raw:.1e} ≤ {rule.TOLERANCE:g}: the rewrite is taken"
    after = None
    if translate and can_centre():
        mu = _dense_centre(stats, ncols)
        xp = _xp(stats)
        after = measure("centred", xp.stack([stats[0], xp.zeros_like(stats[1]), stats[2]]), mu)
        if after <= rule.TOLERANCE:
            why = (f"rounding bound {raw:.1e} > {rule.TOLERANCE:g} as given, {after:.1e} with the "
                   "columns centred (the metric is invariant under a common translation): "
                   "centred, and the rewrite is taken")
            return plan, mu, after, why
        why = (f"rounding bound {raw:.1e} as given and {after:.1e} centred, both > "
               f"{rule.TOLERANCE:g}: every product is summed as written")
    else:
        why = (f"rounding bound {raw:.1e} > {rule.TOLERANCE:g} and the operands cannot be "
               "centred" + ("" if translate else " (no translation invariance)")
               + ": every product is summed as written")
    if direct:
        return rule.direct_plan(plan), None, raw, why
    centre = after is not None and after < raw
    return (plan, _dense_centre(stats, ncols) if centre else None, after if centre else raw,
            why.split(":")[0] + ": the backend cannot sum a union as written yet, so the "
            + ("centred" if centre else "given") + " rows run through the rewrite")


def decide(plan, operands: dict, remember, translate: bool, ncols: int,
           direct: bool = True) -> Decision:
    """The plan to run on ``operands`` ({(name, flipped): CSR} of every row operand the
    guards read, all on the host or all on the device) and whether to centre.
    ``remember(key, what, build)`` keeps a per-operand result (``what`` names it) with the
    operand; ``translate``: the metric is invariant under a common translation of the
    columns (numerically checked); ``direct``: see :func:`choose`."""
    guards = rule.guards(plan)
    if not guards:
        return Decision(plan, None, {}, 0.0, "no rewrite that cancels")
    rkey = row_operand(guards[0].right)[:2]
    stats = remember(rkey, ("column stats",), lambda: column_stats(operands[rkey]))
    # Every read of a device statistic is a synchronisation (the digest two, each ratio
    # three or more): the digest, each operand's tops and each side's worst are kept with
    # the operand, so a prepared operand's second call decides without reading the device.
    tag = remember(rkey, ("column stats digest",), lambda: _digest(stats))
    keys = {row_operand(n)[:2] for g in guards for n in (g.left, g.right)}
    shifted: dict = {}

    def measure(label, centre_stats, mu):
        mats = operands
        if mu is not None:
            mats = {k: remember(k, ("centred", tag), lambda k=k: centred(operands[k], mu))
                    for k in keys}
            shifted.update(mats)
        out = 0.0
        for g in guards:
            lk, rk = row_operand(g.left)[:2], row_operand(g.right)[:2]
            ident = (g.left.key, g.right.key, g.f.key)
            st = [remember(k, ("accuracy", label, tag, ident, side),
                           lambda k=k, side=side: row_stats(g, side, mats[k], centre_stats))
                  for k, side in ((lk, "left"), (rk, "right"))]
            n = [remember(k, ("longest", label, tag), lambda k=k: longest(mats[k]))
                 for k in (lk, rk)]
            terms = rule.terms(ncols, *n)
            top = [remember(k, ("tops", label, tag, ident, side), lambda s=s: tops(s))
                   for k, side, s in ((lk, "left", st[0]), (rk, "right", st[1]))]
            # ratio(g, st[0], st[1], ...), each side's worst kept under both sides' tops
            out = max([out] + [remember(k, ("worst", label, tag, ident, side, *top, ncols, terms),
                                        lambda s=s, side=side: worst(g, s, side, *top, ncols, terms))
                               for k, side, s in ((lk, "left", st[0]), (rk, "right", st[1]))])
        return out

    def can_centre():
        return all(not k[1] and _dense_enough(operands[k]) for k in keys)

    chosen, mu, bound, why = choose(plan, ncols, translate, stats, measure, can_centre, direct)
    return Decision(chosen, mu, shifted if mu is not None else {}, bound, why)


def log(decision: Decision) -> None:
    if _LOG.isEnabledFor(logging.DEBUG):
        _LOG.debug("accuracy rule: %s", decision.why)


def warn_no_direct(decision: Decision) -> None:
    """The rule asked for a direct sum that the backend cannot run: the rewrite runs with
    its bound above the tolerance, said (not silent)."""
    warnings.warn(f"gbdist accuracy rule: {decision.why} (rounding bound {decision.ratio:.1e})",
                  RuntimeWarning, stacklevel=4)


def log_skipped(why: str) -> None:
    if _LOG.isEnabledFor(logging.DEBUG):
        _LOG.debug("accuracy rule not applied: %s", why)
