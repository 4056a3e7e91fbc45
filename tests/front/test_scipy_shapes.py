"""SciPy's and scikit-learn's shapes: condensed output, ``out=``, exactly symmetric
self-joins, result dtypes, and cosine of a zero row, each against the peer itself."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sps
import scipy.spatial.distance as ssd
from scipy.cluster.hierarchy import linkage
from sklearn.metrics import pairwise_distances as sk_pairwise_distances

import gbdist as gb

SYMMETRIC = [("euclidean", {}), ("sqeuclidean", {}), ("minkowski", {"p": 3}),
             ("minkowski", {"p": 4}), ("cosine", {}), ("cityblock", {}), ("chebyshev", {}),
             ("canberra", {}), ("braycurtis", {}), ("correlation", {})]


def _blobs(n=60, k=5, offset=100.0, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(4, k)) * 5
    return (centres[rng.integers(0, 4, n)] + rng.normal(size=(n, k)) + offset).astype(dtype)


@pytest.mark.parametrize("metric,params", SYMMETRIC)
def test_self_join_is_exactly_symmetric_and_squareform_works(metric, params):
    """pairwise_distances(X): symmetric to the bit, exact zero diagonal, so SciPy's
    squareform (checks=True) and linkage take it; and it is SciPy's answer (blobs around 0:
    the accuracy on offset data is the rounding analysis' business, tested with it)."""
    X = _blobs(offset=0.0)
    D = gb.pairwise_distances(X, metric=metric, backend="cpu", **params)
    assert D.dtype == np.float64
    assert np.array_equal(D, D.T) and not np.diag(D).any()
    v = ssd.squareform(D, checks=True)
    np.testing.assert_allclose(v, ssd.pdist(X, metric, **params), rtol=1e-9, atol=1e-9)
    Z = linkage(v, "average")
    assert Z.shape == (X.shape[0] - 1, 4)


@pytest.mark.parametrize("metric,params", SYMMETRIC)
def test_pdist_is_scipys_condensed_vector(metric, params):
    X = _blobs(seed=1, offset=0.0).astype(np.float32)
    v = gb.pdist(X, metric, backend="cpu", **params)
    want = ssd.pdist(X, metric, **params)
    assert v.dtype == want.dtype == np.float64 and v.shape == want.shape
    np.testing.assert_allclose(v, want, rtol=1e-9, atol=1e-9)
    # round trips through SciPy's squareform
    np.testing.assert_array_equal(ssd.squareform(ssd.squareform(v)), v)
    np.testing.assert_array_equal(gb.squareform(gb.squareform(v)), v)


def test_pdist_and_cdist_take_sparse_input_and_small_shapes():
    X = sps.random(12, 9, density=0.3, format="csr", random_state=0)
    np.testing.assert_allclose(gb.pdist(X, "cityblock", backend="cpu"),
                               ssd.pdist(X.toarray(), "cityblock"), rtol=1e-12)
    assert gb.pdist(np.ones((1, 3))).shape == ssd.pdist(np.ones((1, 3))).shape == (0,)
    assert gb.cdist(np.ones((0, 3)), np.ones((2, 3))).shape == (0, 2)


@pytest.mark.parametrize("fn", ["cdist", "pdist"])
def test_out_as_scipy(fn):
    """out= receives the answer and is returned; wrong shape, dtype or layout raise
    ValueError as SciPy does (compared with SciPy, not with gbdist)."""
    rng = np.random.default_rng(2)
    XA, XB = rng.random((6, 4)), rng.random((5, 4))
    args = (XA, XB) if fn == "cdist" else (XA,)
    shape = (6, 5) if fn == "cdist" else (15,)
    want = getattr(ssd, fn)(*args, "euclidean")
    out = np.empty(shape)
    got = getattr(gb, fn)(*args, "euclidean", out=out, backend="cpu")
    assert got is out
    np.testing.assert_allclose(out, want, rtol=1e-12)
    bad = [np.empty(shape, dtype=np.float32), np.empty(shape[:-1] + (shape[-1] + 1,))]
    if fn == "cdist":
        bad.append(np.empty((5, 6)).T)  # right shape, not C-contiguous
    for b in bad:
        with pytest.raises(ValueError) as peer:
            getattr(ssd, fn)(*args, "euclidean", out=b)
        with pytest.raises(gb.InputError) as ours:
            getattr(gb, fn)(*args, "euclidean", out=b, backend="cpu")
        assert str(peer.value).split(".")[0] in str(ours.value)


def test_cdist_shape_errors_as_scipy():
    with pytest.raises(ValueError, match="same number of columns"):
        gb.cdist(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="2-dimensional"):
        gb.cdist(np.ones(3), np.ones((2, 3)))


# --- dtypes ---------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["euclidean", "cosine", "manhattan", "sqeuclidean",
                                    "chebyshev", "canberra", "correlation", "hamming",
                                    "minkowski", "braycurtis"])
