"""The SpMV's row tiles (issue 30, ``graph_tiles.tile_starts``) on the host: every row in
exactly one tile, in order; a tile holds at most ``tile`` rows and, but for its last row,
at most ``tile`` entries (the most ``gb_spmv_stream`` stages is twice that), whatever the
degrees: hubs longer than several tiles, thousands of empty rows together, no entries."""
import numpy as np
import pytest

from gbdist.backends.cuda.graph_tiles import tile_starts


def _indptr(degs):
    return np.concatenate([[0], np.cumsum(degs)]).astype(np.int32)


CASES = {
    "hubs-and-empties": [5000, 0, 1, 32, 33, 2048, 2049] + [0] * 4000 + [3] * 700 + [9000],
    "all-empty": [0] * 3000,
    "one-row": [7],
    "power-law": list((np.random.default_rng(0).pareto(1.2, 20000) * 4).astype(int)),
}


@pytest.mark.parametrize("tile", [1024, 2048, 7])
@pytest.mark.parametrize("case", list(CASES))
def test_tiles_partition_rows_and_bound_the_work(case, tile):
    Ap = _indptr(CASES[case])
    m = Ap.size - 1
    starts, blocks = tile_starts(Ap, tile, np)
    assert starts.dtype == np.int64 and len(starts) == blocks + 1 and blocks >= 1
    assert starts[0] == 0 and starts[-1] == m and (np.diff(starts) >= 0).all()
    coord = Ap[:-1].astype(np.int64) + np.arange(m)
    for b in range(blocks):
        r0, r1 = int(starts[b]), int(starts[b + 1])
        rows = np.arange(r0, r1)
        # exactly the rows whose merge coordinate lies in the tile (brute force)
        np.testing.assert_array_equal(rows, np.flatnonzero((coord >= b * tile) & (coord < (b + 1) * tile)))
        assert r1 - r0 <= tile
        if r1 > r0:  # entries of all rows but the last fit the tile
            assert Ap[r1 - 1] - Ap[r0] <= tile
