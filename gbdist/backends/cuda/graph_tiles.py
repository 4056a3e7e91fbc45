"""Row tiles of the CUDA SpMV (issue 30, ``gb_spmv_stream`` of ``kernels/graph_kernels.cuh``):
block b takes the rows whose merge coordinate ``Ap[i] + i`` lies in ``[b * tile, (b + 1) * tile)``,
so a block has at most ``tile`` rows and, but for its last row, ``tile`` entries, however the
degrees are spread (power-law hubs, clumps of empty rows)."""
from __future__ import annotations


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
    m = int(Ap.size) - 1
    nnz = int(Ap[-1])
    blocks = max(1, -(-(nnz + m) // int(tile)))
    coord = Ap[:-1].astype(cupy.int64) + cupy.arange(m, dtype=cupy.int64)
    starts = cupy.searchsorted(coord, cupy.arange(blocks + 1, dtype=cupy.int64) * int(tile))
    starts = starts.astype(cupy.int64)
    starts[-1] = m
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
