"""The accuracy rule on the CUDA backend (issue 26): offset data centred on the device,
high-order rewrites summed as written by the gather kernel's plus union (SKIP_SHARED),
against SciPy's float64 answers."""
import numpy as np
import pytest
from scipy.spatial.distance import cdist

import gbdist as gb

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)


def _blobs(offset):
    from sklearn.datasets import make_blobs
    return make_blobs(500, 5, random_state=0)[0] + offset


@pytest.mark.parametrize("offset", [0.0, 100.0, 1e4, 1e6])
@pytest.mark.parametrize("p", [3, 4, 5.8, 8, 30])
def test_minkowski_on_the_gpu_is_scipys(p, offset):
    X = _blobs(offset)
    D = np.asarray(gb.pairwise_distances(X, metric="minkowski", p=p, backend="cuda"))
    R = cdist(X, X, "minkowski", p=p)
    pos = R > 0
    np.testing.assert_allclose(D[pos], R[pos], rtol=1e-9)
    assert np.all(D[~pos] == 0)
    mine = np.take_along_axis(R, np.argsort(D, axis=1, kind="stable")[:, :10], axis=1)
    np.testing.assert_allclose(mine, np.sort(R, axis=1)[:, :10], rtol=1e-12)


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean", "manhattan"])
def test_offset_data_centred_on_the_device(metric):
    import cupy
    X = _blobs(4e6)[:200]
    D = gb.pairwise_distances(cupy.asarray(X), metric=metric, backend="cuda")
    R = cdist(X, X, {"manhattan": "cityblock"}.get(metric, metric))
    D = cupy.asnumpy(D)
    pos = R > 0
    np.testing.assert_allclose(D[pos], R[pos], rtol=1e-10)


def test_float32_direct_union_within_the_float32_bound():
    X = _blobs(100.0).astype(np.float32)
    D = np.asarray(gb.pairwise_distances(X, metric="minkowski", p=3, backend="cuda"))
    R = cdist(X.astype(np.float64), X.astype(np.float64), "minkowski", p=3)
    np.testing.assert_allclose(D, R, rtol=1e-6, atol=1e-6 * R.max())


def test_knn_with_a_direct_plan_on_the_gpu():
    X = _blobs(1e4)
    dist, ind = gb.knn(X, k=5, metric="minkowski", p=4, backend="cuda")
    R = cdist(X, X, "minkowski", p=4)
    np.fill_diagonal(R, np.inf)  # a self-join leaves each row out of its own list
    np.testing.assert_allclose(np.asarray(dist), np.sort(R, axis=1)[:, :5], rtol=1e-9)
