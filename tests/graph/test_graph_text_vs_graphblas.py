"""The text language's forms of the GraphBLAS operations issue 28 added, run by ``gr.run``
and compared with python-graphblas (SuiteSparse:GraphBLAS) directly on the same inputs:
pattern, values and dtype (tests/front/test_graph_text_ops.py compares the same forms with
gbdist's Python calls; this file takes the independent reference).

ewise_union; select with every built-in index-unary predicate and a user ``op f(x, i, j, y)``;
apply with the index ops; positional semirings in mxm / mxv / vxm with masks; count, argmin,
argmax; kronecker, diag, concat, resize; extract; subassign (``C[r, c](M, accum, replace)
<< V``) and assign (``C(M)[r, c] << V``)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr

graphblas = pytest.importorskip("graphblas")
from graphblas import agg, binary, indexunary, semiring as gsemiring  # noqa: E402

pytestmark = pytest.mark.usefixtures("isolated_definitions")


def rand_matrix(rng, m, n, p=0.4, dtype=np.float64, lo=-3, hi=4):
    P = rng.random((m, n)) < p
    r, c = np.nonzero(P)
    v = rng.integers(lo, hi, r.size).astype(dtype)  # small integers: ties, stored zeros
    return gb.Matrix.from_coo(r, c, v, (m, n)), graphblas.Matrix.from_coo(
        r, c, v, nrows=m, ncols=n, dtype=np.dtype(dtype).name)


def rand_vector(rng, n, p=0.5, dtype=np.float64):
    idx = np.flatnonzero(rng.random(n) < p)
    v = rng.integers(-3, 4, idx.size).astype(dtype)
    return gb.Vector.from_coo(idx, v, n), graphblas.Vector.from_coo(
        idx, v, size=n, dtype=np.dtype(dtype).name)


def same(got, want):
    assert isinstance(got, (gb.Matrix, gb.Vector)), type(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.ndim == 2:
        r, c, v = got.to_coo()
        wr, wc, wv = want.to_coo()
        assert np.array_equal(r, wr.astype(np.int64)) and np.array_equal(c, wc.astype(np.int64))
    else:
        v = got.values
        wi, wv = want.to_coo()
        assert np.array_equal(got.indices, wi.astype(np.int64))
    assert np.dtype(got.dtype) == np.dtype(want.dtype.np_type), (got.dtype, want.dtype)
    assert np.array_equal(np.asarray(v, np.float64), np.asarray(wv, np.float64), equal_nan=True)


def run(text, *operands):
    g = gb.define(text).graphs
    return gr.run(next(iter(g.values())), *operands)


@pytest.mark.parametrize("seed", range(3))
def test_ewise_union(seed):
    rng = np.random.default_rng(seed)
    A, GA = rand_matrix(rng, 7, 6)
    B, GB = rand_matrix(rng, 7, 6, dtype=np.int64)
    for op in ("minus", "max", "first", "times"):
        same(run(f"graph u(A, B) = ewise_union(A, B, {op}, 10, -3)", A, B),
             GA.ewise_union(GB, getattr(binary, op), 10.0, -3.0).new())
    M, GM = rand_matrix(rng, 7, 6, p=0.5)
    same(run("graph um(A, B, M) = ewise_union(A, B, minus, 1, 2, mask=not M.S)", A, B, M),
         GA.ewise_union(GB, binary.minus, 1.0, 2.0).new(mask=~GM.S))
    u, gu = rand_vector(rng, 9)
    w, gw = rand_vector(rng, 9)
    same(run("graph uv(u, w) = ewise_union(u, w, plus, 0.5, 7)", u, w),
         gu.ewise_union(gw, binary.plus, 0.5, 7.0).new())


INDEX_SELECT = ["rowle", "rowgt", "colle", "colgt", "tril", "triu", "diag", "offdiag"]
VALUE_SELECT = ["valueeq", "valuene", "valuelt", "valuele", "valuegt", "valuege"]


@pytest.mark.parametrize("seed", range(3))
def test_select_with_index_unary_predicates(seed):
    rng = np.random.default_rng(10 + seed)
    A, GA = rand_matrix(rng, 7, 9)
    for name in INDEX_SELECT:
        g = gb.define(f"graph s(A, k) = select(A, {name}, k)").graphs["s"]
        for k in (-2, 0, 1, 3):
            same(gr.run(g, A, k), GA.select(name, k).new())
    for name in VALUE_SELECT:
        g = gb.define(f"graph s(A, t) = select(A, {name}, t)").graphs["s"]
        for t in (-1.0, 0.0, 2.0):
            same(gr.run(g, A, t), GA.select(name, t).new())
    u, gu = rand_vector(rng, 12)
    for name in ("indexle", "indexgt"):
        same(run(f"graph sv(u) = select(u, {name}, 4)", u), gu.select(name, 4).new())
    M, GM = rand_matrix(rng, 7, 9, p=0.5)
    same(run("graph sm(A, M) = select(A, colgt, 2, mask=M.V, out=M, replace=true)", A, M),
         _written(GM, GA.select("colgt", 2), mask=GM.V, replace=True))


def _written(C, expr, mask=None, accum=None, replace=False):
    """python-graphblas's C(mask, accum, replace) << expr, on a copy of C."""
    C = C.dup()
    if accum is None:
        C(mask=mask, replace=replace) << expr
    else:
        C(mask=mask, accum=accum, replace=replace) << expr
    return C


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_apply_index_ops(dtype):
    rng = np.random.default_rng(20)
    A, GA = rand_matrix(rng, 6, 8, dtype=dtype)
    for name in ("rowindex", "colindex", "diagindex"):
        for t in (0, 2, -1):
            same(run(f"graph a(A) = apply({name}, A, right={t})", A),
                 GA.apply(getattr(indexunary, name)[graphblas.dtypes.INT64], t).new())
    u, gu = rand_vector(rng, 9)
    same(run("graph ai(u) = apply(index, u, right=3)", u),
         gu.apply(indexunary.index[graphblas.dtypes.INT64], 3).new())


