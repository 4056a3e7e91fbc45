"""Accuracy as a planner rule (issue 26): a rewrite (union correction, expansion) is taken
only where its rounding bound holds on the data; else the columns are centred (a metric
invariant under a common translation) or every product is summed as written. Checked
against SciPy's float64 answers on both CPU backends, for built-in metrics and a user's."""
from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist, pdist, squareform

import gbdist as gb
from gbdist.backends.cpu import CPUBackend
from gbdist.compiler import accuracy as rule
from gbdist.compiler import ir
from gbdist.pairwise import metric_program
from gbdist.runtime import accuracy
from gbdist.runtime.core import bind
from gbdist.runtime.invariance import invariance


def _backends():
    out = [pytest.param(CPUBackend(), id="numpy")]
    from gbdist.backends.compiled import available
    if available():
        out.append(pytest.param("compiled", id="compiled"))
    return out


def _blobs():
    from sklearn.datasets import make_blobs
    return make_blobs(500, 12, random_state=0)[0]  # more columns than FEW_COLUMNS: the rule decides


def _iris():
    from sklearn.datasets import load_iris
    return load_iris().data


def _same_neighbours(D, R, k=10):
    """gb's k nearest (stable ties) are SciPy's: the reference distances at gb's order
    equal SciPy's sorted distances (exact ties may come in either order)."""
    mine = np.take_along_axis(R, np.argsort(D, axis=1, kind="stable")[:, :k], axis=1)
    theirs = np.sort(R, axis=1, kind="stable")[:, :k]
    np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=0)


CASES = [("blobs", off) for off in (100.0, 1e4, 1e6)] + [("iris", off) for off in (0.0, 1e4)]


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("data,offset", CASES, ids=[f"{d}+{o:g}" for d, o in CASES])
def test_minkowski_neighbours_are_scipys(data, offset, backend):
    X = (_blobs() if data == "blobs" else _iris()) + offset
    for p in (3, 4, 5.8, 8, 30):
        D = np.asarray(gb.pairwise_distances(X, metric="minkowski", p=p, backend=backend))
        R = cdist(X, X, "minkowski", p=p)
        _same_neighbours(D, R)
        pos = R > 0
        np.testing.assert_allclose(D[pos], R[pos], rtol=1e-9)
        assert np.all(D[~pos] == 0), f"p={p}: identical rows are not at 0"


@pytest.mark.parametrize("backend", _backends())
def test_even_p_identical_rows_exactly_zero(backend):
    X = _iris()  # holds duplicate rows
    for p in (4, 8):
        D = np.asarray(gb.pairwise_distances(X, metric="minkowski", p=p, backend=backend))
        R = cdist(X, X, "minkowski", p=p)
        assert (R == 0).sum() > X.shape[0]  # duplicates off the diagonal
        assert np.all(D[R == 0] == 0)


@pytest.mark.parametrize("backend", _backends())
def test_scipy_minkowski_5_8_iris(backend):
    """SciPy's test_pdist_minkowski_5_8_iris: its stored answer, rtol 1e-7."""
    import scipy
    d = os.path.join(os.path.dirname(scipy.__file__), "spatial", "tests", "data")
    iris, right = (os.path.join(d, f) for f in ("iris.txt", "pdist-minkowski-5.8-ml-iris.txt"))
    if not (os.path.exists(iris) and os.path.exists(right)):
        pytest.skip("SciPy's test data are not installed")
    X = np.loadtxt(iris)
    D = np.asarray(gb.pairwise_distances(X, metric="minkowski", p=5.8, backend=backend))
    np.testing.assert_allclose(squareform(D, checks=False), np.loadtxt(right), rtol=1e-7)
    np.testing.assert_allclose(squareform(D, checks=False), pdist(X, "minkowski", p=5.8), rtol=1e-12)


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean", "manhattan"])
def test_offset_data_within_the_peers_accuracy(metric, backend):
    """+4e6: scikit-learn (SciPy for sqeuclidean) is exact to rounding; so is gbdist."""
    X = _blobs()[:200] + 4e6
    D = np.asarray(gb.pairwise_distances(X, metric=metric, backend=backend))
    R = cdist(X, X, {"manhattan": "cityblock"}.get(metric, metric))
    pos = R > 0
    np.testing.assert_allclose(D[pos], R[pos], rtol=1e-10)
    assert np.all(D[~pos] == 0)


def _decision(metric, X, Y=None, **params):
    plan = metric_program(metric, **params).plan
    b = bind(plan, {"A": X, "B": X if Y is None else Y})
    return plan, b


