"""Plans that run in float32 whole under accumulate="auto" (compiler/plan.float32_plan):
chebyshev's max |x − y| has one rounding and max rounds nothing, so float32 data stays
in float32, within the accuracy bound of the float64 answer; a value outside 2^±32
(where |x − y| could overflow in float) and an explicit accumulate("float64") keep
float64."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from own_distances import own_distances  # gbdist's own metric and dtype path
from accuracy_cases import BOUND, max_scaled_error

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)


def _rows(rng, n, k=80, scale=1.0):
    X = sps.random(n, k, density=0.2, random_state=rng, dtype=np.float64).toarray()
    X *= rng.choice([-1, 1], X.shape) * 10.0 ** rng.uniform(-3, 3, (n, 1)) * scale
    return X.astype(np.float32)


@pytest.mark.parametrize("strategy", ["auto", "gather", "sorted"])
def test_chebyshev_runs_in_float32_within_the_bound(strategy):
    from gbdist.backends.cuda import last_run
    rng = np.random.default_rng(4)
    X, Y = _rows(rng, 50), _rows(rng, 40)
    Y[:5] = X[:5]
    Y[5:10] = X[5:10] * np.float32(1 + 2 ** -22)
    D = own_distances(sps.csr_matrix(X), sps.csr_matrix(Y), metric="chebyshev",
                              backend="cuda", strategy=strategy)
    assert last_run()["accumulate"] == "float32"
    assert max_scaled_error("chebyshev", D, X, Y) <= BOUND
    assert np.all(D[np.arange(5), np.arange(5)] == 0)


def test_out_of_range_values_and_an_explicit_mode_keep_float64():
    from gbdist.backends.cuda import accumulate, last_run
    rng = np.random.default_rng(5)
    X, Y = _rows(rng, 30), _rows(rng, 20)
    X[0, 0], Y[0, 0] = np.float32(3e38), np.float32(-3e38)  # |x − y| overflows in float
    D = own_distances(sps.csr_matrix(X), sps.csr_matrix(Y), metric="chebyshev", backend="cuda")
    assert last_run()["accumulate"] == "float64"
    assert D[0, 0] == np.inf  # 6e38: the float64 answer is beyond float32's range
    assert max_scaled_error("chebyshev", D[1:, 1:], X[1:], Y[1:]) <= BOUND
    assert max_scaled_error("chebyshev", D[0:1, 1:], X[0:1], Y[1:]) <= BOUND  # 3e38 - y
    with accumulate("float64"):
        own_distances(sps.csr_matrix(X[1:]), sps.csr_matrix(Y[1:]), metric="chebyshev",
                              backend="cuda")
    assert last_run()["accumulate"] == "float64"
