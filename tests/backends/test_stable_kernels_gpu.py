"""The stable kernels of kernels/gbdist.cuh (gbdist/algebra/stable.py) on the device:
each stays within its stated bound against a long double reference, on inputs chosen
where it is weakest (nearly equal values, both sides of the series/logs threshold,
values far apart, zeros, subnormals); and the metrics that use them keep the accuracy
bound end to end with the float split on."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist.algebra.stable import kernels
from gbdist.resources import read
from accuracy_cases import BOUND, max_scaled_error

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

U = 2.0 ** -24
SOURCE = read("kernels", "gbdist.cuh") + r"""
extern "C" __global__ void js_term(const double* x, const double* y, long long n, double* out) {
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n;
       t += (long long)gridDim.x * blockDim.x)
    out[t] = gb_js_term(x[t], y[t]);
}
"""


def _device_js(x, y):
    import cupy
    from gbdist.backends.cuda import cache
    fn = cache.module("test-stable", SOURCE, ("js_term",)).get_function("js_term")
    xg, yg = cupy.asarray(x, dtype=cupy.float64), cupy.asarray(y, dtype=cupy.float64)
    out = cupy.empty_like(xg)
    fn((512,), (256,), (xg, yg, np.int64(xg.size), out))
    return cupy.asnumpy(out)


def _reference_js(x, y):
    """x log(2x/s) + y log(2y/s) in long double, as s·ψ(d): the series of positive terms
    for d < 0.5 (no cancellation), the logs above (they cancel by at most 3.7x there)."""
    x, y = np.asarray(x, np.longdouble), np.asarray(y, np.longdouble)
    s = x + y
    with np.errstate(all="ignore"):
        d = np.abs(x - y) / s
        t = d * d
        series = np.zeros_like(d)
        for n in range(60, 0, -1):
            series = series * t + np.longdouble(1) / ((2 * n) * (2 * n - 1))
        series *= t
        lo = np.where(d < 1, (1 - d) * np.log1p(-d), 0)
        logs = ((1 + d) * np.log1p(d) + lo) / 2
        psi = np.where(d < 0.5, series, logs)
        return np.where(s == 0, 0, s * psi)


def _cases(rng, n=1 << 19):
    x = rng.lognormal(0, 3, n).astype(np.float32).astype(np.float64)
    k = n // 8
    y = np.empty(n)
    y[:k] = x[:k] * (1 + rng.choice([-1, 1], k) * 10.0 ** rng.uniform(-7.5, -0.5, k))
    for j, (lo, hi) in enumerate([(0.69, 0.71), (0.0, 0.7), (0.7, 1.0)], start=1):
        d = rng.uniform(lo, hi, k)  # y = x (1 − d)/(1 + d): |x − y|/(x + y) = d
        y[j * k:(j + 1) * k] = x[j * k:(j + 1) * k] * (1 - d) / (1 + d)
    y[4 * k:5 * k] = x[4 * k:5 * k] * 10.0 ** -rng.uniform(1, 40, k)  # far apart
    y[5 * k:] = rng.lognormal(0, 3, n - 5 * k)
    y = np.abs(y).astype(np.float32).astype(np.float64)  # float32 data, widened
    x[:64], y[64:128] = 0.0, 0.0
    x[128:192] = 1e-42  # subnormal float32 values
    swap = rng.random(n) < 0.5
    return np.where(swap, y, x), np.where(swap, x, y)


def test_js_term_stays_within_its_bound():
    kern = next(k for k in kernels() if k.name == "gb_js_term")
    x, y = _cases(np.random.default_rng(3))
    got = _device_js(x, y).astype(np.longdouble)
    ref = _reference_js(x, y)
    slack = kern.k * U * ref + kern.absolute * (x + y)
    err = np.abs(got - ref)
    worst = float(np.max(np.where(ref > 0, err / np.where(ref > 0, ref, 1), 0)) / U)
    assert np.all(err <= slack), (worst, x[np.argmax(err - slack)], y[np.argmax(err - slack)])
    assert np.all(np.isfinite(got)) and np.all(got >= 0)
    print(f"gb_js_term: worst relative error {worst:.2f}u (bound {kern.k:g}u)")


@pytest.mark.parametrize("strategy", ["gather", "scatter"])
@pytest.mark.parametrize("metric", ["jensenshannon", "jensenshannon_unnormalized"])
def test_js_with_the_kernel_keeps_the_accuracy_bound(metric, strategy):
    from gbdist.backends.cuda import last_run
    rng = np.random.default_rng(1)
    X = sps.random(60, 300, density=0.1, random_state=rng, dtype=np.float64, format="csr")
    X.data = rng.lognormal(0, 2, X.nnz)
    Y = X[:40].copy()
    Y.data = Y.data * (1 + rng.normal(size=Y.nnz) * 1e-5)  # nearly identical rows
    X, Y = X.astype(np.float32), sps.vstack([Y, X[40:]]).tocsr().astype(np.float32)
    D = gb.pairwise_distances(X, Y, metric=metric, backend="cuda", strategy=strategy)
    assert last_run()["float_split"]
    err = max_scaled_error(metric, D, X.toarray(), Y.toarray())
    assert err <= BOUND, err
