"""Column-weighted products on the CUDA backend (issue 26): SciPy's w= for canberra and
hamming, each column's term multiplied by κ(w) in the gather kernel's plus over the union
(compiler/colfactor.py, kernels/gather.cuh), against SciPy's cdist(..., w=) in float64 on
random, offset (+1e4, +1e6) and sparse data, in float32 and float64, through gb.cdist,
gb.pairwise_distances and gb.knn."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist

import gbdist as gb

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

METRICS = ("canberra", "hamming")


def _data(seed=0, m=37, n=29, k=45, offset=0.0, density=0.35):
    """Sparse rows that share some columns and not others (both union passes matter),
    repeated values (hamming's x == y), an identical row, an empty row, a weight of 0."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(m, k)), 1) * (rng.random((m, k)) < density)
    Y = np.round(rng.normal(size=(n, k)), 1) * (rng.random((n, k)) < density)
    Y[3] = X[3]
    X[5] = 0.0
    w = rng.uniform(0.0, 2.0, k)
    w[2] = 0.0
    if offset:
        X, Y = X + offset, Y + offset
    return X, Y, w


def _want(X, Y, metric, w, dtype):
    X64, Y64 = X.astype(dtype).astype(np.float64), Y.astype(dtype).astype(np.float64)
    with np.errstate(all="ignore"):
        return cdist(X64, Y64, metric, w=w)


def _host(D):
    return D.get() if hasattr(D, "get") else np.asarray(D)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("offset", (0.0, 1e4, 1e6))
@pytest.mark.parametrize("metric", METRICS)
def test_pairwise_distances_weights_on_the_gpu(metric, offset, dtype):
    X, Y, w = _data(offset=offset)
    X, Y = X.astype(dtype), Y.astype(dtype)
    D = _host(gb.pairwise_distances(X, Y, metric=metric, w=w, backend="cuda"))
    np.testing.assert_allclose(D, _want(X, Y, metric, w, dtype), **_tol(dtype))
    assert D[3, 3] == 0.0


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("metric", METRICS)
def test_sparse_and_device_input(metric, dtype):
    import cupyx.scipy.sparse as cps
    X, Y, w = _data(1)
    Xs, Ys = sps.csr_matrix(X.astype(dtype)), sps.csr_matrix(Y.astype(dtype))
    want = _want(X, Y, metric, w, dtype)
    D = _host(gb.pairwise_distances(Xs, Ys, metric=metric, w=w, backend="cuda"))
    np.testing.assert_allclose(D, want, **_tol(dtype))
    # device input with backend="auto": runs on the GPU, answers on the device
    Dd = gb.pairwise_distances(cps.csr_matrix(Xs), cps.csr_matrix(Ys), metric=metric, w=w)
    assert hasattr(Dd, "get")
    np.testing.assert_allclose(Dd.get(), want, **_tol(dtype))
    from gbdist.backends.cuda import last_run
    assert last_run()["strategy"] == "gather"


@pytest.mark.parametrize("metric", METRICS)
def test_cdist_and_chunked_columns(metric):
    """gb.cdist (SciPy's shape, float64) and a k too wide for one shared-memory chunk
    (60,000 float64 columns and their stored-entry mask need 540 KB a row, more than an
    H100's or H200's 227 KB of shared memory a block: the weight is read at k0 + k)."""
    X, Y, w = _data(2, m=20, n=15, k=60000, density=0.003)
    D = np.asarray(gb.cdist(X, Y, metric, w=w, backend="cuda"))
    np.testing.assert_allclose(D, _want(X, Y, metric, w, np.float64), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("metric", METRICS)
def test_knn_weights_on_the_gpu(metric, dtype):
    X, _, w = _data(3, m=60, offset=1e4)
    X = X.astype(dtype)
    dist, ind = gb.knn(X, X, k=6, metric=metric, w=w, backend="cuda")
    dist, ind = _host(dist), _host(ind)
    R = _want(X, X, metric, w, dtype)
    np.testing.assert_allclose(dist, np.sort(R, axis=1)[:, :6], **_tol(dtype))
    np.testing.assert_allclose(np.take_along_axis(R, ind, axis=1), dist, **_tol(dtype))


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("offset", (0.0, 1e4, 1e6))
def test_gower_with_weights_and_categories_on_the_gpu(offset, dtype):
    """Gower with w= and cat= (tests/front/test_gower_weights_and_categories.py has the
    definition written out): the weight read at each column, on scaled operands."""
    from tests.front.test_gower_weights_and_categories import _mixed, brute
    X, Y, cat, w = _mixed(offset=offset)
    X, Y = X.astype(dtype), Y.astype(dtype)
    D = _host(gb.pairwise_distances(X, Y, metric="gower", cat=cat, w=w, backend="cuda"))
    np.testing.assert_allclose(D, brute(X, Y, cat, w), **(
        dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-12)))
