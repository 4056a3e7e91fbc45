"""Device CSR operands and results of the CUDA graph kernels: a CSR operand's parts as
contiguous arrays of one index type, a result as cupyx CSR (or :class:`DeviceCSR` for the
dtypes cupyx lacks), a null pointer for an absent array."""
from __future__ import annotations

import numpy as np

from ...errors import InputError
from ..base import DeviceCSR, cupyx_csr
from . import graph_codegen as gc


def make_csr(data, indices, indptr, shape):
    """cupyx CSR where cupyx supports the dtype, else :class:`DeviceCSR`.

    The kernels' results are valid by construction (``indptr[-1] == data.size``, indices
    in range), so where the installed CuPy has the pre-validated constructor
    (``_from_parts``, CuPy >= 14.1) and the indices are int32 (the dtype cupyx would keep),
    the result skips the tuple constructor's checks: a read of ``indptr``'s ends that waits
    for the kernels, and an index-dtype scan. Else the public constructor."""
    if data.dtype.char in "?fd":
        return cupyx_csr(data, indices, indptr, shape, valid=True)
    return DeviceCSR(data, indices, indptr, tuple(int(s) for s in shape))


def _csr_parts(M, what: str, index=None):
    """(indptr, indices, data) of a device CSR operand, indices in ``index`` dtype if given."""
    import cupy
    try:
        ptr, idx, val = M.indptr, M.indices, M.data
    except AttributeError:
        raise InputError(f"{what} must be a CSR matrix on the device", expected="cupyx csr_matrix",
                         got=type(M).__name__) from None
    if not all(isinstance(a, cupy.ndarray) for a in (ptr, idx, val)):
        raise InputError(f"{what} must live on the device", got=type(ptr).__name__,
                         hint="use the reference or compiled kernels for host data")
    it = np.dtype(index) if index is not None else np.promote_types(ptr.dtype, idx.dtype)
    gc.index_ctype(it)
    gc.ctype(val.dtype, f"values of {what}")
    # kernels read raw memory: a strided or broadcast array (stride 0) must become dense
    c = cupy.ascontiguousarray
    return c(ptr.astype(it, copy=False)), c(idx.astype(it, copy=False)), c(val)


def _ptr(a):
    """A device array, or a null pointer for None."""
    return np.uint64(0) if a is None else a
