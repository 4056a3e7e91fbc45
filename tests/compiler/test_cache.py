"""The on-disk analysis cache: exact round trips, reuse across 'processes',
tamper resistance (no code runs from a cache file), and the off switch."""
import json

import pytest
import sympy as sp

import gbdist as gb
from own_distances import own_distances
from gbdist.algebra import proofs
from gbdist.compiler import analysis
from gbdist.compiler import cache, plan
from gbdist import pairwise
from gbdist.algebra.formulas import X, Y


def _clear_memory_caches():
    for c in (analysis.analyze, plan.cached_plan, pairwise._metric_program, proofs._check):
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
    real = analysis._analyze
    analysis._analyze = lambda *a: calls.append(a) or real(*a)
    try:
        second = str(gb.explain(metric))
    finally:
        analysis._analyze = real
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


# ---------------------------------------------------------------------------
# Tampering: every altered entry is detected, discarded and recomputed, and the
# answer is the one SciPy gives (never the tampered one). Each case < 10 s.
# ---------------------------------------------------------------------------
import logging  # noqa: E402
import os  # noqa: E402

import numpy as np  # noqa: E402
import scipy.spatial.distance as ssd  # noqa: E402


def _data():
    rng = np.random.default_rng(7)
    X = rng.random((6, 9)) * (rng.random((6, 9)) < 0.5)
    Y = rng.random((5, 9)) * (rng.random((5, 9)) < 0.5)
    X[0] = 0.0  # an empty row
    return X, Y


_SCIPY = {"manhattan": "cityblock", "euclidean": "euclidean", "chebyshev": "chebyshev",
          "canberra": "canberra", "cosine": "cosine"}


def _reference(metric):
    X, Y = _data()
    with np.errstate(all="ignore"):
        D = ssd.cdist(X, Y, _SCIPY[metric])
    return D


def _run(metric):
    X, Y = _data()
    return np.asarray(own_distances(X, Y, metric=metric))  # the metric itself (cosine: NaN)


def _populate(cache_dir, metric):
    _run(metric)
    files = sorted(cache_dir.glob("*.json"))
    assert files
    _forget_programs(cache_dir)
    _clear_memory_caches()
    return files


def _forget_programs(cache_dir):
    """The stored plans of the built-in metrics (gbdist.front.library) sit above the
    analyses: a new process would read those and never the analyses. Removed, so the next
    run reads (and checks) the analysis entries these tests alter."""
    import shutil
    shutil.rmtree(cache_dir.parent / "programs", ignore_errors=True)


def _rewrite(path, change, *, resign=True):
    rec = json.loads(path.read_text())
    change(rec)
    if resign:  # a deliberate tamperer recomputes the digest
        rec["digest"] = cache.digest(path.stem, rec)
    path.write_text(json.dumps(rec))


def _check_recovers(metric, caplog, cache_dir):
    with caplog.at_level(logging.WARNING, logger="gbdist.cache"):
        D = _run(metric)
    np.testing.assert_allclose(D, _reference(metric), rtol=1e-9, atol=1e-12)
    assert any("discarding entry" in r.getMessage() for r in caplog.records)
    # the entry was rewritten: a new process reads it without a warning
    _clear_memory_caches()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="gbdist.cache"):
        D2 = _run(metric)
    np.testing.assert_allclose(D2, _reference(metric), rtol=1e-9, atol=1e-12)
    assert not caplog.records


def _set(field, value):
    return lambda rec: rec.__setitem__(field, value)


def _if_strategy(strategy, change):
    def go(rec):
        if rec["strategy"] == strategy:
            change(rec)
    return go


def _scale_expansion(rec):
    if rec["expansion"]:
        rec["expansion"][0][0] = ["Mul", ["Integer", "3"], rec["expansion"][0][0]]


