"""Whether a square canonical CSR pattern is symmetric, compiled with Numba (imported
lazily), without building its transpose: the undirected-graph check of triangle counting,
ktruss and components (:func:`gbdist.algorithms._common.pattern_is_symmetric`).

The pattern is symmetric exactly when every entry (i, j) above the diagonal (j > i) has its
mirror (j, i) stored and there are as many entries below the diagonal as above (mirroring is
one-to-one, so the mirrors are then all the entries below). Each mirror is found by
bisection in row j (sorted); with values (``data``) each mirror's value must also be
the entry's, bit for bit (a symmetric matrix, not only pattern). Rows are split into ranges of about equal entries on the
backend's thread pool, and a range stops at the first missing mirror. Nothing of the
entries' size is allocated. The NumPy form is :func:`gbdist.backends.graph_fast.pattern_symmetric`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .graph_helpers import gb_lower_bound

_OPT = dict(cache=True, nogil=True)


@njit(**_OPT)
def _check(ap, ai, bits, vals, starts, state, r0, r1):
    """Rows [r0, r1): state[0] set to 1 at a missing mirror (``vals``: or one whose
    ``bits`` differ from the entry's) (by any range; every range
    stops at its next row), the range's entries below and above the diagonal written to
    its own slots state[1 + 2k], state[2 + 2k] (k: the range's place in ``starts``)."""
    k = np.searchsorted(starts, r0)
    up = 0
    low = 0
    for i in range(r0, r1):
        if state[0] != 0:
            return
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            if j < i:
                low += 1
            elif j > i:
                up += 1
                lo = gb_lower_bound(ai, ap[j], ap[j + 1], i)  # the first column >= i in row j
                if lo == ap[j + 1] or ai[lo] != i or (vals and bits[lo] != bits[p]):
                    state[0] = 1
                    return
    state[1 + 2 * k] = low
    state[2 + 2 * k] = up


def symmetric(indptr, indices, ranges, run, data=None) -> bool:
    """True when the square canonical CSR pattern (indptr, indices) is symmetric, and
    with ``data`` its values too (compared as bits: a NaN or a -0.0 must have its very
    mirror)."""
    starts = np.array([r[0] for r in ranges], dtype=np.int64)
    state = np.zeros(1 + 2 * len(ranges), dtype=np.int64)
    if data is None:
        bits, vals = np.zeros(1, np.uint8), False
    else:
        data = np.ascontiguousarray(data)
        bits, vals = data.view(np.dtype(f"u{data.dtype.itemsize}")), True
    run(_check, (indptr, indices, bits, vals, starts, state), ranges)
    return bool(state[0] == 0 and state[1::2].sum() == state[2::2].sum())
