"""The GraphBLAS features issue 28 asks for, each against python-graphblas (SuiteSparse:
GraphBLAS) on the same random inputs: pattern, values and dtype compared.

eWiseUnion with fill values; index-unary select and apply (built-in and user ops);
positional semirings on every kernel set (mxm / mxv / vxm, masks); count, argmin,
argmax (ties); kronecker, diag, concat / split, resize; A[i, j], A[i, :], A[:, j];
subassign; Scalar. I/O (networkx, files) is in test_graph_io.py."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr
from graphcase import dev, host

graphblas = pytest.importorskip("graphblas")
from graphblas import agg, binary, indexunary, semiring as gsemiring  # noqa: E402

SEEDS = range(4)


def rand_matrix(rng, m=7, n=9, p=0.35, dtype=np.float64, lo=-3, hi=4):
    P = rng.random((m, n)) < p
    r, c = np.nonzero(P)
    v = rng.integers(lo, hi, r.size).astype(dtype)  # small integers: ties and stored zeros
    return gb.Matrix.from_coo(r, c, v, (m, n)), graphblas.Matrix.from_coo(
        r, c, v, nrows=m, ncols=n, dtype=np.dtype(dtype).name)


def rand_vector(rng, n=9, p=0.5, dtype=np.float64):
    idx = np.flatnonzero(rng.random(n) < p)
    v = rng.integers(-3, 4, idx.size).astype(dtype)
    return gb.Vector.from_coo(idx, v, n), graphblas.Vector.from_coo(idx, v, size=n,
                                                                     dtype=np.dtype(dtype).name)


def same(got, want):
    got = host(got)
    assert got.shape == want.shape
    if got.ndim == 2:
        r, c, v = got.to_coo()
        wr, wc, wv = want.to_coo()
        assert np.array_equal(r, wr.astype(np.int64)) and np.array_equal(c, wc.astype(np.int64))
    else:
        v = got.values
        wi, wv = want.to_coo()
        assert np.array_equal(got.indices, wi.astype(np.int64))
    assert np.dtype(got.dtype) == np.dtype(want.dtype.np_type), (got.dtype, want.dtype)
    assert np.allclose(np.asarray(v, np.float64), np.asarray(wv, np.float64), equal_nan=True)


# --- 1. eWiseUnion -------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op", ["minus", "plus", "max", "times"])
def test_ewise_union(seed, op):
    rng = np.random.default_rng(seed)
    A, GA = rand_matrix(rng)
    B, GB = rand_matrix(rng, dtype=np.int32 if seed % 2 else np.float64)
    got = gr.ewise_union(A, B, getattr(gb.ops, op), 10.0, -2.5)
    want = GA.ewise_union(GB, getattr(binary, op), 10.0, -2.5).new()
    same(got, want)
    u, gu = rand_vector(rng)
    w, gw = rand_vector(rng)
    same(gr.ewise_union(u, w, gb.ops.minus, 1.0, 7.0),
         gu.ewise_union(gw, binary.minus, 1.0, 7.0).new())


@pytest.mark.parametrize("pa,pb", [(0.01, 0.02), (0.3, 0.6), (1.0, 0.2), (0.4, 1.0),
                                   (1.0, 1.0), (0.0, 0.5)])
@pytest.mark.parametrize("dtypes", [(np.float64, np.float64), (np.int32, np.int64),
                                    (np.int64, np.float64)])
def test_ewise_union_vectors_sparse_and_dense_paths(pa, pb, dtypes):
    """Vectors merge by search when sparse and through key-space arrays when together they
    hold an eighth of it (gbdist.graph.sparse.DENSE_SHARE): both against SuiteSparse, full,
    disjoint and empty operands included."""
    from gbdist.graph import sparse as S
    rng = np.random.default_rng(int(pa * 100 + pb * 10))
    n = 400
    u, gu = rand_vector(rng, n, pa, dtypes[0])
    w, gw = rand_vector(rng, n, pb, dtypes[1])
    assert S.dense_space(n, u.nvals, w.nvals) == (u.nvals + w.nvals >= n / 8)
    for op in ("minus", "first", "max"):
        same(gr.ewise_union(u, w, getattr(gb.ops, op), 3, -1),
             gu.ewise_union(gw, getattr(binary, op), 3, -1).new())
    mask, gmask = rand_vector(rng, n, 0.5)
    same(gr.ewise_union(u, w, gb.ops.plus, 2, 5, mask=mask.S),
         gu.ewise_union(gw, binary.plus, 2, 5).new(mask=gmask.S))


def test_ewise_union_mask_and_fill0():
    rng = np.random.default_rng(7)
    A, GA = rand_matrix(rng)
    B, GB = rand_matrix(rng)
    M, GM = rand_matrix(rng)
    got = gr.ewise_union(A, B, gb.ops.minus, 1.0, 2.0, mask=M.S)
    want = GA.ewise_union(GB, binary.minus, 1.0, 2.0).new(mask=GM.S)
    same(got, want)
    with pytest.raises(gr.GraphSemanticsError):
        gr.ewise_union(A.dup(fill=0), B.dup(fill=0), gb.ops.minus, 1.0, 2.0)


# --- 2. index-unary select / apply, positional semirings -------------------------------

SELECT_INDEX = ["rowle", "rowgt", "colle", "colgt", "tril", "triu", "diag", "offdiag"]
SELECT_VALUE = ["valueeq", "valuene", "valuelt", "valuele", "valuegt", "valuege"]


@pytest.mark.parametrize("seed", SEEDS)
def test_select_index_unary(seed):
    rng = np.random.default_rng(seed)
    A, GA = rand_matrix(rng)
    for name in SELECT_INDEX:
        for k in (-2, 0, 1, 3):
            same(gr.select(A, name, k), GA.select(name, k).new())
    for name in SELECT_VALUE:
        for t in (-1.0, 0.0, 2.0):
            same(gr.select(A, name, t), GA.select(name, graphblas.Scalar.from_value(t)).new())
    u, gu = rand_vector(rng)
    for name, gname in (("indexle", "indexle"), ("rowgt", "indexgt")):
        same(gr.select(u, name, 4), gu.select(gname, 4).new())
    same(gr.select(u, "valuegt", 0.0), gu.select("valuegt", 0.0).new())


@pytest.mark.parametrize("seed", SEEDS)
def test_apply_index_unary(seed):
    rng = np.random.default_rng(seed)
    A, GA = rand_matrix(rng, dtype=np.int32 if seed % 2 else np.float64)
    for name in ("rowindex", "colindex", "diagindex"):
        for t in (0, 2, -1):
            same(gr.apply(name, A, thunk=t), GA.apply(getattr(indexunary, name)[
                graphblas.dtypes.INT64], t).new())
    u, gu = rand_vector(rng)
    same(gr.apply("index", u, thunk=1), gu.apply(indexunary.index[graphblas.dtypes.INT64],
                                                  1).new())


def test_user_index_unary_ops():
    rng = np.random.default_rng(11)
    A, GA = rand_matrix(rng)
    mine = gr.index_unary("band_pos", lambda x, i, j, y: (x > 0) & (j <= i + y))
    warnings.simplefilter("ignore")
    # (python-graphblas's i, j are unsigned in a user op: no j - i there)
    gop = indexunary.register_anonymous(lambda x, i, j, y: (x > 0) and (j <= i + y),
                                        is_udt=False)
    got = gr.select(A, mine, 2.0)
    same(got, GA.select(gop[graphblas.dtypes.FP64], 2.0).new())
    r, c, v = A.to_coo()
    keep = (v > 0) & (c <= r + 2)
    assert np.array_equal(got.to_coo()[0], r[keep]) and np.array_equal(got.to_coo()[1], c[keep])
    val = gr.index_unary("wsum", lambda x, i, j, y: x * 10 + i - j + y, result="value")
    got = gr.apply(val, A, thunk=1.0)
    r, c, v = A.to_coo()
    assert np.array_equal(got.to_coo()[2], v * 10 + r - c + 1.0)
    with pytest.raises(gb.InputError, match="rowle"):
        gr.select(A, "rowlee", 1)
    with pytest.raises(gb.InputError, match="integer"):
        gr.select(A, "rowle", 1.5)  # an index thunk is an integer


POSITIONAL = [f"{a}_{m}" for a in ("min", "max", "plus", "any")
              for m in ("firsti", "firstj", "secondi", "secondj", "firsti1", "secondj1")]


def _backend(kernels):
    return "auto" if kernels == "cuda" else kernels


def _gsr(name):
    if name.startswith("any_"):  # SuiteSparse's any picks any candidate: min has one answer
        name = "min_" + name[4:]
    return getattr(gsemiring.ss, name)


def _ours(name):
    return gb.semirings["min_" + name[4:]] if name.startswith("any_") else gb.semirings[name]


@pytest.mark.parametrize("name", POSITIONAL)
def test_positional_semirings(kernels, name):
    rng = np.random.default_rng(len(name))
    A, GA = rand_matrix(rng, 6, 8)
    B, GB = rand_matrix(rng, 8, 5)
    sr, gsr = _ours(name), _gsr(name)
    be = _backend(kernels)
    C = gr.mxm(dev(kernels, A), dev(kernels, B), sr, backend=be)
    same(C, GA.mxm(GB, gsr).new())
    assert "positional" in gr.explain(C) and "annihilat" in gr.explain(C)
    u, gu = rand_vector(rng, 8)
    same(gr.mxv(dev(kernels, A), dev(kernels, u), sr, backend=be), GA.mxv(gu, gsr).new())
    w, gw = rand_vector(rng, 6)
    same(gr.vxm(dev(kernels, w), dev(kernels, A), sr, backend=be), gw.vxm(GA, gsr).new())
    M, GM = rand_matrix(rng, 6, 5, p=0.5)
    same(gr.mxm(dev(kernels, A), dev(kernels, B), sr, mask=dev(kernels, M).S, backend=be),
         GA.mxm(GB, gsr).new(mask=GM.S))
    same(gr.mxm(dev(kernels, A), dev(kernels, B), sr, mask=~dev(kernels, M).S, backend=be),
         GA.mxm(GB, gsr).new(mask=~GM.S))


def test_positional_refusals():
    rng = np.random.default_rng(3)
    A, _ = rand_matrix(rng, 5, 5)
    with pytest.raises(gr.GraphSemanticsError):
        gr.mxm(A.dup(fill=0), A.dup(fill=0), gb.semirings.min_firsti)
    from gbdist.algebra.positional import firsti
    with pytest.raises(gb.TypeCheckError, match="positional"):
        gr.ewise_add(A, A, firsti)
    with pytest.raises(Exception):  # a positional op is never evaluated as a value op
        gb.ops.apply_binary(firsti, np.ones(2), np.ones(2))


# --- 3. reductions -------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_count_argmin_argmax(seed):
    rng = np.random.default_rng(seed)
    A, GA = rand_matrix(rng, 8, 6, lo=0, hi=3)  # many ties
    warnings.simplefilter("ignore")
    same(gr.count(A), GA.reduce_rowwise(agg.count).new())
    same(gr.count(A, "cols"), GA.reduce_columnwise(agg.count).new())
    same(gr.argmin(A), GA.reduce_rowwise(agg.ss.argmin).new())
    same(gr.argmax(A), GA.reduce_rowwise(agg.ss.argmax).new())
    same(gr.argmin(A, "cols"), GA.reduce_columnwise(agg.ss.argmin).new())
    same(gr.argmax(A, "cols"), GA.reduce_columnwise(agg.ss.argmax).new())
    u, gu = rand_vector(rng)
    assert gr.count(u) == gu.reduce(agg.count).new().value
    for ours, theirs in ((gr.argmin, agg.ss.argmin), (gr.argmax, agg.ss.argmax)):
        assert ours(u) == gu.reduce(theirs).new().value


# --- 4. structure ---------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_kronecker_diag(seed):
    rng = np.random.default_rng(seed)
    A, GA = rand_matrix(rng, 4, 3)
    B, GB = rand_matrix(rng, 3, 5)
    same(gr.kronecker(A, B, gb.ops.times), GA.kronecker(GB, binary.times).new())
    same(gr.kronecker(A, B, gb.ops.minus), GA.kronecker(GB, binary.minus).new())
    C, GC = rand_matrix(rng, 6, 8, p=0.5)
    for k in (-7, -2, 0, 1, 3, 9):
        same(gr.diag(C, k), GC.diag(k))
    u, gu = rand_vector(rng, 5)
    for k in (-2, 0, 3):
        same(gr.diag(u, k), gu.diag(k))


@pytest.mark.parametrize("seed", SEEDS)
def test_concat_split_resize(seed):
    rng = np.random.default_rng(seed)
    tiles = [[rand_matrix(rng, h, w) for w in (3, 4)] for h in (2, 5)]
    same(gr.concat([[t[0] for t in row] for row in tiles]),
         graphblas.ss.concat([[t[1] for t in row] for row in tiles]))
    A, GA = rand_matrix(rng, 7, 9)
    for chunks in (2, 4, (3, [2, 7]), ([7], 5)):
        ours, theirs = gr.split(A, chunks), GA.ss.split(chunks)
        assert len(ours) == len(theirs)
        for ro, rt in zip(ours, theirs):
            assert len(ro) == len(rt)
            for o, t in zip(ro, rt):
                same(o, t)
    u, gu = rand_vector(rng, 9)
    same(gr.concat([u, u]), graphblas.ss.concat([gu, gu]))
    for o, t in zip(gr.split(u, 4), gu.ss.split(4)):
        same(o, t)
    for m, n in ((4, 12), (10, 3), (7, 9)):
        B, GB = A.dup(), GA.dup()
        gr.resize(B, m, n)
        GB.resize(m, n)
        same(B, GB)


@pytest.mark.parametrize("seed", SEEDS)
def test_element_row_column_access(seed):
    rng = np.random.default_rng(seed)
    A, GA = rand_matrix(rng)
    for i in range(A.nrows):
        same(A[i, :], GA[i, :].new())
        for j in range(A.ncols):
            s, t = A[i, j], GA[i, j].new()
            assert s.is_empty == t.is_empty and (s.is_empty or s.value == t.value)
    for j in (0, 4, -1):
        same(A[:, j], GA[:, j % A.ncols].new())
    same(A[[1, 3], 2:7], GA[[1, 3], 2:7].new())
    u, gu = rand_vector(rng)
    assert all(u[i].value == gu[i].new().value for i in range(u.size))
    with pytest.raises(gb.InputError):
        A[A.nrows, 0]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("replace", [False, True])
def test_subassign(seed, replace):
    rng = np.random.default_rng(seed)
    C, GC = rand_matrix(rng, 7, 8)
    V, GV = rand_matrix(rng, 3, 4, p=0.6)
    M, GM = rand_matrix(rng, 3, 4, p=0.5)
    rows, cols = [5, 1, 2], [0, 6, 3, 7]
    gr.subassign(C, V, rows, cols, mask=M.S, replace=replace)
    GC[rows, cols](GM.S, replace=replace) << GV
    same(C, GC)
    C2, GC2 = rand_matrix(rng, 7, 8)
    gr.subassign(C2, V, rows, cols, mask=~M.V, accum=gb.ops.plus)
    GC2[rows, cols](~GM.V, binary.plus) << GV
    same(C2, GC2)
    gr.subassign(C2, 9.0, [0, 2], [1, 2], mask=gb.Matrix(np.array([[1, 0], [0, 1]])).V)
    GC2[[0, 2], [1, 2]](graphblas.Matrix.from_dense(np.array([[1, 0], [0, 1]]), missing_value=0).V) << 9.0
    same(C2, GC2)


def test_scalar():
    s = gr.Scalar.from_value(3)
    assert s.dtype == np.int64 and s.value == 3 and not s.is_empty and s.nvals == 1
    e = gr.Scalar(np.float32)
    assert e.is_empty and e.value is None and e.nvals == 0 and not e
    assert s.isequal(gr.Scalar.from_value(3)) and not s.isequal(e)
    assert gr.Scalar.from_value(float("nan")).isequal(float("nan"))
    with pytest.raises(gb.InputError):
        float(e)


def test_text_language_forms():
    """Positional semirings and the index selectors in a graph definition, with the
    static explanation saying why a positional product is structural."""
    rng = np.random.default_rng(4)
    A, GA = rand_matrix(rng, 6, 6)
    gb.define("graph pos_g(A) = mxm(A, A, min_secondj)\n"
              "graph band_g(A) = select(select(A, rowle, 3), colgt, 1)")
    same(gr.run("pos_g", A), GA.mxm(GA, gsemiring.ss.min_secondj).new())
    same(gr.run("band_g", A), GA.select("rowle", 3).new().select("colgt", 1).new())
    text = str(gb.explain("pos_g"))
    assert "positional" in text and "annihilat" in text
    assert "REFUSED" in str(gb.explain("pos_g", fills={"A": 0}))


def test_subassign_vector():
    rng = np.random.default_rng(8)
    c, gc = rand_vector(rng, 10)
    v, gv = rand_vector(rng, 4)
    m, gm = rand_vector(rng, 4)
    gr.subassign(c, v, [7, 0, 3, 5], mask=m.S, replace=True)
    gc[[7, 0, 3, 5]](gm.S, replace=True) << gv
    same(c, gc)


@pytest.mark.gpu
def test_features_on_device_match_the_host():
    """Every new operation on device operands gives the host's result (CuPy arrays)."""
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    rng = np.random.default_rng(12)
    A, _ = rand_matrix(rng, 9, 9, p=0.4)
    B, _ = rand_matrix(rng, 9, 9, p=0.4)
    u, _ = rand_vector(rng, 9)
    dA, dB, du = A.to_device(), B.to_device(), u.to_device()
    pairs = [
        (gr.ewise_union(A, B, gb.ops.minus, 1.0, 2.0), gr.ewise_union(dA, dB, gb.ops.minus, 1.0, 2.0)),
        (gr.select(A, "colgt", 2), gr.select(dA, "colgt", 2)),
        (gr.select(A, "valuelt", 1.0), gr.select(dA, "valuelt", 1.0)),
        (gr.apply("diagindex", A, thunk=1), gr.apply("diagindex", dA, thunk=1)),
        (gr.count(A), gr.count(dA)), (gr.argmin(A, "cols"), gr.argmin(dA, "cols")),
        (gr.argmax(A), gr.argmax(dA)), (gr.diag(A, 1), gr.diag(dA, 1)), (gr.diag(u, -1), gr.diag(du, -1)),
        (gr.kronecker(A, B, gb.ops.times), gr.kronecker(dA, dB, gb.ops.times)),
        (gr.concat([[A, B]]), gr.concat([[dA, dB]])), (A[3, :], dA[3, :]), (A[:, 2], dA[:, 2]),
        (gr.mxv(A, u, gb.semirings.min_firstj), gr.mxv(dA, du, gb.semirings.min_firstj)),
    ]
    for h, d in pairs:
        assert d.on_device and d.to_host().isequal(h) and d.dtype == h.dtype
    for i in range(9):
        for j in range(9):
            assert A[i, j].isequal(dA[i, j])
    assert gr.argmin(u) == gr.argmin(du)
