"""The accuracy rule's statistics on the device path (CuPy on a GPU), run here on NumPy:
the same code with the array module's device branches taken (row ids by a search of
indptr, ops through the evaluator's dispatch), against the host path and a dense NumPy
brute force. The GPU itself: tests/runtime/test_accuracy_rule_device_gpu.py."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

from gbdist.compiler import accuracy as rule
from gbdist.pairwise import metric_program
from gbdist.runtime import accuracy


class _Device:
    """NumPy standing in for CuPy: any module other than numpy takes the device branches."""

    def __getattr__(self, name):
        return getattr(np, name)


@pytest.fixture
def device(monkeypatch):
    dev = _Device()
    monkeypatch.setattr(accuracy, "_xp", lambda a: dev)
    return dev


def _data():
    rng = np.random.default_rng(5)
    sparse = sps.random(120, 30, density=0.3, random_state=rng, format="csr") * 1e3
    sparse.data += 1e4
    sparse.data[::13] = np.nan  # missing values: left out of their column's μ and σ
    dense = sps.csr_matrix(rng.normal(size=(90, 30)) + 1e6)
    return {"sparse+1e4": sparse, "dense+1e6": dense}


METRICS = [("sqeuclidean", {}), ("euclidean", {}), ("minkowski", {"p": 3}), ("canberra", {}),
           ("braycurtis", {}), ("hellinger", {}), ("manhattan", {})]


@pytest.mark.parametrize("name", ["sparse+1e4", "dense+1e6"])
def test_column_stats_on_the_device_path_are_the_hosts(name, device):
    X = _data()[name]
    got = accuracy.column_stats(X)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(accuracy, "_xp", lambda a: np)
        want = accuracy.column_stats(X)
    np.testing.assert_array_equal(got, want)
    D = X.toarray()  # brute force: unstored 0, NaN left out
    cols = np.flatnonzero(X.getnnz(axis=0))
    np.testing.assert_array_equal(got[0], cols)
    np.testing.assert_allclose(got[1], np.nanmean(D, axis=0)[cols], rtol=1e-13)
    np.testing.assert_allclose(got[2], np.nanstd(D, axis=0)[cols], rtol=1e-9)


@pytest.mark.parametrize("metric,params", METRICS, ids=[m for m, _ in METRICS])
def test_row_stats_and_the_decision_on_the_device_path_are_the_hosts(metric, params, device):
    plan = metric_program(metric, **params).plan
    guards = rule.guards(plan)
    assert guards, metric
    for X in _data().values():
        X = abs(X) if metric == "hellinger" else X
        got, want = [], []
        for mod in (device, np):
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(accuracy, "_xp", lambda a, mod=mod: mod)
                stats = accuracy.column_stats(X)
                rows = [accuracy.row_stats(g, side, X, stats) for g in guards
                        for side in ("left", "right")]
                memo: dict = {}

                def remember(key, what, build, memo=memo):
                    return memo.setdefault((key, what), build())

                d = accuracy.decide(plan, {("A", False): X, ("B", False): X}, remember, True,
                                    X.shape[1])
                (got if mod is device else want).append((rows, d))
        (rows_d, dec_d), (rows_h, dec_h) = got[0], want[0]
        for a, b in zip(rows_d, rows_h):
            for u, v in zip(a, b):
                np.testing.assert_array_equal(u, v)
        assert dec_d.why == dec_h.why and dec_d.plan is dec_h.plan
        assert (dec_d.centre is None) == (dec_h.centre is None)
        if dec_h.centre is not None:
            np.testing.assert_array_equal(dec_d.centre, dec_h.centre)


def test_row_ids_by_search_equal_the_hosts(device):
    X = sps.csr_matrix(np.array([[0, 1.0, 0], [0, 0, 0], [2.0, 0, 3.0], [0, 0, 4.0]]))
    _, _, rows, _ = accuracy._parts(X)
    np.testing.assert_array_equal(rows, [0, 2, 2, 3])  # the empty row 1 has none


def test_a_direct_sum_the_backend_cannot_run_is_said():
    """direct=False (the CUDA pass for a union summed as written is off): the rewrite runs,
    centred where that lowers the bound, and the reason says the backend cannot."""
    from sklearn.datasets import make_blobs
    X = sps.csr_matrix(make_blobs(300, 12, random_state=0)[0] + 1e4)
    plan = metric_program("minkowski", p=3).plan
    memo: dict = {}

    def remember(key, what, build):
        return memo.setdefault((key, what), build())

    mats = {("A", False): X, ("B", False): X}
    d = accuracy.decide(plan, mats, remember, True, 12)
    assert d.plan is rule.direct_plan(plan)
    nd = accuracy.decide(plan, mats, remember, True, 12, direct=False)
    assert nd.plan is plan and nd.centre is not None and nd.ratio < d.ratio
    assert "cannot sum a union as written" in nd.why


def test_a_decided_plan_runs_as_decided():
    """gbdist.dask's carrier: a plan decided for the whole data (compiler.accuracy.decided)
    is centred by the vector it carries and decides nothing itself, whatever its blocks'
    own statistics would say; its answer equals SciPy's."""
    from scipy.spatial.distance import cdist
    from sklearn.datasets import make_blobs

    from gbdist.runtime.core import bind
    X = make_blobs(40, 12, random_state=4)[0] + 1e4
    plan = metric_program("sqeuclidean").plan
    own = bind(plan, {"A": X, "B": X})  # decides from these rows: centred by their means
    centre = X.mean(axis=0) + 3.0  # any vector: the decision is not this call's
    b = bind(rule.decided(plan, centre), {"A": X, "B": X})
    np.testing.assert_array_equal(b.data[("A", False)].toarray(), X - centre)
    assert not np.array_equal(own.data[("A", False)].toarray(), b.data[("A", False)].toarray())
    kept = bind(rule.decided(plan), {"A": X, "B": X})
    np.testing.assert_array_equal(kept.data[("A", False)].toarray(), X)  # not centred
    from gbdist.backends.cpu import CPUBackend
    from gbdist.runtime.core import evaluate
    from gbdist.runtime.memory import budget_of
    be = CPUBackend()
    D = evaluate(be, be.prepare(b), b, budget_of(be, None, result=True))
    np.testing.assert_allclose(np.asarray(D), cdist(X, X, "sqeuclidean"), rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("metric,params", [("manhattan", {}), ("hellinger", {}), ("minkowski", {"p": 3})])
def test_a_kept_decision_reads_no_statistic_again(metric, params, monkeypatch, device):
    """On the device each statistic read is a synchronisation: with the operands' results
    kept (a prepared operand), a second decision computes no digest, tops or worst (it was
    2 + 3 reads a guard per call on Tabula Muris); with another right operand its own are
    computed, and the decision equals a fresh one's."""
    X = _data()["sparse+1e4"]
    plan = metric_program(metric, **params).plan
    memo: dict = {}

    def remember(key, what, build):
        k = (id(mats[key]), what)
        if k not in memo:
            memo[k] = build()
        return memo[k]

    calls = {"_digest": 0, "tops": 0, "worst": 0}
    for name in calls:
        real = getattr(accuracy, name)

        def counted(*a, _real=real, _name=name, **kw):
            calls[_name] += 1
            return _real(*a, **kw)
        monkeypatch.setattr(accuracy, name, counted)
    mats = {("A", False): X, ("B", False): X}
    first = accuracy.decide(plan, mats, remember, True, X.shape[1])
    assert calls["_digest"] == 1 and calls["tops"] >= 1 and calls["worst"] >= 1
    before = dict(calls)
    again = accuracy.decide(plan, mats, remember, True, X.shape[1])
    assert calls == before
    assert (again.plan, again.ratio, again.why) == (first.plan, first.ratio, first.why)
    Y = X.copy()
    Y.data = Y.data * 1e3  # other rows on the right: other statistics, other bound
    mats = {("A", False): X, ("B", False): Y}
    other = accuracy.decide(plan, mats, remember, True, X.shape[1])
    assert calls["worst"] > before["worst"]
    fresh = accuracy.decide(plan, mats, lambda key, what, build: build(), True, X.shape[1])
    assert (other.plan, other.ratio, other.why) == (fresh.plan, fresh.ratio, fresh.why)
