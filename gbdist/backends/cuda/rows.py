"""Fused device passes of the per-call checks (kernels/rows.cuh).

The CUDA path of :func:`gbdist.inputs.check_device_csr`,
:func:`gbdist.backends.rows.identical_pairs` / :func:`~gbdist.backends.rows.apply_self_value`,
:func:`gbdist.backends.rows.condition_rows` and :class:`gbdist.runtime.direct.Repair` runs
through these few kernels instead of dozens of CuPy operations, so each costs a
launch or two and at most one transfer of a few numbers. They compute the same
values as the NumPy paths of those functions (the GPU tests compare them).

Instantiated for float/double values and int/long long indices; other dtypes
take the generic CuPy path (:func:`supported` says which). Compiled once per
process and device (RawModule with name_expressions; NVRTC, no system headers), in
the backend's one module cache (:mod:`gbdist.backends.cuda.cache`).
"""
from __future__ import annotations

import functools

import numpy as np

from ...resources import read
from . import cache
from ..hashing import hash_matches

_VALUES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_INDICES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}
THREADS = 256
MAX_BLOCKS = 1024
FACTS = ("first", "last", "decreasing", "lo", "hi", "nan", "inf", "max_abs")


def names() -> tuple[str, ...]:
    """Every kernel instantiation the module holds (name_expressions)."""
    out = ["gb_facts_init<long long>"]
    for t in _VALUES.values():
        for i in _INDICES.values():
            out += [f"gb_csr_check<{t}, {i}>", f"gb_row_hash<{t}, {i}>",
                    f"gb_pairs_verify<{t}, {i}>", f"gb_condition<{t}, {i}>"]
        out.append(f"gb_count_nonfinite<{t}>")
    out += [f"gb_row_sums<{i}>" for i in _INDICES.values()]
    out += [f"gb_csr_unsorted<{i}>" for i in _INDICES.values()]
    out += ["gb_convert<float, double>", "gb_convert<double, float>"]
    return tuple(out)


@functools.lru_cache(maxsize=1)
def source() -> str:
    return read("kernels", "rows.cuh")


def supported(values, *indices) -> bool:
    """Whether the kernels are instantiated for these CuPy arrays' dtypes."""
    return np.dtype(values.dtype) in _VALUES and all(np.dtype(a.dtype) in _INDICES for a in indices)


def _fn(name: str):
    return cache.module("rows", source(), _NAMES()).get_function(name)


@functools.lru_cache(maxsize=1)
def _NAMES() -> tuple[str, ...]:
    return names()


