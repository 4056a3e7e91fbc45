"""float32 subnormal values on the device. CuPy's RawModule appends -ftz=true after the
caller's options (cupy/cupy#9576), so gbdist compiles with NVRTC itself
(backends/cuda/cache.py): a subnormal input is read as itself, not as 0. Until that
change, rows of size 1e-42 gave distances of 0."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from own_distances import own_distances  # gbdist's own metric and dtype path
from accuracy_cases import BOUND, reference, row_scale

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

PROBE = r"""
extern "C" __global__ void widen(const float* x, double* wide, int* nonzero, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { wide[i] = (double)x[i]; nonzero[i] = x[i] != 0.0f; }
}
"""


def test_kernels_keep_float32_subnormals():
    import cupy
    from gbdist.backends.cuda import cache
    x = np.array([3.7e-43, -1e-40, 1.1e-38, 1.0, 0.0], np.float32)
    fn = cache.module("test-subnormal", PROBE, ("widen",)).get_function("widen")
    wide, nonzero = cupy.zeros(x.size, cupy.float64), cupy.zeros(x.size, cupy.int32)
    fn((1,), (32,), (cupy.asarray(x), wide, nonzero, np.int32(x.size)))
    assert np.array_equal(wide.get(), x.astype(np.float64))
    assert np.array_equal(nonzero.get(), (x != 0).astype(np.int32))


METRICS = ["euclidean", "manhattan", "chebyshev", "canberra", "cosine", "braycurtis",
           "hellinger", "jensenshannon"]


@pytest.mark.parametrize("metric,strategy", [
    (m, s) for m in METRICS
    # chebyshev's max union runs on gather and sorted (scatter's atomics are a sum's)
    for s in ("auto", "gather", "sorted" if m == "chebyshev" else "scatter")])
def test_subnormal_rows_match_float64(metric, strategy):
    rng = np.random.default_rng(5)
    nonneg = metric in ("hellinger", "jensenshannon")
    def rows(n, scale):
        M = sps.random(n, 40, density=0.3, random_state=rng, dtype=np.float64).toarray()
        if not nonneg:
            M *= rng.choice([-1, 1], M.shape)
        M[:, 0] = 0.5 if nonneg else 0.5 * rng.choice([-1, 1], n)  # no empty rows
        return (M * scale).astype(np.float32)
    X = rows(12, 1e-42)                        # every value subnormal
    Y = np.vstack([X[:4], rows(6, 1e-42), rows(4, 1.0)])   # identical, subnormal, normal rows
    X[8:] = rows(4, 1e-39)                     # subnormal values next to normal ones
    X[8:, 1] = np.float32(3e-30)
    ref = reference(metric, X, Y)
    D = own_distances(sps.csr_matrix(X), sps.csr_matrix(Y), metric=metric,
                              backend="cuda", strategy=strategy)
    assert D.dtype == np.float32
    # the bound, plus the float32 rounding of the result (2^-150 where it is subnormal)
    err = (np.abs(D.astype(np.float64) - ref) - 2.0 ** -24 * np.abs(ref) - 2.0 ** -150) \
        / row_scale(metric, X, Y, ref)
    assert err.max() <= BOUND, (err.max(), np.unravel_index(err.argmax(), err.shape))
    assert np.all(D[np.arange(4), np.arange(4)] == 0)  # identical rows: exactly 0


def test_device_conversions_keep_subnormals():
    """Device inputs converted between float32 and float64 (``dtype=``) go through
    gbdist's own kernel: CuPy's astype flushes subnormals (it compiles with -ftz=true)."""
    import cupy
    from gbdist.backends import rows
    x = np.array([3.7e-43, -1e-40, 1e-39, 2.5, 0.0, 1e-310, -3e-320], np.float64)
    for src, dst in ((np.float64, np.float32), (np.float32, np.float64)):
        xs = x.astype(src)
        got = rows.astype(cupy.asarray(xs), dst, cupy).get()
        assert got.dtype == dst and np.array_equal(got.view(f"u{got.itemsize}"),
                                                   xs.astype(dst).view(f"u{got.itemsize}"))


@pytest.mark.parametrize("src,dst", [(np.float64, np.float32), (np.float32, np.float64)])
def test_device_input_of_another_dtype_keeps_subnormals(src, dst):
    import cupyx.scipy.sparse as cps
    rng = np.random.default_rng(8)
    X = sps.random(8, 30, density=0.4, random_state=rng, format="csr", dtype=np.float64)
    X.data = (X.data + 0.1) * 1e-41  # subnormal once float32
    X = X.astype(src)
    D = own_distances(cps.csr_matrix(X), metric="manhattan", backend="cuda", dtype=dst).get()
    Xr = X.astype(dst).astype(np.float64).toarray()  # the values as the host converts them
    ref = reference("manhattan", Xr, Xr)
    assert np.all(ref[~np.eye(8, dtype=bool)] > 0)
    err = (np.abs(D.astype(np.float64) - ref) - 2.0 ** -24 * ref - 2.0 ** -150) / row_scale("manhattan", Xr, Xr, ref)
    assert err.max() <= BOUND, err.max()
