"""The float split on the device (compiler/plan.float_split): canberra with float32
data and float64 accumulation evaluates |x − y|/(|x| + |y|) in float where every
stored value lies within 2^±32, and in double otherwise (values that would overflow
or underflow in float: near 3.4e38, subnormals); either way the result is the
float64 one within the accuracy bound, on every strategy."""
import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist

import gbdist as gb
from own_distances import own_distances  # gbdist's own metric and dtype path

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)


def _rows(rng, n, k, scale):
    X = sps.random(n, k, density=0.3, random_state=rng, dtype=np.float64).toarray()
    X *= rng.choice([-1, 1], X.shape)
    return (X * scale).astype(np.float32)


@pytest.mark.parametrize("scale,split", [(1.0, True), (2.0 ** 31, True), (2.0 ** 40, False),
                                         (2.0 ** -40, False), (1e38, False),
                                         (1e-42, False)])
@pytest.mark.parametrize("strategy", ["gather", "scatter"])
def test_canberra_split_matches_float64(scale, split, strategy, backend="cuda"):
    rng = np.random.default_rng(11)
    X, Y = _rows(rng, 40, 60, scale), _rows(rng, 30, 60, 1.0)
    if not split:
        X[:, :5] = np.float32(3e38) * np.sign(X[:, :5])  # |x| + |y| overflows in float
    Y[:10] = X[:10] * np.float32(1 + 2 ** -20)  # nearly equal rows: small terms
    Y[10:15] = X[10:15]
    ref = cdist(X.astype(np.float64), Y.astype(np.float64), "canberra")
    D = own_distances(sps.csr_matrix(X), sps.csr_matrix(Y), metric="canberra",
                              backend=backend, strategy=strategy if backend == "cuda" else "auto")
    scale_ = (X != 0).sum(1)[:, None] + (Y != 0).sum(1)[None, :]
    err = np.abs(D.astype(np.float64) - ref) / scale_
    assert err.max() <= 1e-6, err.max()
    assert np.all(D[np.arange(10, 15), np.arange(10, 15)] == 0)  # identical rows: exactly 0
    if backend == "cuda":
        from gbdist.backends.cuda import last_run
        assert last_run()["float_split"] == split