TAMPERINGS = [
    # (metric, name, change) -- changes that keep the JSON well-formed
    ("manhattan", "strategy swapped to intersection", _set("strategy", "intersection")),
    ("manhattan", "strategy swapped to two-pass-union", _set("strategy", "two-pass-union")),
    ("chebyshev", "strategy swapped to union-correction", _set("strategy", "union-correction")),
    ("chebyshev", "strategy swapped to intersection", _set("strategy", "intersection")),
    ("manhattan", "g replaced by 0", _set("g", ["Zero"])),
    ("chebyshev", "g replaced by 0", _set("g", ["Zero"])),
    ("euclidean", "g replaced by 0", _if_strategy("union-correction", _set("g", ["Zero"]))),
    ("euclidean", "expansion coefficient altered", _scale_expansion),
    ("euclidean", "expansion dropped and g changed", lambda r: (r.__setitem__("expansion", None),
                                                                 r.__setitem__("g", ["Symbol", "x", False]))),
    ("manhattan", "L replaced by 0", _set("L", ["Zero"])),
    ("manhattan", "R replaced by x", _set("R", ["Symbol", "x", False])),
    ("manhattan", "C replaced by 1", _set("C", ["One"])),
    ("manhattan", "fill changed", _set("fill_left", ["One"])),
    ("manhattan", "structural flag set", _set("structural", True)),
    ("canberra", "g replaced by 0", _set("g", ["Zero"])),
    ("cosine", "strategy swapped", _set("strategy", "two-pass-union")),
    ("manhattan", "unknown symbol in g", _set("g", ["Symbol", "z", False])),
]


@pytest.mark.parametrize("metric,name,change", TAMPERINGS, ids=[t[1] + "-" + t[0] for t in TAMPERINGS])
def test_a_consistently_signed_but_altered_entry_is_detected(cache_dir, caplog, metric, name, change):
    for f in _populate(cache_dir, metric):
        _rewrite(f, change)
    _check_recovers(metric, caplog, cache_dir)


def test_a_false_nonnegative_flag_is_detected(cache_dir, caplog, isolated_definitions):
    # f = x*y - 1 takes negative values; a 'nonnegative' claim would clamp them to 0.
    gb.define("op shifted(x, y) = x * y - 1\n"
              "metric shifted_sum(A, B) = mxm(A, B.T, semiring(shifted, plus))",
              "<test-nonneg>")
    X, Y = _data()
    want = (X @ Y.T) - X.shape[1]  # brute force: Σ_k (x_k y_k - 1)
    np.testing.assert_allclose(gb.pairwise_distances(X, Y, metric="shifted_sum"), want)
    files = sorted(cache_dir.glob("*.json"))
    _clear_memory_caches()
    for f in files:
        _rewrite(f, _set("nonnegative", True))
    with caplog.at_level(logging.WARNING, logger="gbdist.cache"):
        got = gb.pairwise_distances(X, Y, metric="shifted_sum")
    np.testing.assert_allclose(got, want)
    assert any("discarding" in r.getMessage() for r in caplog.records)


def test_a_false_corner_absorbed_flag_is_detected(cache_dir, caplog, isolated_definitions):
    # max over the union of x + y: the corner value C = 0 is not absorbed by max
    gb.define("metric max_sum_u(A, B) = mxm(A, B.T, semiring(plus, max))", "<test-corner>")
    X, Y = _data()
    X = X - 0.7  # negative values: max(0, f) != f
    Y = Y - 0.9
    want = (X[:, None, :] + Y[None, :, :]).max(axis=2)  # brute force over every column
    np.testing.assert_allclose(gb.pairwise_distances(X, Y, metric="max_sum_u"), want)
    files = sorted(cache_dir.glob("*.json"))
    _clear_memory_caches()
    for f in files:
        _rewrite(f, _set("corner_absorbed", True))
    with caplog.at_level(logging.WARNING, logger="gbdist.cache"):
        got = gb.pairwise_distances(X, Y, metric="max_sum_u")
    np.testing.assert_allclose(got, want)
    assert any("discarding" in r.getMessage() for r in caplog.records)


def test_an_edit_without_a_new_digest_is_detected(cache_dir, caplog):
    for f in _populate(cache_dir, "manhattan"):
        _rewrite(f, _set("strategy", "intersection"), resign=False)
    _check_recovers("manhattan", caplog, cache_dir)


def _deep(n):
    return "[" * n + "]" * n


