"""Rows whose largest |value| is subnormal are scaled like every other row (issue 24,
item 5): by the power of two that brings the largest |value| into [0.5, 1), exactly.

Before, the factor 2^s was formed as a float64 (s > 1023 overflows it) and such rows were
left unscaled, so their squares underflowed: cosine([1e-310, 0, 3e-320], [1, 0, 2]) was
0.0 (SciPy says 0.0 too, its own underflow). The references here are exact: the input
floats as rationals (every float is one), sums and products exact, square roots to 60
digits by mpmath.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal

import gbdist as gb
from gbdist.backends import rows
from gbdist.backends.cpu import CPUBackend
from subnormal_cases import NORMAL64, SUB32, SUB64, exact_cosine, exact_matrix


def _backends():
    out = [pytest.param("numpy", id="numpy")]
    from gbdist.backends.compiled import available
    if available():
        out.append(pytest.param("compiled", id="compiled"))
    return out


BACKENDS = _backends()


def _be(name):
    return CPUBackend() if name == "numpy" else name


def test_the_issues_example_exactly():
    a, b = [1e-310, 0.0, 3e-320], [1.0, 0.0, 2.0]
    want = exact_cosine(a, b)
    assert abs(want - 0.5527864) < 1e-7  # the issue's 0.553
    for backend in BACKENDS:
        D = gb.pairwise_distances(np.array([a]), np.array([b]), metric="cosine",
                                  backend=_be(backend.values[0]))
        assert_allclose(D[0, 0], want, rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("metric", ["cosine", "correlation"])
def test_float64_rows_with_a_subnormal_maximum(backend, metric):
    X = np.vstack([SUB64, NORMAL64])
    want = exact_matrix(X, X, metric)
    for form in (np.asarray, sps.csr_matrix):
        D = gb.pairwise_distances(form(X), metric=metric, backend=_be(backend))
        assert D.dtype == np.float64
        assert_allclose(D, want, rtol=1e-12, atol=1e-12)
    # the neighbours too (the fused search and the tile loop prepare the same rows)
    for wm in (None, 200 / 2**20):
        d, i = gb.knn(X, k=3, metric=metric, backend=_be(backend), working_memory=wm)
        for q in range(X.shape[0]):
            assert_allclose(d[q], want[q, i[q]], rtol=1e-12, atol=1e-12)
            others = np.delete(want[q], q)
            assert_allclose(d[q], np.sort(others)[:3], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("metric", ["cosine", "correlation"])
def test_float32_rows_with_a_subnormal_maximum(backend, metric):
    X = np.vstack([SUB32, NORMAL64[:3].astype(np.float32)])
    want = exact_matrix(X.astype(np.float64), X.astype(np.float64), metric)
    D = gb.pairwise_distances(sps.csr_matrix(X), metric=metric, backend=_be(backend),
                              dtype=np.float32)
    assert D.dtype == np.float32
    assert_allclose(D, want, rtol=2e-6, atol=2e-6)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.DataConversionWarning")
@pytest.mark.parametrize("metric", ["jaccard", "dice", "russellrao"])
def test_pattern_metrics_see_subnormals_as_nonzero(metric):
    """Metrics invariant under row scaling whose value is the nonzero pattern: a subnormal
    row's pattern survives its scaling (SciPy on X != 0 is the reference)."""
    from scipy.spatial.distance import cdist
    X = np.vstack([SUB64, NORMAL64])
    want = cdist(X != 0, X != 0, metric)
    for backend in BACKENDS:
        # gb.cdist: SciPy's own shape (pairwise_distances zeroes a self-join's diagonal, as
        # scikit-learn does, which russellrao's d(a, a) is not)
        assert_allclose(gb.cdist(X, X, metric=metric, backend=_be(backend.values[0])),
                        want, rtol=1e-12, atol=1e-15)


def _csr(X):
    M = sps.csr_matrix(X)
    M.sort_indices()
    return M


class _Inv:
    def __init__(self, shift=False, scale=True):
        self.shift, self.scale = shift, scale


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shift", [False, True])
def test_conditioning_scales_by_an_exact_power_of_two(dtype, shift):
    """condition_rows itself: each row's largest |value| lands in [0.5, 1) by an exact
    power of two, subnormal rows included; a row that scaling down would push below the
    normal range is left as it is; NumPy and the compiled kernel agree bit for bit."""
    fi = np.finfo(dtype)
    X = np.vstack([SUB64, NORMAL64]) if dtype == np.float64 else np.vstack(
        [SUB32, NORMAL64[:3].astype(np.float32)])
    X = X.astype(dtype)
    extra = np.zeros((2, X.shape[1]), dtype=dtype)
    extra[0, :2] = [fi.max / 2, fi.tiny * 3]  # scaling down would make tiny·3 subnormal
    extra[1, :2] = [fi.smallest_subnormal, fi.smallest_subnormal * 3]
    X = np.vstack([X, extra])
    M = _csr(X)
    inv = _Inv(shift=shift)
    from gbdist.backends.compiled import available
    rows._HOST_CONDITION.clear()  # the NumPy path
    try:
        got = rows.condition_rows(M.indptr, M.data, M.shape[1], inv)
    finally:
        if available():
            from gbdist.backends.compiled import condition_host
            rows.register_host_condition(condition_host)
    assert got.dtype == dtype
    k = M.shape[1]
    skipped = []
    for r in range(M.shape[0]):
        a, b = M.indptr[r], M.indptr[r + 1]
        v = M.data[a:b].astype(np.float64)
        if shift and b - a == k:
            v = v - v.sum() / k
        big = np.abs(v).max() if v.size else 0.0
        out = got[a:b].astype(np.float64)
        if big == 0:
            continue
        s = -int(np.frexp(big)[1])
        small = np.abs(v[v != 0]).min()
        if s < 0 and Fraction(float(small)) * Fraction(2) ** s < Fraction(float(fi.tiny)):
            # left unscaled: scaling down would push the smallest value out of the normal range
            assert_array_equal(out, v.astype(dtype))
            skipped.append(r)
            continue
        assert 0.5 <= np.abs(out).max() < 1.0, (r, out)
        assert_array_equal(out, np.ldexp(v, s).astype(dtype))  # exactly v·2^s
        if not shift or b - a < k:  # unshifted: the original values come back exactly
            assert_array_equal(np.ldexp(out, -s), M.data[a:b].astype(np.float64))
    assert X.shape[0] - 2 in skipped  # the case built for it
    if available():
        from gbdist.backends.compiled import condition_host
        assert_array_equal(condition_host(M.indptr, M.data, k, inv), got)


def test_scale_exponents_rule():
    big = np.array([1e-310, 5e-324, 1.0, 0.3, 3.0, 2.0 ** 1023, np.inf, np.nan, 0.0, 1e300])
    small = np.array([3e-320, 5e-324, 1e-300, 1e-320, 1e-300, 3 * 2.0 ** -1022, 1.0, 1.0,
                      np.inf, 2.0 ** -1000])
    s = rows.scale_exponents(big, small, np.float64)
    assert s.dtype == np.int32
    want = []
    for b, m in zip(big, small):
        if not (b > 0 and np.isfinite(b)):
            want.append(0)
            continue
        e = -int(np.frexp(b)[1])
        ok = e >= 0 or Fraction(float(m)) * Fraction(2) ** e >= Fraction(np.finfo(np.float64).tiny)
        want.append(e if ok else 0)
    assert_array_equal(s, want)
    assert s[0] == 1029 and s[1] == 1073  # beyond float64's largest power of two, 2^1023
