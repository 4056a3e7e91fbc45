"""Pruned kNN (gbdist.compiler.pruning, gbdist.backends.pruned) against brute force.

The reference: the full float64 distance matrix of the NumPy oracle backend
(``GBDIST_CPU_BACKEND=numpy``), itself checked against SciPy on the non-empty rows,
ordered by a stable argsort — (distance, index), NaN last — with the query itself
removed by index in a self-join. The data are very sparse (1–6 stored entries a row over
hundreds of columns, so most pairs share no column), on a quarter grid (many exactly
equal distances: ties must go to the lower index), with empty rows and duplicate rows.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import squareform

import gbdist as gb
from gbdist.compiler.pruning import pays, pruning
from gbdist.front import get_metric
from gbdist.pairwise import metric_program
from metric_cases import METRICS

BUILTIN = [n for n in gb.metric_names() if get_metric(n).source.endswith("metrics.gbd")]
NOT_PRUNED = {"correlation", "nan_euclidean"}  # h reads several summaries of the index row
MAPPED = {"mahalanobis", "haversine", "weighted_correlation"}  # rows mapped when bound: no pruning
# values whose overlap sums are rounded (logs, roots, quotients): compared to the oracle
# within 1e-12 (the device's SpGEMM sums the terms in another order than the host)
ROUNDED = {"jensenshannon", "jensenshannon_unnormalized", "hellinger", "kl_divergence",
           "minkowski", "seuclidean", "gower", "weighted_minkowski", "canberra", "gower_mixed",
           "weighted_canberra"}


def _params(name):
    key = "minkowski-p3" if name == "minkowski" else name
    return METRICS[key][0], METRICS[key][1]


def sparse_rows(rng, m, K, kind, per=(1, 6)):
    X = np.zeros((m, K))
    for r in range(m):
        c = rng.choice(K, size=int(rng.integers(per[0], per[1] + 1)), replace=False)
        X[r, c] = np.round(rng.normal(size=c.size) * 2) / 4 + 0.125  # never 0
    if kind == "binary":
        X = (X != 0).astype(float)
    elif kind in ("nonneg", "prob"):
        X = np.abs(X)
    X[[2, 7]] = 0.0  # empty rows
    X[[5, 11, 12]] = X[4]  # duplicate rows
    if kind == "prob":
        X = X / np.maximum(X.sum(axis=1, keepdims=True), 1e-300)
    return X


@pytest.fixture
def spy(monkeypatch):
    """Counts the pruned searches that ran."""
    import gbdist.neighbors.pruned as np_pruned
    calls = []
    real = np_pruned.search_pruned

    def counted(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(np_pruned, "search_pruned", counted)
    return calls


def oracle(X, Y, name, params, monkeypatch):
    """The full float64 distance matrix from the NumPy oracle backend (gbdist's metric, as
    knn uses it: cosine is NaN against an empty row)."""
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "numpy")
    Xs = sps.csr_matrix(X)
    R = gb.cdist(Xs, Xs if Y is None else sps.csr_matrix(Y), metric=name, backend="cpu",
                 **params)
    if Y is None and name == "seuclidean":  # knn(X, None)'s default V is over X once, as
        # pdist's; gb.cdist(X, X) stacks X twice, as SciPy's (its diagonal: d(a, a) = 0)
        R = squareform(gb.pdist(Xs, metric=name, backend="cpu", **params))
    monkeypatch.delenv("GBDIST_CPU_BACKEND")
    return np.asarray(R, dtype=np.float64)


def brute(R, k, exclude_self):
    order = np.argsort(R, axis=1, kind="stable")
    if exclude_self:
        order = np.array([[j for j in row if j != q] for q, row in enumerate(order)])
    order = order[:, :k]
    return np.take_along_axis(R, order, axis=1), order


@pytest.mark.parametrize("self_join", [True, False], ids=["self", "XY"])
@pytest.mark.parametrize("name", [n for n in BUILTIN if n not in NOT_PRUNED | MAPPED])
def test_pruned_knn_matches_brute_force(name, self_join, spy, monkeypatch):
    params, kind = _params(name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    X = sparse_rows(rng, 70, 300, kind)
    Y = None if self_join else np.vstack([sparse_rows(rng, 40, 300, kind), X[[4, 9]]])
    k = 5
    R = oracle(X, Y, name, params, monkeypatch)
    ref = METRICS["minkowski-p3" if name == "minkowski" else name][2]
    Yd = X if Y is None else Y
    live = (np.abs(X).sum(1) > 0)[:, None] & (np.abs(Yd).sum(1) > 0)[None, :]
    S = ref(X, Yd)  # the oracle is SciPy's metric where both rows are non-empty
    assert_allclose(R[live], S[live], rtol=1e-9, atol=1e-9, equal_nan=True)
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    d, i = gb.knn(sps.csr_matrix(X), None if Y is None else sps.csr_matrix(Y), k=k,
                  metric=name, backend="cpu", **params)
    assert spy, "the pruned search did not run"
    Rd, Ri = brute(R, k, self_join)
    assert_allclose(d, np.take_along_axis(R, i, axis=1), rtol=1e-12, atol=1e-12, equal_nan=True)
    assert_allclose(d, Rd, rtol=1e-12, atol=1e-12, equal_nan=True)
    if name not in ROUNDED:  # exact sums: the very indices, ties by the lower one
        assert_array_equal(i, Ri)
    # and the same answer as the full search, in the same run
    monkeypatch.setenv("GBDIST_PRUNE", "never")
    n_calls = len(spy)
    d0, i0 = gb.knn(sps.csr_matrix(X), None if Y is None else sps.csr_matrix(Y), k=k,
                    metric=name, backend="cpu", **params)
    assert len(spy) == n_calls
    assert_allclose(d, d0, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", sorted(NOT_PRUNED | MAPPED))
def test_not_pruned_where_no_proof(name, spy, monkeypatch):
    p = pruning(metric_program(name).plan)
    assert not p.applies
    assert ("row transform" if name in MAPPED else "summaries") in p.reason
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    # mahalanobis' default VI needs more rows than columns (SciPy's rule)
    X = sparse_rows(np.random.default_rng(3), 120 if name == "mahalanobis" else 30, 100, "real")
    X = X[:, :2] if name == "haversine" else X  # rows (latitude, longitude)
    gb.knn(sps.csr_matrix(X), k=3, metric=name, backend="cpu")
    assert not spy


def _norm2(B):
    return gb.reduce(gb.apply(gb.ops.square, B), gb.ops.plus)


@pytest.mark.parametrize("make, why", [
    (lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_times) + 1 / (1 + _norm2(B)), "≥ 0"),
    (lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_times) + (_norm2(B) - 1) ** 2, "≥ 0"),
])
def test_not_pruned_where_h_is_not_monotone(make, why, spy, monkeypatch, isolated_definitions):
    gb.define_metric("pruning_not_monotone", make, replace=True)
    p = pruning(metric_program("pruning_not_monotone").plan)
    assert not p.applies and "not proven non-decreasing" in p.reason and why in p.reason
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    X = sparse_rows(np.random.default_rng(5), 40, 120, "real")
    d, i = gb.knn(sps.csr_matrix(X), k=4, metric="pruning_not_monotone", backend="cpu")
    assert not spy
    R = oracle(X, None, "pruning_not_monotone", {}, monkeypatch)
    assert_allclose(d, brute(R, 4, True)[0], rtol=1e-12, atol=1e-12)


def test_user_metric_monotone_in_a_product_of_summaries(spy, monkeypatch, isolated_definitions):
    """h = 1 + ‖a‖²·‖b‖² is non-decreasing in ‖b‖² because ‖a‖² > 0: proven, pruned."""
    gb.define_metric("pruning_product", lambda A, B: 1 - gb.mxm(A, B.T, gb.semirings.plus_times)
                     + _norm2(A) * _norm2(B), replace=True)
    p = pruning(metric_program("pruning_product").plan)
    assert p.applies and p.order == "key"
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    X = sparse_rows(np.random.default_rng(6), 50, 200, "real")
    d, i = gb.knn(sps.csr_matrix(X), k=4, metric="pruning_product", backend="cpu")
    assert spy
    R = oracle(X, None, "pruning_product", {}, monkeypatch)
    Rd, Ri = brute(R, 4, True)
    assert_allclose(d, Rd, rtol=1e-12)
    assert_array_equal(i, Ri)


def test_derived_h_of_named_metrics():
    h = {n: pruning(metric_program(n).plan) for n in ("cosine", "manhattan", "euclidean",
                                                      "canberra", "jaccard", "inner_product",
                                                      "chebyshev")}
    assert (h["chebyshev"].order, h["chebyshev"].key, h["chebyshev"].h) == ("key", "t0b",
                                                                            "Max(L0, R0)")
    assert (h["cosine"].order, h["cosine"].h) == ("index", "1")
    assert (h["jaccard"].order, h["jaccard"].h) == ("index", "1")
    assert (h["inner_product"].order, h["inner_product"].h) == ("index", "0")
    assert (h["manhattan"].order, h["manhattan"].h) == ("key", "L0 + R0")
    assert (h["canberra"].order, h["canberra"].h) == ("key", "L0 + R0")
    assert (h["euclidean"].order, h["euclidean"].h) == ("key", "sqrt(L0 + R0)")
    text = str(gb.explain("manhattan"))
    assert "pruning (kNN)   applies" in text and "h = L0 + R0" in text
    assert "h = Max(L0, R0)" in str(gb.explain("chebyshev"))  # a two-pass union's summaries
    from gbdist.compiler.pruning import explain_lines
    assert "pruning (kNN)   does not apply" in explain_lines(metric_program("correlation").plan)[0]
    assert "pruning (kNN): applies" in gb.explain("cosine").to_markdown()


def test_planner_rule_reads_the_data(spy, monkeypatch):
    from gbdist.neighbors.pruned import explain_pruning
    monkeypatch.setenv("GBDIST_PRUNE", "auto")
    rng = np.random.default_rng(8)
    m, K = 6000, 60000  # 2–3 entries a row: about one pair in 10,000 shares a column
    indptr = np.concatenate([[0], np.cumsum(rng.integers(2, 4, size=m))])
    cols = np.concatenate([rng.choice(K, size=c, replace=False) for c in np.diff(indptr)])
    sparse = sps.csr_matrix((rng.random(indptr[-1]) + 0.5, cols, indptr), shape=(m, K))
    small = sps.csr_matrix(sparse_rows(rng, 200, 2000, "real", per=(2, 4)))
    dense = sps.random(200, 20, density=0.5, random_state=1, format="csr")
    assert pays(0, 2501, 2501) and not pays(0, 2499, 2499)
    assert pays(10**6, 10**4, 2 * 10**4) and not pays(4 * 10**6, 10**4, 2 * 10**4)
    assert "search: pruned" in explain_pruning(sparse, metric="cosine")
    for X in (dense, small):  # too many shared columns; too few rows to pay
        assert "search: full" in explain_pruning(X, metric="cosine")
        gb.knn(X, k=3, metric="cosine", backend="cpu")
    assert not spy
    d, i = gb.knn(sparse, k=3, metric="cosine", backend="cpu")
    assert spy
    monkeypatch.setenv("GBDIST_PRUNE", "never")
    d0, i0 = gb.knn(sparse, k=3, metric="cosine", backend="cpu")
    assert_array_equal(i, i0)
    assert_allclose(d, d0, rtol=1e-12)
    assert "search: full (GBDIST_PRUNE=never)" in explain_pruning(sparse, metric="cosine")
    monkeypatch.setenv("GBDIST_PRUNE", "sometimes")
    with pytest.raises(gb.InputError, match="GBDIST_PRUNE"):
        gb.knn(sparse, k=3, metric="cosine", backend="cpu")


def test_float32_and_a_query_that_is_empty(spy, monkeypatch):
    rng = np.random.default_rng(9)
    X = sparse_rows(rng, 60, 250, "real").astype(np.float32)
    Q = np.vstack([np.zeros((2, 250), np.float32), X[:10]])
    out = {}
    for mode in ("never", "always"):
        monkeypatch.setenv("GBDIST_PRUNE", mode)
        out[mode] = gb.knn(sps.csr_matrix(Q), sps.csr_matrix(X), k=6, metric="euclidean",
                           backend="cpu")
    assert len(spy) == 1
    (d0, i0), (d1, i1) = out["never"], out["always"]
    assert d1.dtype == np.float32
    assert_array_equal(d1, d0)
    assert_array_equal(i1[:2], i0[:2])  # an empty query: the least ‖b‖, ties by index
    assert_allclose(d1, d0, rtol=1e-6)


@pytest.mark.parametrize("name", ["cosine", "euclidean", "manhattan"])
def test_rows_outside_the_proofs_domain(name, spy, monkeypatch):
    """Summaries that are not regular (a squared norm that underflows, a zero row) put their
    rows outside the proof: such an index row is a candidate of every query, such a query
    is evaluated against every index row. Same answer as the full search."""
    rng = np.random.default_rng(11)
    X = sparse_rows(rng, 60, 200, "real")
    X[20] = 0.0
    X[20, [3, 50]] = 1e-160  # ‖x‖² = 2e-320: subnormal, outside 1e±100
    X[21] = 0.0
    X[21, 7] = 3e-170
    Y = np.vstack([X[20:22], sparse_rows(rng, 30, 200, "real")])
    out = {}
    for mode in ("never", "always"):
        monkeypatch.setenv("GBDIST_PRUNE", mode)
        out[mode] = [gb.knn(sps.csr_matrix(X), None if s else sps.csr_matrix(Y), k=4,
                            metric=name, backend="cpu") for s in (True, False)]
    assert len(spy) == 2
    for (d0, i0), (d1, i1) in zip(out["never"], out["always"]):
        assert_allclose(d1, d0, rtol=1e-12, atol=0, equal_nan=True)
        assert_array_equal(i1, i0)


MAX_METRIC = ("op prune_maxw(x, y) = abs(2 * x - y)\n"
              "metric prune_maxw_m(A, B) = mxm(A, B.T, semiring(prune_maxw, max))")


@pytest.mark.parametrize("self_join", [True, False], ids=["self", "XY"])
def test_user_max_metric_pruned_through_a_two_pass_union(self_join, spy, monkeypatch,
                                                          isolated_definitions):
    """A user-defined ⊕ = max metric whose one-sided terms are not the identity
    (f(x, 0) = |2x|, f(0, y) = |y|): a two-pass union, pruned through its two summaries
    (h = max(L0, R0), ties across keys everywhere), the same answer as brute force."""
    gb.define(MAX_METRIC)
    p = pruning(metric_program("prune_maxw_m").plan)
    assert p.applies and p.order == "key" and p.h == "Max(L0, R0)"
    rng = np.random.default_rng(12)
    X = sparse_rows(rng, 70, 300, "real")
    Y = None if self_join else np.vstack([sparse_rows(rng, 40, 300, "real"), X[[4, 9]]])
    Yd = X if Y is None else Y
    R = np.array([[np.max(np.abs(2 * a - b)) for b in Yd] for a in X])  # NumPy brute force
    monkeypatch.setenv("GBDIST_PRUNE", "always")
    d, i = gb.knn(sps.csr_matrix(X), None if Y is None else sps.csr_matrix(Y), k=5,
                  metric="prune_maxw_m", backend="cpu")
    assert spy
    Rd, Ri = brute(R, 5, self_join)
    assert_allclose(d, Rd, rtol=0, atol=0)
    assert_array_equal(i, Ri)