def _blocks(work: int) -> int:
    return max(1, min(MAX_BLOCKS, (work + THREADS - 1) // THREADS))


def _tv(values) -> str:
    return _VALUES[np.dtype(values.dtype)]


def _ti(index) -> str:
    return _INDICES[np.dtype(index.dtype)]


def check_facts(indptr, indices, data) -> dict:
    """The validation facts of a CSR operand (``indptr`` None: a dense value array, every
    value live), in one kernel and ONE transfer: indptr[0], indptr[-1], the number of
    decreasing steps, min and max column index and the NaN / ±inf counts over the first
    clamp(indptr[-1], 0, n) entries, and max |x| over their non-NaN values."""
    import cupy
    facts = cupy.empty(8, dtype=cupy.int64)
    _fn("gb_facts_init<long long>")((1,), (32,), (facts,))
    n = int(data.shape[0])
    if indptr is None:
        dummy = cupy.zeros(1, dtype=cupy.int32)
        _fn(f"gb_csr_check<{_tv(data)}, int>")((_blocks(n),), (THREADS,),
                                               (dummy, np.int64(-1), dummy, data, np.int64(n), facts))
    else:
        nrows = int(indptr.shape[0]) - 1
        if indices.dtype != indptr.dtype:  # kernels take one index type: the wider one
            indptr, indices = indptr.astype(np.int64), indices.astype(np.int64)
        ti = _ti(indptr)
        _fn(f"gb_csr_check<{_tv(data)}, {ti}>")((_blocks(max(n, nrows)),), (THREADS,),
                                                (indptr, np.int64(nrows), indices, data, np.int64(n),
                                                 facts))
    host = facts.get()
    out = {k: int(v) for k, v in zip(FACTS, host)}
    out["max_abs"] = float(host[7:8].view(np.float64)[0])
    return out


def row_hashes(indptr, indices, data):
    """:func:`gbdist.backends.rows.row_hashes` of canonical device CSR rows (uint64), one kernel."""
    import cupy
    nrows = int(indptr.shape[0]) - 1
    out = cupy.empty(max(nrows, 0), dtype=cupy.uint64)
    if nrows > 0:
        _fn(f"gb_row_hash<{_tv(data)}, {_ti(indptr)}>")((_blocks(nrows * 32),), (THREADS,),
                                                        (indptr, indices, data, np.int64(nrows), out))
    return out


def _candidates(left, right):
    """(i, j) of every pair of rows with equal hashes: one sort, two searches and ONE
    transfer (the number of candidates). None when there is none."""
    import cupy
    lp, li, ld = left
    rp, ri, rd = right
    same = lp is rp and li is ri and ld is rd
    ha = row_hashes(lp, li, ld)
    hb = ha if same else row_hashes(rp, ri, rd)
    return hash_matches(ha, hb, cupy)  # the matching step is the host path's, run with CuPy


def _verify(left, right, i, j, out=None, value=0.0):
    import cupy
    lp, li, ld = left
    rp, ri, rd = right
    npairs = int(i.shape[0])
    ok = cupy.empty(npairs, dtype=cupy.uint8)
    write = out is not None
    dest = out if write else cupy.zeros(1, dtype=ld.dtype)
    ldo = int(out.shape[1]) if write else 0
    _fn(f"gb_pairs_verify<{_tv(ld)}, {_ti(lp)}>")(
        (_blocks(npairs * 32),), (THREADS,),
        (lp, li, ld, rp, ri, rd, i, j, np.int64(npairs), ok, np.int32(1 if write else 0), dest,
         np.int64(ldo), np.float64(value)))
    return ok


def same_types(left, right) -> bool:
    """Both operands' arrays in one instantiated (value, index) pair of types."""
    (lp, li, ld), (rp, ri, rd) = left, right
    return (supported(ld, lp, li) and ld.dtype == rd.dtype
            and len({np.dtype(a.dtype) for a in (lp, li, rp, ri)}) == 1)


def identical_pairs(left, right):
    """:func:`gbdist.backends.rows.identical_pairs` on the device: (i, j) int64 CuPy arrays of the
    verified equal rows (two transfers: the candidate count and the verified count)."""
    import cupy
    empty = (cupy.zeros(0, dtype=cupy.int64), cupy.zeros(0, dtype=cupy.int64))
    cand = _candidates(left, right)
    if cand is None:
        return empty
    i, j = cand
    ok = _verify(left, right, i, j).astype(bool)
    return i[ok], j[ok]


def write_self_value(out, left, right, value: float) -> None:
    """Write ``value`` into the C-contiguous device matrix ``out`` (the data's dtype) at every
    verified equal pair of rows whose entry is finite; ONE transfer (the candidate count)."""
    cand = _candidates(left, right)
    if cand is not None:
        _verify(left, right, cand[0], cand[1], out, value)


def write_at(out, i, j, value: float):
    """``out[i, j] = value`` where that entry is finite (the verified equal pairs of
    :func:`identical_pairs`, as ``gb_pairs_verify`` writes them): no transfer."""
    import cupy
    if i.shape[0]:
        v = out[i, j]
        out[i, j] = cupy.where(cupy.isfinite(v), out.dtype.type(value), v)
    return out


def condition(indptr, data, ncols: int, shift: bool, scale: bool):
    """:func:`gbdist.backends.rows.condition_rows` on the device: one kernel, no transfer."""
    nrows = int(indptr.shape[0]) - 1
    out = data.copy()  # entries past indptr[-1] (never read) keep their values, as on the host
    fi = np.finfo(data.dtype)
    _fn(f"gb_condition<{_tv(data)}, {_ti(indptr)}>")(
        (_blocks(max(nrows, 1) * 32),), (THREADS,),
        (indptr, data, np.int64(nrows), np.int64(ncols), np.int32(1 if shift else 0),
         np.int32(1 if scale else 0), np.int32(fi.minexp), out))
    return out


def row_sums(indptr, values):
    """Each row's float64 ``values`` added in an order fixed by the entries' offsets in the
    row (one warp per row: equal rows get equal sums, bit for bit); no transfer."""
    import cupy
    nrows = int(indptr.shape[0]) - 1
    sums = cupy.zeros(max(nrows, 0), dtype=cupy.float64)
    if nrows > 0:
        _fn(f"gb_row_sums<{_ti(indptr)}>")((_blocks(nrows * 32),), (THREADS,),
                                           (indptr, values, np.int64(nrows), sums))
    return sums


def canonical(indptr, indices) -> bool:
    """Whether every row of a checked CSR (indptr nondecreasing, indices in range) has
    strictly increasing column indices: sorted, no duplicates. One kernel, one transfer."""
    import cupy
    nrows = int(indptr.shape[0]) - 1
    if nrows <= 0:
        return True
    if indices.dtype != indptr.dtype:
        indptr, indices = indptr.astype(np.int64), indices.astype(np.int64)
    count = cupy.zeros(1, dtype=cupy.uint64)
    _fn(f"gb_csr_unsorted<{_ti(indptr)}>")((_blocks(nrows * 32),), (THREADS,),
                                           (indptr, indices, np.int64(nrows), count))
    return int(count.get()[0]) == 0


def count_nonfinite(x) -> int:
    """The number of NaN / ±inf entries of a C-contiguous float32/float64 CuPy array:
    one fused pass and one transfer."""
    import cupy
    count = cupy.zeros(1, dtype=cupy.uint64)
    n = int(x.size)
    if n:
        _fn(f"gb_count_nonfinite<{_tv(x)}>")((_blocks(n),), (THREADS,), (x, np.int64(n), count))
    return int(count.get()[0])


def convert(x, dtype):
    """A C-contiguous float32/float64 CuPy array in the other of the two types, subnormals
    kept (``cupy.ndarray.astype`` flushes them: CuPy compiles with -ftz=true)."""
    import cupy
    out = cupy.empty(x.shape, dtype=dtype)
    n = int(x.size)
    if n:
        _fn(f"gb_convert<{_tv(x)}, {_VALUES[np.dtype(dtype)]}>")((_blocks(n),), (THREADS,),
                                                               (x, np.int64(n), out))
    return out