def test_user_index_unary_ops():
    rng = np.random.default_rng(21)
    A, GA = rand_matrix(rng, 8, 8, p=0.5)
    gb.define("""
    op band_pos(x, i, j, y) = j <= i + y and x > 0
    op weighted(x, i, j, y) = x * 10 + i + y
    graph b(A; y = 2) = select(A, band_pos, y)
    graph w(A) = apply(weighted, A, right=1.5)
    """)
    warnings.simplefilter("ignore")  # python-graphblas compiles the anonymous ops with numba
    band = indexunary.register_anonymous(lambda x, i, j, y: (x > 0) and (j <= i + y),
                                         is_udt=False)
    weighted = indexunary.register_anonymous(lambda x, i, j, y: x * 10 + i + y, is_udt=False)
    for y in (0, 2, 5):
        same(gr.run("b", A, y=y), GA.select(band[graphblas.dtypes.FP64], float(y)).new())
    same(gr.run("w", A), GA.apply(weighted[graphblas.dtypes.FP64], 1.5).new())


POSITIONAL = [f"{a}_{m}" for a in ("min", "max", "plus")
              for m in ("firsti", "firstj", "secondi", "secondj", "firsti1", "secondj1")]


@pytest.mark.parametrize("name", POSITIONAL)
def test_positional_semirings(name):
    rng = np.random.default_rng(len(name) + 30)
    A, GA = rand_matrix(rng, 6, 8)
    B, GB = rand_matrix(rng, 8, 5)
    u, gu = rand_vector(rng, 8)
    w, gw = rand_vector(rng, 6)
    M, GM = rand_matrix(rng, 6, 5, p=0.5)
    gsr = getattr(gsemiring.ss, name)
    gb.define(f"""
    graph pm(A, B) = mxm(A, B, {name})
    graph pmm(A, B, M) = mxm(A, B, {name}, mask=not M.S)
    graph pv(A, u) = mxv(A, u, {name})
    graph pvm(w, A) = vxm(w, A, {name})
    """)
    same(gr.run("pm", A, B), GA.mxm(GB, gsr).new())
    same(gr.run("pmm", A, B, M), GA.mxm(GB, gsr).new(mask=~GM.S))
    same(gr.run("pv", A, u), GA.mxv(gu, gsr).new())
    same(gr.run("pvm", w, A), gw.vxm(GA, gsr).new())


@pytest.mark.parametrize("seed", range(3))
def test_count_argmin_argmax(seed):
    rng = np.random.default_rng(40 + seed)
    A, GA = rand_matrix(rng, 8, 6, lo=0, hi=3)  # many ties
    warnings.simplefilter("ignore")
    for name, g_agg in (("count", agg.count), ("argmin", agg.ss.argmin),
                        ("argmax", agg.ss.argmax)):
        same(run(f"graph r(A) = {name}(A)", A), GA.reduce_rowwise(g_agg).new())
        same(run(f"graph c(A) = {name}(A, axis=cols)", A), GA.reduce_columnwise(g_agg).new())


