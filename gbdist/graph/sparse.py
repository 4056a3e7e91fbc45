"""Array plumbing shared by the graph objects and operations, on NumPy or CuPy (``xp``).

Entries of a matrix are handled as sorted int64 *keys* ``i * ncols + j`` with their
values (a vector's keys are its indices): union, intersection, masks and write-back are
then sorted-array merges (``searchsorted``), or, when the keys fill at least
:data:`DENSE_SHARE` of the key space (full vectors, frontiers grown large), scatters
into dense arrays of the key space; the same code on the host and the device.
Nothing here imports CuPy at import time.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from ..backends.base import DeviceCSR, cupyx_csr
from ..backends.graph_fast import owners
from ..errors import InputError

DTYPES = (np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32),
          np.dtype(np.float64))


def cupy():
    import cupy as cp  # deferred: device paths only
    return cp


def cupyx_sparse():
    import cupyx.scipy.sparse as cps
    return cps


def xp_of(on_device: bool):
    return cupy() if on_device else np


def check_dtype(dtype, label: str) -> np.dtype:
    """One of the five graph types; other integers widen to int64, float16 to float32."""
    dt = np.dtype(dtype)
    if dt in DTYPES:
        return dt
    if dt.kind in "iu":
        return np.dtype(np.int64)
    if dt == np.float16:
        return np.dtype(np.float32)
    raise InputError(f"{label} has an unsupported dtype", got=str(dt),
                     expected="bool, int32, int64, float32 or float64",
                     hint=f"cast it first, e.g. {label}.astype(np.float64)")


def make_csr(data, indices, indptr, shape, on_device: bool, *, valid: bool = False):
    """SciPy CSR on the host; on the device cupyx CSR, or :class:`DeviceCSR` for integers.
    ``valid``: a canonical CSR by construction (a kernel wrote it): on the device, no checks
    (:func:`gbdist.backends.base.cupyx_csr`)."""
    if on_device:
        if np.dtype(data.dtype).kind in "iu":
            return DeviceCSR(data, indices, indptr, shape)
        return cupyx_csr(data, indices, indptr, shape, valid=valid)
    return sps.csr_matrix((data, indices, indptr), shape=shape)


def to_device_csr(csr):
    """A host CSR on the device (cupyx, or DeviceCSR for integers)."""
    cp = cupy()
    return make_csr(cp.asarray(csr.data), cp.asarray(csr.indices), cp.asarray(csr.indptr),
                    csr.shape, True)


def transpose_csr(csr, on_device: bool):
    """The canonical CSR of the transpose (any xp, any dtype)."""
    xp = xp_of(on_device)
    m, n = csr.shape
    keys = csr_keys(csr, xp)
    rows = keys // max(n, 1)
    cols = keys - rows * n
    tkeys = cols * m + rows
    order = xp.argsort(tkeys, kind="stable")
    return keys_csr(tkeys[order], csr.data[order], (n, m), on_device)


def index_dtype(*sizes) -> np.dtype:
    return np.dtype(np.int32) if max(sizes, default=0) < 2**31 - 1 else np.dtype(np.int64)


def csr_keys(csr, xp=np):
    """Sorted keys ``i * ncols + j`` of a canonical CSR's stored entries (row-major order)."""
    m, n = csr.shape
    rows = owners(xp.diff(csr.indptr), xp)
    return rows * n + csr.indices.astype(np.int64)


def keys_csr(keys, values, shape, on_device: bool):
    """The canonical CSR of sorted unique ``keys`` with ``values``."""
    xp = xp_of(on_device)
    m, n = shape
    keys = xp.asarray(keys, dtype=np.int64)
    rows = keys // n if n else keys
    cols = keys - rows * n
    it = index_dtype(m, n, int(keys.size))
    indptr = xp.zeros(m + 1, dtype=it)
    if m:
        indptr[1:] = xp.cumsum(xp.bincount(rows, minlength=m)).astype(it)
    return make_csr(xp.asarray(values), cols.astype(it), indptr, shape, on_device)


DENSE_SHARE = 1 / 8
"""Key sets holding together at least this share of their key space (a vector's size, a
matrix's m·n) are merged through dense arrays of the key space (SuiteSparse's "bitmap" and
"full" formats): scatters and gathers, O(space + entries), no sort and no search. Sparser
sets are merged as sorted keys (``searchsorted``)."""


def dense_space(space, *counts) -> bool:
    """Whether key sets of these sizes in a key space of ``space`` take the dense path."""
    return space is not None and space > 0 and sum(counts) >= DENSE_SHARE * space


def present_of(keys, space: int, xp=np):
    """A bool array of the key space, True at ``keys``."""
    out = xp.zeros(space, dtype=bool)
    out[keys] = True
    return out