def test_near_the_origin_the_fast_rewrite_is_kept():
    from sklearn.datasets import make_blobs
    X = make_blobs(300, 50, random_state=1)[0]
    for metric in ("sqeuclidean", "euclidean", "manhattan", "canberra", "braycurtis"):
        plan, b = _decision(metric, X)
        assert b.plan is plan, metric  # the rewritten plan, not the direct one
        assert b.data[("A", False)].nnz == X.size  # as given: not centred
        assert any(isinstance(s.node, ir.Intersect) for s in b.plan.steps)


def test_offset_data_are_centred_for_a_translation_invariant_metric():
    X = _blobs() + 1e4
    plan, b = _decision("sqeuclidean", X)
    assert b.plan is plan
    A = b.data[("A", False)].toarray()
    assert abs(A.mean()) < 1.0 and np.allclose(A, X - X.mean(axis=0))


def test_cosine_has_no_guard_and_hellinger_no_translation():
    assert rule.guards(metric_program("cosine").plan) == ()
    assert invariance(metric_program("sqeuclidean").plan).translate
    assert invariance(metric_program("minkowski", p=3).plan).translate
    assert not invariance(metric_program("hellinger").plan).translate
    assert not invariance(metric_program("cosine").plan).translate


def test_high_order_rewrites_are_summed_as_written():
    """|x − y|^p vanishes to order p near the diagonal: its rewrite cancels ~ρ^-p, which
    the bound refuses on any data; the direct plan sums f over the union."""
    plan, b = _decision("minkowski", _blobs(), p=4)
    assert b.plan is rule.direct_plan(plan) and b.plan is not plan
    kinds = {type(s.node).__name__ for s in b.plan.steps}
    assert kinds == {"TwoPassUnion"}
    assert all(s.node.add.invertible for s in b.plan.steps)


def test_sparse_data_that_cannot_be_centred_go_direct():
    rng = np.random.default_rng(3)
    dense = np.zeros((200, 40))
    dense[:, 5:15] = 1e5 + rng.uniform(0, 10, size=(200, 10))  # offset columns, 1/4 stored
    X = sps.csr_matrix(dense)
    plan, b = _decision("sqeuclidean", X)
    assert b.plan is not plan
    D = np.asarray(gb.pairwise_distances(X, metric="sqeuclidean", backend=CPUBackend()))
    R = cdist(X.toarray(), X.toarray(), "sqeuclidean")
    np.testing.assert_allclose(D, R, rtol=1e-12)


@pytest.mark.parametrize("backend", _backends())
def test_a_users_metric_gets_the_rule(backend):
    """Nothing is per metric: a user's Σ (x − y)⁴ (rank-3 expansion) on offset data."""
    quartic = gb.op("quartic_diff_t26", lambda x, y: (x - y) ** 4)
    gb.define_metric("quartic_t26", lambda A, B: gb.mxm(A, B.T, gb.semiring(quartic, gb.ops.plus)),
                     replace=True)
    assert gb.explain("quartic_t26").products[0].expansion_rank == 3
    X = _iris() + 1e3
    D = np.asarray(gb.pairwise_distances(X, metric="quartic_t26", backend=backend))
    R = cdist(X, X, "minkowski", p=4) ** 4
    pos = R > 0
    np.testing.assert_allclose(D[pos], R[pos], rtol=1e-10)
    assert np.all(D[~pos] == 0)


def test_explain_shows_the_rule():
    text = str(gb.explain("minkowski", p=3))
    assert "accuracy rule" in text and "|error| ≤ 4·2⁻⁵³·√k" in text
    assert "common translation" in text


def test_the_decision_reports_its_bound():
    plan = metric_program("minkowski", p=8).plan
    X = sps.csr_matrix(_blobs() + 100)
    mats = {("A", False): X, ("B", False): X}
    memo: dict = {}

    def remember(key, what, build):
        if (key, what) not in memo:
            memo[(key, what)] = build()
        return memo[(key, what)]

    d = accuracy.decide(plan, mats, remember, True, X.shape[1])
    assert d.plan is rule.direct_plan(plan) and d.ratio > rule.TOLERANCE
    assert "summed as written" in d.why
    n = len(memo)
    accuracy.decide(plan, mats, remember, True, X.shape[1])
    assert len(memo) == n  # per-operand statistics are computed once


def test_the_rule_finds_its_products_after_a_column_metric_shared_their_analysis():
    """The in-process analysis cache shares one analysis between ops of one formula:
    after seuclidean (its column-free core op is (x − y)²) sqeuclidean's product carried
    the core op's name, and the rule found no rewrite to guard (found by test order)."""
    import numpy as np

    import gbdist as gb
    from gbdist.compiler.accuracy import guards
    from gbdist.pairwise import metric_program
    X = np.random.default_rng(0).random((6, 4))
    gb.pairwise_distances(X, metric="seuclidean", backend="cpu")
    assert guards(metric_program("sqeuclidean").plan)
    assert guards(metric_program("euclidean").plan)
