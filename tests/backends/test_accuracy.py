"""Accuracy on the CPU backend (issue 8 items 1–3): float32 input against float64
SciPy within 1e-6 of the row scale for every named metric, exact zeros for
identical rows (self-join diagonal, duplicates between X and Y, kNN), ranges."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from accuracy_cases import (BOUND, identical_pairs, max_scaled_error, reference, sample_data)
from metric_cases import fit_columns
from gbdist.compiler import exact
from gbdist.backends import rows
from gbdist.runtime import invariance
from gbdist.pairwise import metric_program

METRICS = sorted(gb.metric_names())
# d(a, a) proven 0: not inner_product, russellrao (weighted or not), kulczynski1 (inf), nor
# cosine_sklearn (1 for a zero row)
ZERO_SELF = [m for m in METRICS
             if m not in ("inner_product", "russellrao", "weighted_russellrao", "kulczynski1",
                          "cosine_sklearn")]


@pytest.mark.parametrize("metric", [m for m in METRICS if m != "kulczynski1"])  # inf: no scale
def test_float32_within_bound_of_float64_scipy(metric):
    X, Y = fit_columns(metric, *sample_data(1))
    # computed in float32 (scikit-learn's dtype rule would return most metrics in float64)
    D = gb.cdist(sps.csr_matrix(X), sps.csr_matrix(Y), metric, backend="cpu", dtype=np.float32)
    assert D.dtype == np.float32
    assert max_scaled_error(metric, D, X, Y) <= BOUND


@pytest.mark.parametrize("metric", METRICS)
def test_identical_rows_are_exact(metric):
    X, Y = fit_columns(metric, *sample_data(2))
    # gbdist's own definitions (gb.cdist): scikit-learn's self-join zeroes its diagonal
    Xs = sps.csr_matrix(X)
    D = gb.cdist(Xs, sps.csr_matrix(Y), metric, backend="cpu")
    S = gb.cdist(Xs, Xs, metric, backend="cpu")
    ref_xy, ref_xx = reference(metric, X, Y), reference(metric, X, X)
    for (i, j) in identical_pairs(X, Y):
        if metric in ZERO_SELF and np.isfinite(ref_xy[i, j]):
            assert D[i, j] == 0.0, (i, j, D[i, j])
    diag = np.diagonal(S)
    fin = np.isfinite(np.diagonal(ref_xx))
    if metric in ZERO_SELF:
        assert (diag[fin] == 0.0).all()
        assert np.isnan(diag[~fin]).all()  # 0/0 rows stay NaN, as in SciPy
    else:  # no constant is proven: the computed value stays
        assert exact.self_value(metric_program(metric).plan).value is None


def test_self_join_diagonal_of_large_rows_is_zero():
    """Issue 8 item 2: rows of scale 1e10 gave a diagonal of 2e-8…1e3."""
    rng = np.random.default_rng(3)
    X = sps.random(60, 40, density=0.5, random_state=rng, format="csr") * 1e10
    for metric in ("euclidean", "sqeuclidean", "cosine", "correlation", "minkowski", "manhattan"):
        D = gb.pairwise_distances(X, metric=metric, backend="cpu")
        assert (np.diagonal(D) == 0).all(), metric
        assert (D >= 0).all(), metric


def test_ranges_cosine_and_correlation():
    """Issue 8 item 1: identical rows gave cosine −2.2e-16; results stay in [0, 2]."""
    rng = np.random.default_rng(4)
    base = rng.normal(size=(1, 30))
    X = np.vstack([base * s for s in rng.uniform(0.1, 10, size=20)] + [-base * 3])
    for metric in ("cosine", "correlation"):
        D = gb.pairwise_distances(X, metric=metric, backend="cpu")
        assert (D >= 0).all() and (D <= 2).all(), metric
        np.testing.assert_allclose(D, reference(metric, X, X), atol=1e-12)


def test_radius_and_knn_see_exact_zeros():
    """kNN and radius paths get the post-pass through the runtime: no negative distance,
    self-distance exactly 0."""
    rng = np.random.default_rng(5)
    X = (sps.random(40, 25, density=0.4, random_state=rng, format="csr") * 1e6).astype(np.float32)
    d, i = gb.knn(X, k=3, metric="cosine", backend="cpu", exclude_self=False)
    assert (d[:, 0] == 0).all() and (i[:, 0] == np.arange(40)).all()
    d, i = gb.knn(X, k=3, metric="euclidean", backend="cpu", exclude_self=False)
    assert (d[:, 0] == 0).all()


def test_hash_collisions_never_write_a_value():
    """Rows with equal hashes but different entries are verified apart."""
    X = sps.csr_matrix(np.array([[1.0, 2.0, 0.0], [1.0, 2.0, 0.0], [2.0, 1.0, 0.0]]))
    Y = sps.csr_matrix(np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 1e-300]]))
    i, j = rows.identical_pairs((X.indptr, X.indices, X.data), (Y.indptr, Y.indices, Y.data))
    assert sorted(zip(i.tolist(), j.tolist())) == [(2, 0)]


def test_explain_shows_the_identity_proof():
    text = str(gb.explain("euclidean"))
    assert "d(a, a) = 0" in text and "checked numerically" in text
    assert "not a constant" in str(gb.explain("russellrao"))


@pytest.mark.parametrize("offset", [1e8, 1e6, -1e7])
def test_correlation_large_mean_matches_scipy(offset):
    """Issue 16 item 3: rows 1e8 + rand(100) gave [inf, 1.0, 0.29] (SciPy [1.018, 1.015,
    1.015]); an offset of 1e6 gave 5e-3 errors and negative distances."""
    from scipy.spatial.distance import cdist
    rng = np.random.default_rng(7)
    X = offset + rng.random((6, 100))
    D = gb.pairwise_distances(X, metric="correlation", backend="cpu")
    ref = cdist(X, X, "correlation")
    assert np.abs(D - ref).max() <= 1e-6
    assert (D >= 0).all() and (np.diagonal(D) == 0).all()
    Y = offset + rng.random((3, 100))
    np.testing.assert_allclose(gb.pairwise_distances(X, Y, metric="correlation", backend="cpu"),
                               cdist(X, Y, "correlation"), atol=1e-6)


def test_correlation_and_cosine_of_extreme_magnitudes():
    """Rows of size 1e-160 gave −inf (squares underflow); rows of 1e200 overflow Σx².
    Both metrics are proven scale-invariant, so rows are scaled by a power of two first;
    the reference is SciPy on the rows rescaled to O(1) (SciPy itself underflows)."""
    from scipy.spatial.distance import cdist
    rng = np.random.default_rng(8)
    base = rng.random((5, 60))
    base[:, ::7] = 0.0
    for scale in (1e-160, 1e-300, 1e200):
        X = base * scale
        for metric in ("correlation", "cosine"):
            D = gb.pairwise_distances(X, metric=metric, backend="cpu")
            assert np.isfinite(D).all(), (scale, metric)
            np.testing.assert_allclose(D, cdist(base, base, metric), atol=1e-9)


def test_invariances_are_derived_per_metric():
    inv = {m: invariance.invariance(metric_program(m).plan) for m in ("correlation", "cosine", "jaccard",
                                                                  "hamming", "euclidean")}
    assert inv["correlation"].scale and inv["correlation"].shift
    assert inv["cosine"].scale and not inv["cosine"].shift
    assert inv["jaccard"].scale and not inv["jaccard"].shift  # a shift can create zeros
    assert not inv["hamming"].scale  # scaling one row changes which values are equal
    assert not inv["euclidean"].scale and not inv["euclidean"].shift


def test_array_module_generic_paths(monkeypatch):
    """gbdist.backends.rows' device branches (xp not NumPy: cupyx.scatter_*) agree with the NumPy
    ones, run here through a NumPy-backed stand-in module (the GPU tests run CuPy)."""
    import sys
    import types
    fake_xp = types.ModuleType("fake_xp")
    fake_xp.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add = lambda a, i, v: np.add.at(a, i, v)
    cupyx.scatter_max = lambda a, i, v: np.maximum.at(a, i, v)
    cupyx.scatter_min = lambda a, i, v: np.minimum.at(a, i, v)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    rng = np.random.default_rng(11)
    X = sps.random(30, 12, density=0.5, random_state=rng, format="csr") * 1e8
    X = sps.vstack([X, X[:4], sps.csr_matrix(1e8 + rng.random((3, 12)))]).tocsr()
    inv = invariance.Invariance(True, True, "")
    for dt in (np.float64, np.float32):
        data = X.data.astype(dt)
        np.testing.assert_array_equal(rows.condition_rows(X.indptr, data, 12, inv, fake_xp),
                                      rows.condition_rows(X.indptr, data, 12, inv, np))
        np.testing.assert_array_equal(rows.normalise_rows(X.indptr, data, "X", fake_xp),
                                      rows.normalise_rows(X.indptr, data, "X", np))
        ops = (X.indptr, X.indices, data)
        a = rows.identical_pairs(ops, ops, fake_xp)
        b = rows.identical_pairs(ops, ops, np)
        assert sorted(zip(*map(list, a))) == sorted(zip(*map(list, b)))
        dense = X.astype(dt).toarray()
        assert sorted(zip(*map(list, b))) == sorted(identical_pairs(dense, dense))
