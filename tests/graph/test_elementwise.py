"""ewise_add (union), ewise_mult (intersection), apply (unary, bound), select, against
brute force on matrices and vectors; fill-0 rules; masks and accum."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from graphcase import assert_matches, dev, random_graph, random_vector


def _b(kernels):
    return "auto" if kernels == "cuda" else kernels


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("opname", ["plus", "min", "minus", "first", "second"])
def test_ewise_add_and_mult_matrices(kernels, dtype, opname):
    rng = np.random.default_rng(3)
    A, WA, PA = random_graph(rng, 12, 9, dtype=dtype, p=0.4)
    B, WB, PB = random_graph(rng, 12, 9, dtype=dtype, p=0.4)
    op = getattr(gb.ops, opname)
    f = {"plus": np.add, "min": np.minimum, "minus": np.subtract, "first": lambda a, b: a,
         "second": lambda a, b: b}[opname]
    both = f(WA, WB)
    add = gr.ewise_add(dev(kernels, gb.Matrix(A)), dev(kernels, gb.Matrix(B)), op, backend=_b(kernels))
    want = np.where(PA & PB, both, np.where(PA, WA, WB))
    assert_matches(add, want, PA | PB, dtype)
    mult = gr.ewise_mult(dev(kernels, gb.Matrix(A)), dev(kernels, gb.Matrix(B)), op, backend=_b(kernels))
    assert_matches(mult, both, PA & PB, dtype)
    assert (PA & ~PB).any() and (PA & PB).any()


def test_ewise_vectors_with_mask_and_accum(kernels):
    rng = np.random.default_rng(5)
    u, wu, pu = random_vector(rng, 30)
    v, wv, pv = random_vector(rng, 30)
    m, wm, pm = random_vector(rng, 30, p=0.5)
    c, wc, pc = random_vector(rng, 30)
    out = dev(kernels, c.dup())
    r = gr.ewise_add(dev(kernels, u), dev(kernels, v), gb.ops.max, mask=dev(kernels, m).V,
                     accum=gb.ops.plus, out=out)
    T = np.where(pu & pv, np.maximum(wu, wv), np.where(pu, wu, wv))
    PT = pu | pv
    Z = np.where(pc & PT, wc + T, np.where(pc, wc, T))
    allowed = pm & (wm != 0)
    assert_matches(r, np.where(allowed, Z, wc), (allowed & (pc | PT)) | (~allowed & pc), np.float64)


def test_ewise_mixed_dtypes_and_type_rule():
    a = gb.Vector(np.array([1, 2, 3], dtype=np.int32))
    b = gb.Vector(np.array([0.5, 1.5, 2.5]))
    assert gr.ewise_add(a, b, gb.ops.plus).dtype == np.float64
    assert gr.ewise_add(a, a, gb.ops.plus).dtype == np.int32
    assert gr.ewise_add(a, a, gb.ops.div).dtype == np.float64  # division leaves the integers
    np.testing.assert_array_equal(gr.ewise_add(a, a, gb.ops.div).values, [1.0, 1.0, 1.0])
    assert gr.ewise_add(a, a, gb.ops.plus, dtype=np.int64).dtype == np.int64


def test_fill0_ewise_rules():
    X = gb.Matrix(sps.csr_matrix(np.array([[1.0, 0], [0, 2]])), fill=0)
    Y = gb.Matrix(sps.csr_matrix(np.array([[0, 3.0], [0, 4]])), fill=0)
    S = gr.ewise_add(X, Y, gb.ops.plus)  # 0 is plus's identity: exact
    np.testing.assert_array_equal(S.to_dense(), [[1, 3], [0, 6]])
    assert S.fill == 0
    P = gr.ewise_mult(X, Y, gb.ops.times)  # 0 annihilates times: exact
    np.testing.assert_array_equal(P.to_dense(), [[0, 0], [0, 8]])
    with pytest.raises(gr.GraphSemanticsError, match="identity") as e:
        gr.ewise_add(X, Y, gb.ops.times)  # union with times: 1 * 0 would be 0, not 1
    assert isinstance(e.value, ValueError) and "gb.mxm" in str(e.value)
    with pytest.raises(gr.GraphSemanticsError):
        gr.ewise_mult(X, Y, gb.ops.plus)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_apply_unary_and_bound(kernels, dtype):
    rng = np.random.default_rng(8)
    A, W, P = random_graph(rng, 10, dtype=dtype)
    Am = dev(kernels, gb.Matrix(A))
    r = gr.apply(gb.ops.neg, Am)
    want_dt = np.dtype(dtype)
    assert_matches(r, -W, P, want_dt)
    r = gr.apply(gb.ops.minus, Am, right=1)
    assert_matches(r, W - 1, P, np.result_type(want_dt, 1))
    r = gr.apply(gb.ops.minus, Am, left=10)
    assert_matches(r, 10 - W, P, np.result_type(want_dt, 10))
    r = gr.apply(gb.ops.exp, Am)  # f(0) = 1 on stored zeros only; absent entries stay absent
    assert_matches(r, np.exp(W), P, np.float64, rtol=1e-12)


def test_apply_fill0_refuses_nonzero_at_zero():
    X = gb.Matrix(sps.csr_matrix(np.array([[1.0, 0], [0, 2]])), fill=0)
    np.testing.assert_array_equal(gr.apply(gb.ops.neg, X).to_dense(), [[-1, 0], [0, -2]])
    with pytest.raises(gr.GraphSemanticsError, match="maps the unstored zeros to 1"):
        gr.apply(gb.ops.exp, X)
    with pytest.raises(gr.GraphSemanticsError):
        gr.apply(gb.ops.plus, X, right=1)
    G = gb.Matrix(sps.csr_matrix(np.array([[1.0, 0], [0, 2]])))  # a graph: fine
    assert gr.apply(gb.ops.exp, G).nvals == 2


@pytest.mark.parametrize("sel,k", [("tril", 0), ("tril", -1), ("triu", 0), ("triu", 2),
                                   ("diag", 0), ("diag", 1), ("offdiag", 0), ("==", 2),
                                   ("!=", 0), (">", 1), (">=", 2), ("<", 3), ("<=", 0),
                                   ("nonzero", 0)])
def test_select(kernels, sel, k):
    rng = np.random.default_rng(6)
    A, W, P = random_graph(rng, 12, 10, p=0.5, zeros=5)
    i, j = np.indices(W.shape)
    keep = {"tril": j <= i + k, "triu": j >= i + k, "diag": j == i + k, "offdiag": j != i + k,
            "==": W == k, "!=": W != k, ">": W > k, ">=": W >= k, "<": W < k, "<=": W <= k,
            "nonzero": W != 0}[sel]
    r = gr.select(dev(kernels, gb.Matrix(A)), sel, k)
    assert_matches(r, W, P & keep, np.float64)
    assert (P & keep).any() and (P & ~keep).any()


def test_select_vector_values():
    v = gb.Vector.from_coo([0, 3, 4], [0.0, 5.0, -1.0], 6)
    r = gr.select(v, ">", 0)
    assert r.indices.tolist() == [3] and r.values.tolist() == [5.0]
    assert gr.select(v, "nonzero").indices.tolist() == [3, 4]


def test_matches_python_graphblas_elementwise_select_reduce():
    pytest.importorskip("graphblas")
    from graphblas import binary, io as gio, monoid, select as gsel
    rng = np.random.default_rng(21)
    A, _, _ = random_graph(rng, 25, p=0.2, zeros=5)
    B, _, _ = random_graph(rng, 25, p=0.2, zeros=5)
    GA, GB = gio.from_scipy_sparse(A), gio.from_scipy_sparse(B)
    Am, Bm = gb.Matrix(A), gb.Matrix(B)

    def same(ours, theirs):
        w = gio.to_scipy_sparse(theirs, format="csr")
        w.sort_indices()
        g = ours.to_scipy()
        np.testing.assert_array_equal(g.indptr, w.indptr)
        np.testing.assert_array_equal(g.indices, w.indices)
        np.testing.assert_allclose(g.data, w.data)

    same(gr.ewise_add(Am, Bm, gb.ops.minus), GA.ewise_add(GB, binary.minus).new())
    same(gr.ewise_mult(Am, Bm, gb.ops.max), GA.ewise_mult(GB, binary.max).new())
    same(gr.select(Am, "tril", -1), GA.select(gsel.tril, -1).new())
    same(gr.select(Am, ">=", 2), GA.select(gsel.valuege, 2).new())
    same(gr.apply(gb.ops.minus, Am, left=3), GA.apply(binary.minus, left=3).new())
    for ours, theirs in ((gr.reduce_rows(Am, gb.ops.min), GA.reduce_rowwise(monoid.min).new()),
                         (gr.reduce_cols(Am, gb.ops.plus), GA.reduce_columnwise(monoid.plus).new())):
        idx, vals = theirs.to_coo()
        np.testing.assert_array_equal(ours.indices, idx.astype(np.int64))
        np.testing.assert_allclose(ours.values, vals)
