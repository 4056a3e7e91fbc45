"""The one name registry (gbdist/names.py): definitions from text and Python land
in it, its generation keys the caches built from names, and the front end's
modules import one way (names never imports the front end)."""
import ast
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist

import gbdist as gb
from gbdist import names
from gbdist.errors import RedefinitionError, UnknownNameError
from gbdist.front import ensure_builtins, find_metric, get_metric

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "gbdist"


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = sps.random(7, 11, density=0.4, random_state=rng, format="csr")
    Y = sps.random(5, 11, density=0.4, random_state=rng, format="csr")
    return X, Y


def test_every_definition_moves_the_generation_forward(isolated_definitions):
    g0 = names.generation()
    gb.define("metric gen_a(A, B) = mxm(A, B.T, plus_absdiff)", source="<gen>")
    g1 = names.generation()
    assert g1 > g0
    gb.define_metric("gen_b", lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_times))
    g2 = names.generation()
    assert g2 > g1
    gb.define("op gen_op(x, y) = abs(x - y)", source="<gen>")  # an op alone counts too
    assert names.generation() > g2


def test_a_redefined_metric_is_compiled_anew(isolated_definitions):
    """pairwise caches compiled programs by (name, params, generation): the same name
    redefined by the same source gives the new metric's distances, not the cached ones."""
    X, Y = _data()
    gb.define("metric gen_redef(A, B) = mxm(A, B.T, plus_absdiff)", source="<redef>")
    D1 = gb.pairwise_distances(X, Y, metric="gen_redef", backend="cpu")
    np.testing.assert_allclose(D1, cdist(X.toarray(), Y.toarray(), "cityblock"), rtol=1e-12)
    gb.define("metric gen_redef(A, B) = sqrt(max(mxm(A, B.T, plus_sqdiff), 0))", source="<redef>")
    D2 = gb.pairwise_distances(X, Y, metric="gen_redef", backend="cpu")
    np.testing.assert_allclose(D2, cdist(X.toarray(), Y.toarray(), "euclidean"), rtol=1e-12, atol=1e-12)
    gb.define_metric("gen_redef", lambda A, B: gb.mxm(A, B.T, gb.semirings.max_absdiff),
                     replace=True)
    D3 = gb.pairwise_distances(X, Y, metric="gen_redef", backend="cpu")
    np.testing.assert_allclose(D3, cdist(X.toarray(), Y.toarray(), "chebyshev"), rtol=1e-12)


def test_snapshot_and_restore_forget_later_definitions():
    ensure_builtins()
    saved = names.snapshot()
    before = names.generation()
    try:
        gb.define("op snap_op(x, y) = x * y\nmetric snap_m(A, B) = mxm(A, B.T, semiring(snap_op, plus))",
                  source="<snap>")
        assert find_metric("snap_m") is not None and names.defined("snap_op") is not None
    finally:
        names.restore(saved)
    assert find_metric("snap_m") is None and names.defined("snap_op") is None
    assert names.generation() > before  # never back to a value a cache may hold
    with pytest.raises(UnknownNameError, match="unknown metric 'snap_m'"):
        get_metric("snap_m")


def test_one_lookup_for_builtins_texts_and_metrics(isolated_definitions):
    assert names.lookup("absdiff") is gb.ops.absdiff
    assert names.lookup("plus_times") is gb.semirings.plus_times
    assert names.lookup("normalize").name == "normalize"
    assert names.lookup("euclidean") is get_metric("EUCLIDEAN")  # case-insensitive metrics
    assert names.lookup("l2") is get_metric("euclidean")  # an alias from the library file
    d = gb.define("op lk_op(x) = x^2", source="<lk>")
    assert names.lookup("lk_op") is d.ops["lk_op"]
    assert names.defined("lk_op") == (d.ops["lk_op"], "<lk>")
    assert names.lookup("no_such_name_at_all") is None
    # a Python-defined metric whose name a text already took is refused
    gb.define("metric lk_m(A, B) = mxm(A, B.T, plus_times)", source="<lk>")
    with pytest.raises(RedefinitionError, match="already defined"):
        gb.define_metric("lk_m", lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_times))


def test_builtin_metric_names_are_taken_before_the_library_is_read(isolated_definitions):
    """define_metric loads the built-ins first, so a built-in name is refused whatever
    the order of calls."""
    with pytest.raises(RedefinitionError):
        gb.define_metric("cosine", lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_times))
    assert get_metric("cosine").source.endswith("metrics.gbd")


