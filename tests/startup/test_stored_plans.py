"""Stored plans (gbdist.compiler.stored, gbdist.front.library): a built-in metric's plan
written once and read back rebuilds the same plan (same keys, steps, results, explanation);
any damage to a record is a miss; the keys keep apart what must stay apart."""
from __future__ import annotations

import json
import logging
import pickle

import numpy as np
import pytest
from metric_cases import fit_columns

import gbdist as gb
from gbdist import names, pairwise
from gbdist.algebra import records
from gbdist.compiler import stored
from gbdist.compiler.explain import Explanation
from gbdist.front import library

BUILTIN = sorted(m for m in gb.metric_names() if library.is_builtin(names.get_metric(m)))
CASES = [(m, {}) for m in BUILTIN if m != "minkowski"] + [
    ("minkowski", p) for p in ({}, {"p": 1}, {"p": 1.0}, {"p": 3}, {"p": 5.8}, {"p": 64},
                               {"p": float("inf")}, {"p": 0.5})]


def _data(nonnegative=True):
    rng = np.random.default_rng(11)
    X, Y = rng.random((7, 9)), rng.random((5, 9))
    X[X < 0.4] = 0
    Y[Y < 0.4] = 0
    Y[1] = X[1]  # an identical row
    if not nonnegative:
        X, Y = X - 0.3 * (X > 0), Y - 0.2 * (Y > 0)
    return X, Y


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty on-disk cache, and no plan remembered in this process."""
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(tmp_path))
    pairwise._metric_program.cache_clear()
    yield tmp_path / "programs"
    pairwise._metric_program.cache_clear()


def _fresh_plan(metric, params):
    m = names.get_metric(metric)
    return gb.compile(m.expression(**params), dict(names.ROLES)).plan


@pytest.mark.parametrize("metric,params", CASES, ids=[f"{m}{p}" for m, p in CASES])
def test_a_stored_plan_is_the_plan_it_was_written_from(metric, params):
    plan = _fresh_plan(metric, params)
    back = stored.read_plan(json.loads(json.dumps(stored.plan_record(plan, dict(names.ROLES)))),
                            library._texts())
    assert back.expr.key == plan.expr.key and back.lowered.key == plan.lowered.key
    assert back.epilogue.key == plan.epilogue.key and back.output_kind == plan.output_kind
    assert [(s.name, s.kind, s.node.key) for s in back.steps] == \
        [(s.name, s.kind, s.node.key) for s in plan.steps]
    assert [(d.strategy, d.expansion_rank, d.analysis.structural, d.analysis.nonnegative)
            for d in back.products] == [(d.strategy, d.expansion_rank, d.analysis.structural,
                                         d.analysis.nonnegative) for d in plan.products]
    assert back.float32 == plan.float32
    assert pickle.loads(pickle.dumps(back)).lowered.key == plan.lowered.key  # (Dask ships plans)
    nonnegative = metric != "minkowski" or params.get("p", 2) >= 1
    X, Y = fit_columns(metric, *_data(nonnegative=nonnegative))
    run = dict(A=X, B=Y, backend="cpu", ensure_all_finite=False)
    np.testing.assert_array_equal(gb.Program(back)(**run), gb.Program(plan)(**run))


@pytest.mark.parametrize("metric,params", [("manhattan", {}), ("cosine", {}),
                                           ("minkowski", {"p": 5.8}), ("jensenshannon", {})])
def test_a_stored_plan_explains_as_the_fresh_one(metric, params):
    """The analyses of a stored plan rebuild their formulas and proofs when read."""
    plan = _fresh_plan(metric, params)
    back = stored.read_plan(json.loads(json.dumps(stored.plan_record(plan, dict(names.ROLES)))))
    assert "L" not in back.products[0].analysis.__dict__  # not rebuilt before it is read
    assert str(Explanation.from_plan(back)) == str(Explanation.from_plan(plan))


def test_pairwise_reads_the_stored_plan_without_compiling(store, monkeypatch):
    X, Y = _data()
    want = gb.pairwise_distances(X, Y, metric="canberra", backend="cpu")
    assert len(_plan_files(store)) == 1
    pairwise._metric_program.cache_clear()  # as a new process
    monkeypatch.setattr(pairwise, "compile", lambda *a: pytest.fail("compiled again"))
    got = gb.pairwise_distances(X, Y, metric="canberra", backend="cpu")
    np.testing.assert_array_equal(got, want)
    plan = pairwise.metric_program("canberra").plan
    assert isinstance(plan.products[0].analysis, stored.StoredAnalysis)


def test_parameters_are_keyed_with_their_types(store):
    for p in (1, 1.0, 3, 3.0):
        pairwise.metric_program("minkowski", p=p)
    keys = {json.dumps(json.loads(f.read_text())["plan"]["check"]) for f in store.glob("*.json")
            if "plan" in json.loads(f.read_text())}
    assert len([f for f in store.glob("*.json") if "plan" in json.loads(f.read_text())]) == 4
    assert len(keys) == 2  # p=1 and p=1.0 make the same plan, stored under two keys


def _plan_files(store) -> list:
    return [f for f in store.glob("*.json") if "plan" in json.loads(f.read_text())]


def _resign(path, rec):
    rec["digest"] = records.digest(path.stem, rec)
    path.write_text(json.dumps(rec))


def _edit_node(rec):
    """A consistently signed record whose plan says max where the metric says min."""
    nodes = rec["plan"]["nodes"]
    for row in nodes:
        if row[0] == "Pointwise" and row[1][0] == "minimum":
            row[1][0] = "maximum"
            return
    raise AssertionError("no minimum in the plan")


DAMAGE = {
    "truncated": lambda f: f.write_text(f.read_text()[: len(f.read_text()) // 2]),
    "garbage": lambda f: f.write_bytes(b"\xff\xfe not json"),
    "digest": lambda f: f.write_text(json.dumps({**json.loads(f.read_text()), "digest": "0" * 64})),
    "edited, not signed": lambda f: f.write_text(f.read_text().replace('"minimum"', '"maximum"', 1)),
    "edited and signed": lambda f: _resign(f, (lambda r: (_edit_node(r), r)[1])(
        json.loads(f.read_text()))),
    "a node of another type": lambda f: _resign(f, (lambda r: (
        r["plan"]["nodes"][0].__setitem__(0, "Transpose"), r)[1])(json.loads(f.read_text()))),
    "an op's formula changed and signed": lambda f: _resign(f, (lambda r: (
        r["plan"]["ops"][0].__setitem__(2, ["Symbol", "x", False]), r)[1])(
        json.loads(f.read_text()))),
    "a reference forward": lambda f: _resign(f, (lambda r: (
        r["plan"].__setitem__("expr", len(r["plan"]["nodes"])), r)[1])(json.loads(f.read_text()))),
    "empty": lambda f: f.write_text(""),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_plan_record_is_a_miss_and_is_rewritten(store, caplog, damage):
    X, Y = _data()
    want = gb.pairwise_distances(X, Y, metric="cosine", backend="cpu")
    (path,) = _plan_files(store)
    DAMAGE[damage](path)
    pairwise._metric_program.cache_clear()
    with caplog.at_level(logging.WARNING, logger="gbdist.cache"):
        got = gb.pairwise_distances(X, Y, metric="cosine", backend="cpu")
    np.testing.assert_array_equal(got, want)
    assert any("discarding entry" in r.getMessage() for r in caplog.records), damage
    pairwise._metric_program.cache_clear()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="gbdist.cache"):  # rewritten: read cleanly
        np.testing.assert_array_equal(gb.pairwise_distances(X, Y, metric="cosine", backend="cpu"),
                                      want)
    assert not caplog.records


def test_a_damaged_explanation_record_is_a_miss(store, caplog):
    first = str(gb.explain("hellinger"))
    (path,) = [f for f in store.glob("*.json") if "renderings" in json.loads(f.read_text())]
    rec = json.loads(path.read_text())
    rec["renderings"]["text"] = 42
    _resign(path, rec)
    with caplog.at_level(logging.WARNING, logger="gbdist.cache"):
        again = gb.explain("hellinger")
    assert str(again) == first
    assert any("discarding entry" in r.getMessage() for r in caplog.records)


def test_explanations_are_stored_once_rendered(store):
    ex = gb.explain("manhattan")
    text, md = str(ex), ex.to_markdown()
    again = gb.explain("l1")  # an alias: the same metric, the same record
    assert isinstance(again, stored.StoredExplanation) and again._real is None
    assert str(again) == text and again.to_markdown() == md and again._real is None
    assert again.products[0].strategy == "union-correction"  # the full record, made now
    assert again._repr_latex_() == ex._repr_latex_()


def test_a_user_metric_of_a_builtin_name_is_never_served_from_the_store(store,
                                                                       isolated_definitions):
    X, Y = _data()
    builtin = gb.pairwise_distances(X, Y, metric="cosine", backend="cpu")
    text = str(gb.explain("cosine"))
    assert isinstance(gb.explain("cosine"), stored.StoredExplanation)
    gb.define_metric("cosine", lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_absdiff),
                     replace=True)
    got = gb.pairwise_distances(X, Y, metric="cosine", backend="cpu")
    np.testing.assert_allclose(got, np.abs(X[:, None, :] - Y[None, :, :]).sum(2), rtol=1e-12)
    assert not np.allclose(got, builtin)
    mine = str(gb.explain("cosine"))
    assert mine != text and "union-correction" in mine
    assert not isinstance(gb.explain("cosine"), stored.StoredExplanation)
