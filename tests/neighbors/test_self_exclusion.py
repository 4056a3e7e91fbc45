"""Self-joins leave out the query's own INDEX, never a candidate chosen by its value
(issue 24, item 1): against brute force on a dense float64 distance matrix with the
diagonal removed by index and ties ordered by index, on the NumPy and compiled CPU
backends, through the fused search (``search_k``), the tile loop, the symmetric
self-join, the estimators and the radius queries. The CUDA and Dask runs of the same
cases are in test_knn_gpu.py / tests/dask."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import neighbors as skn

import gbdist as gb
from gbdist import neighbors
from gbdist.backends.cpu import CPUBackend
from self_exclusion_cases import (
    EXACT, INEXACT, ISSUE_K1, ISSUE_X, KL_X, brute_self, check_close, check_exact, exact_data,
    inexact_data, metric_args, reference)


def _backends():
    out = [pytest.param("numpy", id="numpy")]
    from gbdist.backends.compiled import available
    if available():
        out.append(pytest.param("compiled", id="compiled"))
    return out


BACKENDS = _backends()
TINY = 200 / 2**20  # 200 bytes: many tiles, and too small for the fused search


def _be(name):
    return CPUBackend() if name == "numpy" else name


@pytest.fixture
def fused_calls(monkeypatch):
    """How often the compiled backend's fused search answered (not declined)."""
    from gbdist.backends.compiled import CompiledCPUBackend
    calls = []
    real = CompiledCPUBackend.search_k

    def spy(self, p, k, half, budget):
        out = real(self, p, k, half, budget)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(CompiledCPUBackend, "search_k", spy)
    return calls


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("symmetric", [None, False])
@pytest.mark.parametrize("wm", [None, TINY])
def test_the_issues_example(backend, symmetric, wm):
    R = ISSUE_X @ ISSUE_X.T
    for dtype in (np.float64, np.float32):
        X = ISSUE_X.astype(dtype)
        d, i = gb.knn(X, k=1, metric="inner_product", backend=_be(backend), symmetric=symmetric,
                      working_memory=wm)
        assert_array_equal(i[:, 0], ISSUE_K1)
        assert d.dtype == dtype
        for k in (1, 2, 3):
            check_exact(R, gb.knn(X, k=k, metric="inner_product", backend=_be(backend),
                                  symmetric=symmetric, working_memory=wm), k)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_fused_search_is_the_path_taken_and_agrees(backend, fused_calls):
    R = ISSUE_X @ ISSUE_X.T
    check_exact(R, gb.knn(ISSUE_X, k=1, metric="inner_product", backend=_be(backend)), 1)
    if backend == "compiled":
        assert fused_calls and all(fused_calls)  # the case ran through search_k
        fused_calls.clear()
        check_exact(R, gb.knn(ISSUE_X, k=1, metric="inner_product", backend="compiled",
                              working_memory=TINY), 1)
        assert not any(fused_calls)  # the tile loop


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_estimators(backend):
    R = ISSUE_X @ ISSUE_X.T
    est = gb.NearestNeighbors(n_neighbors=1, metric="inner_product",
                              backend=_be(backend)).fit(ISSUE_X)
    d, i = est.kneighbors()
    assert_array_equal(i[:, 0], ISSUE_K1)
    check_exact(R, est.kneighbors(n_neighbors=2), 2)
    assert_array_equal(est.kneighbors(return_distance=False)[:, 0], ISSUE_K1)
    G = est.kneighbors_graph(mode="distance")
    assert_array_equal(G.indices, ISSUE_K1)
    assert_allclose(G.data, R[np.arange(4), ISSUE_K1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_kl_divergence_ties_at_zero_without_the_query(backend):
    R = reference(KL_X, metric_args("kl_divergence")[3])
    assert (R == 0).all()
    for symmetric in (None, False):
        d, i = gb.knn(KL_X, k=1, metric="kl_divergence", backend=_be(backend),
                      symmetric=symmetric)
        assert_array_equal(i[:, 0], [1, 0, 0])
        check_exact(R, (d, i), 1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("key", EXACT)
def test_every_exact_metric_against_brute_force(backend, key):
    name, params, kind, ref = metric_args(key)
    for seed in (0, 1):
        X = exact_data(seed, kind=kind)
        R = reference(X, ref)
        for k in (1, 2, 5):
            for symmetric, wm in ((None, None), (False, None), (None, TINY)):
                got = gb.knn(X, k=k, metric=name, backend=_be(backend), symmetric=symmetric,
                             working_memory=wm, **params)
                check_exact(R, got, k)
        # float32: small integers stay exact
        check_exact(R, gb.knn(X.astype(np.float32), k=2, metric=name, backend=_be(backend),
                              **params), 2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("key", INEXACT)
def test_every_other_metric_against_brute_force(backend, key):
    name, params, kind, ref = metric_args(key)
    X = inexact_data(3, kind=kind)
    R = reference(X, ref)
    for k in (1, 3):
        for symmetric, wm in ((None, None), (False, TINY)):
            got = gb.knn(X, k=k, metric=name, backend=_be(backend), symmetric=symmetric,
                         working_memory=wm, **params)
            check_close(R, got, k)


def test_numpy_and_compiled_agree_on_non_minimal_self():
    if len(BACKENDS) < 2:
        pytest.skip("Numba is not installed")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 4))
    X[20:] = X[:10]
    for metric in ("inner_product", "kl_divergence"):
        Z = np.abs(X) if metric == "kl_divergence" else X
        a = gb.knn(Z, k=4, metric=metric, backend=CPUBackend())
        b = gb.knn(Z, k=4, metric=metric, backend="compiled")
        assert_array_equal(a[1], b[1])


def test_more_duplicates_than_k():
    """k + 1 exact duplicates of a row before it: the k lowest others are returned.
    scikit-learn returns the same distances (it drops the first candidate instead, so
    other indices among the tied duplicates)."""
    X = np.ones((3, 1))
    R = np.zeros((3, 3))
    for backend in ("numpy", "compiled"):
        d, i = gb.NearestNeighbors(n_neighbors=1, backend=_be(backend)).fit(X).kneighbors()
        check_exact(R, (d, i), 1)
        assert_array_equal(i, [[1], [0], [0]])
    sd, si = skn.NearestNeighbors(n_neighbors=1, algorithm="brute").fit(X).kneighbors()
    assert_allclose(d, sd)
    assert not (si == np.arange(3)[:, None]).any()


def test_drop_self_rule_is_by_index():
    """The rule alone, on hand-made candidate lists (NumPy)."""
    d = np.array([[0.0, 0.0, 1.0],    # own index 0 at position 1: dropped
                  [0.0, 0.0, 0.0],    # own index absent, first at 0: the LAST is dropped
                  [-1.0, 0.0, 2.0],   # own index absent: last
                  [np.nan, np.nan, np.nan]])  # own index 3 last, NaN
    i = np.array([[5, 0, 2], [0, 2, 3], [0, 1, 3], [0, 1, 3]])
    dd, ii = neighbors.drop_self(d, i, 2)
    assert_array_equal(ii, [[5, 2], [0, 2], [0, 1], [0, 1]])
    assert_array_equal(dd[:3], [[0.0, 1.0], [0.0, 0.0], [-1.0, 0.0]])
    # scikit-learn's rule for a precomputed graph (implicit diagonal): the first
    _, ii = neighbors.drop_self(d, i, 2, first_if_missing=True)
    assert_array_equal(ii, [[5, 2], [2, 3], [1, 3], [0, 1]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_radius_self_exclusion_is_by_index(backend):
    X = ISSUE_X
    R = X @ X.T
    est = gb.NearestNeighbors(radius=0.5, metric="inner_product", backend=_be(backend)).fit(X)
    dist, ind = est.radius_neighbors()
    for q in range(4):
        want = [j for j in range(4) if j != q and R[q, j] <= 0.5]
        assert_array_equal(ind[q], want)
        assert_allclose(dist[q], R[q, want])
    G = est.radius_neighbors_graph(mode="distance", sort_results=True)
    for q in range(4):
        want = [j for j in range(4) if j != q and R[q, j] <= 0.5]
        assert_array_equal(G.indices[G.indptr[q]:G.indptr[q + 1]], want)
    # kl_divergence: self at 0, every other at 0 too, none dropped but the query's own
    est = gb.NearestNeighbors(radius=0.0, metric="kl_divergence", backend=_be(backend)).fit(KL_X)
    _, ind = est.radius_neighbors()
    for q in range(3):
        assert_array_equal(ind[q], [j for j in range(3) if j != q])


def test_brute_self_reference_is_by_index():
    """The reference itself: a row's own index is removed, duplicates of it are not."""
    R = np.zeros((3, 3))
    _, i = brute_self(R, 2)
    assert_array_equal(i, [[1, 2], [0, 2], [0, 1]])
