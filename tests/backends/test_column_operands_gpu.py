"""Column operands on the CUDA backend (issue 26): the scaled operands are built on the
device when the input lives there (gbdist/runtime/columns.py), the kernels are the
unweighted metric's; results against SciPy in float64."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist

import gbdist as gb

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)


def _data(seed=0, m=40, n=30, k=17):
    rng = np.random.default_rng(seed)
    X = sps.random(m, k, density=0.4, random_state=rng, format="csr")
    Y = sps.random(n, k, density=0.4, random_state=rng, format="csr")
    w = rng.uniform(0.0, 2.0, k)
    w[3] = 0.0
    return X, Y, w


@pytest.mark.parametrize("device_input", [False, True])
@pytest.mark.parametrize("metric,kw", [("minkowski", {"p": 3}), ("minkowski", {"p": 4}),
                                       ("euclidean", {}), ("cityblock", {}), ("chebyshev", {}),
                                       ("braycurtis", {}), ("cosine", {})])
def test_weighted_metrics_on_the_gpu(metric, kw, device_input):
    import cupy
    import cupyx.scipy.sparse as cps
    X, Y, w = _data()
    Xi, Yi = (cps.csr_matrix(X), cps.csr_matrix(Y)) if device_input else (X, Y)
    D = gb.pairwise_distances(Xi, Yi, metric=metric, w=cupy.asarray(w) if device_input else w,
                              dtype=np.float64, backend="cuda", **kw)
    D = D.get() if hasattr(D, "get") else D
    want = cdist(X.toarray(), Y.toarray(), metric, w=w, **kw)
    off = ~np.isclose(want, 0)  # identical rows: the expansion's own accuracy (issue 26)
    np.testing.assert_allclose(D[off], want[off], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("device_input", [False, True])
def test_seuclidean_and_gower_defaults_on_the_gpu(device_input):
    import cupyx.scipy.sparse as cps
    X, Y, _ = _data(1)
    Xi, Yi = (cps.csr_matrix(X), cps.csr_matrix(Y)) if device_input else (X, Y)
    Xd, Yd = X.toarray(), Y.toarray()
    D = gb.pairwise_distances(Xi, Yi, metric="seuclidean", dtype=np.float64, backend="cuda")
    D = D.get() if hasattr(D, "get") else D
    np.testing.assert_allclose(D, cdist(Xd, Yd, "seuclidean"), rtol=1e-9)
    D = gb.pairwise_distances(Xi, Yi, metric="gower", dtype=np.float64, backend="cuda")
    D = D.get() if hasattr(D, "get") else D
    S = np.vstack([Xd, Yd])
    r = S.max(0) - S.min(0)
    r = np.where(r > 0, r, 1.0)
    np.testing.assert_allclose(D, (np.abs(Xd[:, None] - Yd[None]) / r).mean(-1), rtol=1e-9,
                               atol=1e-15)
