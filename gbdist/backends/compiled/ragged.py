"""The k best of ragged candidate lists (the pruned search's merge), compiled with Numba.

Candidates come as (row, index, value) triples in any order, no pair twice; each row
keeps a sorted list of its k best by (value, index), NaN last (``helpers.gb_insert``, the
fused search's rule), so no global sort is needed. Imported lazily, only when Numba is.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .helpers import gb_insert as _insert

_OPT = dict(cache=True, nogil=True)


@njit(**_OPT)
def _ragged(rows, idx, vals, kk, out_d, out_i, cnt):
    for t in range(rows.shape[0]):
        r = rows[t]
        cnt[r] = _insert(out_d[r], out_i[r], cnt[r], kk, vals[t], idx[t])


def select_ragged(rows: np.ndarray, idx: np.ndarray, vals: np.ndarray, nrows: int, kk: int):
    """(distances, indices), nrows × kk: each row's kk best candidates, sorted; rows with
    fewer keep placeholders (NaN, the largest int64) after them."""
    out_d = np.full((nrows, kk), np.nan)
    out_i = np.full((nrows, kk), np.iinfo(np.int64).max, dtype=np.int64)
    if rows.size and kk:
        _ragged(np.ascontiguousarray(rows, dtype=np.int64), np.ascontiguousarray(idx, dtype=np.int64),
                np.ascontiguousarray(vals, dtype=np.float64), kk, out_d, out_i,
                np.zeros(nrows, dtype=np.int64))
    return out_d, out_i
