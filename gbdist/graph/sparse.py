"""Array plumbing shared by the graph objects and operations, on NumPy or CuPy (``xp``).

Entries of a matrix are handled as sorted int64 *keys* ``i * ncols + j`` with their
values (a vector's keys are its indices): union, intersection, masks and write-back are
then sorted-array merges (``searchsorted``), the same code on the host and the device.
Nothing here imports CuPy at import time.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from ..backends.graph_reference import owners
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


class DeviceCSR:
    """A canonical CSR of CuPy arrays for the integer types, which cupyx.scipy.sparse does
    not hold (it takes bool, float32/64 and complex only). Read like a cupyx CSR: ``data``,
    ``indices``, ``indptr``, ``shape``, ``nnz``, ``dtype``; ``get()`` is the SciPy CSR."""

    has_canonical_format = True
    has_sorted_indices = True
    format = "csr"

    def __init__(self, data, indices, indptr, shape):
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = (int(shape[0]), int(shape[1]))

    nnz = property(lambda self: int(self.data.size))
    dtype = property(lambda self: self.data.dtype)

    def copy(self):
        return DeviceCSR(self.data.copy(), self.indices.copy(), self.indptr.copy(), self.shape)

    def astype(self, dtype):
        return make_csr(self.data.astype(dtype), self.indices, self.indptr, self.shape, True)

    def get(self):
        return sps.csr_matrix((self.data.get(), self.indices.get(), self.indptr.get()),
                              shape=self.shape)

    def __repr__(self):
        return f"DeviceCSR({self.shape}, nnz={self.nnz}, dtype={self.dtype})"


def make_csr(data, indices, indptr, shape, on_device: bool):
    """SciPy CSR on the host; on the device cupyx CSR, or :class:`DeviceCSR` for integers."""
    if on_device:
        if np.dtype(data.dtype).kind in "iu":
            return DeviceCSR(data, indices, indptr, shape)
        return cupyx_sparse().csr_matrix((data, indices, indptr), shape=shape)
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


def member(keys, sorted_keys, xp=np):
    """Bool per key: is it in ``sorted_keys`` (sorted, unique)?"""
    if sorted_keys.size == 0 or keys.size == 0:
        return xp.zeros(keys.shape, dtype=bool)
    pos = xp.minimum(xp.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return sorted_keys[pos] == keys


def locate(keys, sorted_keys, xp=np):
    """Positions of ``keys`` in ``sorted_keys`` and whether each was found."""
    if sorted_keys.size == 0:
        return xp.zeros(keys.shape, dtype=np.int64), xp.zeros(keys.shape, dtype=bool)
    pos = xp.minimum(xp.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return pos, sorted_keys[pos] == keys


def merge_union(ka, va, kb, vb, both, dtype, xp=np):
    """Union of two sorted key sets: ``both(va, vb)`` where both hold a key, the one
    present elsewhere (cast to ``dtype``). Returns sorted keys and values."""
    pos, found = locate(ka, kb, xp)
    in_b_used = xp.zeros(kb.shape, dtype=bool)
    in_b_used[pos[found]] = True
    keys = xp.concatenate([ka, kb[~in_b_used]])
    vals_a = xp.asarray(va).astype(dtype, copy=True)
    if bool(found.any()):
        vals_a[found] = both(va[found], vb[pos[found]])
    vals = xp.concatenate([vals_a, xp.asarray(vb[~in_b_used]).astype(dtype)])
    order = xp.argsort(keys, kind="stable")
    return keys[order], vals[order]


def merge_intersection(ka, va, kb, vb, both, xp=np):
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
