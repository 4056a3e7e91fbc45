"""Prepared operands (issue 25): work that depends on one operand is done once and kept
with it, and a prepared form is never served stale.

Reuse is counted, never timed: :func:`gbdist.runtime.prepared.stats` counts operands
prepared and lookups that reused one, and a counting wrapper around the row hashes
counts the rows hashed. Every result is compared with an independent reference
(SciPy's cdist in float64 on dense copies, scikit-learn's brute force).
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist

import gbdist as gb
from gbdist.backends import rows
from gbdist.runtime import prepared


def _backends():
    out = [pytest.param("numpy", id="numpy")]
    from gbdist.backends.compiled import available
    if available():
        out.append(pytest.param("compiled", id="compiled"))
    return out


@pytest.fixture(params=_backends())
def cpu(request, monkeypatch):
    monkeypatch.setenv("GBDIST_CPU_BACKEND", request.param)
    prepared.clear()
    return request.param


def _data(rows_=20, cols=40, seed=0):
    return sps.random(rows_, cols, density=0.2, format="csr", random_state=seed) * 3.0


def _ref(X, Y, metric):
    return cdist(np.asarray(X.todense() if sps.issparse(X) else X, dtype=np.float64),
                 np.asarray(Y.todense() if sps.issparse(Y) else Y, dtype=np.float64), metric)


METRICS = ("euclidean", "cosine", "cityblock", "correlation", "braycurtis")
NAME = {"cityblock": "manhattan"}


@pytest.mark.parametrize("metric", METRICS)
def test_repeated_call_reuses_the_operand(cpu, metric):
    X = _data()
    first = gb.pairwise_distances(X, metric=NAME.get(metric, metric), backend="cpu")
    before = prepared.stats()
    again = gb.pairwise_distances(X, metric=NAME.get(metric, metric), backend="cpu")
    after = prepared.stats()
    assert after["prepared"] == before["prepared"]  # nothing prepared anew
    assert after["reused"] > before["reused"]
    assert_array_equal(again, first)
    assert_allclose(again, _ref(X, X, metric), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("change", ["value", "index", "replace_array", "negate", "shape"])
@pytest.mark.parametrize("metric", ("euclidean", "correlation", "cityblock"))
def test_in_place_change_of_a_scipy_matrix_is_seen(cpu, metric, change):
    X = _data(seed=1)
    Y = _data(7, seed=2)
    m = NAME.get(metric, metric)
    gb.pairwise_distances(X, Y, metric=m, backend="cpu")  # prepared and kept
    if change == "value":
        X.data[3] = 11.0
    elif change == "index":  # one entry moved to the last column (still sorted, no duplicate)
        row = next(i for i in range(X.shape[0]) if X.indptr[i + 1] > X.indptr[i]
                   and X.indices[X.indptr[i + 1] - 1] < X.shape[1] - 1)
        X.indices[X.indptr[row + 1] - 1] = X.shape[1] - 1
    elif change == "replace_array":
        X.data = X.data * 2.0
    elif change == "negate":
        X.data *= -1.0
    else:  # same buffers, another shape: a new object with one row fewer
        X = X[:-1]
    got = gb.pairwise_distances(X, Y, metric=m, backend="cpu")
    assert_allclose(got, _ref(X, Y, metric), rtol=1e-10, atol=1e-12)


def test_in_place_change_of_a_dense_array_is_seen(cpu):
    X = np.random.default_rng(0).normal(size=(12, 9))
    gb.pairwise_distances(X, metric="euclidean", backend="cpu")
    X[4, 2] += 1.0
    assert_allclose(gb.pairwise_distances(X, metric="euclidean", backend="cpu"),
                    _ref(X, X, "euclidean"), rtol=1e-10, atol=1e-12)
    X[:] = X[::-1].copy()
    assert_allclose(gb.pairwise_distances(X, metric="euclidean", backend="cpu"),
                    _ref(X, X, "euclidean"), rtol=1e-10, atol=1e-12)


def test_a_negative_zero_written_in_place_is_a_change(cpu):
    """-0.0 == 0.0 as numbers, but the bytes differ: the snapshot compares bytes, so the
    operand is prepared anew (its hashes read the bits)."""
    X = sps.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0]]))
    X.data = np.array([0.5, 2.0])
    gb.pairwise_distances(X, metric="euclidean", backend="cpu")
    before = prepared.stats()["prepared"]
    X.data[0] = -0.0
    gb.pairwise_distances(X, metric="euclidean", backend="cpu")
    assert prepared.stats()["prepared"] == before + 1


def test_explicit_prepare_is_a_private_copy(cpu):
    X = _data(seed=3)
    P = gb.prepare(X)
    expected = _ref(X, X, "euclidean")
    X.data[:] = 100.0  # the user's matrix changes: the prepared copy does not
    assert_allclose(gb.pairwise_distances(P, metric="euclidean", backend="cpu"), expected,
                    rtol=1e-10, atol=1e-12)
    assert not np.shares_memory(P.source.data, X.data)
    assert P.shape == X.shape and gb.prepare(P) is P
    Q = _data(5, seed=4)
    assert_allclose(gb.pairwise_distances(Q, P, metric="cosine", backend="cpu"),
                    _ref(Q, P.source, "cosine"), rtol=1e-10, atol=1e-12)


def test_prepared_operand_keeps_each_call_s_checks(cpu):
    X = _data(seed=5).toarray()
    X[2, 3] = np.nan
    P = gb.prepare(X)
    for _ in range(2):  # refused every time, not only the first
        with pytest.raises(gb.NonFiniteError):
            gb.pairwise_distances(P, metric="euclidean", backend="cpu")
    D = gb.pairwise_distances(P, metric="euclidean", backend="cpu", ensure_all_finite=False)
    # the NaN row's distances are NaN, but for its own: scikit-learn's self-join diagonal is 0
    assert np.isnan(np.delete(D[2], 2)).all() and D[2, 2] == 0
    assert np.isfinite(np.delete(np.delete(D, 2, 0), 2, 1)).all()
    with pytest.raises(gb.InputError):
        gb.prepare(np.zeros(3))  # 1-D: refused as any input is


def test_row_hashes_of_a_prepared_index_are_computed_once(cpu, monkeypatch):
    hashed = []
    real = rows.row_hashes

    def counting(indptr, indices, data, *args):
        hashed.append(indptr.shape[0] - 1)
        return real(indptr, indices, data, *args)

    monkeypatch.setattr(rows, "row_hashes", counting)
    index = gb.prepare(_data(30, seed=6))
    queries = [_data(1, seed=10 + i) for i in range(6)]
    for q in queries:
        gb.pairwise_distances(q, index, metric="manhattan", backend="cpu")
    # the index's 30 rows once, each query's one row once per call
    assert sorted(hashed).count(30) <= 1
    assert sum(hashed) <= 30 + len(queries)


def test_nearest_neighbors_prepares_its_index_once(cpu):
    from sklearn.neighbors import NearestNeighbors as SkNN
    index = _data(60, seed=7)
    nn = gb.NearestNeighbors(n_neighbors=4, backend="cpu").fit(index)
    sk = SkNN(n_neighbors=4, algorithm="brute").fit(index.toarray())
    before = prepared.stats()
    for i in range(10):
        q = _data(1, seed=100 + i)
        d, idx = nn.kneighbors(q)
        ds, _ = sk.kneighbors(q.toarray())
        assert_allclose(d, ds, rtol=1e-10, atol=1e-12)
    after = prepared.stats()
    assert after["prepared"] - before["prepared"] <= 10  # the queries, never the index
    assert after["reused"] - before["reused"] >= 10  # the index, every query
    assert_allclose(nn.kneighbors()[0], sk.kneighbors()[0], rtol=1e-10, atol=1e-12)


def test_pickled_estimator_and_operand(cpu):
    index = _data(25, seed=8)
    nn = gb.NearestNeighbors(n_neighbors=3, backend="cpu").fit(index)
    d0, i0 = nn.kneighbors(index[:5])
    nn2 = pickle.loads(pickle.dumps(nn))
    d1, i1 = nn2.kneighbors(index[:5])
    assert_array_equal(i0, i1)
    assert_allclose(d0, d1)
    P = pickle.loads(pickle.dumps(gb.prepare(index)))
    assert_allclose(gb.pairwise_distances(P, metric="euclidean", backend="cpu"),
                    _ref(index, index, "euclidean"), rtol=1e-10, atol=1e-12)


def test_implicit_reuse_is_bounded(cpu, monkeypatch):
    monkeypatch.setattr(prepared, "IMPLICIT_ENTRIES", 3)
    mats = [_data(4, seed=20 + i) for i in range(6)]
    for M in mats:
        gb.pairwise_distances(M, metric="euclidean", backend="cpu")
    assert len(prepared._IMPLICIT) <= 3
    del mats, M
    import gc
    gc.collect()
    assert len(prepared._IMPLICIT) == 0  # dropped with the objects
