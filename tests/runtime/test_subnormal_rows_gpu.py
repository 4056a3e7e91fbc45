"""Issue 24 item 5 on the device: rows whose largest |value| is subnormal are scaled by a
power of two like every other row (kernels/rows.cuh gb_condition, and the generic CuPy
path of gbdist.backends.rows.condition_rows), bit for bit as on the host; cosine and
correlation of such rows against exact references (test_subnormal_rows.py)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal

import gbdist as gb
from own_distances import own_distances  # gbdist's own metric and dtype path
from gbdist.backends import rows as host_rows
from gbdist.runtime import invariance

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")

from subnormal_cases import NORMAL64, SUB32, SUB64, exact_cosine, exact_matrix  # noqa: E402


def _rows(dtype):
    rng = np.random.default_rng(3)
    fi = np.finfo(dtype)
    frac = rng.integers(1, 64, (3, 6)) / 8  # binary fractions: exact sums in any order
    low = -1060 if dtype == np.float64 else -140  # largest value subnormal
    X = np.vstack([frac * 2.0 ** low, frac * 2.0 ** 100, frac])
    X[0, 1:3] = 0.0
    X = X.astype(dtype)
    extra = np.zeros((3, 6), dtype=dtype)
    extra[0, :2] = [fi.max / 2, fi.tiny * 3]  # scaling down would leave the normal range
    extra[1, :2] = [fi.smallest_subnormal, fi.smallest_subnormal * 3]
    extra[2, 0] = fi.smallest_subnormal
    return sps.csr_matrix(np.vstack([X, extra]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("shift", [False, True])
def test_device_conditioning_matches_the_host_with_subnormal_rows(dtype, itype, shift):
    X = _rows(dtype)
    ip, d, k = X.indptr.astype(itype), X.data.astype(dtype), X.shape[1]
    inv = invariance.Invariance(True, shift, "")
    want = host_rows.condition_rows(ip, d, k, inv, np)
    # the fused kernel (float32/64 values, int32/64 indices)
    got = host_rows.condition_rows(cupy.asarray(ip), cupy.asarray(d), k, inv, cupy).get()
    assert got.dtype == want.dtype
    assert_array_equal(got, want)
    # the subnormal row came out scaled: its largest |value| in [0.5, 1)
    first = want[ip[0]:ip[1]]
    assert 0.5 <= np.abs(first).max() < 1.0


@pytest.mark.parametrize("metric", ["cosine", "correlation"])
def test_cosine_and_correlation_of_subnormal_rows_on_the_device(metric):
    X = np.vstack([SUB64, NORMAL64])
    want = exact_matrix(X, X, metric)
    for inp in (X, cps.csr_matrix(cupy.asarray(X))):
        D = own_distances(inp, metric=metric, backend="cuda")
        D = cupy.asnumpy(D) if isinstance(D, cupy.ndarray) else D
        assert_allclose(D, want, rtol=1e-10, atol=1e-10)
    d, i = gb.knn(X, k=3, metric=metric, backend="cuda")
    for q in range(X.shape[0]):
        assert_allclose(d[q], want[q, i[q]], rtol=1e-10, atol=1e-10)
    X32 = np.vstack([SUB32, NORMAL64[:3].astype(np.float32)])
    want32 = exact_matrix(X32.astype(np.float64), X32.astype(np.float64), metric)
    D = own_distances(sps.csr_matrix(X32), metric=metric, backend="cuda")
    assert D.dtype == np.float32
    assert_allclose(D, want32, rtol=2e-6, atol=2e-6)


def test_the_issues_example_on_the_device():
    a, b = [1e-310, 0.0, 3e-320], [1.0, 0.0, 2.0]
    D = own_distances(np.array([a]), np.array([b]), metric="cosine", backend="cuda")
    assert_allclose(D[0, 0], exact_cosine(a, b), rtol=1e-13)
