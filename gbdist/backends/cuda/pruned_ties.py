"""Ties across keys in the device pruned kNN (:mod:`gbdist.backends.cuda.pruned`), as the
host search handles them (:func:`gbdist.backends.pruned._ties`, ``_tie_members``).

A query whose k-th value t is also reached by an index row of another key (chebyshev's
max(L, R) is L at every R ≤ L; jensenshannon's normalised rows have keys a few ulps
apart whose values round to one) gets its k best free candidates without being
evaluated against every index row: the tie's key range from two binary searches along
the order of the index rows (h is non-decreasing there), then the tie's lowest free
indices by ``gb_prune_tie`` (kernels/pruned.cuh), a scan in index order that skips
blocks whose keys miss the range.
"""
from __future__ import annotations

from . import pruned_values


def ties(ev, free, Cp, Cj, live, pos, valid, tv, P, pkey, run_end):
    """The live rows whose k-th value an index row of another key reaches (the host
    search's :func:`gbdist.backends.pruned._ties`; ``free``: gb_prune_free): (those
    rows, their positions in ``live``, their k-th values)."""
    cp = ev.cp
    vals = cp.where(valid, tv, cp.nan)
    full = valid.all(axis=1)
    last = cp.maximum(pos[:, -1], 0)
    t = vals[:, -1]
    kth_key = cp.where(full, pkey[last], cp.nan)
    at_t = (vals == t[:, None]) & valid
    spans = (at_t & (pkey[cp.maximum(pos, 0)] != kth_key[:, None])).any(axis=1)
    start = cp.where(full, run_end[last], P.size)
    nxt = free(Cp, Cj, live, P, 1, start)[:, 0]
    has = full & (nxt >= 0)
    v = ev.values(live, P[cp.maximum(nxt, 0)])
    tie = has & ~(v > t)
    at = cp.flatnonzero((spans | tie) & full)
    return live[at], at, t[at]


def members(ev, scan, Cp, Cj, rows_, first, fv, t, P, pkey, J, keyJ, kk: int, stage=None):
    """The kk best free regular index rows of each query of ``rows_`` whose k-th value t
    is a tie across keys (the host's :func:`gbdist.backends.pruned._tie_members`): ``first``
    (rows × kk, values ``fv``) are its first kk free positions' index rows, non-decreasing
    in value. h is non-decreasing along P, so the positions at h < t and at h ≤ t are
    prefixes [0, a) and [0, e) (binary searches on the device, every row at once); the
    tie [a, e) is the index rows whose key lies in [pkey[a], pkey[e − 1]]; the row keeps
    its first ones below t and then the tie's lowest free indices (``scan``: gb_prune_tie)."""
    cp = ev.cp
    s, size = int(rows_.size), int(P.size)

    # the least positions a with h(a) ≥ t and e with h(e) > t (P.size where none): both
    # binary searches in one pass, the plan evaluated once a step for the two
    both = cp.concatenate([rows_, rows_])
    tt = cp.concatenate([t, t])
    strict = cp.arange(2 * s) >= s
    lo = pruned_values.search(ev, both, tt, strict, P)  # one kernel, a thread a search
    if lo is None:  # the epilogue has no fused rule: the searches as array steps
        lo, hi = cp.zeros(2 * s, cp.int64), cp.full(2 * s, size, cp.int64)
        for _ in range(size.bit_length() + 1):
            mid = (lo + hi) // 2
            v = ev.values(both, P[cp.minimum(mid, size - 1)])
            ok = cp.where(strict, v > tt, v >= tt) & (lo < hi)
            hi = cp.where(ok, mid, hi)
            lo = cp.where(~ok & (lo < hi), mid + 1, lo)
    a, e = lo[:s], lo[s:]
    if stage is not None:
        stage("ties_search")  # the two binary searches (profiling: pruned.profile)
    lo_key, hi_key = pkey[cp.minimum(a, size - 1)], pkey[cp.maximum(e - 1, 0)]
    below = (fv < t[:, None]).sum(axis=1)  # the first ones under t: a prefix
    tie = scan(Cp, Cj, rows_, J, keyJ, lo_key, hi_key, kk - below, kk)
    if stage is not None:
        stage("ties_scan")
    col = cp.arange(kk, dtype=cp.int64)[None, :]
    take = col - below[:, None]
    tj = cp.where(take < 0, first, cp.take_along_axis(tie, cp.maximum(take, 0), axis=1))
    tv = cp.where(tj >= 0, ev.values(rows_[:, None], cp.maximum(tj, 0)), 0.0)
    return tj, tv
