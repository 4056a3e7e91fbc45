"""Missing values (issue 26): ``isnan(x)`` in an op's formula, the derived operands
``known`` / ``missing``, and scikit-learn's ``nan_euclidean`` built from them. References:
scikit-learn's nan_euclidean_distances and a NumPy float64 brute force of its definition
(sqrt(k / n · Σ (x − y)²) over the n coordinates present in both rows, NaN when none is),
on random data with injected NaNs, offset data (+1e4, +1e6) and MovieLens ratings.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics.pairwise import nan_euclidean_distances

import gbdist as gb
from gbdist.compiler.missing import absorbs_nan
from gbdist.errors import NonFiniteError, ParameterError
from gbdist.pairwise import metric_program

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def brute(X, Y):
    """scikit-learn's definition in float64, pair by pair."""
    k = X.shape[1]
    D = np.empty((X.shape[0], Y.shape[0]))
    for i, x in enumerate(X):
        d = (x[None, :] - Y) ** 2
        n = (~np.isnan(d)).sum(axis=1)
        with np.errstate(all="ignore"):
            D[i] = np.sqrt(k / n * np.nansum(d, axis=1))
        D[i][n == 0] = np.nan
    return D


def _with_nan(seed, m, k, offset=0.0, share=0.25):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, k)) + offset
    X[rng.random(X.shape) < share] = np.nan
    return X


def _rel(D, ref):
    both = ~np.isnan(ref)
    return float(np.max(np.abs(D[both] - ref[both]) / np.maximum(ref[both], 1e-300)))


