"""gbdist's neighbours estimators and pairwise functions as drop-ins for scikit-learn's.

References: scikit-learn itself (``check_estimator``, its own estimators with
``algorithm="brute"`` and its own ``pairwise_distances``), on the same data.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import neighbors as skn
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import pairwise_distances as sk_pairwise_distances
from sklearn.metrics import pairwise_distances_chunked as sk_chunked
from sklearn.utils.estimator_checks import parametrize_with_checks

import gbdist as gb


@parametrize_with_checks([gb.NearestNeighbors(backend="cpu"),
                          gb.KNeighborsTransformer(backend="cpu"),
                          gb.RadiusNeighborsTransformer(backend="cpu")])
def test_check_estimator(estimator, check):
    check(estimator)


def _data(seed=0, m=40, k=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, k))
    X[rng.random(X.shape) < 0.3] = 0
    return X


# --- the estimator API --------------------------------------------------------------


def test_params_are_stored_unchanged_and_checked_in_fit():
    nn = gb.NearestNeighbors(n_neighbors=-3, algorithm="fast", leaf_size=0, n_jobs=-1)
    assert nn.get_params()["n_neighbors"] == -3 and nn.algorithm == "fast"
    with pytest.raises(gb.ParameterError) as e:
        nn.fit(_data())
    assert isinstance(e.value, ValueError) and isinstance(e.value, TypeError)
    # what scikit-learn says for the same parameter
    with pytest.raises(ValueError) as theirs:
        skn.NearestNeighbors(n_neighbors=-3).fit(_data())
    with pytest.raises(ValueError) as ours:
        gb.NearestNeighbors(n_neighbors=-3).fit(_data())
    assert str(theirs.value) == str(ours.value).split("\n")[0]


@pytest.mark.parametrize("algorithm", ["auto", "brute", "kd_tree", "ball_tree"])
def test_algorithm_leaf_size_n_jobs_are_accepted_and_change_nothing(algorithm):
    X = _data(1)
    ours = gb.NearestNeighbors(n_neighbors=4, algorithm=algorithm, leaf_size=5, n_jobs=2,
                               backend="cpu").fit(X)
    theirs = skn.NearestNeighbors(n_neighbors=4, algorithm=algorithm, leaf_size=5).fit(X)
    d, i = ours.kneighbors(X[:7])
    sd, si = theirs.kneighbors(X[:7])
    assert_allclose(d, sd, rtol=1e-12, atol=1e-7)  # scikit-learn's brute expansion rounds
    assert_array_equal(i, si)
    assert ours._fit_method == "brute"


def test_not_fitted_error_is_sklearns():
    for est in (gb.NearestNeighbors(), gb.KNeighborsTransformer()):
        for call in (lambda: est.kneighbors(np.eye(2)), lambda: est.kneighbors_graph(),
                     lambda: est.radius_neighbors(np.eye(2))):
            with pytest.raises(NotFittedError) as e:
                call()
            assert isinstance(e.value, gb.GbdistError) and isinstance(e.value, ValueError)
            assert "not fitted" in str(e.value)


def test_fitted_attributes_match_sklearn():
    X = _data(2)
    for kw in ({}, {"metric": "manhattan"}, {"metric": "minkowski", "p": 3},
               {"metric": "cosine"}, {"metric": "l2"}):
        ours = gb.NearestNeighbors(backend="cpu", **kw).fit(X)
        theirs = skn.NearestNeighbors(algorithm="brute", **kw).fit(X)
        assert ours.effective_metric_ == theirs.effective_metric_
        assert ours.effective_metric_params_ == theirs.effective_metric_params_
        assert ours.n_samples_fit_ == theirs.n_samples_fit_
        assert ours.n_features_in_ == theirs.n_features_in_
    assert gb.NearestNeighbors().fit(X).effective_metric_ == "euclidean"


def test_clone_and_set_params():
    nn = gb.NearestNeighbors(n_neighbors=3, metric="cosine", working_memory=8)
    c = clone(nn)
    assert c is not nn and c.get_params() == nn.get_params()
    c.set_params(n_neighbors=7)
    assert c.n_neighbors == 7 and nn.n_neighbors == 3


def test_kneighbors_errors_match_sklearn():
    X = _data(3, m=6)
    ours = gb.NearestNeighbors(n_neighbors=2, backend="cpu").fit(X)
    theirs = skn.NearestNeighbors(n_neighbors=2).fit(X)
    for bad, cls in ((2.5, TypeError), (0, ValueError), (6, ValueError), (7, ValueError)):
        query = None if bad == 6 else X
        with pytest.raises(cls) as t:
            theirs.kneighbors(query, n_neighbors=bad)
        with pytest.raises(cls) as o:
            ours.kneighbors(query, n_neighbors=bad)
        assert isinstance(o.value, gb.GbdistError)
        assert str(o.value).split("\n")[0] == str(t.value)
    with pytest.raises(ValueError, match="X has 5 features, but NearestNeighbors is expecting 6"):
        ours.kneighbors(X[:, :5])
    with pytest.raises(ValueError, match="NaN"):
        ours.kneighbors(np.full((1, 6), np.nan))


# --- graphs, dtypes, precomputed ----------------------------------------------------------


@pytest.mark.parametrize("mode", ["connectivity", "distance"])
def test_kneighbors_graph_matches_sklearn(mode):
    X = _data(4)
    ours = gb.NearestNeighbors(n_neighbors=5, backend="cpu").fit(X)
    theirs = skn.NearestNeighbors(n_neighbors=5).fit(X)
    for q in (None, X[:9]):
        g, sg = ours.kneighbors_graph(q, mode=mode), theirs.kneighbors_graph(q, mode=mode)
        assert g.indices.dtype == sg.indices.dtype == np.int64
        assert g.indptr.dtype == np.int64 and g.dtype == sg.dtype
        # atol: a point's distance to itself rounds to ~1e-8 in the euclidean expansion
        assert_allclose(g.toarray(), sg.toarray(), atol=1e-7)
        rg = ours.radius_neighbors_graph(q, radius=2.0, mode=mode)
        srg = theirs.radius_neighbors_graph(q, radius=2.0, mode=mode)
        assert rg.indices.dtype == np.int64
        assert_allclose(rg.toarray(), srg.toarray(), atol=1e-7)
    for include_self in (False, True):
        assert_allclose(gb.kneighbors_graph(X, 3, mode=mode, include_self=include_self,
                                            backend="cpu").toarray(),
                        skn.kneighbors_graph(X, 3, mode=mode, include_self=include_self).toarray(),
                        atol=1e-7)
        assert_allclose(gb.radius_neighbors_graph(X, 1.5, mode=mode, include_self=include_self,
                                                  backend="cpu").toarray(),
                        skn.radius_neighbors_graph(X, 1.5, mode=mode,
                                                   include_self=include_self).toarray(),
                        atol=1e-7)


def test_transformers_match_sklearn():
    X = _data(5)
    for ours, theirs in ((gb.KNeighborsTransformer(n_neighbors=4, backend="cpu"),
                          skn.KNeighborsTransformer(n_neighbors=4)),
                         (gb.RadiusNeighborsTransformer(radius=1.8, backend="cpu"),
                          skn.RadiusNeighborsTransformer(radius=1.8))):
        for mode in ("distance", "connectivity"):
            ours.set_params(mode=mode)
            theirs.set_params(mode=mode)
            assert_allclose(ours.fit_transform(X).toarray(), theirs.fit_transform(X).toarray(),
                            atol=1e-7)
            assert_allclose(ours.transform(X[:5]).toarray(), theirs.transform(X[:5]).toarray(),
                            atol=1e-7)
        assert list(ours.get_feature_names_out()) == list(theirs.get_feature_names_out())


def test_precomputed_matches_sklearn():
    X = _data(6)
    D = sk_pairwise_distances(X, metric="manhattan")
    ours = gb.NearestNeighbors(n_neighbors=4, metric="precomputed").fit(D)
    theirs = skn.NearestNeighbors(n_neighbors=4, metric="precomputed").fit(D)
    assert ours.__sklearn_tags__().input_tags.pairwise
    for q in (None, D[:5]):
        d, i = ours.kneighbors(q)
        sd, si = theirs.kneighbors(q)
        assert_allclose(d, sd)
        assert_array_equal(np.sort(i, axis=1), np.sort(si, axis=1))
        assert_allclose(ours.radius_neighbors_graph(q, 2.5, mode="distance").toarray(),
                        theirs.radius_neighbors_graph(q, 2.5, mode="distance").toarray())
    # a sparse graph: only its stored entries are candidates
    G = theirs.kneighbors_graph(mode="distance", n_neighbors=6)
    d, i = gb.NearestNeighbors(n_neighbors=3, metric="precomputed").fit(G).kneighbors()
    sd, si = skn.NearestNeighbors(n_neighbors=3, metric="precomputed").fit(G).kneighbors()
    assert_allclose(d, sd)
    with pytest.raises(ValueError, match="Negative values"):
        gb.NearestNeighbors(metric="precomputed").fit(-D)
    with pytest.raises(ValueError, match="square"):
        gb.NearestNeighbors(metric="precomputed").fit(D[:5])
    assert gb.pairwise_distances(D, metric="precomputed") is D


def test_float32_rows_stay_float32_as_in_sklearn():
    X = _data(7).astype(np.float32)
    rows = tuple(X)  # a tuple of float32 rows
    assert sk_pairwise_distances(rows).dtype == np.float32
    assert gb.pairwise_distances(rows, backend="cpu").dtype == np.float32
    assert gb.pairwise_distances(list(X), backend="cpu").dtype == np.float32
    nn = gb.NearestNeighbors(n_neighbors=2, backend="cpu").fit(rows)
    assert nn.kneighbors(rows)[0].dtype == np.float32
    assert gb.knn(rows, k=2, backend="cpu")[0].dtype == np.float32


# --- pairwise_distances and pairwise_distances_chunked ------------------------------------


def test_pairwise_distances_takes_sklearns_arguments():
    X, Y = _data(8), _data(9, m=7)
    for metric, kw in (("euclidean", {}), ("manhattan", {}), ("minkowski", {"p": 3}),
                       ("cityblock", {}), ("cosine", {})):
        assert_allclose(gb.pairwise_distances(X, Y, metric, n_jobs=2, backend="cpu", **kw),
                        sk_pairwise_distances(X, Y, metric, n_jobs=2, **kw), atol=1e-10)
    with pytest.raises(TypeError, match="n_jobs"):
        gb.pairwise_distances(X, n_jobs="all")
    with pytest.raises(ValueError):  # an unknown metric, as scikit-learn raises it
        gb.pairwise_distances(X, metric="euclidian")


def test_boolean_metrics_warn_as_sklearn_does():
    from sklearn.exceptions import DataConversionWarning
    X = (_data(10) != 0).astype(np.float64)
    for metric in ("jaccard", "dice", "russellrao"):
        with pytest.warns(DataConversionWarning, match="boolean"):
            ours = gb.pairwise_distances(X, metric=metric, backend="cpu")
        with pytest.warns(DataConversionWarning):
            # a self-join as scikit-learn's: SciPy's pdist in square form, so russellrao's
            # diagonal is 0 there too (gb.cdist(X, X) keeps its value (k - nnz) / k)
            theirs = sk_pairwise_distances(X, metric=metric)
        assert_allclose(ours, theirs, atol=1e-12)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gb.pairwise_distances(X.astype(bool), metric=metric, backend="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gb.pairwise_distances(X, metric="hamming", backend="cpu")


def test_working_memory_counts_mib_and_is_honoured():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(3000, 4))
    Y = rng.normal(size=(600, 4))
    n_blocks = {}
    for wm in (1, 2, 512):
        blocks = list(gb.pairwise_distances_chunked(X, Y, working_memory=wm, backend="cpu"))
        assert all(b.nbytes <= wm * 2**20 for b in blocks)
        n_blocks[wm] = len(blocks)
    # 3000 x 600 x 8 bytes = 13.7 MiB: many blocks in 1 MiB (not the default's one), about
    # half as many in 2 MiB, one in 512 MiB
    assert n_blocks[1] > 10 and n_blocks[512] == 1
    assert abs(n_blocks[1] / n_blocks[2] - 2) < 0.3
    assert_allclose(np.vstack(blocks), sk_pairwise_distances(X, Y), rtol=1e-12)
    small = list(gb.pairwise_distances_chunked(X[:50], Y, working_memory=2**-10, backend="cpu"))
    assert len(small) > 1 and all(b.nbytes <= 2**10 for b in small if b.shape[0] > 1)
    for bad in (0, -1, "1 MB of rows", True, np.inf):  # "1" is 1 MiB (tests/runtime/test_working_memory.py)
        with pytest.raises(ValueError, match="working_memory"):
            gb.pairwise_distances_chunked(X, working_memory=bad)


def test_reduce_func_is_checked_as_sklearn_checks_it():
    X = np.arange(10.0).reshape(-1, 1)
    cases = [lambda D, s: None, lambda D, s: D.min(axis=1),
             lambda D, s: (D.min(axis=1), D.argmin(axis=1)), lambda D, s: list(D)]
    for f in cases:
        ours = list(gb.pairwise_distances_chunked(X, reduce_func=f, working_memory=64,
                                                  backend="cpu"))
        theirs = list(sk_chunked(X, reduce_func=f, working_memory=64))
        assert len(ours) == len(theirs)
        if theirs[0] is None:
            assert ours == theirs
    bad = [(lambda D, s: np.concatenate([D, D[-1:]]), ValueError, r"length 11\..* input: 10\."),
           (lambda D, s: 7, TypeError, "returned 7. Expected sequence"),
           (lambda D, s: (D, 7), TypeError, "Expected sequence")]
    for f, cls, msg in bad:
        with pytest.raises(cls, match=msg):
            next(sk_chunked(X, reduce_func=f, working_memory=64))
        with pytest.raises(cls, match=msg):
            next(gb.pairwise_distances_chunked(X, reduce_func=f, working_memory=64,
                                               backend="cpu"))
    with pytest.raises(TypeError, match="reduce_func"):
        gb.pairwise_distances_chunked(X, reduce_func=3)  # checked at the call, as sklearn


def test_sparse_inputs_of_every_format():
    X = _data(12)
    for fmt in ("csr", "csc", "coo", "lil", "dok", "bsr"):
        Xs = sps.random(20, 6, density=0.4, format=fmt, random_state=1)
        assert_allclose(gb.NearestNeighbors(n_neighbors=3, backend="cpu").fit(Xs)
                        .kneighbors(X[:4])[0],
                        skn.NearestNeighbors(n_neighbors=3).fit(Xs).kneighbors(X[:4])[0],
                        atol=1e-12)


def test_self_exclusion_among_duplicates():
    # more duplicates than neighbours: query 2's two candidates are rows 0 and 1. gbdist
    # drops by index only (its own index, else the last: the k lowest others, ties by
    # index); scikit-learn masks the first candidate there, so only the index among the
    # tied duplicates differs, not the distances
    X = np.ones((3, 1))
    d, i = gb.NearestNeighbors(n_neighbors=1, backend="cpu").fit(X).kneighbors()
    assert_array_equal(i, [[1], [0], [0]])
    sd, si = skn.NearestNeighbors(n_neighbors=1, algorithm="brute").fit(X).kneighbors()
    assert_allclose(d, sd)
    assert_allclose(d, 0)
    assert not (si == np.arange(3)[:, None]).any()
    # a measure under which a point is not its own nearest keeps the k nearest others
    rng = np.random.default_rng(13)
    Z = rng.normal(size=(12, 4))
    d, i = gb.knn(Z, k=3, metric="inner_product", backend="cpu")
    R = Z @ Z.T
    np.fill_diagonal(R, np.inf)
    assert_array_equal(i, np.argsort(R, axis=1, kind="stable")[:, :3])


def test_error_classes_are_the_ones_sklearn_users_catch():
    X = _data(14)
    # a scikit-learn style row function is not a gbdist metric: a TypeError
    with pytest.raises(TypeError) as e:
        gb.pairwise_distances(X, metric=lambda x, y: float(np.abs(x - y).sum()))
    assert isinstance(e.value, gb.MetricTypeError) and isinstance(e.value, gb.TypeCheckError)
    with pytest.raises(TypeError) as e:
        gb.pairwise_distances(X, metric=lambda x, y: 1.0)
    assert isinstance(e.value, gb.GbdistError)
    # a metric of no usable type, as scikit-learn's InvalidParameterError: both
    for call in (lambda: gb.pairwise_distances(X, metric=3),
                 lambda: gb.NearestNeighbors(metric=3).fit(X)):
        with pytest.raises(ValueError) as e:
            call()
        assert isinstance(e.value, TypeError) and isinstance(e.value, gb.GbdistError)
    # unknown names and bad values: ValueError, as in scikit-learn and SciPy
    for call in (lambda: gb.pairwise_distances(X, metric="nope"),
                 lambda: gb.NearestNeighbors(metric="nope").fit(X),
                 lambda: gb.pairwise_distances(X[:, :3], X),
                 lambda: gb.NearestNeighbors().fit(np.empty((0, 3))),
                 lambda: gb.NearestNeighbors().fit(np.array([[1.0, np.inf]]))):
        with pytest.raises(ValueError) as e:
            call()
        assert isinstance(e.value, gb.GbdistError)
