"""The forms of a :class:`~.vector.Vector`, one semantics (issue 28: mxv's result memory).

* **sparse**: sorted unique int64 keys and one value each (``nvals`` · (8 + itemsize) bytes);
* **full**: every position stored, the values alone (``size`` · itemsize);
* **bitmap**: the values of every position (0 where absent) and a bool presence flag each
  (``size`` · (itemsize + 1)), for a vector with most positions stored.

SuiteSparse:GraphBLAS picks among the same forms (its sparse / bitmap / full vectors); a
kernel's dense result (SpMV: the values of every row and which rows had a term) becomes
the smallest of them (:func:`form_of`), so ``mxv``'s result is no larger than SuiteSparse's.
The keys of a full or bitmap vector are made only when something asks for them
(:func:`keys_of`): a sparse operation, ``v.indices``.
"""
from __future__ import annotations

import weakref

import numpy as np

_ARANGE: dict = {}  # xp's name -> the last 0..n-1 keys made (shared, never written)
_LAST_PRESENT: list = [None, None]  # (weak reference to a presence array, its keys)
_LAST_COUNT: list = [None, 0]  # (weakref to a presence array, its count)


def form_of(y, present, xp) -> tuple:
    """``(idx, vals, dense, present, size, nvals)`` of a dense result: ``y`` (every
    position's value; an array gbdist made and no one else holds: zeroed in place where
    absent when it is kept) and ``present`` (bool flags, None: every position; may be a
    shared read-only array, never written). Full when every position is present; bitmap
    when the sparse form would take more memory (``nvals`` · (8 + itemsize) >
    ``size`` · (itemsize + 1), e.g. over 9/16 of the positions for float64); else sparse
    (the present positions' keys and values gathered)."""
    size = int(y.size)
    nvals = size if present is None else count_of(present, xp)
    if nvals == size:
        return None, None, y, None, size, size
    item = y.dtype.itemsize
    if nvals * (8 + item) > size * (item + 1):
        xp.copyto(y, y.dtype.type(0), where=~present)  # 0 where absent (dense_parts)
        return None, None, y, present, size, nvals
    keys = keys_of(present, size, xp)
    return keys, y[keys], None, None, size, nvals


def count_of(present, xp) -> int:
    """The positions flagged in ``present``, counted (a read that waits for the kernel that
    made it), or the count found last time for the same (cached, read-only) presence array:
    a kernel that returns its matrix's non-empty rows again is not waited for."""
    return _last(_LAST_COUNT, present, lambda: int(xp.count_nonzero(present)))


def _last(slot: list, present, make):
    """``slot`` ([weak reference to a presence array, a value]): its value when it holds this
    very array (alive, so never a reused address), else ``make()`` kept there."""
    ref, value = slot
    if ref is not None and ref() is present:
        return value
    value = make()
    try:
        slot[:] = [weakref.ref(present), value]
    except TypeError:
        pass
    return value


def keys_of(present, size: int, xp):
    """The sorted int64 keys of the positions flagged in ``present`` (None: all of
    ``0..size-1``). Shared, never to be written: the keys of every position are made once per
    size; a kernel that returns the same (cached, read-only) presence array again, as the
    plus_times SpMV returns its matrix's non-empty rows, gets the keys found last time."""
    if present is None:
        name = xp.__name__
        keys = _ARANGE.get(name)
        if keys is None or keys.size != size:
            keys = _ARANGE[name] = xp.arange(size, dtype=np.int64)
        return keys
    return _last(_LAST_PRESENT, present, lambda: xp.flatnonzero(present).astype(np.int64, copy=False))