def test_result_dtypes_follow_the_peer(metric):
    """float32 input: pairwise_distances returns scikit-learn's dtype, cdist/pdist SciPy's."""
    X = _blobs(n=8, seed=3, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sk_pairwise_distances(X, X[:5], metric=metric).dtype
    assert gb.pairwise_distances(X, X[:5], metric=metric, backend="cpu").dtype == want
    assert gb.pairwise_distances(X, metric=metric, backend="cpu").dtype == want
    peer = "cityblock" if metric == "manhattan" else metric
    assert gb.cdist(X, X[:5], metric, backend="cpu").dtype == ssd.cdist(X, X[:5], peer).dtype
    assert gb.pdist(X, metric, backend="cpu").dtype == ssd.pdist(X, peer).dtype
    # gbdist's own API: float32 in, float32 out
    A, B = gb.matrices("A B")
    assert gb.compile(gb.mxm(A, B.T, gb.semirings.plus_absdiff))(
        A=X, B=X, backend="cpu").dtype == np.float32


# --- cosine of a zero row -------------------------------------------------------------


def test_cosine_of_a_zero_row_as_each_peer_defines_it():
    X = np.array([[0.0, 0, 0], [1, 2, 0], [0, 0, 0], [3, 0, 1]])
    Y = np.array([[0.0, 0, 0], [1, 1, 1]])
    # scikit-learn's shape: 1 against a zero row (0 on a self-join's diagonal)
    np.testing.assert_allclose(gb.pairwise_distances(X, Y, metric="cosine", backend="cpu"),
                               sk_pairwise_distances(X, Y, metric="cosine"), atol=1e-12)
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="cosine", backend="cpu"),
                               sk_pairwise_distances(X, metric="cosine"), atol=1e-12)
    # SciPy's shape and gbdist's own metric: 0/0 is NaN
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = ssd.cdist(X, Y, "cosine")
    got = gb.cdist(X, Y, "cosine", backend="cpu")
    np.testing.assert_allclose(got, want, atol=1e-12, equal_nan=True)
    assert np.isnan(got[0, 0])


# --- operand shapes -------------------------------------------------------------------


def test_operands_with_other_column_counts_are_told_the_rule():
    A, B, C, D = gb.matrices("A B C D")
    sr = gb.semirings.plus_absdiff
    p = gb.compile(gb.mxm(A, B.T, sr) + gb.mxm(C, D.T, sr),
                   {"A": "i", "B": "j", "C": "i", "D": "j"})
    rng = np.random.default_rng(0)
    with pytest.raises(gb.InputError) as e:
        p(A=rng.random((3, 4)), B=rng.random((2, 4)), C=rng.random((3, 2)),
          D=rng.random((2, 2)), backend="cpu")
    assert "every matrix operand" in str(e.value) and "C: 2 columns" in str(e.value)


def test_define_metric_with_a_third_matrix_fails_at_definition():
    with pytest.raises(gb.DefinitionError) as e:
        gb.define_metric("three_operands_t", lambda A, B, C: gb.mxm(A, C.T,
                                                                    gb.semirings.plus_times))
    assert "two matrix operands" in str(e.value)
    # a numeric parameter without a default is still fine
    gb.define_metric("scaled_l1_t", lambda A, B, s: gb.mxm(A, B.T, gb.semirings.plus_absdiff) * s,
                     replace=True)
    X = np.eye(3)
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="scaled_l1_t", s=2.0,
                                                     backend="cpu"), 2 * ssd.cdist(X, X, "cityblock"))


@pytest.mark.parametrize("metric", ["seuclidean", "mahalanobis"])
def test_data_derived_defaults_as_each_peer_takes_them(metric):
    """SciPy's cdist takes V / VI over XA and XB stacked, also when they are one array (so
    cdist(X, X) is not squareform(pdist(X))); scikit-learn's pairwise_distances(X, X) with
    one object takes them over X once (its ``X is Y`` rule)."""
    X = _blobs(n=12, k=4, offset=0.0)
    np.testing.assert_allclose(gb.cdist(X, X, metric), ssd.cdist(X, X, metric), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(gb.pdist(X, metric), ssd.pdist(X, metric), rtol=1e-10)
    assert not np.allclose(ssd.cdist(X, X, metric), ssd.squareform(ssd.pdist(X, metric)))
    np.testing.assert_allclose(gb.pairwise_distances(X, X, metric=metric, dtype=np.float64),
                               sk_pairwise_distances(X, X, metric=metric), rtol=1e-8, atol=1e-10)


def test_default_vi_needs_more_rows_than_columns_as_scipy():
    """SciPy raises for mahalanobis' default VI with no more rows than columns (rows in
    general position would all be at one distance under any generalised inverse)."""
    X = _blobs(n=5, k=4, offset=0.0)
    with pytest.raises(ValueError):
        ssd.pdist(X[:4], "mahalanobis")
    with pytest.raises(gb.InputError, match="more rows than columns"):
        gb.pdist(X[:4], "mahalanobis")
    with pytest.raises(gb.InputError, match="pass VI="):
        gb.cdist(X[:2], X[2:4], "mahalanobis")
    with pytest.raises(gb.InputError, match="more rows than columns"):
        gb.pairwise_distances(X[:4], metric="mahalanobis")
    # five rows of four columns: SciPy's answer; VI given: any number of rows
    np.testing.assert_allclose(gb.pdist(X, "mahalanobis"), ssd.pdist(X, "mahalanobis"),
                               rtol=1e-8)
    VI = np.eye(4)
    np.testing.assert_allclose(gb.cdist(X[:1], X[1:2], "mahalanobis", VI=VI),
                               ssd.cdist(X[:1], X[1:2], "mahalanobis", VI=VI), rtol=1e-10)


def test_unknown_parameter_is_a_type_error_as_in_the_peers():
    X = _blobs(n=6, k=3)
    with pytest.raises(TypeError):
        ssd.cdist(X, X, "cosine", p=2.0)
    with pytest.raises(TypeError):
        sk_pairwise_distances(X, metric="cosine", p=2.0)
    for call in (lambda: gb.cdist(X, X, "cosine", p=2.0),
                 lambda: gb.pdist(X, "euclidean", w=np.ones(3), N0tV4l1D_p4raM=1.0),
                 lambda: gb.pairwise_distances(X, metric="cosine", p=2.0)):
        with pytest.raises(TypeError, match="has no parameter"):
            call()
        with pytest.raises(gb.InputError):  # and still gbdist's InputError
            call()
