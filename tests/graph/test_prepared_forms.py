"""Prepared forms are paid once per object and never served stale (issue 25).

What can change a graph object, and what is tested for each (gbdist/graph/objects.py):

* the caller's SciPy matrix / NumPy array after wrapping it: it was copied, so every result
  afterwards is the one of the original data (SciPy / python-graphblas on a saved copy);
* what an object hands out (``A.csr``, ``A.to_scipy()``, ``v.indices``, ``v.values``):
  read-only views, a write raises;
* gbdist's writes (``out=``, ``assign``, accumulation): every cached form is rebuilt, and
  each result afterwards is python-graphblas's (or SciPy's) on the new data.

And that the once-per-object work is done once: the fill decision and the domain once per
kind of call, the transpose once per version, the kernels' per-matrix forms once per
matrix, no thread-pool hand-over for small work (counted, not timed).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.sparse import csgraph

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr
from gbdist.graph import memo, objects
from graphcase import random_graph

SR = gb.semirings


@pytest.fixture
def host_kernels(kernels):
    """The host kernel sets: these tests are about host objects (the caller's SciPy and
    NumPy arrays, read-only NumPy views); device objects keep their prepared forms the
    same way (tests/graph/test_device_paths.py, test_auto_device.py)."""
    if kernels == "cuda":
        pytest.skip("host objects")
    return kernels


def _graph(seed=0, n=40, p=0.12):
    rng = np.random.default_rng(seed)
    S, _, _ = random_graph(rng, n, p=p, zeros=2)
    S.data = np.abs(S.data) + 1.0  # positive weights (PageRank), stored entries kept
    return S


def _levels(S, s):
    d = csgraph.shortest_path(S, unweighted=True, indices=s)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


def _results(G, x, kernels):
    """Every kind of use that reads a prepared form: pull and push products through A and
    its cached transpose, a reduction over the transpose, a value mask, the algorithms."""
    n = G.nrows
    u = gb.Vector.from_coo([1, 5], [2.0, 3.0], n)  # sparse: pushes
    return {
        "mxv": gr.mxv(G, x, SR.plus_times, backend=kernels).to_dense(),
        "mxv_T": gr.mxv(G.T, x, SR.plus_times, backend=kernels).to_dense(),
        "vxm_push": gr.vxm(u, G, SR.plus_times, backend=kernels).to_dense(),
        "min_plus": gr.mxv(G, x, SR.min_plus, backend=kernels).to_dense(fill=np.inf),
        "cols": gr.reduce_cols(G, gb.ops.plus, backend=kernels).to_dense(),
        "masked": gr.apply(gb.ops.identity, G, mask=G.V, backend=kernels).to_dense(),
        "bfs": alg.bfs_levels(G, 2, backend=kernels),
        "pagerank": alg.pagerank(G, backend=kernels),
    }


def _expected(S, x):
    """The same results from SciPy on the matrix ``S`` (dense float64 arithmetic)."""
    D = S.toarray()
    u = np.zeros(S.shape[0])
    u[[1, 5]] = [2.0, 3.0]
    P = np.zeros(D.shape, bool)  # the stored pattern (stored zeros included)
    P[np.repeat(np.arange(S.shape[0]), np.diff(S.indptr)), S.indices] = True
    mp = np.where(P, D + x[None, :], np.inf).min(axis=1)
    return {
        "mxv": S @ x, "mxv_T": S.T @ x, "vxm_push": u @ S, "min_plus": mp,
        "cols": np.asarray(S.sum(axis=0)).ravel(), "masked": np.where(D != 0, D, 0.0),
        "bfs": _levels(S, 2),
    }


def _check(got, want, what):
    for k, v in want.items():
        if k == "bfs":
            np.testing.assert_array_equal(got[k], v, err_msg=f"{what}: {k}")
        else:
            np.testing.assert_allclose(got[k], v, rtol=1e-12, err_msg=f"{what}: {k}")


def _mutations():
    def data_in_place(S):
        S.data *= 3.0

    def setitem_stored(S):
        i = int(np.flatnonzero(np.diff(S.indptr))[0])
        S[i, int(S.indices[S.indptr[i]])] = 17.0

    def setitem_new(S):
        S[0, 0] = 5.0  # row 0 is empty in random_graph: a new entry (new arrays)

    def zero_then_eliminate(S):
        S.data[::2] = 0.0
        S.eliminate_zeros()  # compacts indices and indptr in place

    def indices_replaced(S):
        S.indices = np.roll(S.indices, 1)  # (no longer canonical: never read again here)

    return {f.__name__: f for f in (data_in_place, setitem_stored, setitem_new,
                                    zero_then_eliminate, indices_replaced)}


@pytest.mark.parametrize("mutate", list(_mutations()))
def test_changing_the_wrapped_scipy_matrix_changes_nothing(host_kernels, mutate):
    kernels = host_kernels
    S = _graph()
    S0 = S.copy()
    x = np.random.default_rng(1).random(S.shape[0])
    G = gb.Matrix(S)
    xv = gb.Vector(x)
    before = _results(G, xv, kernels)  # every prepared form built
    _check(before, _expected(S0, x), "before")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sps.SparseEfficiencyWarning)
        _mutations()[mutate](S)
    assert (S != S0).nnz or mutate == "indices_replaced"  # the caller's matrix did change
    after = _results(G, xv, kernels)
    _check(after, _expected(S0, x), f"after {mutate}")
    np.testing.assert_allclose(after["pagerank"], before["pagerank"], rtol=0, atol=0)
    assert G.isequal(gb.Matrix(S0))


def test_changing_the_wrapped_numpy_vector_changes_nothing(host_kernels):
    kernels = host_kernels
    S = _graph(3)
    x = np.random.default_rng(2).random(S.shape[0])
    x0 = x.copy()
    G, v = gb.Matrix(S), gb.Vector(x)
    m = gb.Vector(x > 0.5)  # a value mask from a NumPy bool array
    keep = x0 > 0.5
    y = gr.mxv(G, v, SR.plus_times, mask=m, backend=kernels)
    x[:] = 0.0
    x0_keep = keep.copy()
    keep[:] = ~keep  # the mask's source array, changed too
    y2 = gr.mxv(G, v, SR.plus_times, mask=m, backend=kernels)
    assert y2.isequal(y)
    want = np.where(x0_keep, S @ x0, 0.0)
    np.testing.assert_allclose(y2.to_dense(), want, rtol=1e-12)
    np.testing.assert_array_equal(np.sort(y2.indices), np.flatnonzero(x0_keep))


def test_what_an_object_hands_out_is_read_only():
    S = _graph(4)
    G = gb.Matrix(S)
    v = gr.reduce_rows(G, gb.ops.plus)
    for arr in (G.csr.data, G.csr.indices, G.csr.indptr, G.to_scipy().data, v.values,
                v.indices):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = arr[0]
    with pytest.raises(ValueError, match="read-only"):
        G.to_scipy().eliminate_zeros()  # SciPy's own in-place rewrites are refused too
    with pytest.raises(ValueError, match="read-only"), warnings.catch_warnings():
        warnings.simplefilter("ignore", sps.SparseEfficiencyWarning)
        G.to_scipy()[2, 3] = 1.0
    W = G.to_scipy().copy()  # a writable copy, independent of G
    W.data[:] = -1.0
    np.testing.assert_array_equal(G.to_dense(), S.toarray())
    assert (G.to_scipy() != S).nnz == 0 and G.csr.has_canonical_format


def _grb():
    return pytest.importorskip("graphblas")


def _to_grb(M):
    grb = _grb()
    return grb.io.from_scipy_sparse(sps.csr_matrix(M.to_scipy()))


def _same_vector(ours, theirs):
    idx, vals = theirs.to_coo()
    np.testing.assert_array_equal(ours.indices, idx)
    np.testing.assert_allclose(ours.values, vals, rtol=1e-12)


WRITES = {
    "assign-into-empty-row": lambda G: gr.assign(G, 4.0, [0], [3, 7]),
    "assign-accum": lambda G: gr.assign(G, gb.Matrix(np.full((2, 2), 2.0)), [1, 2], [1, 2],
                                        accum=gb.ops.plus),
    "out=mxm": lambda G: gr.mxm(G, G, SR.plus_times, out=G),
    "out=ewise_add-accum": lambda G: gr.ewise_add(G, G.T, gb.ops.max, out=G,
                                                  accum=gb.ops.plus),
    "out=select-masked": lambda G: gr.select(G, "triu", out=G, mask=G.S, replace=True),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_gbdist_writes_rebuild_every_prepared_form(host_kernels, write):
    kernels = host_kernels
    grb = _grb()
    S = _graph(5)
    x = np.random.default_rng(6).random(S.shape[0])
    G, xv = gb.Matrix(S), gb.Vector(x)
    _check(_results(G, xv, kernels), _expected(S, x), "before")
    old_T = G.T
    WRITES[write](G)
    S_new = sps.csr_matrix(G.to_scipy())
    assert G.T is not old_T and G.T.T is G
    _check(_results(G, xv, kernels), _expected(S_new, x), f"after {write}")
    # patterns too (SciPy's dense results cannot show them): against SuiteSparse
    P, xg = _to_grb(G), grb.Vector.from_dense(x)
    _same_vector(gr.mxv(G, xv, SR.plus_times, backend=kernels),
                 P.mxv(xg, grb.semiring.plus_times).new())
    _same_vector(gr.mxv(G.T, xv, SR.plus_times, backend=kernels),
                 P.T.new().mxv(xg, grb.semiring.plus_times).new())


def test_a_vector_written_in_place_is_a_fresh_mask(host_kernels):
    kernels = host_kernels
    grb = _grb()
    S = _graph(7, n=60, p=0.05)
    G, P = gb.Matrix(S), _to_grb(gb.Matrix(S))
    s = int(np.argmax(np.diff(S.indptr)))  # a vertex with out-edges (row 0 is empty)
    seen = gb.Vector.from_coo([s], [True], 60)
    seen_g = grb.Vector.from_coo([s], [True], size=60)
    f, fg = seen.dup(), seen_g.dup()
    sizes = []
    for _ in range(6):  # BFS steps with the visited set updated in place (out=, accum)
        f = gr.vxm(f, G, SR.any_pair, mask=~seen.S, backend=kernels)
        t = grb.Vector(grb.dtypes.BOOL, 60)
        t(~seen_g.S) << fg.vxm(P, grb.semiring.any_pair)
        fg = t
        _same_vector(f, fg)
        gr.ewise_add(seen, f, gb.ops.lor, out=seen)
        seen_g(accum=grb.binary.lor) << fg
        _same_vector(seen, seen_g)
        sizes.append(seen.nvals)
    assert sizes[2] > sizes[0] > 1  # the search did grow, through in-place writes


# --- once per object, counted ---------------------------------------------------------


def _count(monkeypatch, module, name):
    calls = {"n": 0}
    fn = getattr(module, name)

    def counted(*a, **k):
        calls["n"] += 1
        return fn(*a, **k)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_loop_resolves_each_kind_of_call_once(monkeypatch, host_kernels):
    kernels = host_kernels
    monkeypatch.setattr(memo, "_MEMO", {})
    rules = {n: _count(monkeypatch, memo.rule, n) for n in ("product", "ewise", "reduction")}
    domains = _count(monkeypatch, memo.T, "domain")
    S = _graph(8)
    G = gb.Matrix(S)
    x = gb.Vector(np.random.default_rng(0).random(S.shape[0]))
    seen = gb.Vector.from_coo([0, 4], [True, True], S.shape[0])
    f = gb.Vector.from_coo([1], [True], S.shape[0])
    kinds = [lambda: gr.mxv(G, x, SR.plus_times, backend=kernels),
             lambda: gr.vxm(f, G, SR.any_pair, mask=~seen.S, backend=kernels),
             lambda: gr.ewise_add(x, x, gb.ops.plus, backend=kernels),
             lambda: gr.ewise_mult(x, x, gb.ops.times, backend=kernels),
             lambda: gr.apply(gb.ops.times, x, right=0.85, backend=kernels),
             lambda: gr.reduce_scalar(x, gb.ops.plus, backend=kernels),
             lambda: gr.reduce_rows(G, gb.ops.plus, backend=kernels)]
    for _ in range(25):
        results = [k() for k in kinds]
    assert rules["product"]["n"] == 2 and rules["ewise"]["n"] == 2
    assert rules["reduction"]["n"] == 1
    assert domains["n"] == len(kinds)
    assert results[-2] == pytest.approx(float(np.sum(x.to_dense())))
    # a new kind (another dtype, another scalar type) is resolved once more, then kept
    xi = gb.Vector(np.arange(S.shape[0], dtype=np.int32))
    for _ in range(5):
        yi = gr.apply(gb.ops.times, xi, right=2, backend=kernels)
        yf = gr.apply(gb.ops.times, xi, right=2.5, backend=kernels)
    assert domains["n"] == len(kinds) + 2
    assert yi.dtype == np.int32 and yf.dtype == np.float64  # the domain rule, not the memo's
    np.testing.assert_array_equal(yf.to_dense(), np.arange(S.shape[0]) * 2.5)


def test_the_memo_checks_the_objects_it_was_keyed_by():
    a, b = gb.op("ka", lambda x, y: x + y), gb.op("kb", lambda x, y: x * y)
    key = ("test", id(a))
    assert memo.memoised(key, (a,), lambda: "a") == "a"
    assert memo.memoised(key, (a,), lambda: "recomputed") == "a"
    # another object under the same key (an id reused): recomputed, never the stale entry
    assert memo.memoised(key, (b,), lambda: "b") == "b"
    assert memo.memoised(("unhashable", [1]), (a,), lambda: "c") == "c"


def test_the_transpose_is_built_once_per_version(monkeypatch, host_kernels):
    kernels = host_kernels
    built = _count(monkeypatch, objects, "_transpose")
    S = _graph(9)
    G = gb.Matrix(S)
    x = gb.Vector(np.ones(S.shape[0]))
    for _ in range(20):
        gr.mxv(G.T, x, SR.plus_times, backend=kernels)
        gr.reduce_cols(G, gb.ops.plus, backend=kernels)
        alg.bfs_levels(G, 1, direction="pull", backend=kernels)
    assert built["n"] == 1
    gr.assign(G, 2.0, [0], [0])
    for _ in range(20):
        y = gr.mxv(G.T, x, SR.plus_times, backend=kernels)
    assert built["n"] == 2
    np.testing.assert_allclose(y.to_dense(), G.to_dense().sum(axis=0), rtol=1e-12)


def test_the_kernels_prepare_once_per_matrix(monkeypatch):
    cg = pytest.importorskip("gbdist.backends.compiled.graph")
    if not gr.available("compiled"):
        pytest.skip("the compiled graph kernels are not importable here")
    builds: dict = {}
    real = cg._prepared

    def counted(B, name, build):
        def b():
            builds[name] = builds.get(name, 0) + 1
            return build()
        return real(B, name, b)

    monkeypatch.setattr(cg, "_prepared", counted)
    S = _graph(10)
    G = gb.Matrix(S)
    x = gb.Vector(np.random.default_rng(3).random(S.shape[0]))
    for _ in range(30):  # plus_times float64: SciPy's loop, the non-empty rows kept
        y = gr.mxv(G, x, SR.plus_times, backend="compiled")
    assert builds == {"nonempty-rows": 1}
    gr.assign(G, 1.0, [0], [0])  # row 0 was empty: the kept form must not be read again
    y = gr.mxv(G, x, SR.plus_times, backend="compiled")
    assert builds == {"nonempty-rows": 2} and 0 in y.indices.tolist()


def test_small_work_never_reaches_the_thread_pool(monkeypatch):
    cg = pytest.importorskip("gbdist.backends.compiled.graph")
    if not gr.available("compiled"):
        pytest.skip("the compiled graph kernels are not importable here")
    monkeypatch.setattr(cg, "threads", lambda: 4)  # as if on 4 cores
    handed = {"n": 0}
    real = cg._pool

    def pool(n):
        handed["n"] += 1
        return real(n)

    monkeypatch.setattr(cg, "_pool", pool)
    S = _graph(11, n=80)
    G = gb.Matrix(S)
    x = gb.Vector(np.random.default_rng(4).random(80))
    f = gb.Vector.from_coo([3], [True], 80)
    for _ in range(10):
        gr.mxv(G, x, SR.min_plus, backend="compiled")
        gr.vxm(f, G, SR.any_pair, mask=~f.S, backend="compiled")
        gr.mxm(G, G, SR.plus_times, backend="compiled")
        gr.reduce_rows(G, gb.ops.max, backend="compiled")
    assert handed["n"] == 0
    big = gb.Matrix(sps.random(3000, 3000, density=0.01, format="csr", random_state=0))
    gr.mxm(big, big, SR.plus_times, backend="compiled")  # ~9·10⁵ products: split
    assert handed["n"] > 0
