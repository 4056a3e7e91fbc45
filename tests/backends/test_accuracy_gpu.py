"""Accuracy on the CUDA backend (issue 8 items 1–3), the same checks as
tests/test_accuracy.py: float32 against float64 SciPy within 1e-6 of the row
scale (float64 accumulation), identical rows exactly 0 on the device, ranges."""
import os
import sys

import numpy as np
import pytest
import scipy.sparse as sps

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gbdist as gb  # noqa: E402
from own_distances import own_distances  # gbdist's own metric and dtype path
from accuracy_cases import BOUND, identical_pairs, max_scaled_error, reference, sample_data  # noqa: E402
from metric_cases import device_plan, fit_columns  # noqa: E402

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

METRICS = sorted(gb.metric_names())
# as tests/backends/test_accuracy.py: d(a, a) proven 0 (not inner_product, russellrao,
# kulczynski1 (inf), cosine_sklearn (1 for an empty row)); no row scale for kulczynski1's inf
ZERO_SELF = [m for m in METRICS
             if m not in ("inner_product", "russellrao", "weighted_russellrao", "kulczynski1",
                          "cosine_sklearn")]
BOUNDED = [m for m in METRICS if m != "kulczynski1"]


def _strategies(metric, ncols):
    """The strategies that run the plan the device runs on ``ncols`` columns."""
    from gbdist.backends.cuda import generated as _generated
    return _generated(device_plan(metric, ncols), "float32").strategies


@pytest.mark.parametrize("metric", BOUNDED)
def test_float32_within_bound_every_strategy(metric):
    X, Y = fit_columns(metric, *sample_data(1))
    for strat in _strategies(metric, X.shape[1]):
        D = own_distances(sps.csr_matrix(X), sps.csr_matrix(Y), metric=metric,
                                  backend="cuda", strategy=strat)
        assert D.dtype == np.float32
        err = max_scaled_error(metric, D, X, Y)
        assert err <= BOUND, (strat, err)


@pytest.mark.parametrize("metric", ZERO_SELF)
def test_identical_rows_exact_on_device(metric):
    import cupy
    import cupyx.scipy.sparse as cps
    X, Y = fit_columns(metric, *sample_data(2))
    pairs = identical_pairs(X, Y)
    ref = reference(metric, X, Y)
    for strat in _strategies(metric, X.shape[1]):
        D = own_distances(cps.csr_matrix(sps.csr_matrix(X)), cps.csr_matrix(sps.csr_matrix(Y)),
                                  metric=metric, backend="cuda", strategy=strat)
        assert isinstance(D, cupy.ndarray)
        D = cupy.asnumpy(D)
        for i, j in pairs:
            if np.isfinite(ref[i, j]):
                assert D[i, j] == 0.0, (strat, i, j, D[i, j])
    S = own_distances(sps.csr_matrix(X), metric=metric, backend="cuda")
    fin = np.isfinite(np.diagonal(reference(metric, X, X)))
    assert (np.diagonal(S)[fin] == 0).all()


def test_float32_accumulation_is_the_old_behaviour():
    """accumulate='float32' keeps float32 sums: identical-row zeros still exact (post-pass)
    but near-identical rows lose accuracy — the knob the benchmark measures."""
    from gbdist.backends.cuda import accumulate
    X, Y = sample_data(6, scale=1e4)
    with accumulate("float32"):
        D = own_distances(sps.csr_matrix(X), sps.csr_matrix(Y), metric="euclidean", backend="cuda")
    assert D.dtype == np.float32
    D64 = own_distances(sps.csr_matrix(X), sps.csr_matrix(Y), metric="euclidean", backend="cuda")
    assert max_scaled_error("euclidean", D64, X, Y) <= BOUND
    for i, j in identical_pairs(X, Y):
        assert D[i, j] == 0.0


def test_knn_on_device_self_distance_zero_and_nonnegative():
    rng = np.random.default_rng(5)
    X = (sps.random(300, 40, density=0.3, random_state=rng, format="csr") * 1e6).astype(np.float32)
    X = sps.vstack([X, X[:10]]).tocsr()
    for metric in ("cosine", "euclidean", "correlation"):
        d, i = gb.knn(X, k=3, metric=metric, backend="cuda", exclude_self=False)
        assert (d[:, 0] == 0).all(), metric
        assert (d >= 0).all(), metric


def test_ranges_on_device():
    rng = np.random.default_rng(4)
    base = rng.normal(size=(1, 30))
    X = np.vstack([base * s for s in rng.uniform(0.1, 10, size=20)] + [-base * 3]).astype(np.float32)
    for metric in ("cosine", "correlation"):
        D = own_distances(X, metric=metric, backend="cuda")
        assert (D >= 0).all() and (D <= 2).all(), metric


@pytest.mark.parametrize("offset", [1e8, 1e6])
def test_correlation_large_mean_on_device(offset):
    """Issue 16 item 3 on the GPU: rows are centred on the device (float64 input)."""
    from scipy.spatial.distance import cdist
    rng = np.random.default_rng(7)
    X = offset + rng.random((6, 100))
    D = own_distances(X, metric="correlation", backend="cuda")
    assert np.abs(D - cdist(X, X, "correlation")).max() <= 1e-6
    assert (D >= 0).all() and (np.diagonal(D) == 0).all()


def test_extreme_magnitudes_on_device():
    from scipy.spatial.distance import cdist
    rng = np.random.default_rng(8)
    base = rng.random((5, 60))
    base[:, ::7] = 0.0
    for scale in (1e-160, 1e200):
        for metric in ("correlation", "cosine"):
            D = own_distances(base * scale, metric=metric, backend="cuda")
            np.testing.assert_allclose(D, cdist(base, base, metric), atol=1e-9)


def test_jensenshannon_is_scipys_on_device():
    """Rows are divided by their sums on the device (a CuPy input stays unmodified)."""
    import cupyx.scipy.sparse as cps
    from scipy.spatial.distance import cdist
    rng = np.random.default_rng(9)
    X = rng.random((7, 12)) * 5
    Y = rng.random((5, 12))
    Xg = cps.csr_matrix(sps.csr_matrix(X))
    before = Xg.data.copy()
    for dtype in (np.float64, np.float32):
        D = own_distances(X.astype(dtype), Y.astype(dtype), metric="jensenshannon", backend="cuda")
        np.testing.assert_allclose(D, cdist(X.astype(dtype), Y.astype(dtype), "jensenshannon"),
                                   atol=1e-6 if dtype == np.float32 else 1e-12)
    own_distances(Xg, Xg, metric="jensenshannon", backend="cuda")
    assert bool((Xg.data == before).all())
