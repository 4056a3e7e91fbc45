"""The compiled backend's passes over host rows, registered with :mod:`gbdist.backends.rows`
(so that the runtime's binding and the identical-row search run compiled, with the same
values as NumPy's), the one index type all operands of a call share, and the mirror that
completes a diagonal tile computed on and above its diagonal."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from .threads import run_blocks as _run_blocks


def _available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def one_index_type(data: dict) -> dict:
    """The operands with one index type for all their index arrays, so that each kernel is
    compiled for one signature: int32 when every operand's entries and columns fit (the
    type SciPy gives), else int64. An operand already of that type is not copied."""
    mats = {id(v): v for v in data.values()}.values()
    big = max((max(v.indptr[-1] if v.indptr.shape[0] else 0, v.shape[1]) for v in mats),
              default=0)
    it = np.dtype(np.int32 if big < 2**31 - 1 else np.int64)
    if all(v.indices.dtype == it and v.indptr.dtype == it for v in mats):
        return data
    done = {}
    for v in mats:
        if v.indices.dtype == it and v.indptr.dtype == it:
            done[id(v)] = v
            continue
        out = sps.csr_matrix(v.shape, dtype=v.dtype)
        # set the arrays directly: the constructor may pick another index type
        out.data, out.indices, out.indptr = (v.data, v.indices.astype(it, copy=False),
                                             v.indptr.astype(it, copy=False))
        done[id(v)] = out
    return {k: done[id(v)] for k, v in data.items()}


def condition_host(indptr, data, ncols: int, inv):
    """:func:`gbdist.backends.rows.condition_rows` for host rows in one compiled pass
    (``helpers.condition_rows``; the same values), or None without Numba."""
    if not _available():
        return None
    from . import helpers
    out = np.empty(data.shape[0], dtype=np.float64)
    _run_blocks(helpers.condition_rows,
                (indptr, data, np.int64(ncols), bool(inv.shift), bool(inv.scale),
                 np.int64(np.finfo(data.dtype).minexp), out),
                indptr.shape[0] - 1, work=4 * data.shape[0])
    return out.astype(data.dtype, copy=False)


_NEGZERO = {np.dtype(np.float32): (np.uint32, np.uint64(0x80000000)),
            np.dtype(np.float64): (np.uint64, np.uint64(0x8000000000000000))}


def _bits(data):
    """The values' bit patterns (a view, no copy) and the pattern of -0.0, or None for a
    type the kernels do not hash (NumPy does)."""
    kind = _NEGZERO.get(data.dtype)
    if kind is None or not data.flags.c_contiguous:
        return None
    return data.view(kind[0]), kind[1]


def hashes_host(indptr, indices, data):
    """:func:`gbdist.backends.rows.row_hashes` of host rows in one compiled pass per row
    (``helpers.row_hashes``; the same values), or None where NumPy must do it."""
    b = _bits(data)
    if b is None:
        return None
    from . import helpers
    n = indptr.shape[0] - 1
    out = np.empty(max(n, 0), dtype=np.uint64)
    if n > 0:
        _run_blocks(helpers.row_hashes, (indptr, indices, b[0], b[1], out), n,
                    work=4 * indices.shape[0] + n)
    return out


def same_host(left, right, i, j):
    """Which candidate pairs (i, j) of :func:`gbdist.backends.rows.identical_pairs` are
    equal rows, checked entry by entry in one compiled pass (``helpers.same_rows``)."""
    lb, rb = _bits(left[2]), _bits(right[2])
    if lb is None or rb is None or left[2].dtype != right[2].dtype:
        return None
    from . import helpers
    ok = np.empty(i.shape[0], dtype=np.bool_)
    helpers.same_rows(left[0], left[1], lb[0], right[0], right[1], rb[0], lb[1],
                      i.astype(np.int64, copy=False), j.astype(np.int64, copy=False), ok)
    return ok


def mirror_lower(D: np.ndarray, strip: int = 64) -> None:
    """Fill the square ``D``'s cells below its diagonal from their mirror image in place
    (``D[i, j] = D[j, i]`` for i > j; the upper triangle is read only), by strips of 64 rows
    (NumPy: nothing to compile on a first call). Measured on a fresh 3,430² float64 tile on
    2 cores: 11 ms, against 8 ms for a Numba loop over the thread pool that cost its own
    compilation on a first call (about 0.3 s with the larger kernel, hG1's figures)."""
    n = D.shape[0]
    cols = np.arange(n)
    for r in range(1, n, strip):
        e = min(n, r + strip)
        below = cols[None, :e] < np.arange(r, e)[:, None]  # j < i in rows r:e
        np.copyto(D[r:e, :e], D[:e, r:e].T, where=below)
