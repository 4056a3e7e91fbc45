"""The accuracy rule decided once per index, for every block of a partitioned kNN.

A single-process call decides from the statistics of its whole operands
(:func:`gbdist.runtime.accuracy.choose`): the right operand's column means and spreads,
and a max over the rows of both operands of γ·M/S. Each block of a partitioned run would
decide from its own two blocks, and a block could sum a product as written where the
whole takes the rewrite (a few ulps apart). Here the same decision is made from every
block, on the workers, and handed to the pair tasks as a decided plan
(:func:`gbdist.compiler.accuracy.decided`, or the direct plan), so the blocks run what
``gb.knn`` runs, bit for bit:

* column sums and the sums of squared deviations are folded over the index blocks in
  row order (``np.add.at`` adds in the order ``np.bincount`` does, from the previous
  block's sums), so μ and σ are the single-process values bit for bit, not a tree of
  partial sums;
* the row statistics are per row (:func:`~gbdist.runtime.accuracy.row_stats`), their
  balancing maxima and the bound are maxima: merged exactly.

Cost: two sequential passes over the index blocks (the folds: O(stored entries) each) and
one or two parallel passes over the query and index blocks (the row statistics), only for
a plan with a rewrite that cancels; a few numbers per block come back, and one vector of
k column statistics.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEFT, RIGHT = ("A", False), ("B", False)


@dataclass(frozen=True)
class Choice:
    """What the blocks run: the direct plan, or the plan decided (centred by ``centre``)."""

    direct: bool
    centre: object  # a dense column vector, or None
    why: str


def plan_for(metric, params: dict, choice: Choice | None):
    """The plan a block task runs (on the worker): the metric's, decided once for the
    whole index, or as analysed when there is no choice to carry (its own rule then)."""
    from ..compiler import accuracy as rule
    from ..pairwise import metric_program
    plan = metric_program(metric, **params).plan
    if choice is None:
        return plan
    return rule.direct_plan(plan) if choice.direct else rule.decided(plan, choice.centre)


# ---------------------------------------------------------------------------
# worker functions (pure: same blocks, same answer)
# ---------------------------------------------------------------------------


def _host_block(x):
    get = getattr(x, "get", None)
    return get() if callable(get) and not isinstance(x, np.ndarray) else x


def form(metric, params: dict, Q, W, key: tuple, host: bool = True):
    """The rows of block ``Q`` (as ``key``: LEFT or RIGHT) as the runtime binds them
    before the rule (conditioned, normalised, scaled; a host CSR, or where Q is with
    ``host=False``), ``W`` a block of the other operand (its first row: the result dtype)."""
    from ..compiler import accuracy as rule
    from ..front import colparams
    from ..runtime import bind
    if host:
        Q, W = _host_block(Q), _host_block(W)
    plan = rule.decided(metric_program_plan(metric, params))
    inputs = {"A": Q, "B": W[:1]} if key == LEFT else {"A": W[:1], "B": Q}
    inputs.update(colparams.split(params)[1] or {})
    b = bind(plan, inputs, drop_zeros=True, labels={"A": "X", "B": "Y"})
    return b.data[key]


def metric_program_plan(metric, params: dict):
    from ..pairwise import metric_program
    return metric_program(metric, **params).plan


def fold_sums(x, acc):
    """(Σ stored values, stored count, NaN count) per column, continued from ``acc`` in
    row order (the order of :func:`gbdist.runtime.accuracy.column_stats`' bincount)."""
    k = x.shape[1]
    s, count, lost = acc if acc is not None else (np.zeros(k), np.zeros(k, np.int64),
                                                   np.zeros(k, np.int64))
    s, count, lost = s.copy(), count.copy(), lost.copy()
    values, indices = np.asarray(x.data, dtype=np.float64), np.asarray(x.indices)
    nan = np.isnan(values)
    np.add.at(count, indices, 1)
    np.add.at(lost, indices[nan], 1)
    np.add.at(s, indices[~nan], values[~nan])
    return s, count, lost


def fold_dev(x, mu: np.ndarray, acc):
    """Σ (value − μ)² per column over the stored non-NaN entries, continued from ``acc``."""
    dev = np.zeros(x.shape[1]) if acc is None else acc.copy()
    values, indices = np.asarray(x.data, dtype=np.float64), np.asarray(x.indices)
    keep = ~np.isnan(values)
    np.add.at(dev, indices[keep], (values[keep] - mu[indices[keep]]) ** 2)
    return dev


def rows_of(metric, params: dict, x, side: str, stats, centre):
    """Each guard's :func:`~gbdist.runtime.accuracy.row_stats` of block ``x`` on ``side``
    (centred by ``centre`` first when given)."""
    from ..compiler import accuracy as rule
    from ..runtime import accuracy
    if centre is not None:
        x = accuracy.centred(x, centre)
    return [accuracy.row_stats(g, side, x, stats)
            for g in rule.guards(metric_program_plan(metric, params))]


def tops_of(stats: list) -> list:
    from ..runtime import accuracy
    return [accuracy.tops(s) for s in stats]


def worst_of(metric, params: dict, stats: list, side: str, tops: list, ncols: int,
             terms: int) -> float:
    from ..compiler import accuracy as rule
    from ..runtime import accuracy
    guards = rule.guards(metric_program_plan(metric, params))
    return max((accuracy.worst(g, s, side, t[0], t[1], ncols, terms)
                for g, s, t in zip(guards, stats, tops)), default=0.0)


def nnz_of(x) -> tuple:
    return int(x.nnz), int(x.shape[0])


def longest_of(x) -> int:
    from ..runtime import accuracy
    return accuracy.longest(x)


def _guarded(metric, params: dict, on_device: bool):
    """(the metric's plan, whether the backend sums a union as written) where the accuracy
    rule has something to decide for a kNN over row operands A and B; None where it has
    not (no rewrite that cancels), or where a guard reads other operands (each block then
    decides, as a single call on it would)."""
    from ..compiler import accuracy as rule
    from ..compiler.typecheck import row_operand
    plan = metric_program_plan(metric, params)
    guards = rule.guards(plan)
    if not guards or any((row_operand(g.left)[:2], row_operand(g.right)[:2]) != (LEFT, RIGHT)
                         for g in guards):
        return None
    if not on_device:
        return plan, True
    from ..runtime.bind import _device_direct_union
    return plan, _device_direct_union(plan)


def whole(X, metric, params: dict) -> Choice | None:
    """The decision of ``gb.knn(X)`` (a self-join) made on one worker from the whole of X
    (a replica, :mod:`.replicas`), where X is (CuPy statistics on the device): the very
    rule and statistics a single call runs (:func:`gbdist.runtime.accuracy.decide`), so
    the shares and row blocks that then run the decided plan (:func:`plan_for`) compute
    no statistics of their own and run what ``gb.knn(X)`` runs. None as :func:`decide`."""
    from ..inputs import is_cupy
    from ..runtime import accuracy
    from ..runtime.invariance import conditioned_names
    guarded = _guarded(metric, params, is_cupy(X))
    if guarded is None:
        return None
    plan, direct = guarded
    mats = {key: form(metric, params, X, X, key, host=False) for key in (LEFT, RIGHT)}
    memo: dict = {}

    def remember(key, what, build):
        if (key, what) not in memo:
            memo[key, what] = build()
        return memo[key, what]

    translate = bool(getattr(conditioned_names(plan)[0], "translate", False))
    d = accuracy.decide(plan, mats, remember, translate, int(X.shape[1]), direct)
    return Choice(d.plan is not plan, None if d.centre is None else accuracy.to_host(d.centre),
                  d.why)


# ---------------------------------------------------------------------------
# the client's side
# ---------------------------------------------------------------------------


def decide(client, metric, params: dict, Qp, Ip, on_device: bool) -> Choice | None:
    """The accuracy decision of ``gb.knn(X, Y)`` for partitions ``Qp`` of X and ``Ip`` of Y
    (``Ip is Qp``: a self-join), made from all the blocks; None where there is nothing to
    decide (no rewrite that cancels) or the plan's guarded operands are not the row
    operands A and B (then each block decides, as a single call on it would)."""
    from ..compiler import accuracy as rule
    from ..runtime import accuracy
    from ..runtime.invariance import conditioned_names
    guarded = _guarded(metric, params, on_device)
    if guarded is None:
        return None
    plan, direct = guarded
    guards = rule.guards(plan)
    ncols = Ip.n_features
    if ncols <= rule.FEW_COLUMNS and direct:
        chosen = accuracy.choose(plan, ncols, False, None, None, None, direct)
        return Choice(True, None, chosen[3])
    sub = client.submit
    lefts = [sub(form, metric, params, q, Ip.futures[0], LEFT, pure=True) for q in Qp.futures]
    rights = [sub(form, metric, params, i, Qp.futures[0], RIGHT, pure=True) for i in Ip.futures]
    acc = None
    for r in rights:  # in row order: the single-process summation order
        acc = sub(fold_sums, r, acc, pure=True)
    s, count, lost = acc.result()
    m = Ip.n_rows
    stored = np.flatnonzero(count)
    s, count, lost = s[stored], count[stored], lost[stored]
    nan = bool(lost.any())
    lost_f = lost if nan else np.zeros(stored.size)
    count = count - lost if nan else count
    mm = np.maximum(m - lost_f, 1)
    mu = s / mm
    mu_dense = np.zeros(ncols)
    mu_dense[stored] = mu
    dev = None
    for r in rights:
        dev = sub(fold_dev, r, mu_dense, dev, pure=True)
    dev = dev.result()[stored]
    var = (dev + (m - lost_f - count) * mu * mu) / mm
    stats = np.stack([stored.astype(np.float64), mu, np.sqrt(np.maximum(var, 0.0))])

    def measure(label, centre_stats, centre):
        if centre is None:  # the longest rows of X and of Y (centred operands store all)
            n = [max(client.gather([sub(longest_of, x, pure=True) for x in blocks]), default=0)
                 for blocks in (lefts, rights)]
        else:
            n = [ncols, ncols]
        terms = rule.terms(ncols, *n)
        parts = {side: [sub(rows_of, metric, params, x, side, centre_stats, centre, pure=True)
                        for x in blocks] for side, blocks in (("left", lefts), ("right", rights))}
        tops = {side: [t for t in client.gather([sub(tops_of, p, pure=True) for p in ps])]
                for side, ps in parts.items()}
        merged = [(tuple(max(ts) for ts in zip(*[b[g] for b in tops["left"]])),
                   tuple(max(ts) for ts in zip(*[b[g] for b in tops["right"]])))
                  for g in range(len(guards))]
        worst = [sub(worst_of, metric, params, p, side, merged, ncols, terms, pure=True)
                 for side, ps in parts.items() for p in ps]
        return max(client.gather(worst), default=0.0)

    def can_centre():
        sizes = client.gather([sub(nnz_of, x, pure=True) for x in lefts + rights])
        q, i = sizes[:len(lefts)], sizes[len(lefts):]
        return all(sum(r for _, r in part) * ncols > 0 and sum(n for n, _ in part)
                   >= accuracy.DENSE_ENOUGH * sum(r for _, r in part) * ncols for part in (q, i))

    translate = bool(getattr(conditioned_names(plan)[0], "translate", False))
    chosen, centre, _bound, why = accuracy.choose(plan, ncols, translate, stats, measure,
                                                  can_centre, direct)
    return Choice(chosen is not plan, centre, why)


__all__ = ["Choice", "decide", "plan_for"]
