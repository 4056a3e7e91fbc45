"""Device top-k selection and merging for k-nearest neighbours (kernels/topk.cuh).

:func:`select_k` keeps, per row of a device distance block, the k smallest
entries by (distance, column), NaN last; :func:`merge_k` merges two sorted
candidate lists per row. Both follow :func:`gbdist.backends.cpu.select_k` /
:func:`gbdist.backends.cpu.merge_k` (the CPU reference) exactly: ties go to the
lower index, -0.0 equals 0.0, NaN sorts after every number.

k <= :data:`MAX_K` runs the warp-per-row kernel ``gb_topk``; larger k falls
back to CuPy sorts (slower, same order). Kernels are compiled once per process
and device (RawModule with name_expressions; NVRTC, no system headers), in the
backend's one module cache (:mod:`gbdist.backends.cuda.cache`).
"""
from __future__ import annotations

import functools

import numpy as np

from ...errors import InputError
from ...resources import read
from . import cache

MAX_K = 256
WARPS = 4
_LIST_SIZES = (64, 128, 256)
_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


COLUMN_SELECT = False
""":func:`select_k_columns` by ``gb_topk_cols`` (the columns read in place) instead of
``gb_transpose`` then ``select_k``. Off: on an H200 (2026-11-28) its answers were equal but
it took 1.3-2.7x the transposed copy and selection (a thread per column run keeps too few
loads in flight); checked on the host (tests/backends/test_topk_cols_host.py) and on a GPU
(tests/backends/test_topk_cols_gpu.py)."""
COLS_MAX_K = 32  # the columns' lists live in registers: S = 16 or 32 keys a thread
_COLS_THREADS = 1 << 18  # threads the column runs aim at (132 SMs x 2,048 on an H100)
_COLS_SIZES = (16, 32)


def _cols_name(ctype: str, size: int) -> str:
    return f"gb_topk_cols<{ctype}, {size}>"


def _select_name(ctype: str, size: int) -> str:
    return f"gb_topk<{ctype}, {size}, {WARPS}>"


def _merge_name(ctype: str) -> str:
    return f"gb_topk_merge<{ctype}>"


_WORDS = {4: "unsigned int", 8: "unsigned long long"}


def _transpose_name(itemsize: int) -> str:
    return f"gb_transpose<{_WORDS[itemsize]}>"


def names(columns: bool = True) -> tuple[str, ...]:
    """Every kernel instantiation the module holds (name_expressions); ``columns``: with
    gb_topk_cols' (compiled only while :data:`COLUMN_SELECT` is on: no first call pays
    for kernels it cannot run)."""
    out = []
    for ctype in _TYPES.values():
        out += [_select_name(ctype, s) for s in _LIST_SIZES]
        out.append(_merge_name(ctype))
        if columns:
            out += [_cols_name(ctype, s) for s in _COLS_SIZES]
    return tuple(out) + tuple(_transpose_name(w) for w in _WORDS)


@functools.lru_cache(maxsize=1)
def source() -> str:
    return read("kernels", "topk.cuh")


def _module():
    return cache.module("topk", source(), _NAMES(bool(COLUMN_SELECT)))


@functools.lru_cache(maxsize=2)
def _NAMES(columns: bool) -> tuple[str, ...]:
    return names(columns)


def _list_size(k: int) -> int:
    for s in _LIST_SIZES:
        if k <= s:
            return s
    raise ValueError(k)


def _check(D, contiguous: bool = True):
    """D as the selection kernels read it: a 2-D CuPy array of float32 or float64 (other
    dtypes as float64), C-contiguous unless ``contiguous`` is False."""
    import cupy
    if not isinstance(D, cupy.ndarray) or D.ndim != 2:
        raise InputError("select_k needs a 2-D CuPy array", got=type(D).__name__)
    if D.dtype not in _TYPES:
        D = D.astype(np.float64)
    return cupy.ascontiguousarray(D) if contiguous else D


