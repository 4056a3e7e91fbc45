"""The backend protocol (gbdist.backends.base.Backend), the one memory model and the
one tile loop, checked on the CPU backend against SciPy; and the layering of the
packages (no import from the backends up to the runtime or the searches)."""
import math
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist

import gbdist as gb
from gbdist import runtime
from gbdist.backends.base import Backend
from gbdist.backends.cpu import CPUBackend
from gbdist.pairwise import metric_program

ROOT = Path(__file__).resolve().parents[2] / "gbdist"


class Counting(CPUBackend):
    """The CPU backend, counting the protocol calls and the tiles it is asked for."""

    name = "counting"

    def __init__(self, budget=None):
        super().__init__(budget)
        self.prepared = 0
        self.tiles = []

    def prepare(self, bound, strategy="auto", exact=True):
        self.prepared += 1
        return super().prepare(bound, strategy, exact)

    def run_tile(self, prepared, r0, r1, c0, c1):
        self.tiles.append((r0, r1, c0, c1))
        return super().run_tile(prepared, r0, r1, c0, c1)


def test_the_cpu_backend_implements_the_protocol():
    assert isinstance(CPUBackend(), Backend)
    assert not isinstance(object(), Backend)
    with pytest.raises(gb.InputError):
        runtime.get_backend(object())


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev", "cosine"])
def test_pairwise_is_bound_once_and_tiled_by_working_memory(metric):
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(23, 7)), rng.normal(size=(11, 7))
    plan = metric_program(metric).plan
    be = Counting()
    per_row = be.row_bytes(runtime.bind(plan, {"A": X, "B": Y}, drop_zeros=True))  # unions
    budget = 3 * (11 * be.cell_bytes(plan, np.float64) + per_row) + 1  # three whole rows a tile
    D = runtime.run(plan, {"A": X, "B": Y}, backend=be, working_memory=budget, drop_zeros=True)
    assert be.prepared == 1
    assert be.tiles == [(r, min(23, r + 3), 0, 11) for r in range(0, 23, 3)]
    assert_allclose(D, cdist(X, Y, metric), rtol=1e-12, atol=1e-12)


def test_grid_shape_is_one_model_for_every_backend():
    plan = metric_program("manhattan").plan
    be = CPUBackend()
    cell = be.cell_bytes(plan, np.float64)
    # whole rows when enough query rows of the whole index fit; as many rows as fit
    assert runtime.grid_shape(be, plan, 1000, 50, np.float64, 600 * 50 * cell) == (600, 50)
    # else near-square tiles of the budget's cells
    rows, cols = runtime.grid_shape(be, plan, 1000, 5000, np.float64, 10_000 * cell)
    assert rows == 100 and cols == 100
    # full width (pairwise results): whole rows, at least one
    assert runtime.grid_shape(be, plan, 1000, 5000, np.float64, 1, full_width=True) == (1, 5000)
    # no budget: one tile
    assert runtime.grid_shape(be, plan, 1000, 5000, np.float64, None) == (1000, 5000)


def test_knn_tiles_cover_the_grid_once_and_agree_with_brute_force():
    rng = np.random.default_rng(4)
    X, Y = rng.integers(0, 5, (31, 6)).astype(float), rng.integers(0, 5, (47, 6)).astype(float)
    plan = metric_program("manhattan").plan
    be = Counting()
    pairs = []
    d, i = gb.neighbors.knn_plan(plan, X, Y, 4, be, 40 * runtime.cell_cost(be, plan, np.float64, True), False,
                                 on_block=pairs.append)
    assert be.prepared == 1 and len(be.tiles) > 10
    covered = np.zeros((31, 47), dtype=int)
    for r0, r1, c0, c1 in be.tiles:
        covered[r0:r1, c0:c1] += 1
    assert (covered == 1).all() and sum(pairs) == 31 * 47
    D = cdist(X, Y, "cityblock")
    order = np.lexsort((np.broadcast_to(np.arange(47), D.shape), D), axis=1)[:, :4]
    assert_array_equal(i, order)
    assert_array_equal(d, np.take_along_axis(D, order, axis=1))


def test_symmetric_self_join_visits_the_upper_triangle_only():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, (40, 5)).astype(float)
    plan = metric_program("euclidean").plan
    be = Counting()
    side_budget = 8 * 8 * (runtime.cell_cost(be, plan, np.float64, select=True) + 8)
    d, i = gb.neighbors.knn_plan(plan, X, X, 3, be, side_budget, True, symmetric=True)
    assert all(c0 >= r0 for r0, _, c0, _ in be.tiles)
    assert len(be.tiles) == math.comb(5, 2) + 5  # 8 × 8 tiles of a 40 × 40 grid
    ref = gb.knn(X, k=3, metric="euclidean", backend="cpu", symmetric=False)
    assert_array_equal(i, ref[1])
    assert_allclose(d, ref[0], rtol=1e-12)


# The stage order (backends import nothing above them; the proofs of d(a, a) and of
# symmetry import no runtime or backend) is tests/test_architecture.py's.


def test_a_decided_plan_has_its_self_value_checked_as_analysed():
    """A plan decided for other data (gbdist.dask: centred by the whole index's column
    means, 12 columns here) shares the analysed plan's structural key, so what is proven of
    it is cached for every later call: the numeric check of d(a, a) runs the plan as
    analysed (it failed on the centre's width, and the withheld claim was cached for
    euclidean everywhere after a Dask run: the exact post-pass then skipped)."""
    from gbdist.compiler import accuracy
    from gbdist.runtime.invariance import check_self_value
    plan = metric_program("euclidean").plan
    d = accuracy.decided(plan, np.linspace(0.5, 1.5, 12))
    assert accuracy.undecided(d) == plan and accuracy.undecided(plan) is plan
    holds, how = check_self_value(d, 0.0)
    assert holds, how


def test_clear_caches_forgets_proven_values():
    from gbdist.compiler import exact
    plan = metric_program("euclidean").plan
    exact.self_value(plan)
    assert exact._CACHE
    runtime.clear_caches()
    assert not exact._CACHE
    assert exact.self_value(plan).value == 0.0  # recomputed (or read from the disk cache)
    from gbdist.compiler import symmetry
    from gbdist.pairwise import _metric_program
    gb.neighbors.is_symmetric(plan)
    metric_program("euclidean")
    assert symmetry._SYMMETRY and _metric_program.cache_info().currsize
    runtime.clear_caches()
    assert not symmetry._SYMMETRY and _metric_program.cache_info().currsize == 0
