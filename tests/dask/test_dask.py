"""gbdist.dask on a LocalCluster: the same answers as single-process gbdist, bit for bit.

References are gbdist's own single-process searches (themselves tested against SciPy and
scikit-learn elsewhere); where a symmetric self-join's answer may legitimately depend on
the tiling (a metric whose floating-point evaluation is not exactly symmetric), the check
is against the full distance matrix instead.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sps

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import gbdist as gb  # noqa: E402
import gbdist.dask as gbd  # noqa: E402
from datagen import tied_sparse  # noqa: E402
from gbdist.dask import tasks  # noqa: E402
from gbdist.backends.cpu import select_k as cpu_select_k  # noqa: E402

UNEVEN = [5, 22, 1, 19, 13]  # 60 rows: partitions smaller than k, one of a single row


N_WORKERS = 2  # the shared ``client`` fixture's cluster (tests/dask/conftest.py)


def _data(m=60, n=24, seed=0, dtype=np.float64):
    return tied_sparse(m, n, seed, dtype)


def _same(a, b, metric=None):
    """Equal answers, bit for bit (``metric``: kept for the callers' reading; the accuracy
    rule is decided once for the whole index, gbdist/dask/accuracy.py)."""
    assert a[0].dtype == b[0].dtype and a[1].dtype == b[1].dtype == np.int64
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[0], b[0])  # NaN == NaN here


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean", "manhattan"])
def test_the_accuracy_rule_is_decided_once_for_the_whole_index(client, metric):
    """Offset data: gb.knn centres both operands by the index's column means; each block
    deciding alone centred by its own means (a few ulps apart). Decided once from every
    block (the means folded in row order), the blocks run gb.knn's plan on gb.knn's rows."""
    from sklearn.datasets import make_blobs
    X = make_blobs(60, 12, random_state=3)[0] + 1e4
    Q = X[::3] + 0.5
    _same(gbd.knn(X, k=5, metric=metric, client=client, partition_rows=UNEVEN),
          gb.knn(X, k=5, metric=metric))
    _same(gbd.knn(X, k=5, metric=metric, client=client, partition_rows=UNEVEN,
                  symmetric=False), gb.knn(X, k=5, metric=metric, symmetric=False))
    _same(gbd.knn(Q, X, k=5, metric=metric, client=client, partition_rows=7),
          gb.knn(Q, X, k=5, metric=metric))


def _bitwise_symmetric(X, metric):
    D = gb.pairwise_distances(X, metric=metric)
    return np.array_equal(D, D.T, equal_nan=True), D


# seuclidean's, gower's and mahalanobis' default parameters are statistics of the rows
# bound: a partitioned run computes them over all rows first (gbdist/dask/defaults.py)
DATA_DEFAULTS = ("seuclidean", "gower", "gower_mixed", "mahalanobis")


# mahalanobis maps rows to dense ones (X·L): the accuracy rule may then centre each block
# pair's operands by their own column means (docs/decision.md, "Accuracy"), which moves
# the last bit of some distances; its parameters are the whole data's (above)
DENSE_MAPPED = ("mahalanobis",)


def _close_to_single_process(client, X, metric):
    Q, Y = X[25:], X[:25]
    for got, want in ((gbd.knn(Q, Y, k=9, metric=metric, client=client, partition_rows=8),
                       gb.knn(Q, Y, k=9, metric=metric)),
                      (gbd.knn(X, k=7, metric=metric, client=client, partition_rows=UNEVEN),
                       gb.knn(X, k=7, metric=metric))):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.DataConversionWarning")
@pytest.mark.parametrize("metric", list(gb.metric_names()))
def test_every_metric_matches_single_process(client, metric):
    X = _data()
    if metric == "haversine":  # rows (latitude, longitude)
        X = X[:, :2]
    if metric in DENSE_MAPPED:
        return _close_to_single_process(client, X, metric)
    # query block x index block, many small partitions, k larger than a partition
    Q, Y = X[25:], X[:25]
    _same(gbd.knn(Q, Y, k=9, metric=metric, client=client, partition_rows=8),
          gb.knn(Q, Y, k=9, metric=metric), metric)
    # self-join over uneven partitions, every pair computed in both orders
    ref = gb.knn(X, k=7, metric=metric, symmetric=False)
    _same(gbd.knn(X, k=7, metric=metric, client=client, partition_rows=UNEVEN,
                  symmetric=False), ref, metric)
    # self-join, symmetric block pairs once where the metric is proven symmetric
    got = gbd.knn(X, k=7, metric=metric, client=client, partition_rows=UNEVEN)
    exact, D = _bitwise_symmetric(X, metric)
    if exact or not tasks.proven_symmetric(metric, {}):
        _same(got, gb.knn(X, k=7, metric=metric), metric)
    else:  # d(a, b) and d(b, a) differ in the last bits: a tie may then fall either way
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=1e-14)
        rows = np.arange(X.shape[0])[:, None]
        np.testing.assert_allclose(D[rows, got[1]], D[rows, ref[1]], rtol=1e-12, atol=1e-14)
        assert not (got[1] == rows).any()


def test_float32_and_minkowski_params(client):
    X = _data(dtype=np.float32)
    _same(gbd.knn(X, k=5, metric="minkowski", p=3, client=client, n_partitions=7),
          gb.knn(X, k=5, metric="minkowski", p=3))


def test_symmetric_self_join_computes_each_block_pair_once(client):
    X = _data()
    run = gbd.knn_submit(X, k=4, metric="euclidean", client=client, n_partitions=5)
    assert run.symmetric and run.pair_tasks == 5 * 6 // 2
    _same(run.result(), gb.knn(X, k=4, metric="euclidean"))
    run = gbd.knn_submit(X, k=4, metric="kl_divergence", client=client, n_partitions=5)
    assert not run.symmetric and run.pair_tasks == 25  # not symmetric: both orders
    with pytest.raises(gb.InputError):
        gbd.knn(X, X, k=4, client=client, symmetric=True)
    with pytest.raises(gb.InputError):
        gbd.knn(X, k=4, metric="kl_divergence", client=client, symmetric=True)


def test_k_checks(client):
    X = _data(m=10)
    with pytest.raises(gb.InputError):
        gbd.knn(X, k=10, client=client)  # the self-join leaves each row out: 9 at most
    with pytest.raises(ValueError):
        gbd.knn(X, X, k=11, client=client)
    d, i = gbd.knn(X, X, k=10, client=client, partition_rows=3)
    _same((d, i), gb.knn(X, X, k=10))


def test_dask_array_of_sparse_blocks(client):
    import dask
    X = _data()
    edges = np.cumsum([0] + UNEVEN)
    parts = [da.from_delayed(dask.delayed(lambda a, b: X[a:b])(int(a), int(b)),
                             shape=(int(b - a), X.shape[1]), dtype=X.dtype,
                             meta=sps.csr_matrix((0, X.shape[1])))
             for a, b in zip(edges[:-1], edges[1:])]
    Xd = da.concatenate(parts, axis=0)
    _same(gbd.knn(Xd, k=6, metric="cosine", client=client), gb.knn(X, k=6, metric="cosine"))
    _same(gbd.knn(Xd, X[:30], k=6, metric="manhattan", client=client, partition_rows=8),
          gb.knn(X, X[:30], k=6, metric="manhattan"))


def test_estimator_reuses_the_index(client):
    X, Q = _data(), _data(m=30, seed=1)
    est = gbd.NearestNeighbors(n_neighbors=4, radius=1.5, metric="minkowski", p=3,
                               client=client, partition_rows=17).fit(X)
    keys = est.index_.keys
    ref = gb.NearestNeighbors(n_neighbors=4, radius=1.5, metric="minkowski", p=3).fit(X)
    _same(est.kneighbors(Q), ref.kneighbors(Q))
    _same(est.kneighbors(), ref.kneighbors())
    np.testing.assert_array_equal(est.kneighbors(Q, 2, return_distance=False),
                                  ref.kneighbors(Q, 2, return_distance=False))
    assert est.index_.keys == keys  # the same partitions, still held on the workers
    assert all(f.status == "finished" for f in est.index_.futures)
    for query in (Q, None):
        for sort in (False, True):
            gd, gi = est.radius_neighbors(query, sort_results=sort)
            rd, ri = ref.radius_neighbors(query, sort_results=sort)
            assert len(gi) == len(ri)
            for a, b, c, e in zip(gd, rd, gi, ri):
                np.testing.assert_array_equal(c, e)
                np.testing.assert_array_equal(a, b)
    with pytest.raises(gb.NotFittedError):
        gbd.NearestNeighbors(client=client).kneighbors(Q)


def test_pairwise_reductions(client):
    X = _data()
    t = 1.2
    got = list(gbd.pairwise_distances_chunked(
        X, reduce_func=lambda D, r0, c0: (D <= t).sum(axis=1), combine=np.add,
        metric="euclidean", client=client, partition_rows=UNEVEN))
    ref = np.concatenate(list(gb.pairwise_distances_chunked(
        X, reduce_func=lambda D, s: (D <= t).sum(axis=1), metric="euclidean")))
    assert [len(g) for g in got] == UNEVEN
    np.testing.assert_array_equal(np.concatenate(got), ref)
    blocks = list(gbd.pairwise_distances_chunked(X[:50], X, metric="canberra", client=client,
                                                 partition_rows=13))
    np.testing.assert_array_equal(np.concatenate(blocks),
                                  np.concatenate(list(gb.pairwise_distances_chunked(
                                      X[:50], X, metric="canberra"))))
    with pytest.raises(gb.ParameterError):
        gbd.pairwise_distances_chunked(X, reduce_func=lambda D, r, c: D, client=client)


def test_checkpoint_resume(client, tmp_path):
    X = _data()
    ref = gb.knn(X, k=5, metric="cosine")
    run = gbd.knn_submit(X, k=5, metric="cosine", client=client, partition_rows=UNEVEN,
                         checkpoint=str(tmp_path))
    _same(run.result(), ref)
    files = sorted(os.listdir(tmp_path))
    assert len(files) == len(UNEVEN) and run.resumed == []
    for name in files[1::2]:  # as if the run had been killed before these blocks
        os.remove(tmp_path / name)
    run = gbd.knn_submit(X, k=5, metric="cosine", client=client, partition_rows=UNEVEN,
                         checkpoint=str(tmp_path))
    assert run.resumed == [0, 2, 4] and sorted(run.futures) == [1, 3]
    _same(run.result(), ref)
    # other parameters: nothing is reused
    run = gbd.knn_submit(X, k=4, metric="cosine", client=client, partition_rows=UNEVEN,
                         checkpoint=str(tmp_path))
    assert run.resumed == []
    _same(run.result(), gb.knn(X, k=4, metric="cosine"))


def test_worker_killed_mid_run_with_processes():
    X = _data(m=240, seed=3)
    ref = gb.knn(X, k=6, metric="manhattan")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        run = gbd.knn_submit(X, k=6, metric="manhattan", client=c, partition_rows=12)
        Qp, _ = run.partitions
        distributed.wait(Qp.futures[:4])
        holders = c.who_has(Qp.futures)
        victim = next(iter(holders[Qp.futures[0].key]))
        nanny = next(n for n in cluster.workers.values() if n.worker_address == victim)
        done_before = sum(f.done() for f in run.futures.values())
        c.sync(nanny.kill)  # the worker process dies with its partitions and results
        assert done_before < len(run.futures)  # it died mid-run
        _same(run.result(), ref)


def test_merge_tree_of_several_levels(client, monkeypatch):
    import gbdist.dask.search as search
    X = _data(dtype=np.float32)
    ref = gb.knn(X[20:], X, k=8, metric="canberra")
    _same(gbd.knn(X[20:], X, k=8, metric="canberra", client=client, partition_rows=3), ref)
    monkeypatch.setattr(search, "FAN_IN", 2)  # 20 index blocks: a tree five levels deep
    _same(gbd.knn(X[20:], X, k=8, metric="canberra", client=client, partition_rows=3), ref)


def test_merge_is_the_total_order_in_any_grouping():
    rng = np.random.default_rng(5)
    d = rng.integers(0, 4, size=(6, 40)).astype(np.float64)
    d[rng.random(d.shape) < 0.1] = np.nan
    idx = np.broadcast_to(np.arange(40, dtype=np.int64), d.shape)
    want = np.lexsort((idx, d), axis=1)[:, :7]  # brute force over the whole row
    parts = [cpu_select_k(d[:, a:a + 9], 7, a) for a in range(0, 40, 9)]
    for grouped in (tasks.merge(parts, 7),
                    tasks.merge([tasks.merge(parts[:2], 7), tasks.merge(parts[2:], 7)], 7)):
        np.testing.assert_array_equal(grouped[1], want)
        np.testing.assert_array_equal(grouped[0], np.take_along_axis(d, want, axis=1))


@pytest.mark.parametrize("key", ["inner_product", "russellrao", "manhattan", "jaccard"])
def test_self_exclusion_is_by_index_against_brute_force(client, key):
    """Issue 24 item 1: the last merge drops the query's own (global) index, else the last
    of k + 1 — never a candidate picked by its value — over partitions smaller than k, in
    both the symmetric and the both-orders self-join: brute force with the diagonal
    removed by index, ties by index (small integers: every distance exact)."""
    from self_exclusion_cases import (ISSUE_K1, ISSUE_X, KL_X, check_exact, exact_data,
                                      metric_args, reference)
    d, i = gbd.knn(sps.csr_matrix(ISSUE_X), k=1, metric="inner_product", client=client,
                   partition_rows=1)
    np.testing.assert_array_equal(i[:, 0], ISSUE_K1)
    _, i = gbd.knn(sps.csr_matrix(KL_X), k=1, metric="kl_divergence", client=client,
                   partition_rows=2)
    np.testing.assert_array_equal(i[:, 0], [1, 0, 0])
    name, params, kind, ref = metric_args(key)
    X = exact_data(0, kind=kind)
    R = reference(X, ref)
    Xs = sps.csr_matrix(X)
    for k in (1, 5):
        for symmetric in (None, False):
            check_exact(R, gbd.knn(Xs, k=k, metric=name, client=client,
                                   partition_rows=[3, 8, 2, 11], symmetric=symmetric,
                                   **params), k)
    est = gbd.NearestNeighbors(n_neighbors=1, metric="inner_product", client=client,
                               partition_rows=2).fit(sps.csr_matrix(ISSUE_X))
    np.testing.assert_array_equal(est.kneighbors()[1][:, 0], ISSUE_K1)


def test_drop_self_in_the_merge_is_by_index():
    d = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 2.0]])
    i = np.array([[5, 10, 2], [0, 2, 3], [0, 1, 3]])  # global rows 10, 11, 12
    dd, ii = tasks.drop_self(d, i, 2, 10)
    np.testing.assert_array_equal(ii, [[5, 2], [0, 2], [0, 1]])
    np.testing.assert_array_equal(dd, [[0.0, 1.0], [0.0, 0.0], [-1.0, 0.0]])
