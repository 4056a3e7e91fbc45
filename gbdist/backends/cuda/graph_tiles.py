"""Row tiles of the CUDA SpMV (issue 30, ``gb_spmv_stream`` of ``kernels/graph_kernels.cuh``):
block b takes the rows whose merge coordinate ``Ap[i] + i`` lies in ``[b * tile, (b + 1) * tile)``,
so a block has at most ``tile`` rows and, but for its last row, ``tile`` entries, however the
degrees are spread (power-law hubs, clumps of empty rows). :func:`full_choice`: the planner
rule's pick between them and the in-order kernel (``gb_spmv_rows``) for one matrix."""
from __future__ import annotations

from ...compiler import spmv_choice as rule
from ..base import MISS, keep, recall


def tile_starts(Ap, tile: int, xp):
    """(starts, blocks): the first row of each of ``blocks`` tiles, then the row count (an
    int64 array of blocks + 1, in the array module ``xp`` of ``Ap``; one host read, the entry
    count). Block b takes rows starts[b] <= i < starts[b + 1], those with
    b * tile <= Ap[i] + i < (b + 1) * tile; at least one block."""
    m = int(Ap.size) - 1
    nnz = int(Ap[-1])
    blocks = max(1, -(-(nnz + m) // tile))
    coord = Ap[:-1].astype(xp.int64) + xp.arange(m, dtype=xp.int64)
    starts = xp.searchsorted(coord, xp.arange(blocks + 1, dtype=xp.int64) * tile).astype(xp.int64)
    starts[-1] = m
    return starts, blocks


def spmv_tiles(A, Ap, tile: int):
    """(starts, blocks, nonempty) of the row-tile SpMV (``nonempty()``: the matrix's non-empty
    rows, a bool array built on first use): block b takes the rows i with
    b * tile <= Ap[i] + i < (b + 1) * tile, starts[b] <= i < starts[b + 1] (a device int64
    array of blocks + 1). One host read (the entry count) per matrix; cached on the matrix
    object as ``graph._spmv_bins`` is."""
    import cupy
    key = (int(Ap.data.ptr), int(Ap.size), tuple(A.shape), int(tile))
    memo = getattr(A, "_gbdist_spmv_tiles", None)
    if memo is not None and key in memo:
        return memo[key]
    starts, blocks = tile_starts(Ap, int(tile), cupy)
    rows_present = []

    def nonempty():
        if not rows_present:
            rows_present.append(cupy.diff(Ap) > 0)
        return rows_present[0]

    out = (starts, blocks, nonempty)
    try:
        if memo is None:
            memo = {}
            A._gbdist_spmv_tiles = memo
        if len(memo) >= 4:  # stale buffers' tilings
            memo.clear()
        memo[key] = out
    except AttributeError:
        pass
    return out


def full_choice(A, Ap):
    """(choice, nonempty) for the full-CSR SpMV of A: the planner rule
    (:func:`gbdist.compiler.spmv_choice.choose_full`) on A's row statistics, and a builder of
    A's non-empty rows (a bool array, built on first use). The statistics cost three host
    reads, once per matrix: cached on the matrix object as :func:`spmv_tiles` is."""
    import cupy
    key = (int(Ap.data.ptr), int(Ap.size), tuple(A.shape))
    hit = recall(A, "_gbdist_spmv_choice", key)
    if hit is not MISS:
        return hit
    choice = rule.choose_full(rule.row_statistics(cupy.diff(Ap), cupy))
    rows_present = []

    def nonempty():
        if not rows_present:
            rows_present.append(cupy.diff(Ap) > 0)
        return rows_present[0]

    return keep(A, "_gbdist_spmv_choice", key, (choice, nonempty))
