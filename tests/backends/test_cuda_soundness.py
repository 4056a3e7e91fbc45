"""The soundness examples on the CUDA backend: the same answers as the CPU
(subnormals divided as written, point conditions, small constants, one-sided
ops keeping their shape, nested where over ops), or the same typed refusal."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from own_distances import own_distances  # gbdist's own metric and dtype path

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")


def _both(metric, X, Y, **params):
    cpu = own_distances(X, Y, metric=metric, backend="cpu", **params)
    gpu = own_distances(X, Y, metric=metric, backend="cuda", dtype=np.float64, **params)
    return cpu, np.asarray(gpu.get() if hasattr(gpu, "get") else gpu)


@pytest.mark.parametrize("metric", ["canberra", "jensenshannon", "kl_divergence"])
def test_subnormal_entries_match_the_cpu(metric):
    X = np.array([[1e-310, 0.2, 0.3]])
    Y = np.array([[1e-310, 0.2, 0.3], [0.1, 0.5, 0.0]])
    cpu, gpu = _both(metric, X, Y)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-12, atol=0)
    assert gpu[0, 0] == 0.0


@pytest.mark.parametrize("formula", [
    lambda x, y: gb.where(x == 0.3, -1.25, x * y),
    lambda x, y: x * y + 5e-9,
    lambda x, y: 2 * y,
    lambda x, y: -1.25,
    lambda x, y: x / (y * y + 2),  # x / (y + 2) is refused: f(x, -2) = ±inf, f(0, -2) = NaN
])
def test_soundness_ops_match_the_cpu(formula):
    op = gb.op("g_sound", formula)
    metric = lambda A, B: gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus))  # noqa: E731
    X = sps.csr_matrix(np.array([[0.3, 0.0, 2.0], [1e-3, 0.0, 0.0]]))
    Y = sps.csr_matrix(np.array([[0.5, 3.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]))
    cpu, gpu = _both(metric, X, Y)
    assert gpu.shape == cpu.shape == (2, 3)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-12, atol=1e-300)


def test_minkowski_large_p_is_refused_or_matches_on_cuda():
    rng = np.random.default_rng(0)
    X, Y = rng.random((4, 6)), rng.random((3, 6))
    cpu = own_distances(X, Y, metric="minkowski", p=64, backend="cpu")
    from gbdist.backends.cuda import codegen
    if codegen.DIRECT_UNION:  # the CUDA pass for a plus over the union runs it
        gpu = own_distances(X, Y, metric="minkowski", p=64, backend="cuda")
        np.testing.assert_allclose(np.asarray(gpu.get() if hasattr(gpu, "get") else gpu),
                                   cpu, rtol=1e-13)
    else:
        with pytest.raises(gb.BackendError):
            own_distances(X, Y, metric="minkowski", p=64, backend="cuda")
    auto = own_distances(X, Y, metric="minkowski", p=64, backend="auto")
    np.testing.assert_allclose(np.asarray(auto), cpu, rtol=1e-13)
    cpu4, gpu4 = _both("minkowski", X, Y, p=4)
    np.testing.assert_allclose(gpu4, cpu4, rtol=1e-9)