MALFORMED = [
    ("huge integer", lambda rec: json.dumps({**rec, "C": ["Integer", "9" * 5000]})),
    ("huge power", lambda rec: json.dumps({**rec, "C": ["Pow", ["Integer", "10"], ["Integer", "1" + "0" * 40]]})),
    ("nested powers of numbers", lambda rec: json.dumps({**rec, "C": _nested_pow(6)})),
    ("power with a huge rational exponent", lambda rec: json.dumps(
        {**rec, "C": ["Pow", ["Integer", "2"], ["Rational", "1", "1" + "0" * 99]]})),
    ("huge JSON integer", lambda rec: json.dumps(rec)[:-1] + ', "x": ' + "7" * 20000 + "}"),
    ("deep JSON 100000", lambda rec: _deep(100_000)),
    ("deep JSON inside a field", lambda rec: json.dumps(rec)[:-1] + ', "x": ' + _deep(5000) + "}"),
    ("deep sympy tree", lambda rec: json.dumps({**rec, "g": _nested_abs(60)})),
    ("not a JSON object", lambda rec: "[1, 2, 3]"),
    ("truncated", lambda rec: json.dumps(rec)[:40]),
    ("not UTF-8", lambda rec: b"\xff\xfe\x00garbage"),
    ("NaN literal", lambda rec: json.dumps({**rec, "structural": float("nan")})),
    ("empty", lambda rec: ""),
    ("too large", lambda rec: " " * (cache.MAX_BYTES + 10) + json.dumps(rec)),
    ("many arguments", lambda rec: json.dumps({**rec, "C": ["Max"] + [["Integer", str(i)] for i in range(5000)]})),
    ("forbidden node", lambda rec: json.dumps({**rec, "g": ["Function", ["Symbol", "os", False]]})),
]


def _nested_pow(n):
    t = ["Integer", "9" * 100]
    for _ in range(n):
        t = ["Pow", t, ["Integer", "64"]]
    return t


def _nested_abs(n):
    t = ["Symbol", "x", False]
    for _ in range(n):
        t = ["Abs", t]
    return t


@pytest.mark.parametrize("name,content", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_entries_are_misses(cache_dir, caplog, name, content):
    for f in _populate(cache_dir, "manhattan"):
        rec = json.loads(f.read_text())
        data = content(rec)
        if isinstance(data, str) and data.startswith("{"):  # well-formed JSON: also re-signed
            try:
                obj = json.loads(data)
                obj["digest"] = cache.digest(f.stem, obj)
                data = json.dumps(obj)
            except (ValueError, RecursionError):
                pass
        f.write_bytes(data if isinstance(data, bytes) else data.encode())
    _check_recovers("manhattan", caplog, cache_dir)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_place_of_an_entry_does_not_hang(cache_dir, caplog):
    for f in _populate(cache_dir, "manhattan"):
        f.unlink()
        os.mkfifo(f)
    _check_recovers("manhattan", caplog, cache_dir)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_symlink_to_dev_zero_does_not_exhaust_memory(cache_dir, caplog):
    for f in _populate(cache_dir, "manhattan"):
        f.unlink()
        f.symlink_to("/dev/zero")
    _check_recovers("manhattan", caplog, cache_dir)


def test_a_directory_in_place_of_an_entry(cache_dir, caplog):
    files = _populate(cache_dir, "manhattan")
    for f in files:
        f.unlink()
        f.mkdir()
    with caplog.at_level(logging.WARNING, logger="gbdist.cache"):
        np.testing.assert_allclose(_run("manhattan"), _reference("manhattan"))


def test_check_shape_is_iterative():
    deep = []
    cur = deep
    for _ in range(200_000):
        nxt = []
        cur.append(nxt)
        cur = nxt
    with pytest.raises(cache.Invalid):
        cache.check_shape(deep)


def test_an_analysis_cut_short_by_its_budget_is_not_stored(cache_dir, monkeypatch):
    """Under load a symbolic step may run out of time and the numeric checks decide: the
    result (and its explanation) would depend on the machine's load, so it is used but
    not stored; an unloaded run stores its own."""
    from contextlib import contextmanager
    from gbdist.algebra import records

    @contextmanager
    def no_time(seconds=proofs.SYMPY_BUDGET_S):
        records.note_cut_short()
        raise proofs.BudgetExceeded()
        yield  # pragma: no cover

    sr = gb.semiring(gb.ops.absdiff, gb.ops.plus, annihilator=None)
    monkeypatch.setattr(proofs, "budget", no_time)
    for m in ("gbdist.compiler.analysis",):
        monkeypatch.setattr(__import__(m, fromlist=["budget"]), "budget", no_time)
    loaded = analysis.analyze(sr)
    assert not any(cache_dir.glob("*.json"))
    before = records.cut_short()
    assert analysis.analyze(sr) is loaded and records.cut_short() > before  # still marked
    monkeypatch.undo()
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(cache_dir.parent))
    _clear_memory_caches()
    unloaded = analysis.analyze(sr)
    assert any(cache_dir.glob("*.json"))
    assert unloaded.strategy == loaded.strategy
