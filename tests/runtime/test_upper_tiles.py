"""The symmetric search's diagonal tiles asked ``upper`` (computed on and above the
diagonal only, the backend mirrors the rest): only of a backend that says it can
(``upper_tiles``) and whose ``run_tile`` takes it, only for diagonal tiles, and the answer
is the whole tiles' (the CUDA kernels themselves: tests/backends/test_upper_tiles_gpu.py)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps
from numpy.testing import assert_array_equal

import gbdist as gb
from gbdist.backends.base import Tile
from gbdist.backends.cpu import CPUBackend
from gbdist.runtime.tiles import takes_upper


class Upper(CPUBackend):
    """A CPU backend that, asked ``upper``, keeps a diagonal tile's upper half and mirrors
    it below, as the CUDA backend's kernels do."""
    name = "upper"
    upper_tiles = True
    calls: list = []

    def run_tile(self, prepared, r0, r1, c0, c1, upper=False):
        Upper.calls.append((r0, r1, c0, c1, upper))
        tile = super().run_tile(prepared, r0, r1, c0, c1)
        if not upper:
            return tile
        assert (r0, r1) == (c0, c1)
        v = np.array(tile.values, dtype=float)
        i, j = np.tril_indices(r1 - r0, -1)
        v[i, j] = v[j, i]
        return Tile(v.astype(tile.values.dtype), tile.suspect)


class Overridden(Upper):
    """A subclass whose run_tile does not take ``upper``: it is never passed."""
    name = "overridden"

    def run_tile(self, prepared, r0, r1, c0, c1):
        return super().run_tile(prepared, r0, r1, c0, c1)


def _rows():
    X = sps.random(70, 30, density=0.2, random_state=8, format="lil")
    X[4] = 0
    X[11] = X[2]
    return X.tocsr()


def test_only_diagonal_tiles_are_asked_upper():
    Upper.calls.clear()
    X = _rows()
    ref = gb.knn(X, k=5, metric="chebyshev", backend="cpu", symmetric=False)
    got = gb.knn(X, k=5, metric="chebyshev", backend=Upper(), working_memory=8000 / 2**20)
    assert_array_equal(got[1], ref[1])
    assert_array_equal(got[0], ref[0])
    diagonal = [c for c in Upper.calls if c[0] == c[2]]
    assert len(Upper.calls) > len(diagonal) >= 2  # several tiles, some off the diagonal
    assert all(c[4] for c in diagonal)
    assert not any(c[4] for c in Upper.calls if c[0] != c[2])


def test_a_search_that_is_not_symmetric_never_asks():
    Upper.calls.clear()
    X = _rows()
    gb.knn(X, k=5, metric="chebyshev", backend=Upper(), symmetric=False,
           working_memory=8000 / 2**20)
    gb.knn(X, X.copy(), k=5, metric="chebyshev", backend=Upper(), working_memory=8000 / 2**20)
    assert Upper.calls and not any(c[4] for c in Upper.calls)


def test_a_run_tile_without_upper_is_called_without_it():
    assert takes_upper(Upper()) and not takes_upper(Overridden()) and not takes_upper(CPUBackend())
    X = _rows()
    ref = gb.knn(X, k=5, metric="manhattan", backend="cpu")
    got = gb.knn(X, k=5, metric="manhattan", backend=Overridden(), working_memory=8000 / 2**20)
    assert_array_equal(got[1], ref[1])


def test_shares_count_a_diagonal_tile_by_the_cells_it_computes():
    """The tiles of a share (gbdist.dask's replicas): with ``upper`` a diagonal tile costs
    its cells on and above the diagonal (55 of 100 here), so the split balances what is
    computed: 6 row blocks (21 tiles) over 3 shares, the largest share 610 cells (1,830 /
    3: even), where dealing tile by tile at full squares gives one share 700, and every
    tile in exactly one share."""
    from gbdist.neighbors.shares import _deal, _share
    n, s, W = 60, 10, 3
    cells = [(r0, c0) for r0 in range(0, n, s) for c0 in range(r0, n, s)]

    def computed(owner):
        assert sorted(sum(owner, [])) == list(range(len(cells)))
        return max(sum(55 if cells[t][0] == cells[t][1] else 100 for t in mine)
                   for mine in owner)
    squares = _deal([[t] for t in range(len(cells))], [100] * len(cells), W)[1]
    assert computed(squares) == 700
    assert computed([_share(cells, s, s, n, n, w, W, upper=True) for w in range(W)]) == 610
