"""A diagonal tile of a symmetric self-join computed on and above its diagonal only
(``run_tile(..., upper=True)``: the scatter, gather and sorted-union kernels' ``upper``,
then ``gb_mirror_lower``), against the same tile computed whole, for each strategy that
honours it, on rows with an empty row, duplicate rows and ties; a tile at an offset and a
side that is not a multiple of the mirror's 32-row blocks included. The kNN answers
through it are checked against the CPU by tests/neighbors/test_knn_gpu.py."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

CASES = [("chebyshev", "gather"), ("chebyshev", "sorted"), ("jensenshannon", "scatter"),
         ("jensenshannon", "gather"), ("manhattan", "scatter"), ("manhattan", "gather"),
         ("cosine", "scatter"), ("canberra", "gather")]


def _rows(n=150, k=300, seed=4):
    rng = np.random.default_rng(seed)
    X = sps.random(n, k, density=0.06, random_state=seed, format="lil")
    X[9] = 0  # an empty row
    X[20] = X[3]  # duplicates
    X[21] = X[3]
    X = X.tocsr()
    X.data = np.round(X.data * 8) / 8 + rng.integers(0, 2, X.nnz)  # ties among values
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("metric,strategy", CASES)
def test_upper_tile_is_the_whole_tile_mirrored(metric, strategy, dtype):
    import cupy
    import cupyx.scipy.sparse as cps
    from gbdist.backends.cuda import last_run
    from gbdist.pairwise import metric_program
    from gbdist.runtime import bind, get_backend
    X = cps.csr_matrix(_rows().astype(dtype))
    plan = metric_program(metric).plan
    be = get_backend("cuda")
    assert be.upper_tiles
    b = bind(plan, {"A": X, "B": X}, drop_zeros=True, xp=cupy)
    p = be.prepare(b, strategy)
    n = X.shape[0]
    for r0, r1 in ((0, n), (40, 113)):
        full = cupy.asnumpy(be.run_tile(p, r0, r1, r0, r1).values)
        assert last_run()["strategy"] == strategy
        up = cupy.asnumpy(be.run_tile(p, r0, r1, r0, r1, upper=True).values)
        assert last_run()["strategy"] == strategy
        assert np.array_equal(up, up.T, equal_nan=True)  # the mirror: every cell below set
        tri = np.triu_indices(r1 - r0)
        tol = 2e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(up[tri], full[tri], rtol=tol, atol=tol)
        np.testing.assert_allclose(up, full, rtol=tol, atol=tol)  # full is symmetric too


def test_a_tile_off_the_diagonal_is_computed_whole():
    """upper applies only where the rows are the columns: the runtime passes it for a
    diagonal tile only, and the backend checks again."""
    import cupy
    import cupyx.scipy.sparse as cps
    from gbdist.pairwise import metric_program
    from gbdist.runtime import bind, get_backend
    X = cps.csr_matrix(_rows())
    plan = metric_program("chebyshev").plan
    be = get_backend("cuda")
    b = bind(plan, {"A": X, "B": X}, drop_zeros=True, xp=cupy)
    p = be.prepare(b, "gather")
    whole = cupy.asnumpy(be.run_tile(p, 0, 60, 30, 150).values)
    asked = cupy.asnumpy(be.run_tile(p, 0, 60, 30, 150, upper=True).values)
    assert np.array_equal(whole, asked, equal_nan=True)


@pytest.mark.parametrize("metric", ["chebyshev", "jensenshannon", "manhattan", "cosine"])
def test_knn_over_many_diagonal_tiles_is_the_unsymmetric_search(metric):
    """gb.knn forced into several row blocks (a small working_memory): its diagonal tiles go
    upper, the answer is the search that computes every tile whole (symmetric=False)."""
    import gbdist as gb
    X = _rows(n=300)
    got = gb.knn(X, k=6, metric=metric, backend="cuda", working_memory=0.05)
    ref = gb.knn(X, k=6, metric=metric, backend="cuda", symmetric=False, working_memory=0.05)
    np.testing.assert_allclose(got[0], ref[0], rtol=2e-6, atol=1e-12)
    tied = np.isclose(got[0][:, :, None], got[0][:, None, :], rtol=2e-6).sum(axis=2) > 1
    assert (got[1] == ref[1])[~tied].all()