def select_k(D, k: int, offset: int = 0):
    """Per row of the device array D: the min(k, width) smallest (distance, column + offset)
    pairs, sorted by (distance, column), NaN last. Returns CuPy (distances, int64 indices)."""
    import cupy
    D = _check(D)
    rows, width = D.shape
    kk = min(int(k), width)
    if width >= 2**32 - 1:
        raise InputError("a distance tile is too wide for top-k", got=f"{width} columns",
                         hint="use a smaller working_memory")
    out_d = cupy.empty((rows, kk), dtype=D.dtype)
    out_i = cupy.empty((rows, kk), dtype=cupy.int64)
    if rows == 0 or kk == 0:
        return out_d, out_i
    if kk > MAX_K:
        return _select_sort(D, kk, offset)
    fn = _module().get_function(_select_name(_TYPES[D.dtype], _list_size(kk)))
    blocks = int(min(-(-rows // WARPS), 2**31 - 1))
    fn((blocks,), (WARPS * 32,), (D, np.int64(rows), np.int64(width), np.int32(kk), np.int32(kk),
                                  np.int64(offset), out_d, out_i))
    return out_d, out_i


def column_runs(rows: int, width: int, kk: int) -> tuple[int, int]:
    """(runs, chunk): the rows of each column cut into ``runs`` runs of ``chunk`` rows (the
    last to the end), enough threads for the device, every run at least max(64, kk) rows."""
    chunk = max(-(-rows // max(1, -(-_COLS_THREADS // max(width, 1)))), 64, kk)
    return max(1, rows // chunk), chunk


def transpose(D):
    """A C-contiguous copy of the 2-D device array D's transpose: ``gb_transpose`` where D's
    rows are evenly spaced runs of 4- or 8-byte items (a tile, or a row slice of one), D.T
    itself where it is already C-contiguous, else CuPy's copy."""
    import cupy
    if D.ndim != 2:
        raise InputError("transpose needs a 2-D CuPy array", got=f"{D.ndim} dimensions")
    T = D.T
    if T.flags.c_contiguous:
        return T
    rows, cols = D.shape
    size = D.itemsize
    s0, s1 = D.strides
    ld = s0 // size if rows > 1 else cols
    if size not in _WORDS or s1 != size or s0 % size or ld < cols or D.size == 0:
        return cupy.ascontiguousarray(T)
    out = cupy.empty((cols, rows), dtype=D.dtype)
    fn = _module().get_function(_transpose_name(size))
    fn((-(-cols // 32), min(-(-rows // 32), 65535)), (256,),
       (D, np.int64(rows), np.int64(cols), np.int64(ld), out))
    return out


def select_k_columns(D, k: int, offset: int = 0):
    """Per column of the device array D: the min(k, rows) smallest (distance, row + offset)
    pairs, sorted by (distance, row), NaN last: ``select_k(D.T, k, offset)``'s answer. By
    ``gb_topk_cols`` where :data:`COLUMN_SELECT` is on and k <= :data:`COLS_MAX_K`, else
    ``select_k`` of :func:`transpose`'s copy."""
    import cupy
    D = _check(D, contiguous=False)  # transpose reads strided rows in place
    rows, width = D.shape
    kk = min(int(k), rows)
    if not COLUMN_SELECT or kk > COLS_MAX_K or rows >= 2**31 - 1:
        return select_k(transpose(D), k, offset)
    D = cupy.ascontiguousarray(D)
    if width == 0 or kk == 0:
        return cupy.empty((width, kk), dtype=D.dtype), cupy.empty((width, kk), dtype=cupy.int64)
    runs, chunk = column_runs(rows, width, kk)
    part_d = cupy.empty((width, runs * kk), dtype=D.dtype)
    part_r = cupy.empty((width, runs * kk), dtype=cupy.int32)
    size = next(s for s in _COLS_SIZES if kk <= s)
    fn = _module().get_function(_cols_name(_TYPES[D.dtype], size))
    fn((-(-width // 128), runs), (128,), (D, np.int64(rows), np.int64(width), np.int32(kk),
                                         np.int64(chunk), part_d, part_r))
    if runs == 1:
        return part_d, part_r.astype(cupy.int64) + np.int64(offset)
    d, pos = select_k(part_d, kk)  # by (distance, position): position orders rows
    return d, cupy.take_along_axis(part_r, pos, axis=1).astype(cupy.int64) + np.int64(offset)


def _order_key(D):
    """An unsigned image of D whose integer order is (value order, NaN last, -0 == 0)."""
    import cupy
    if D.dtype == np.float32:
        u = D.view(cupy.uint32).copy()
        sign, top = np.uint32(0x80000000), np.uint32(0xFFFFFFFF)
    else:
        u = D.view(cupy.uint64).copy()
        sign, top = np.uint64(0x8000000000000000), np.uint64(0xFFFFFFFFFFFFFFFF)
    u[D == 0] = 0
    neg = (u & sign) != 0
    u = cupy.where(neg, ~u, u | sign)
    u[cupy.isnan(D)] = top
    return u


def _select_sort(D, kk: int, offset: int):
    """Large k: sort each row by value, then by column among equal values (CuPy sorts)."""
    import cupy
    rows, width = D.shape
    key = _order_key(D)
    order = cupy.argsort(key, axis=1)
    sk = cupy.take_along_axis(key, order, axis=1)
    # Group number of each sorted value; (group, column) is the total order.
    grp = cupy.zeros((rows, width), dtype=cupy.int64)
    if width > 1:
        grp[:, 1:] = cupy.cumsum(sk[:, 1:] != sk[:, :-1], axis=1)
    del sk
    comb = grp * np.int64(width) + order.astype(cupy.int64)
    del grp, order
    comb = cupy.sort(comb, axis=1)[:, :kk]
    cols = comb % np.int64(width)
    return cupy.take_along_axis(D, cols, axis=1), cols + np.int64(offset)


def merge_k(d1, i1, d2, i2, k: int):
    """Merge two sorted candidate lists per row into the k best by (distance, index), NaN last."""
    import cupy
    rows = d1.shape[0]
    k = min(int(k), d1.shape[1] + d2.shape[1])
    dt = np.result_type(d1.dtype, d2.dtype)
    if dt not in _TYPES:
        dt = np.dtype(np.float64)
    d1, d2 = (cupy.ascontiguousarray(d.astype(dt, copy=False)) for d in (d1, d2))
    i1, i2 = (cupy.ascontiguousarray(i.astype(cupy.int64, copy=False)) for i in (i1, i2))
    od = cupy.empty((rows, k), dtype=dt)
    oi = cupy.empty((rows, k), dtype=cupy.int64)
    if rows == 0 or k == 0:
        return od, oi
    fn = _module().get_function(_merge_name(_TYPES[dt]))
    threads = 128
    blocks = int(min(-(-rows // threads), 2**31 - 1))
    fn((blocks,), (threads,), (d1, i1, np.int32(d1.shape[1]), d2, i2, np.int32(d2.shape[1]),
                               np.int64(rows), np.int32(k), od, oi))
    return od, oi