# --- the import structure ------------------------------------------------------


def _imports(path: Path, package: str) -> set[str]:
    """Absolute module names ``path`` imports (top level and inside functions)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            if not node.module or node.level:  # `from . import x` names submodules too
                out.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in out if m.startswith("gbdist")}


def test_names_imports_nothing_above_it():
    imported = _imports(PKG / "names.py", "gbdist")
    assert not [m for m in imported if m.startswith("gbdist.front")], imported
    for above in ("gbdist.pairwise", "gbdist.neighbors", "gbdist.runtime", "gbdist.cli"):
        assert above not in imported


def test_front_modules_import_one_way():
    """No circle among gbdist/front's modules; only api.py reaches the runtime."""
    mods = {p.stem: p for p in (PKG / "front").glob("*.py") if p.stem != "__init__"}
    graph = {}
    for name, path in mods.items():
        imported = _imports(path, "gbdist.front")
        graph[name] = {m.split(".")[2] for m in imported
                       if m.startswith("gbdist.front.") and m.split(".")[2] in mods}
        if name != "api":
            low = {m for m in imported if (m.split(".") + [""])[1] in
                   ("runtime", "backends", "neighbors", "pairwise", "cli", "inputs", "direct")}
            assert not low, (name, low)
    assert not any("api" in deps for deps in graph.values())  # api is a leaf
    state: dict = {}

    def visit(n, path):
        if state.get(n) == "done":
            return
        assert state.get(n) != "open", f"import circle: {' -> '.join(path + [n])}"
        state[n] = "open"
        for m in graph[n]:
            visit(m, path + [n])
        state[n] = "done"

    for n in graph:
        visit(n, [])
    for path in (PKG / "front").glob("*.py"):
        assert len(path.read_text().splitlines()) < 500, path.name


LIBRARY_HELPERS = ("nnz", "norm2", "total", "spread", "pow", "abssum")


def test_users_may_take_the_library_helpers_names(isolated_definitions):
    """The built-in library's helpers sit in a tier of their own: a user's text may
    define the same names, later texts see the user's, the built-in metrics keep theirs."""
    import numpy as np
    from numpy.testing import assert_allclose
    from scipy.spatial.distance import cdist
    for name in LIBRARY_HELPERS:
        assert names.library_name(name) is not None and names.defined(name) is None
    d = gb.define("""
def nnz(M) = reduce(apply(abs, M), max)
def norm2(M) = reduce(M, min)
def total(M) = 2 * reduce(M, plus)
def spread(M, k) = k
op pow(x; p) = 2 * x
op abssum(x, y) = abs(x) + abs(y)
metric uses_them(A, B) = mxm(A, B.T, semiring(abssum, plus)) + total(A)
""", source="<mine>")
    for name in LIBRARY_HELPERS:
        assert names.defined(name)[1] == "<mine>"
        assert names.lookup(name) is d[name]  # the user's wins
    rng = np.random.default_rng(3)
    X, Y = rng.random((6, 5)), rng.random((4, 5))
    X[X < 0.3] = 0
    got = gb.pairwise_distances(X, Y, metric="uses_them", backend="cpu")
    ref = np.abs(X).sum(1)[:, None] + np.abs(Y).sum(1)[None, :] + 2 * X.sum(1)[:, None]
    assert_allclose(got, ref, rtol=1e-12)
    # the built-in metrics that use the library's helpers are unchanged
    for metric, data in (("cosine", (X, Y)), ("correlation", (X, Y)), ("braycurtis", (X, Y)),
                         ("jaccard", (X > 0, Y > 0)), ("dice", (X > 0, Y > 0)),
                         ("minkowski", (X, Y))):
        assert_allclose(gb.pairwise_distances(*data, metric=metric, backend="cpu"),
                        cdist(*data, metric), rtol=1e-6, atol=1e-12, err_msg=metric)
    # a second user's text still clashes with the first user's name
    with pytest.raises(RedefinitionError, match="already defined"):
        gb.define("def nnz(M) = reduce(M, plus)", source="<other>")


def test_library_helpers_stay_visible_until_taken(isolated_definitions):
    d = gb.define("metric via_lib(A, B) = nnz(A) + nnz(B)", source="<lib-user>")
    assert d["via_lib"].expression() is not None
    assert names.lookup("norm2") is names.library_name("norm2")[0]
    assert "spread" in names.known_names()