def member(keys, sorted_keys, xp=np, space=None):
    """Bool per key: is it in ``sorted_keys`` (sorted, unique)? With the key space's size
    ``space`` given, a dense set is looked up through a bool array instead of searched."""
    if sorted_keys.size == 0 or keys.size == 0:
        return xp.zeros(keys.shape, dtype=bool)
    if sorted_keys.size == space:  # every key of the space: all in
        return xp.ones(keys.shape, dtype=bool)
    if dense_space(space, keys.size, sorted_keys.size):
        return present_of(sorted_keys, space, xp)[keys]
    pos = xp.minimum(xp.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return sorted_keys[pos] == keys


def locate(keys, sorted_keys, xp=np):
    """Positions of ``keys`` in ``sorted_keys`` and whether each was found."""
    if sorted_keys.size == 0:
        return xp.zeros(keys.shape, dtype=np.int64), xp.zeros(keys.shape, dtype=bool)
    pos = xp.minimum(xp.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return pos, sorted_keys[pos] == keys


def _dense_values(keys, vals, space, xp):
    """``vals`` scattered into an array of the key space (0 elsewhere); ``vals`` itself
    when ``keys`` is every key."""
    if keys.size == space:
        return vals
    out = xp.zeros(space, dtype=vals.dtype)
    out[keys] = vals
    return out


def merge_union(ka, va, kb, vb, both, dtype, xp=np, space=None, lone=None):
    """Union of two sorted key sets: ``both(va, vb)`` where both hold a key, the one
    present elsewhere (cast to ``dtype``). Returns sorted keys and values. ``space``: the
    key space's size, for the dense path (:data:`DENSE_SHARE`). ``lone``: the values
    written where one side alone holds a key, aligned with ``va`` / ``vb`` (default: those
    themselves)."""
    va, vb = xp.asarray(va), xp.asarray(vb)
    la, lb = (va, vb) if lone is None else (xp.asarray(lone[0]), xp.asarray(lone[1]))
    if dense_space(space, ka.size, kb.size):
        return _union_dense(ka, va, kb, vb, both, dtype, xp, space, la, lb)
    pos, found = locate(ka, kb, xp)
    in_b_used = xp.zeros(kb.shape, dtype=bool)
    in_b_used[pos[found]] = True
    keys = xp.concatenate([ka, kb[~in_b_used]])
    vals_a = la.astype(dtype, copy=True)
    if bool(found.any()):
        vals_a[found] = both(va[found], vb[pos[found]])
    vals = xp.concatenate([vals_a, lb[~in_b_used].astype(dtype)])
    order = xp.argsort(keys, kind="stable")
    return keys[order], vals[order]


def _union_dense(ka, va, kb, vb, both, dtype, xp, space, la=None, lb=None):
    la, lb = va if la is None else la, vb if lb is None else lb  # the lone entries' values
    full_a, full_b = ka.size == space, kb.size == space
    if full_a and full_b:  # both full: one element-wise op, the keys are 0..space-1
        return ka, xp.asarray(both(va, vb)).astype(dtype, copy=False)
    if full_a or full_b:  # one full: it is the union; the other's entries are combined
        kf, vf, ks, vs = (ka, va, kb, vb) if full_a else (kb, vb, ka, va)
        out = (la if full_a else lb).astype(dtype, copy=True)
        if ks.size:
            out[ks] = both(vf[ks], vs) if full_a else both(vs, vf[ks])
        return kf, out
    present = present_of(ka, space, xp)
    in_a = present[kb]  # b's entries that a holds too
    present[kb] = True
    out = xp.empty(space, dtype=dtype)  # read only where present
    out[ka] = la.astype(dtype, copy=False)
    overlap = bool(in_a.any())
    if overlap:  # a's values where both hold the key, before b's overwrite them
        kbb = kb[in_a]
        if kbb.size * 16 < space:
            a_at = va[xp.searchsorted(ka, kbb)]
        else:
            a_at = _dense_values(ka, va, space, xp)[kbb]
    out[kb] = lb.astype(dtype, copy=False)
    if overlap:
        out[kbb] = both(a_at, vb[in_a])
    keys = xp.flatnonzero(present).astype(np.int64, copy=False)
    return keys, out[keys]


def merge_intersection(ka, va, kb, vb, both, xp=np, space=None):
    """Intersection of two sorted key sets: ``both(va, vb)`` where both hold a key."""
    if space is not None and space > 0:
        if ka.size == space:  # a full: b's keys, a gathered at them
            return kb, both(va[kb], vb)
        if kb.size == space:
            return ka, both(va, vb[ka])
        if dense_space(space, ka.size, kb.size):
            found = present_of(kb, space, xp)[ka]
            keys = ka[found]
            return keys, both(va[found], _dense_values(kb, vb, space, xp)[keys])
    pos, found = locate(ka, kb, xp)
    return ka[found], both(va[found], vb[pos[found]])


def index_list(spec, n: int, label: str, xp=np):
    """``None`` (all), a slice, an int, or a sequence of ints as an int64 index array
    (negative indices count from the end, as in NumPy); out of range is an InputError."""
    if spec is None:
        return np.arange(n, dtype=np.int64)
    if isinstance(spec, slice):
        return np.arange(n, dtype=np.int64)[spec]
    arr = np.asarray(spec.get() if hasattr(spec, "get") and not isinstance(spec, np.ndarray)
                     else spec)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.dtype == np.bool_ and arr.size == n:
        return np.nonzero(arr)[0].astype(np.int64)
    if arr.size and arr.dtype.kind not in "iu":
        raise InputError(f"{label} must be integers", got=str(arr.dtype),
                         hint="pass None, a slice or a sequence of ints")
    arr = arr.astype(np.int64).ravel()
    if arr.size and (arr.min() < -n or arr.max() >= n):
        raise InputError(f"{label} out of range", expected=f"indices in [-{n}, {n})",
                         got=f"min {arr.min()}, max {arr.max()}")
    return np.where(arr < 0, arr + n, arr)
