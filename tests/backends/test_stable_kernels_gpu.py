"""The stable kernels of kernels/gbdist.cuh (gbdist/algebra/stable.py) on the device:
each stays within its stated bound against a long double reference, on float32 inputs
chosen where it is weakest (nearly equal values, both sides of the series/logs
threshold, values far apart, zeros) within the range the bound covers (0 or 2^±32);
the one device approximation the bound takes on trust, __log2f's 2 ulp, holds for
every float it can be given; and the metrics that use the kernels keep the accuracy
bound end to end with the float split on."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist.algebra.stable import kernels
from gbdist.resources import read
from accuracy_cases import BOUND, max_scaled_error
from stable_cases import js_cases, js_reference

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

U = 2.0 ** -24
SOURCE = read("kernels", "gbdist.cuh") + r"""
extern "C" __global__ void js_term(const float* x, const float* y, long long n, double* out) {
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n;
       t += (long long)gridDim.x * blockDim.x)
    out[t] = gb_js_term(x[t], y[t]);
}
// max over the floats e in [lo, hi] of |__log2f(e) - log2(e)| in units in the last place of
// the float log2(e), times 1000 (atomicMax on an int)
extern "C" __global__ void log2_ulps(unsigned int lo, unsigned int hi, int* worst) {
  int mine = 0;
  for (unsigned long long b = lo + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; b <= hi;
       b += (unsigned long long)gridDim.x * blockDim.x) {
    const float e = __uint_as_float((unsigned int)b);
    const double ref = log2((double)e);
    const double ulp = ldexp(1.0, ilogb((float)ref) - 23);
    mine = max(mine, (int)(1000.0 * fabs((double)__log2f(e) - ref) / ulp));
  }
  atomicMax(worst, mine);
}
"""


def _device_js(x, y):
    import cupy
    from gbdist.backends.cuda import cache
    fn = cache.module("test-stable", SOURCE, ("js_term", "log2_ulps")).get_function("js_term")
    xg, yg = cupy.asarray(x, dtype=cupy.float32), cupy.asarray(y, dtype=cupy.float32)
    out = cupy.empty(xg.size, dtype=cupy.float64)
    fn((512,), (256,), (xg, yg, np.int64(xg.size), out))
    return cupy.asnumpy(out)


def test_log2f_is_within_2_ulps_on_every_float_the_kernel_gives_it():
    """gb_js_term takes log2 of e = 2 min(x, y)/(x + y) in [2^-64, 0.2] from __log2f, whose
    documented error outside [0.5, 2] is 2 ulps: checked for each of those floats."""
    import cupy
    from gbdist.backends.cuda import cache
    fn = cache.module("test-stable", SOURCE, ("js_term", "log2_ulps")).get_function("log2_ulps")
    lo, hi = (int(np.array(v, np.float32).view(np.uint32)) for v in (2.0 ** -64, 0.2))
    worst = cupy.zeros(1, dtype=cupy.int32)
    fn((4096,), (256,), (np.uint32(lo), np.uint32(hi), worst))
    assert int(worst.get()[0]) <= 2000, int(worst.get()[0]) / 1000


def test_js_term_stays_within_its_bound():
    kern = next(k for k in kernels() if k.name == "gb_js_term")
    x, y = js_cases(np.random.default_rng(3))
    got = _device_js(x, y).astype(np.longdouble)
    ref = js_reference(x, y)
    slack = kern.k * U * ref
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
