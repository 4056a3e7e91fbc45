"""Operands on the device: ONE device CSR class, uploaded once per run and sliced per tile.

The runtime has already checked and canonicalised every operand
(:func:`gbdist.runtime.bind`); here they are only put on the device in the result dtype
(:func:`upload`: host CSR copied once; device CSR used as it is) and cut into the row
ranges of a tile (:meth:`DevCSR.rows`: views of the values and indices, a new row
pointer; the host copy of the row pointer is read once per operand, on first slice).
"""
from __future__ import annotations

import numpy as np

from .. import rows


class DevCSR:
    """A canonical CSR on the device (CuPy arrays)."""

    __slots__ = ("indptr", "indices", "data", "shape", "_host_ptr")

    def __init__(self, indptr, indices, data, shape):
        self.indptr = indptr
        self.indices = indices
        self.data = data
        self.shape = tuple(shape)
        self._host_ptr = None

    @property
    def nnz(self) -> int:
        return int(self.data.shape[0])

    def rows(self, r0: int, r1: int) -> "DevCSR":
        """Rows r0:r1, sharing this one's values and indices."""
        if (r0, r1) == (0, self.shape[0]):
            return self
        import cupy
        if self._host_ptr is None:
            self._host_ptr = cupy.asnumpy(self.indptr).astype(np.int64)
        p0, p1 = int(self._host_ptr[r0]), int(self._host_ptr[r1])
        ip = self.indptr[r0:r1 + 1] - self.indptr.dtype.type(p0)
        return DevCSR(ip, self.indices[p0:p1], self.data[p0:p1], (r1 - r0, self.shape[1]))

    def with_index_type(self, itype) -> "DevCSR":
        if self.indptr.dtype == itype and self.indices.dtype == itype:
            return self
        out = DevCSR(self.indptr.astype(itype), self.indices.astype(itype), self.data, self.shape)
        return out


def upload(v, dtype) -> DevCSR:
    """A bound operand (SciPy CSR on the host, or cupyx CSR) as a device CSR in ``dtype``."""
    import cupy
    if hasattr(v.data, "get"):  # already on the device
        data = v.data if v.data.dtype == dtype else rows.astype(v.data, dtype, cupy)
        return DevCSR(v.indptr, v.indices, data, v.shape)
    return DevCSR(cupy.asarray(v.indptr), cupy.asarray(v.indices),
                  cupy.asarray(v.data.astype(dtype)), v.shape)


def _out_of_range_kernel():
    from ...resources import read
    from . import cache  # its module cache is per device: no cache here
    return cache.module("range_check", read("kernels", "range_check.cuh"),
                        ("gb_out_of_range_f32",)).get_function("gb_out_of_range_f32")


def within_exponent(ops, e: int) -> bool:
    """Whether every stored value of ``ops`` (float32 DevCSR) is 0 or within [2^-e, 2^e]:
    where a float split's rounding bound holds (gbdist/algebra/rounding.py). One pass
    over the values of each operand and one read of a flag (kernels/range_check.cuh)."""
    import cupy
    flag = cupy.zeros(1, dtype=cupy.int32)
    fn = _out_of_range_kernel()
    for o in ops:
        if o.data.dtype != np.float32:
            return False
        if o.nnz:
            blocks = max(1, min(1024, (o.nnz + 255) // 256))
            fn((blocks,), (256,), (o.data, np.int64(o.nnz), np.float32(2.0 ** -e),
                                   np.float32(2.0 ** e), flag))
    return not int(flag.get()[0])


def index_type(ops) -> tuple[str, object]:
    """("int", int32) unless an operand needs 64-bit indices."""
    import cupy
    big = any(o.nnz >= 2**31 - 1 or o.shape[1] >= 2**31 - 1 for o in ops)
    return ("long long", cupy.int64) if big else ("int", cupy.int32)
