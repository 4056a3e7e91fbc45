"""The on-disk analysis cache: exact round trips, reuse across 'processes',
tamper resistance (no code runs from a cache file), and the off switch."""
import json

import pytest
import sympy as sp

import gbdist as gb
from gbdist import algebra, cache, pairwise, plan, proofs
from gbdist.ops import X, Y


def _clear_memory_caches():
    for c in (algebra.analyze, plan.cached_plan, pairwise._metric_program, proofs._check):
        c.cache_clear()


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(tmp_path))
    _clear_memory_caches()
    yield tmp_path / "analyses"
    _clear_memory_caches()


@pytest.mark.parametrize("expr", [
    sp.Piecewise((0, sp.Eq(sp.Abs(X) + sp.Abs(Y), 0)), (sp.Abs(X - Y) / (sp.Abs(X) + sp.Abs(Y)), True)),
    -2 * sp.sqrt(sp.Symbol("x", nonnegative=True)) * sp.sqrt(sp.Symbol("y", nonnegative=True)),
    X * sp.log(sp.zoo * X) + sp.Rational(3, 7) * sp.Max(X, -sp.oo) - sp.Float(0.25) * sp.exp(Y),
    sp.And(sp.Ne(X, 0), sp.Or(sp.Lt(Y, 1), sp.Not(sp.Ge(X, Y)))),
])
def test_round_trip_is_exact(expr):
    assert cache.decode(json.loads(json.dumps(cache.encode(expr)))) == expr


def test_unsupported_nodes_are_not_encoded():
    with pytest.raises(cache.Unsupported):
        cache.encode(sp.gamma(X))


@pytest.mark.parametrize("metric", ["manhattan", "canberra", "jensenshannon", "chebyshev",
                                    "euclidean", "kl_divergence", "hellinger", "jaccard"])
def test_a_new_process_reads_the_same_analysis(cache_dir, metric):
    first = str(gb.explain(metric))
    assert any(cache_dir.glob("*.json"))
    _clear_memory_caches()  # as a new process would start
    calls = []
    real = algebra._analyze
    algebra._analyze = lambda *a: calls.append(a) or real(*a)
    try:
        second = str(gb.explain(metric))
    finally:
        algebra._analyze = real
    assert calls == []  # served from disk: sympy did not run
    assert second == first


def test_tampered_entries_run_nothing_and_are_replaced(cache_dir, monkeypatch):
    gb.explain("manhattan")
    ran = []
    monkeypatch.setattr("os.system", lambda *a: ran.append(a))
    for f in cache_dir.glob("*.json"):
        rec = json.loads(f.read_text())
        rec["g"] = ["__import__", ["Symbol", "os", False]]
        f.write_text(json.dumps(rec))
    _clear_memory_caches()
    ex = gb.explain("manhattan")
    assert ran == [] and ex.products[0].strategy == "union-correction"
    for f in cache_dir.glob("*.json"):  # rewritten with a valid entry
        assert json.loads(f.read_text())["g"][0] != "__import__"


def test_off_switch(tmp_path, monkeypatch):
    monkeypatch.setenv("GBDIST_CACHE_DIR", "off")
    _clear_memory_caches()
    gb.explain("canberra")
    assert cache.directory() is None
    _clear_memory_caches()
