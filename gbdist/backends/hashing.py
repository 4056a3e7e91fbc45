"""Matching row hashes: the step of identical-row detection that host and device share.

Written once over an array module ``xp`` (NumPy or CuPy): :mod:`gbdist.backends.rows`
runs it on the host, :mod:`gbdist.backends.cuda.rows` on the device after its fused
hashing kernel. Imports nothing of gbdist, so both can use it.
"""
from __future__ import annotations

import numpy as np


def hash_matches(ha, hb, xp=np):
    """(i, j) of every pair with ``ha[i] == hb[j]`` (candidates for equal rows): one sort of
    the shorter side, two searches and one transfer (the number of candidates). None when
    there is none. (A kNN query of one row against a large index sorts one hash, not the
    index's.)"""
    if ha.shape[0] == 0 or hb.shape[0] == 0:
        return None
    if ha.shape[0] < hb.shape[0]:
        found = _matches(hb, ha, xp)
        return None if found is None else (found[1], found[0])
    return _matches(ha, hb, xp)


def _matches(ha, hb, xp):
    order = xp.argsort(hb)
    hs = hb[order]
    lo = xp.searchsorted(hs, ha, side="left")
    hi = xp.searchsorted(hs, ha, side="right")
    counts = (hi - lo).astype(xp.int64)
    ends = xp.cumsum(counts)
    total = int(ends[-1])
    if total == 0:
        return None
    t = xp.arange(total, dtype=xp.int64)
    i = xp.searchsorted(ends, t, side="right").astype(xp.int64)
    j = order[lo[i] + (t - (ends[i] - counts[i]))].astype(xp.int64)
    return i, j
