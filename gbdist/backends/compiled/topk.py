"""Top-k selection and merging for kNN, compiled with Numba (imported lazily).

Same semantics as ``gbdist.neighbors.select_k`` / ``merge_k``: the k smallest
entries of each row by (distance, column), NaN after every number, ties kept
by the lowest column. Run over blocks of rows on the backend's thread pool;
each row keeps a sorted list of its k best (insertion, O(width + k · insertions)),
most entries rejected by one comparison with the current k-th.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .threads import run_blocks as _run_blocks

_OPT = dict(cache=True, nogil=True)


@njit(**_OPT)
def _before(dv, di, ev, ei):
    """(dv, di) sorts before (ev, ei): by value, NaN last, then by index."""
    if dv != dv:
        return ev != ev and di < ei
    if ev != ev:
        return True
    return dv < ev or (dv == ev and di < ei)


@njit(**_OPT)
def _insert(bd, bi, cnt, kk, v, idx):
    """Insert (v, idx) into the sorted lists bd/bi holding ``cnt`` entries (at most kk)."""
    if cnt == kk and not _before(v, idx, bd[kk - 1], bi[kk - 1]):
        return cnt
    p = cnt if cnt < kk else kk - 1
    while p > 0 and _before(v, idx, bd[p - 1], bi[p - 1]):
        bd[p] = bd[p - 1]
        bi[p] = bi[p - 1]
        p -= 1
    bd[p] = v
    bi[p] = idx
    return cnt + 1 if cnt < kk else cnt


@njit(**_OPT)
def _select(tile, kk, offset, out_d, out_i, r0, r1):
    for r in range(r0, r1):
        bd, bi = out_d[r], out_i[r]
        row = tile[r]
        cnt = 0
        for c in range(row.shape[0]):
            v = row[c]
            idx = np.int64(c) + offset
            if cnt == kk and not _before(v, idx, bd[kk - 1], bi[kk - 1]):
                continue
            cnt = _insert(bd, bi, cnt, kk, v, idx)


@njit(**_OPT)
def _merge(d1, i1, d2, i2, kk, out_d, out_i, r0, r1):
    for r in range(r0, r1):
        bd, bi = out_d[r], out_i[r]
        cnt = 0
        for c in range(d1.shape[1]):
            cnt = _insert(bd, bi, cnt, kk, np.float64(d1[r, c]), i1[r, c])
        for c in range(d2.shape[1]):
            cnt = _insert(bd, bi, cnt, kk, np.float64(d2[r, c]), i2[r, c])


def select_k(tile: np.ndarray, k: int, offset: int = 0):
    """(distances, indices) of the k smallest entries of each row, sorted; indices are
    columns plus ``offset`` (int64), distances in the tile's dtype."""
    tile = np.ascontiguousarray(tile)
    rows, width = tile.shape
    kk = min(int(k), width)
    out_d = np.empty((rows, kk), dtype=tile.dtype)
    out_i = np.empty((rows, kk), dtype=np.int64)
    if kk and rows:
        _run_blocks(_select, (tile, kk, np.int64(offset), out_d, out_i), rows)
    return out_d, out_i


def merge_k(d1, i1, d2, i2, k: int):
    """The k best of two candidate lists per row, by (distance, index), NaN last."""
    d1, d2 = np.ascontiguousarray(d1, dtype=np.float64), np.ascontiguousarray(d2, dtype=np.float64)
    i1, i2 = np.ascontiguousarray(i1, dtype=np.int64), np.ascontiguousarray(i2, dtype=np.int64)
    rows = d1.shape[0]
    kk = min(int(k), d1.shape[1] + d2.shape[1])
    out_d = np.empty((rows, kk), dtype=np.float64)
    out_i = np.empty((rows, kk), dtype=np.int64)
    if kk and rows:
        _run_blocks(_merge, (d1, i1, d2, i2, kk, out_d, out_i), rows)
    return out_d, out_i
