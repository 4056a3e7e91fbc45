"""The degree bins of the CUDA graph kernels (:mod:`.graph`): rows grouped by a per-row key
(an SpGEMM row's size bound, an SpMV row's degree) with two launches of the functor-free
kernels of ``kernels/graph_bins.cuh``, a scan and one host read; the SpMV's bins cached on
the matrix."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..base import MISS, keep, recall
from . import cache
from . import graph_codegen as gc


def _grid(n: int, per_block: int) -> int:
    return int(max(1, -(-n // per_block)))


_BIN_SOURCE = None


_BIN_NAMES = ("gb_bin_count", "gb_bin_scatter", "gb_bin_tails", "gb_spgemm_bound<int>",
              "gb_spgemm_bound<long long>", "gb_compact_rows<unsigned int>", "gb_compact_rows<unsigned long long>",
              "gb_row_span<int>", "gb_row_span<long long>")


def _bin_module():
    """The functor-free kernels of ``kernels/graph_bins.cuh`` (one module per process)."""
    global _BIN_SOURCE
    if _BIN_SOURCE is None:
        from ...resources import read
        src = read("kernels", "graph_bins.cuh")
        _BIN_SOURCE = (src, "graph-bins-" + gc.key(src))
    return cache.module(_BIN_SOURCE[1], _BIN_SOURCE[0], _BIN_NAMES)


def _bin_kernels():
    """(gb_bin_count, gb_bin_scatter, gb_bin_tails)."""
    mod = _bin_module()
    return tuple(mod.get_function(n) for n in ("gb_bin_count", "gb_bin_scatter", "gb_bin_tails"))


_EDGES: dict = {}


def inclusive_sum(src, out) -> None:
    """``out[:] = cumsum(src)`` (1-d device arrays, ``out`` contiguous, int64): ``src`` copied
    into ``out``, then CUB's device scan in place (one C call: CuPy's own ``cumsum`` builds
    three to five launches in Python, ~65 µs of host time each, three times a small SpGEMM
    call), or ``cupy.cumsum`` where this CuPy lacks it."""
    import cupy
    if out.size == 0:
        return
    scan = _cub_scan()
    if scan is None or out.size > 0x7fffffff or not out.flags.c_contiguous:  # CUB scans a copy
        cupy.cumsum(src, out=out)
        return
    if src is not out:
        out[...] = src
    scan(out)


def _cub_scan():
    """CuPy's in-place CUB inclusive sum (``cupy.cuda.cub.device_scan``), or None where this
    CuPy has none."""
    try:
        from cupy.cuda import cub
        scan, op = cub.device_scan, cub.CUPY_CUB_CUMSUM
    except (ImportError, AttributeError):
        return None
    return lambda x: scan(x, op)


def _bins(keys, edges, skip_zero: bool):
    """Row ids grouped by bin: bin b holds the rows with edges[b-1] < key <= edges[b]; the last
    bin the rows above edges[-1]. ``skip_zero``: rows with key 0 are in no bin. Two kernel
    launches, a scan and one read of the counts; rows ascending inside each bin.
    Returns a list of CuPy int64 arrays (one per bin)."""
    b = binned(keys, edges, skip_zero)
    return [b.rows[b.offsets[q]:b.offsets[q + 1]] for q in range(len(b.offsets) - 1)]


def _bin_count(keys, edges, skip_zero: bool):
    """gb_bin_count's pass: (m, ne, blocks, each row's bin, ``ends``: the blocks' counts
    bin-major, scanned in place into their inclusive sums), all on the device."""
    import cupy
    if keys.dtype != cupy.int64 or not keys.flags.c_contiguous:
        keys = cupy.ascontiguousarray(keys, dtype=cupy.int64)
    m, ne = int(keys.size), len(edges)
    dev = cupy.cuda.Device().id
    ekey = (tuple(int(e) for e in edges), dev)
    e = _EDGES.get(ekey)
    if e is None:
        e = _EDGES[ekey] = cupy.asarray(np.asarray(edges, dtype=np.int64))
    nblocks = _grid(m, 256)
    bin_ = cupy.empty(max(m, 1), dtype=cupy.int32)
    if m:  # every block writes its ne + 1 counts
        ends = cupy.empty((ne + 1) * nblocks, dtype=cupy.int64)
        _bin_kernels()[0]((nblocks,), (256,), (keys, np.int64(m), e, np.int32(ne),
                                               np.int32(bool(skip_zero)), bin_, ends))
    else:
        ends = cupy.zeros((ne + 1) * nblocks, dtype=cupy.int64)
    inclusive_sum(ends, ends)  # bin-major: bin 0's blocks, then bin 1's ...
    return m, ne, nblocks, bin_, ends


class Binned(NamedTuple):
    """Rows grouped by bin (:func:`binned`)."""
    rows: object      # every binned row id (CuPy int64), bin after bin, ascending inside a bin
    offsets: object   # the bins' offsets in ``rows`` (host int64, bins + 1)
    extra: object     # the value of ``extra`` read with the offsets (an int), or None
    ends: object      # the bin-major running sums of the blocks' counts (device): bin b ends at
    nblocks: int      # ends[(b + 1) * nblocks - 1] (gb_spgemm_binned reads its bins there)


def binned(keys, edges, skip_zero: bool, extra=None) -> Binned:
    """Rows grouped by their keys' bins, as :func:`_bins`; ``extra``: a one-element int64 device
    array whose value comes back in the same read as the bins' sizes (gathered on the device
    by gb_bin_tails: one launch and one read)."""
    import cupy
    m, ne, nblocks, bin_, ends = _bin_count(keys, edges, skip_zero)
    _, scatter, tails = _bin_kernels()
    got = cupy.empty(ne + 2, dtype=cupy.int64)
    tails((1,), (32,), (ends, np.int64(nblocks), np.int32(ne),
                        np.uint64(0) if extra is None else extra, got))
    host = got.get()
    offsets = np.concatenate([[0], host[:ne + 1]]).astype(np.int64)
    out = cupy.empty(int(offsets[-1]), dtype=cupy.int64)
    if out.size:
        scatter((nblocks,), (256,), (bin_, np.int64(m), np.int32(ne), ends, out))
    return Binned(out, offsets, None if extra is None else int(host[-1]), ends, nblocks)


def _spmv_bins(A, Ap):
    """(row ids by degree bin, one after another; meta: the bins' first rows then first
    blocks, on the device; total blocks) for the one-launch SpMV kernel, cached on the matrix
    object (keyed by its indptr buffer and shape) so repeated products reuse them."""
    import cupy
    key = (int(Ap.data.ptr), int(Ap.size), tuple(A.shape))
    hit = recall(A, "_gbdist_spmv_bins", key)
    if hit is not MISS:
        return hit
    deg = cupy.diff(Ap).astype(cupy.int64)
    bins = binned(deg, [b for b, _ in gc.SPMV_BINS], skip_zero=False)
    sizes = np.diff(bins.offsets).astype(np.int64)
    per_block = np.array([256 // g for _, g in gc.SPMV_BINS] + [1], dtype=np.int64)
    blocks = -(-sizes // per_block)
    meta = np.concatenate([[0], np.cumsum(sizes), [0], np.cumsum(blocks)]).astype(np.int64)
    return keep(A, "_gbdist_spmv_bins", key, (bins.rows, cupy.asarray(meta), int(blocks.sum())))
