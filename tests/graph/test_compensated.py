"""compensated=True on mxv/vxm (issue 12, "optional compensated sums"): rows whose terms
cancel, summed by every kernel set, against math.fsum of the same rounded products; the
plain sum is measurably worse on them; other monoids and integer results are unchanged."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr

SR = gb.semirings
SETS = ["reference", "compiled"]


def _cancelling(m=40, n=3000, seed=3):
    rng = np.random.default_rng(seed)
    rows, cols, vals = [], [], []
    for i in range(m):
        d = int(rng.integers(0, 400)) if i % 7 else 0  # some empty rows
        c = rng.choice(n, d, replace=False)
        big = rng.choice([-1.0, 1.0], d) * 10.0 ** rng.integers(0, 12, d)
        v = np.where(np.arange(d) % 2 == 0, big, -big) + rng.random(d)
        rows += [i] * d
        cols += list(c)
        vals += list(v)
    A = sps.csr_matrix((np.asarray(vals), (rows, cols)), shape=(m, n))
    A.sort_indices()
    return A


def _fsum_rows(A, x):
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        seg = slice(A.indptr[i], A.indptr[i + 1])
        out[i] = math.fsum(A.data[seg] * x[A.indices[seg]])
    return out


@pytest.mark.parametrize("backend", SETS)
def test_mxv_compensated_matches_fsum(backend):
    if not gr.available(backend):
        pytest.skip(f"{backend} kernels not available")
    A = _cancelling()
    x = np.random.default_rng(1).random(A.shape[1]) + 0.5
    exact = _fsum_rows(A, x)
    w = gr.mxv(gb.Matrix(A), gb.Vector(x), SR.plus_times, compensated=True, backend=backend)
    plain = gr.mxv(gb.Matrix(A), gb.Vector(x), SR.plus_times, backend=backend)
    nonempty = np.diff(A.indptr) > 0
    np.testing.assert_array_equal(w.indices, np.flatnonzero(nonempty))
    got, naive = w.to_dense(), plain.to_dense()
    # a compensated sum: within a few roundings of the exact sum (the reference IS fsum)
    tol = 4 * np.finfo(np.float64).eps * np.abs(exact) + 1e-30
    assert np.all(np.abs(got - exact) <= tol + 2 * np.finfo(np.float64).eps ** 2 * 1e12 * 400)
    assert np.sum(np.abs(naive - exact) > np.abs(got - exact)) > 0  # the plain sums lose digits


@pytest.mark.parametrize("backend", SETS)
def test_vxm_compensated_and_float32(backend):
    if not gr.available(backend):
        pytest.skip(f"{backend} kernels not available")
    A = _cancelling(seed=5)
    u = np.random.default_rng(2).random(A.shape[0]) + 0.5
    exact = _fsum_rows(A.T.tocsr(), u)
    w = gr.vxm(gb.Vector(u), gb.Matrix(A), SR.plus_times, compensated=True, backend=backend)
    present = np.diff(A.tocsc().indptr) > 0
    got = w.to_dense()
    assert np.all(np.abs(got - exact)[present] <= 4 * np.finfo(np.float64).eps * np.abs(exact)[present] + 1e-3)
    # float32: values that float32 holds exactly and u = 1, so every product is exact in
    # either work type; the compensated sum is then the exact sum rounded once to float32
    A32 = A.astype(np.float32)
    ones = np.ones(A.shape[0], np.float32)
    ex32 = _fsum_rows(A32.T.tocsr().astype(np.float64), ones.astype(np.float64)).astype(np.float32)
    w32 = gr.vxm(gb.Vector(ones), gb.Matrix(A32), SR.plus_times, compensated=True, backend=backend)
    assert w32.dtype == np.float32
    spacing = np.spacing(np.abs(ex32)).astype(np.float64)
    err = np.abs(w32.to_dense().astype(np.float64) - ex32.astype(np.float64))
    assert np.all(err[present] <= spacing[present])


@pytest.mark.parametrize("backend", SETS)
def test_compensated_leaves_other_monoids_and_integers_alone(backend):
    if not gr.available(backend):
        pytest.skip(f"{backend} kernels not available")
    A = gb.Matrix(_cancelling(seed=9))
    x = gb.Vector(np.random.default_rng(4).random(A.ncols))
    for sr in (SR.min_plus, SR.max_times):
        assert gr.mxv(A, x, sr, compensated=True, backend=backend).isequal(gr.mxv(A, x, sr, backend=backend))
    Ai = gb.Matrix(sps.random(50, 60, density=0.2, random_state=0, format="csr", dtype=np.float64) * 100,
                   dtype=np.int64)
    xi = gb.Vector(np.arange(60), dtype=np.int64)
    a = gr.mxv(Ai, xi, SR.plus_times, compensated=True, backend=backend)
    assert a.dtype == np.int64 and a.isequal(gr.mxv(Ai, xi, SR.plus_times, backend=backend))


@pytest.mark.parametrize("backend", SETS + [pytest.param("cuda", marks=pytest.mark.gpu)])
def test_compensated_infinite_and_nan_terms(backend):
    """An infinite term makes its row infinite, not NaN (the correction's Inf - Inf is not
    the answer); +Inf with -Inf, or a NaN, make it NaN; finite terms whose sum passes the
    float range give Inf: each as the plain sum (SciPy's)."""
    if backend != "cuda" and not gr.available(backend):
        pytest.skip(f"{backend} kernels not available")
    A = sps.random(60, 80, density=0.25, random_state=5, format="csr")
    A.data += 0.5
    A = A.tolil()
    A[0, :] = 0
    A[0, [1, 2, 5]] = 1e308  # overflows: Inf
    A = A.tocsr()
    A.sort_indices()
    x = np.random.default_rng(6).random(80) + 0.5
    x[[3, 10, 20]] = [np.inf, -np.inf, np.nan]
    ref = A @ x
    assert np.isinf(ref).any() and np.isnan(ref).any() and np.isfinite(ref).any()
    M, u = gb.Matrix(A), gb.Vector(x)
    if backend == "cuda":
        cupy = pytest.importorskip("cupy")
        import cupyx.scipy.sparse as cps
        M, u = gb.Matrix(cps.csr_matrix(A)), gb.Vector(cupy.asarray(x))
    w = gr.mxv(M, u, SR.plus_times, compensated=True, backend=backend)
    got = np.zeros(A.shape[0])
    idx, vals = w.indices, w.values
    got[np.asarray(getattr(idx, "get", lambda: idx)())] = np.asarray(getattr(vals, "get", lambda: vals)())
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    inf = np.isinf(ref)
    np.testing.assert_array_equal(got[inf], ref[inf])
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-12)