@pytest.mark.parametrize("backend", ("cpu", "compiled"))
def test_nan_euclidean_equals_scikit_learn(backend):
    X, Y = _with_nan(0, 40, 7), _with_nan(1, 25, 7)
    X[0] = np.nan  # no coordinate present: NaN against every row, as scikit-learn
    Y[2] = X[5]
    want = nan_euclidean_distances(X, Y)
    D = gb.pairwise_distances(X, Y, metric="nan_euclidean", backend=backend)
    assert D.dtype == np.float64
    np.testing.assert_array_equal(np.isnan(D), np.isnan(want))
    np.testing.assert_allclose(D, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert D[5, 2] == 0.0
    S = gb.pairwise_distances(X, metric="nan_euclidean", backend=backend)
    np.testing.assert_allclose(S, nan_euclidean_distances(X), rtol=1e-12, atol=1e-12,
                               equal_nan=True)
    assert np.all(np.diagonal(S)[1:] == 0.0)
    # float32 in, float32 out (scikit-learn's nan_euclidean_distances keeps float32)
    D32 = gb.pairwise_distances(X.astype(np.float32), Y.astype(np.float32),
                                metric="nan_euclidean", backend=backend)
    assert D32.dtype == np.float32
    np.testing.assert_allclose(D32, want, rtol=1e-5, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("offset", (1e4, 1e6))
def test_nan_euclidean_offset_data_beats_the_peer(offset):
    X, Y = _with_nan(2, 60, 9, offset), _with_nan(3, 30, 9, offset)
    ref = brute(X, Y)
    D = gb.pairwise_distances(X, Y, metric="nan_euclidean")
    np.testing.assert_array_equal(np.isnan(D), np.isnan(ref))
    err, peer = _rel(D, ref), _rel(nan_euclidean_distances(X, Y), ref)
    assert err <= 1e-10, err  # the accuracy rule centres the columns (NaN left out of μ)
    assert err <= peer


def test_nan_euclidean_knn_and_estimators():
    X, Q = _with_nan(4, 120, 6, share=0.15), _with_nan(5, 15, 6, share=0.15)
    ref = brute(Q, X)
    d, i = gb.knn(Q, X, k=4, metric="nan_euclidean")
    np.testing.assert_allclose(d, np.sort(ref, axis=1)[:, :4], rtol=1e-12, atol=1e-12)
    nn = gb.NearestNeighbors(n_neighbors=4, metric="nan_euclidean").fit(X)
    d2, _ = nn.kneighbors(Q)
    np.testing.assert_allclose(d2, d, rtol=1e-12)
    G = gb.KNeighborsTransformer(n_neighbors=3, metric="nan_euclidean").fit_transform(X)
    assert not np.isnan(G.data).any()


def test_nan_is_refused_elsewhere_and_inf_here():
    X = _with_nan(6, 10, 4)
    with pytest.raises(NonFiniteError, match="NaN"):
        gb.pairwise_distances(X, metric="euclidean")
    X[1, 1] = np.inf
    with pytest.raises(NonFiniteError, match="infinity"):
        gb.pairwise_distances(X, metric="nan_euclidean")
    with pytest.raises(ParameterError, match="missing value"):
        gb.pairwise_distances(_with_nan(6, 10, 4), metric="nan_euclidean", missing_values=-1)
    D = gb.pairwise_distances(_with_nan(6, 10, 4), metric="nan_euclidean",
                              missing_values=np.nan, copy=False)
    np.testing.assert_allclose(D, nan_euclidean_distances(_with_nan(6, 10, 4)), rtol=1e-12,
                               atol=1e-12, equal_nan=True)


def test_isnan_is_an_op_like_any_other():
    """A user's metric over isnan: absorbs NaN only where every read of the values does."""
    known = gb.op("my_known", lambda x: gb.where(gb.isnan(x), 0, x))
    relu = gb.op("my_relu", lambda x: gb.where(x > 0, x, 0))  # maps NaN to 0, tests nothing
    A, B = gb.matrices("A B")
    kept = gb.mxm(gb.apply(known, A), gb.apply(known, B).T, gb.semirings.plus_sqdiff)
    assert absorbs_nan(metric_program(kept).plan.expr)
    assert not absorbs_nan(metric_program(
        gb.mxm(gb.apply(relu, A), gb.apply(relu, B).T, gb.semirings.plus_sqdiff)).plan.expr)
    raw = kept + gb.mxm(A, B.T, gb.semirings.plus_times)  # one read of A's raw values
    assert not absorbs_nan(metric_program(raw).plan.expr)
    X, Y = _with_nan(7, 12, 5), _with_nan(8, 9, 5)
    D = gb.pairwise_distances(X, Y, metric=kept, dtype=np.float64)
    np.testing.assert_allclose(D, ((np.nan_to_num(X)[:, None] - np.nan_to_num(Y)[None]) ** 2
                                   ).sum(-1), rtol=1e-12, atol=1e-12)


def test_isnan_in_the_text_language():
    gb.define("""
op hO_unknown_count(x, y) = where(isnan(x) or isnan(y), 1, 0)
metric hO_unknown_pairs(A, B) = mxm(A, B.T, semiring(hO_unknown_count, plus))
""")
    assert "isnan(x)" in str(gb.explain("hO_unknown_pairs"))
    X, Y = _with_nan(9, 8, 6), _with_nan(10, 7, 6)
    D = gb.pairwise_distances(X, Y, metric="hO_unknown_pairs", dtype=np.float64,
                              ensure_all_finite="allow-nan")
    want = (np.isnan(X)[:, None] | np.isnan(Y)[None]).sum(-1)
    np.testing.assert_array_equal(D, want)


@pytest.mark.skipif(not (DATA / "ml-latest-small" / "ratings.csv").is_file(),
                    reason="../shared/data/ml-latest-small absent")
@pytest.mark.parametrize("offset", (0.0, 1e4, 1e6))
def test_nan_euclidean_on_movielens_ratings(offset):
    """Users × the 40 most rated movies, an unrated movie missing (KNNImputer's use)."""
    raw = np.loadtxt(DATA / "ml-latest-small" / "ratings.csv", delimiter=",", skiprows=1,
                     usecols=(0, 1, 2), max_rows=30000)
    users = np.unique(raw[:, 0], return_inverse=True)[1]
    movies, mi, counts = np.unique(raw[:, 1], return_inverse=True, return_counts=True)
    top = np.argsort(-counts)[:40]
    col = np.full(movies.size, -1)
    col[top] = np.arange(40)
    R = np.full((users.max() + 1, 40), np.nan)
    keep = col[mi] >= 0
    R[users[keep], col[mi[keep]]] = raw[keep, 2]
    R = R[(~np.isnan(R)).any(axis=1)] + offset
    X, Y = R[:80], R[80:160]
    ref = brute(X, Y)
    D = gb.pairwise_distances(X, Y, metric="nan_euclidean")
    np.testing.assert_array_equal(np.isnan(D), np.isnan(ref))
    # compared squared: √ turns a rounding of 1e-13 in a sum that is 0 into 3e-7 (the
    # ratings are multiples of 0.5, so the offset sums are exact in float64 and the peer's
    # expansion happens to be exact here; gbdist centres the columns, which is not)
    scale = np.nanmedian(ref ** 2)
    assert np.nanmax(np.abs(D ** 2 - ref ** 2)) <= 1e-12 * scale
    if offset == 0.0:
        np.testing.assert_allclose(D, nan_euclidean_distances(X, Y), rtol=1e-12, atol=1e-12,
                                   equal_nan=True)
