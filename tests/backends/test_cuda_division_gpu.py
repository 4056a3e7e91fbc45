"""``gb_div`` (kernels/gbdist.cuh), the division that ⊗ over float32 data uses when
it is evaluated in float64: relative error below 2^-45 against the exact quotient
(long double on the host), IEEE results at every special case."""
import numpy as np
import pytest

from gbdist.resources import read

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

SOURCE = read("kernels", "gbdist.cuh") + r"""
extern "C" __global__ void div_both(const double* n, const double* d, long long size,
                                    double* fast, double* ieee) {
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < size;
       t += (long long)gridDim.x * blockDim.x) {
    fast[t] = gb_div(n[t], d[t]);
    ieee[t] = n[t] / d[t];
  }
}
"""


def _run(n, d):
    import cupy
    from gbdist.backends.cuda import cache
    fn = cache.module("test-div", SOURCE, ("div_both",)).get_function("div_both")  # shipping options
    n_g, d_g = cupy.asarray(n, dtype=cupy.float64), cupy.asarray(d, dtype=cupy.float64)
    fast, ieee = cupy.empty_like(n_g), cupy.empty_like(n_g)
    fn((256,), (256,), (n_g, d_g, np.int64(n_g.size), fast, ieee))
    return cupy.asnumpy(fast), cupy.asnumpy(ieee)


def test_relative_error_bound_on_float_derived_operands():
    rng = np.random.default_rng(7)
    size = 1 << 20
    # what ⊗ divides: sums, differences and products of float32 values, widened
    a = (rng.lognormal(0, 8, size) * rng.choice([-1, 1], size)).astype(np.float32)
    b = (rng.lognormal(0, 8, size) * rng.choice([-1, 1], size)).astype(np.float32)
    c = rng.lognormal(0, 8, size).astype(np.float32)
    n = np.abs(a.astype(np.float64) - b.astype(np.float64))
    d = np.abs(a.astype(np.float64)) + np.abs(b.astype(np.float64))
    n = np.concatenate([n, a.astype(np.float64), c.astype(np.float64) * a])
    d = np.concatenate([d, c.astype(np.float64), d])
    fast, ieee = _run(n, d)
    exact = n.astype(np.longdouble) / d.astype(np.longdouble)
    assert np.finfo(np.longdouble).nmant >= 63, "needs an 80-bit long double for the reference"
    ok = np.isfinite(exact) & (exact != 0) & (np.abs(exact) > 1e-300)
    rel = np.abs((fast[ok].astype(np.longdouble) - exact[ok]) / exact[ok])
    assert float(rel.max()) < 2.0 ** -45
    assert float(np.abs((ieee[ok] - exact[ok]) / exact[ok]).max()) < 2.0 ** -52  # the reference is sound
    assert ok.mean() > 0.99


def test_special_cases_are_ieee():
    f32max, f32tiny = float(np.finfo(np.float32).max), float(np.finfo(np.float32).tiny)
    cases = [(0.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (np.inf, 2.0), (2.0, np.inf),
             (np.nan, 1.0), (1.0, np.nan), (1.0, f32tiny / 8), (1e-45, 3e-45), (3.0, 1e300),
             (1e300, 1e-300), (f32max * 4, 3.0), (5.0, f32max * 4), (-0.0, 1.0), (7.0, -0.0),
             (1e-310, 3.0), (2.5, 2.0 ** 127), (2.5, 2.0 ** -127), (1.0, 3.0)]
    n, d = np.array(cases).T
    fast, ieee = _run(n, d)
    same = (fast == ieee) | (np.isnan(fast) & np.isnan(ieee))
    # relative 2^-45 for normal results; a subnormal result within two of its units
    close = np.abs(fast - ieee) <= np.maximum(2.0 ** -45 * np.abs(ieee), 2 * 2.0 ** -1074)
    assert np.all(same | close), [(c, f, i) for c, f, i, s in zip(cases, fast, ieee, same | close) if not s]
    assert np.array_equal(np.signbit(fast), np.signbit(ieee))  # signed zeros and infinities