@pytest.mark.parametrize("seed", range(3))
def test_kronecker_diag_concat_resize(seed):
    rng = np.random.default_rng(50 + seed)
    A, GA = rand_matrix(rng, 4, 3)
    B, GB = rand_matrix(rng, 3, 5)
    for op in ("times", "minus", "max"):
        same(run(f"graph k(A, B) = kronecker(A, B, {op})", A, B),
             GA.kronecker(GB, getattr(binary, op)).new())
    C, GC = rand_matrix(rng, 6, 8, p=0.5)
    g = gb.define("graph dm(A, k) = diag(A, k)").graphs["dm"]
    for k in (-7, -2, 0, 1, 3, 9):
        same(gr.run(g, C, k), GC.diag(k))
    u, gu = rand_vector(rng, 5)
    g = gb.define("graph dv(u, k) = diag(u, k)").graphs["dv"]
    for k in (-2, 0, 3):
        same(gr.run(g, u, k), gu.diag(k))
    D, GD = rand_matrix(rng, 2, 3)
    E, GE = rand_matrix(rng, 4, 5)
    same(run("graph cr(A, D) = concat(A, D)", A, D), graphblas.ss.concat([[GA], [GD]]))
    F, GF = rand_matrix(rng, 2, 5)
    same(run("graph cc(D, F) = concat(D, F, D, axis=cols)", D, F),
         graphblas.ss.concat([[GD, GF, GD]]))
    w, gw = rand_vector(rng, 4, dtype=np.int64)
    same(run("graph cv(u, w) = concat(u, w, u)", u, w), graphblas.ss.concat([gu, gw, gu]))
    for m, n in ((2, 7), (10, 3), (6, 8)):
        want = GE.dup()
        want.resize(m, n)
        same(run(f"graph rz(E) = resize(E, {m}, {n})", E), want)
    want = gu.dup()
    want.resize(3)
    same(run("graph rv(u) = resize(u, 3)", u), want)


def test_extract():
    rng = np.random.default_rng(60)
    A, GA = rand_matrix(rng, 7, 9)
    rows, cols = [5, 1, 1, 6], [0, 8, 3]
    same(run("graph e(A, r, c) = extract(A, rows=r, cols=c)", A, rows, cols),
         GA[rows, cols].new())
    M, GM = rand_matrix(rng, 4, 3, p=0.5)
    same(run("graph em(A, r, c, M) = extract(A, rows=r, cols=c, mask=M.S)", A, rows, cols, M),
         GA[rows, cols].new(mask=GM.S))
    u, gu = rand_vector(rng, 9)
    same(run("graph ev(u, r) = extract(u, rows=r)", u, [8, 0, 3, 3]), gu[[8, 0, 3, 3]].new())


@pytest.mark.parametrize("seed", range(4))
def test_subassign_and_assign(seed):
    """subassign: the mask has the region's shape and replace clears inside the region only
    (GxB_subassign, C[r, c](M) << V); assign: the mask covers C (GrB_assign, C(M)[r, c] << V).
    The operand C is not changed (the definition is functional)."""
    rng = np.random.default_rng(70 + seed)
    C, GC = rand_matrix(rng, 7, 8)
    V, GV = rand_matrix(rng, 3, 4, p=0.6)
    M, GM = rand_matrix(rng, 3, 4, p=0.5)
    rows, cols = [5, 1, 2], [0, 6, 3, 7]
    before = C.dup()
    gb.define("""
    graph sa(C, V, M, r, c) = subassign(C, V, rows=r, cols=c, mask=M.S, replace=true)
    graph sv(C, V, M, r, c) = subassign(C, V, rows=r, cols=c, mask=not M.V, accum=plus)
    graph sn(C, V, r, c) = subassign(C, V, rows=r, cols=c, accum=min)
    graph s9(C, M, r, c) = subassign(C, 9, rows=r, cols=c, mask=M.V)
    """)
    want = GC.dup()
    want[rows, cols](GM.S, replace=True) << GV
    same(gr.run("sa", C, V, M, rows, cols), want)
    want = GC.dup()
    want[rows, cols](~GM.V, binary.plus) << GV
    same(gr.run("sv", C, V, M, rows, cols), want)
    want = GC.dup()
    want[rows, cols](binary.min) << GV
    same(gr.run("sn", C, V, rows, cols), want)
    want = GC.dup()
    want[rows, cols](GM.V) << 9.0
    same(gr.run("s9", C, M, rows, cols), want)
    assert C.isequal(before)
    # assign: a mask of C's shape
    MC, GMC = rand_matrix(rng, 7, 8, p=0.5)
    want = GC.dup()
    want(GMC.S, replace=True)[rows, cols] << GV
    same(run("graph a(C, V, M, r, c) = assign(C, V, rows=r, cols=c, mask=M.S, replace=true)",
             C, V, MC, rows, cols), want)


def test_subassign_vector_and_checks():
    rng = np.random.default_rng(80)
    c, gc = rand_vector(rng, 10)
    v, gv = rand_vector(rng, 4)
    m, gm = rand_vector(rng, 4)
    want = gc.dup()
    want[[7, 0, 3, 5]](gm.S, replace=True) << gv
    same(run("graph sv(c, v, m, r) = subassign(c, v, rows=r, mask=m.S, replace=true)",
             c, v, m, [7, 0, 3, 5]), want)
    with pytest.raises(gb.TypeCheckError, match="replace"):
        gb.define("graph e(C, V, r) = subassign(C, V, rows=r, replace=true)")
    with pytest.raises(gb.ArityError):
        gb.define("graph e(C) = subassign(C)")
    with pytest.raises(gb.UnknownNameError):
        gb.define("graph e(C, V, r) = subassign(C, V, rows=r, out=C)")
    text = str(gb.explain(gb.define(
        "graph sx(C, V, M, r) = subassign(C, V, rows=r, mask=M.S, replace=true)").graphs["sx"]))
    assert "region C(rows, cols)" in text
