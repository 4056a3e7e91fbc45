"""Row transforms (issue 26): mahalanobis as euclidean over whitened rows, haversine as the
chord between unit vectors. References: SciPy's cdist/pdist (mahalanobis, VI= and its
default) and scikit-learn's haversine_distances, in float64, on random, offset and real data.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist, pdist

import gbdist as gb
from gbdist.compiler import ir
from gbdist.errors import InputError, TypeCheckError

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def _mixed_rows(seed=0, m=40, n=25, k=5, offset=0.0):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(k, k))
    X = rng.normal(size=(m, k)) @ M + offset
    Y = rng.normal(size=(n, k)) @ M + offset
    Y[3] = X[3]
    return X, Y


@pytest.mark.parametrize("backend", ("cpu", "compiled"))
@pytest.mark.parametrize("offset", (0.0, 1e4, 1e6))
def test_mahalanobis_equals_scipy(backend, offset):
    X, Y = _mixed_rows(offset=offset)
    want = cdist(X, Y, "mahalanobis")  # VI: the inverse covariance of X and Y stacked
    D = gb.pairwise_distances(X, Y, metric="mahalanobis", dtype=np.float64, backend=backend)
    np.testing.assert_allclose(D, want, rtol=1e-8, atol=1e-10)
    assert D[3, 3] == 0.0
    VI = np.linalg.inv(np.cov(X.T) + np.eye(X.shape[1]))
    D = gb.cdist(X, Y, "mahalanobis", VI=VI, backend=backend)
    np.testing.assert_allclose(D, cdist(X, Y, "mahalanobis", VI=VI), rtol=1e-8, atol=1e-10)
    # pdist: VI of X alone
    np.testing.assert_allclose(gb.pdist(X, "mahalanobis", backend=backend),
                               pdist(X, "mahalanobis"), rtol=1e-8, atol=1e-10)


def test_mahalanobis_sparse_float32_aliases_and_knn():
    X, Y = _mixed_rows(1)
    X[np.abs(X) < 0.5] = 0.0
    Xs = sps.csr_matrix(X)
    want = pdist(X, "mahalanobis")
    for name in ("mahalanobis", "mahal", "mah"):
        np.testing.assert_allclose(gb.pdist(Xs, name), want, rtol=1e-8, atol=1e-10)
    VI = np.linalg.inv(np.cov(np.vstack([X, Y]).T)).T
    d, i = gb.knn(X, Y, k=4, metric="mahalanobis")
    ref = cdist(X, Y, "mahalanobis", VI=VI)
    np.testing.assert_allclose(d, np.sort(ref, axis=1)[:, :4], rtol=1e-8, atol=1e-10)
    D32 = gb.pairwise_distances(X.astype(np.float32), Y.astype(np.float32), metric="mahalanobis")
    ref32 = cdist(X.astype(np.float32).astype(float), Y.astype(np.float32).astype(float),
                  "mahalanobis")
    np.testing.assert_allclose(D32, ref32, rtol=1e-4, atol=1e-5)


def test_mahalanobis_bad_vi_is_refused():
    X, Y = _mixed_rows(2)
    with pytest.raises(InputError, match="positive semidefinite"):
        gb.pairwise_distances(X, Y, metric="mahalanobis", VI=-np.eye(5))
    with pytest.raises(InputError, match="k x k"):
        gb.pairwise_distances(X, Y, metric="mahalanobis", VI=np.eye(4))
    # a singular covariance (3 rows, 5 columns): its pseudo-inverse, where SciPy's inv
    # raises or returns rounding noise
    D = gb.pairwise_distances(X[:3], Y[:4], metric="mahalanobis", dtype=np.float64)
    VI = np.linalg.pinv(np.cov(np.vstack([X[:3], Y[:4]]).T))
    np.testing.assert_allclose(D, cdist(X[:3], Y[:4], "mahalanobis", VI=VI), rtol=1e-7,
                               atol=1e-9)


def test_a_mapped_operand_is_one_binding():
    """whiten reads the operand as given; it cannot also be read plain in one expression."""
    with pytest.raises(TypeCheckError, match="as given"):
        gb.define("metric bad_whiten(A, B; VI = invcov(A, B), mu = mean(A, B)) = "
                  "euclidean(whiten(apply(abs, A), VI, mu), whiten(B, VI, mu))")
    defs = gb.define("metric my_mahal_sq(A, B; VI = invcov(A, B), mu = mean(A, B)) = "
                     "sqeuclidean(whiten(A, VI, mu), whiten(B, VI, mu))")
    expr = defs.metrics["my_mahal_sq"].expression()
    assert any(isinstance(n, ir.Mapped) for n in ir.walk(expr))
    X, Y = _mixed_rows(3)
    D = gb.pairwise_distances(X, Y, metric="my_mahal_sq", dtype=np.float64)
    np.testing.assert_allclose(D, cdist(X, Y, "mahalanobis") ** 2, rtol=1e-8)
    # any common centre gives the same distances (it only keeps offset data's digits)
    D = gb.pairwise_distances(X, Y, metric="mahalanobis", mu=np.full(X.shape[1], -3.0),
                              dtype=np.float64)
    np.testing.assert_allclose(D, cdist(X, Y, "mahalanobis"), rtol=1e-8)


def _latlon(seed, m):
    rng = np.random.default_rng(seed)
    return np.c_[rng.uniform(-1.5, 1.5, m), rng.uniform(-np.pi, np.pi, m)]


@pytest.mark.parametrize("backend", ("cpu", "compiled"))
def test_haversine_equals_scikit_learn(backend):
    from sklearn.metrics.pairwise import haversine_distances
    X, Y = _latlon(0, 50), _latlon(1, 30)
    Y[3] = X[3]
    Y[4] = X[4] + [1e-3, -2e-3]
    want = haversine_distances(X, Y)
    D = gb.pairwise_distances(X, Y, metric="haversine", backend=backend)
    np.testing.assert_allclose(D, want, rtol=1e-9, atol=1e-12)
    assert D[3, 3] == 0.0
    D = gb.pairwise_distances(X, metric="haversine", backend=backend)
    np.testing.assert_allclose(D, haversine_distances(X), rtol=1e-9, atol=1e-12)
    assert np.all(np.diagonal(D) == 0.0)
    with pytest.raises(InputError, match="two columns"):
        gb.pairwise_distances(np.ones((3, 3)), metric="haversine")


@pytest.mark.parametrize("sep,rtol", [(1e-3, 1e-11), (1e-6, 1e-8), (1e-9, 2e-5)])
def test_haversine_close_pairs(sep, rtol):
    """Close pairs: the chord of the unit vectors summed as written (few columns: the
    accuracy rule's direct sum), not ‖a‖² + ‖b‖² − 2⟨a, b⟩, which lost 2e-3 relative at
    1e-6 rad and everything at 1e-9. The sphere embedding itself loses ~eps/θ relative
    (docs/metrics.md: haversine)."""
    from sklearn.metrics.pairwise import haversine_distances
    rng = np.random.default_rng(11)
    X = _latlon(4, 80)
    Y = X + sep * rng.normal(size=X.shape)
    want = np.diagonal(haversine_distances(X, Y))
    got = np.diagonal(gb.pairwise_distances(X, Y, metric="haversine", backend="cpu"))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


def test_haversine_knn_equals_scikit_learn():
    from sklearn.neighbors import NearestNeighbors
    X, Q = _latlon(2, 200), _latlon(3, 20)
    got = gb.NearestNeighbors(n_neighbors=5, metric="haversine").fit(X).kneighbors(Q)
    want = NearestNeighbors(n_neighbors=5, metric="haversine", algorithm="brute").fit(
        X).kneighbors(Q)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.skipif(not (DATA / "ml-latest-small" / "ratings.csv").is_file(),
                    reason="../shared/data/ml-latest-small absent")
def test_mahalanobis_on_movielens_user_profiles():
    raw = np.loadtxt(DATA / "ml-latest-small" / "ratings.csv", delimiter=",", skiprows=1,
                     usecols=(0, 1, 2, 3), max_rows=20000)
    users = np.unique(raw[:, 0], return_inverse=True)[1]
    # per user: mean and spread of ratings, number of ratings, mean timestamp (offset ~1e9)
    feats = np.array([[raw[users == u, 2].mean(), raw[users == u, 2].std(),
                       (users == u).sum(), raw[users == u, 3].mean()]
                      for u in range(users.max() + 1)])
    X, Y = feats[:60], feats[60:]
    np.testing.assert_allclose(gb.cdist(X, Y, "mahalanobis"), cdist(X, Y, "mahalanobis"),
                               rtol=1e-7, atol=1e-9)
