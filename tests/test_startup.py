"""Start-up: ``import gbdist`` and ``gbdist --help`` load no heavy library; the public
names still resolve; NotFittedError is still scikit-learn's; the lark parser's
on-disk cache loads the same parser and misses when it should.

Only what can be asserted without timing lives here (which modules a fresh process
has imported); the times are in benchmarks/cpu.py (``first-call``).
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = {"sympy", "sklearn", "numba", "cupy", "lark", "dask"}
LOADED = ("print(sorted(m for m in sys.modules if m.split('.')[0] in "
          "{'sympy','sklearn','numba','cupy','lark','dask'}))")


def _python(code: str, **env) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT),
                       env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_import_gbdist_loads_no_heavy_module():
    out = _python("import gbdist, sys; " + LOADED)
    assert out.strip().splitlines()[-1] == "[]"


def test_the_heavy_modules_are_loaded_by_the_work_that_needs_them():
    # the check above can fail: reading a name does import its module's dependencies
    out = _python("import gbdist, sys; gbdist.ops.X; " + LOADED)  # a sympy symbol
    assert "sympy" in out and "sklearn" not in out
    out = _python("import gbdist, sys; gbdist.NotFittedError; " + LOADED)
    assert "sklearn" in out and "sympy" not in out


@pytest.mark.parametrize("argv", [["--help"], ["knn", "--help"], ["demo", "--help"],
                                  ["pairwise", "--help"], ["explain", "--help"]])
def test_cli_help_loads_no_heavy_module(argv):
    out = _python("import sys\nfrom gbdist.cli.main import main\ntry:\n"
                  f"    main({argv!r})\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
                  + LOADED + "\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy')[:1])")
    *text, heavy, numpy = out.strip().splitlines()
    assert heavy == "[]" and numpy == "[]"
    assert "usage: gbdist" in "\n".join(text)
    if argv == ["--help"]:
        assert all(cmd in "\n".join(text) for cmd in ("demo", "explain", "check", "knn", "pairwise"))


def test_every_public_name_resolves_to_its_module_object():
    import importlib

    import gbdist as gb
    for name in gb.__all__:
        assert getattr(gb, name) is not None, name
        assert name in dir(gb)
    for name, module in gb._LAZY.items():
        assert getattr(gb, name) is getattr(importlib.import_module(module), name), name
    assert gb.ops is importlib.import_module("gbdist.algebra.ops")
    assert gb.graph is importlib.import_module("gbdist.graph")
    assert gb.runtime is importlib.import_module("gbdist.runtime")
    with pytest.raises(AttributeError):
        gb.no_such_name  # noqa: B018
    assert not hasattr(gb, "pairwise_distance")


def test_star_import_in_a_fresh_process():
    out = _python("from gbdist import *\nimport gbdist\n"
                  "print(all(globals()[n] is getattr(gbdist, n) for n in gbdist.__all__))")
    assert out.strip() == "True"


def test_not_fitted_error_is_scikit_learns_in_a_fresh_process():
    # the class is made on first access: whichever way it is reached first, one class
    code = """
import sys, pickle
import gbdist.errors as errors
assert 'sklearn' not in sys.modules
from gbdist.errors import NotFittedError as first
import gbdist as gb, numpy as np
from sklearn.exceptions import NotFittedError as SK
assert first is gb.NotFittedError is errors.NotFittedError
assert issubclass(first, SK) and issubclass(first, gb.GbdistError)
assert issubclass(first, ValueError) and issubclass(first, AttributeError)
caught = []
for catch in (gb.NotFittedError, SK, ValueError, AttributeError, gb.GbdistError):
    try:
        gb.NearestNeighbors(n_neighbors=1).kneighbors(np.ones((2, 3)))
    except catch as e:
        caught.append(type(e) is first and isinstance(e, SK) and 'fit' in str(e))
