"""nan_euclidean (isnan in the kernels' ops) and weighted correlation (the wcentre row
transform, on the device for CuPy input) on the CUDA backend (issue 26), against
scikit-learn's nan_euclidean_distances and SciPy's cdist in float64."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import gbdist as gb

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)


def _with_nan(seed, m, k, share=0.25):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, k))
    X[rng.random(X.shape) < share] = np.nan
    return X


@pytest.mark.parametrize("device_input", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_euclidean_on_the_gpu(device_input, dtype):
    import cupy
    from sklearn.metrics.pairwise import nan_euclidean_distances
    X, Y = _with_nan(0, 50, 9), _with_nan(1, 30, 9)
    X[0] = np.nan  # no coordinate present: NaN
    Y[2] = X[5]
    Xi, Yi = (cupy.asarray(X), cupy.asarray(Y)) if device_input else (X, Y)
    D = gb.pairwise_distances(Xi, Yi, metric="nan_euclidean", dtype=dtype, backend="cuda")
    D = D.get() if hasattr(D, "get") else D
    want = nan_euclidean_distances(X, Y)
    np.testing.assert_array_equal(np.isnan(D), np.isnan(want))
    tol = 1e-5 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(D, want, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("device_input", [False, True])
def test_weighted_correlation_on_the_gpu(device_input):
    import cupy
    rng = np.random.default_rng(2)
    X, Y, w = rng.normal(size=(40, 7)), rng.normal(size=(25, 7)), rng.uniform(0, 2, 7)
    w[1] = 0.0
    args = (cupy.asarray(X), cupy.asarray(Y), cupy.asarray(w)) if device_input else (X, Y, w)
    D = gb.pairwise_distances(args[0], args[1], metric="correlation", w=args[2],
                              dtype=np.float64, backend="cuda")
    D = D.get() if hasattr(D, "get") else D
    np.testing.assert_allclose(D, cdist(X, Y, "correlation", w=w), rtol=1e-9, atol=1e-12)
