"""Forms a CUDA strategy derives from one operand slice alone (Bᵀ, per-row orders, the
first entries of each row), kept for the call's other tiles (:class:`Kept`) or with the
operand (its memo, when a tile reads it whole): :func:`form`."""
from __future__ import annotations


KEEP_BYTES = 512 << 20
"""What :class:`Kept` holds for one call at most: one extra copy of the index's entries
(its transpose: 0.33 GB for the 27.7M entries of the 283K-row power-law index)."""


class Kept:
    """Forms a strategy derives from one operand slice alone (Bᵀ, per-row orders), kept for
    the other tiles of the call that read the same slice: a kNN or a blocked distance
    matrix reads each index block once per query block, and rebuilt its Bᵀ each time
    (a transpose, a sortedness check and a sort: 3.5 of 13.9 ms of a 2,048-row cosine tile
    against the 283K-row power-law index on an H200; chebyshev's two per-row sorts 12 of
    86 ms). Up to :data:`KEEP_BYTES` in all; beyond, forms are built per tile as before."""

    def __init__(self, limit: int = KEEP_BYTES):
        self.limit, self.used, self.store = limit, 0, {}

    def get(self, key, build):
        v = self.store.get(key)
        if v is None:
            v = build()
            n = sum(int(getattr(a, "nbytes", 0)) for a in (v if isinstance(v, tuple) else (v,)))
            if self.used + n <= self.limit:
                self.store[key] = v
                self.used += n
        return v


def form(job, side: int, key, build):
    """``build()``, kept with the operand (its memo, when the tile reads it whole) or with
    the call (:class:`Kept`, by the slice's rows), else built for this tile only."""
    memo = job.memos[side]
    if memo is not None:
        if key not in memo:
            memo[key] = build()
        return memo[key]
    if job.kept is not None:
        return job.kept.get((side, job.slices[side]) + key, build)
    return build()