e = first("not fitted", hint="call fit")
again = pickle.loads(pickle.dumps(e))
print(caught, type(again) is first, str(again) == str(e), first.__module__, first.__qualname__)
"""
    out = _python(code).strip()
    assert out == "[True, True, True, True, True] True True gbdist.errors NotFittedError"


def test_scikit_learns_check_is_fitted_sees_the_estimator():
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    import gbdist as gb
    with pytest.raises(NotFittedError):
        check_is_fitted(gb.NearestNeighbors())
    with pytest.raises(gb.NotFittedError):
        gb.NearestNeighbors().kneighbors([[1.0, 2.0]])


# --- the parser cache --------------------------------------------------------------


def _tree(node):
    if hasattr(node, "data"):
        return (str(node.data), tuple(_tree(c) for c in node.children))
    return None if node is None else (node.type, str(node), node.line, node.column,
                                      node.end_line, node.end_column)


@pytest.fixture
def parser_cache(tmp_path, monkeypatch):
    from gbdist.front import parser_cache
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(tmp_path))
    return parser_cache


GRAMMAR_OPTIONS = dict(parser="lalr", start=["start", "expression"], propagate_positions=True,
                       maybe_placeholders=True)


def _grammar() -> str:
    from gbdist.resources import read
    return read("grammar", "gbdist.lark")


def _library() -> str:
    from gbdist.front.library import LIBRARY
    return LIBRARY.read_text(encoding="utf-8")


def _count_builds(monkeypatch) -> list:
    import lark
    builds = []
    real = lark.Lark.__init__

    def counting(self, *a, **k):
        builds.append(1)
        real(self, *a, **k)
    monkeypatch.setattr(lark.Lark, "__init__", counting)
    return builds


def test_cached_parser_is_loaded_and_parses_like_a_built_one(parser_cache, tmp_path, monkeypatch):
    from lark import Lark
    grammar = _grammar()
    reference = Lark(grammar, **GRAMMAR_OPTIONS)  # built directly, no cache involved
    builds = _count_builds(monkeypatch)
    first = parser_cache.cached_lark(grammar, **GRAMMAR_OPTIONS)
    assert builds == [1] and len(list((tmp_path / "parser").glob("lalr-*.json"))) == 1
    second = parser_cache.cached_lark(grammar, **GRAMMAR_OPTIONS)
    assert builds == [1]  # loaded, not built
    text = _library()
    assert _tree(second.parse(text, start="start")) == _tree(reference.parse(text, start="start"))
    expr = "sqrt(reduce(mxm(A, B.T, semiring(absdiff, plus)), plus) ^ 2) + 1e-3 * ncols(A)"
    assert _tree(second.parse(expr, start="expression")) == \
        _tree(reference.parse(expr, start="expression"))
    assert _tree(first.parse(expr, start="expression")) == \
        _tree(reference.parse(expr, start="expression"))
    # errors report the same terminals (the syntax error messages are built from them)
    from lark.exceptions import UnexpectedInput
    errs = []
    for p in (reference, second):
        with pytest.raises(UnexpectedInput) as e:
            p.parse("metric m(A, B) = mxm(A, B.T,, plus)", start="start")
        errs.append((type(e.value), e.value.line, e.value.column, sorted(e.value.expected)))
    assert errs[0] == errs[1]


def test_the_gbdist_parser_goes_through_the_cache(tmp_path, monkeypatch):
    out = _python("from gbdist.front.syntax import parser; parser(); import gbdist as gb; "
                  "print(len(gb.metric_names()) > 10)", GBDIST_CACHE_DIR=str(tmp_path))
    assert out.strip() == "True"
    assert len(list((tmp_path / "parser").glob("lalr-*.json"))) == 1
    code = ("import lark\nreal = lark.Lark.__init__\n"
            "def no(*a, **k): raise AssertionError('built, not loaded')\n"
            "lark.Lark.__init__ = no\n"
            "from gbdist.front.syntax import parser; parser()\nlark.Lark.__init__ = real\n"
            "import gbdist as gb, numpy as np\n"
            "X = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 1.0]])\n"
            "print(gb.pairwise_distances(X, metric='manhattan', backend='cpu').tolist())")
    out = _python(code, GBDIST_CACHE_DIR=str(tmp_path))
    assert json.loads(out.strip().splitlines()[-1]) == [[0.0, 5.0], [5.0, 0.0]]


def test_a_changed_grammar_or_version_misses(parser_cache, monkeypatch):
    grammar = _grammar()
    builds = _count_builds(monkeypatch)
    parser_cache.cached_lark(grammar, **GRAMMAR_OPTIONS)
    parser_cache.cached_lark(grammar, **GRAMMAR_OPTIONS)
    assert builds == [1]
    changed = grammar + "\n// a comment changes the text, so the key\n"
    p = parser_cache.cached_lark(changed, **GRAMMAR_OPTIONS)
    assert builds == [1, 1]
    assert p.parse("mxm(A, B)", start="expression") is not None
    monkeypatch.setattr(parser_cache, "__version__", "0.0.0-other")
    parser_cache.cached_lark(grammar, **GRAMMAR_OPTIONS)
    assert len(builds) == 3
    parser_cache.cached_lark(grammar, **{**GRAMMAR_OPTIONS, "maybe_placeholders": False})
    assert len(builds) == 4


def _entry(tmp_path) -> Path:
    (path,) = (tmp_path / "parser").glob("lalr-*.json")
    return path


@pytest.mark.parametrize("damage", ["truncate", "flip", "digest", "key", "probe", "garbage",
                                    "symlink", "fifo", "shape"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(parser_cache, tmp_path, monkeypatch, caplog,
                                                     damage):
    from lark import Lark
    grammar = _grammar()
    parser_cache.cached_lark(grammar, **GRAMMAR_OPTIONS)
    path = _entry(tmp_path)
    good = path.read_text(encoding="utf-8")
    entry = json.loads(good)
    if damage == "truncate":
        path.write_text(good[: len(good) // 2], encoding="utf-8")
    elif damage == "flip":  # the body changes, the digest no longer matches
        entry["body"] = entry["body"].replace('"NAME"', '"NAMF"', 1)
        path.write_text(json.dumps(entry), encoding="utf-8")
    elif damage == "digest":
        entry["digest"] = "0" * 64
        path.write_text(json.dumps(entry), encoding="utf-8")
    elif damage == "key":  # an entry copied under another name
        entry["key"] = "f" * 32
        path.write_text(json.dumps(entry), encoding="utf-8")
    elif damage == "probe":  # consistent digest, different recorded probe tree
        entry["probe"] = ["expression", []]
        path.write_text(json.dumps(entry), encoding="utf-8")
    elif damage == "garbage":
        path.write_bytes(b"\xff\xfe not json")
    elif damage == "shape":  # a digest recomputed over tables of the wrong shape
        body = json.dumps({"d": [["data", 1]]})
        entry.update(body=body, digest=parser_cache._digest(entry["key"], body))
        path.write_text(json.dumps(entry), encoding="utf-8")
    elif damage == "symlink":
        target = tmp_path / "elsewhere.json"
        target.write_text(good, encoding="utf-8")
        path.unlink()
        path.symlink_to(target)
    elif damage == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        path.unlink()
        os.mkfifo(path)
    builds = _count_builds(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="gbdist.cache"):
        p = parser_cache.cached_lark(grammar, **GRAMMAR_OPTIONS)
    assert builds == [1]  # built again from the grammar
    assert any("parser cache" in r.getMessage() for r in caplog.records)
    reference = Lark(grammar, **GRAMMAR_OPTIONS)
    text = _library()
    assert _tree(p.parse(text, start="start")) == _tree(reference.parse(text, start="start"))
    assert path.is_file() and not path.is_symlink()  # rewritten: the next process loads it
    builds.clear()
    p = parser_cache.cached_lark(grammar, **GRAMMAR_OPTIONS)
    assert builds == []
    assert _tree(p.parse(text, start="start")) == _tree(reference.parse(text, start="start"))


def test_caching_off_writes_nothing(tmp_path, monkeypatch):
    from gbdist.front import parser_cache
    monkeypatch.setenv("GBDIST_CACHE_DIR", "off")
    monkeypatch.chdir(tmp_path)
    p = parser_cache.cached_lark(_grammar(), **GRAMMAR_OPTIONS)
    assert p.parse("mxm(A, B)", start="expression") is not None
    assert list(tmp_path.iterdir()) == []


def test_encode_decode_round_trip_and_refusals():
    from gbdist.front.parser_cache import Invalid, decode, encode
    data = {"a": [1, (2, "x", None), {3: (True, False)}], 7: {"t": [1]}, (1, 2): [], "d": ()}
    assert decode(json.loads(json.dumps(encode(data)))) == data
    back = decode(json.loads(json.dumps(encode(data))))
    assert isinstance(back["a"][1], tuple) and 3 in back["a"][2] and (1, 2) in back
    for bad in ({"x": 1}, {"t": 1}, {"d": [[1]]}, {"d": [[[1], 2]]}, 1.5, {"t": [], "d": []}):
        with pytest.raises(Invalid):
            decode(bad)
    with pytest.raises(Invalid):
        encode({"a": 1.5})
    with pytest.raises(Invalid):
        encode({"a": object()})
    deep = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(Invalid):
        decode(deep)
