"""The forms of a Vector (gbdist/graph/vector_forms.py, issue 28): mxv's dense result held
as a *full* vector (the values alone), a *bitmap* (values and presence flags) or *sparse*
(keys and values), by how many rows had a term; a dense input ``gb.Vector(array)`` is full.
Each form, and every operation on it, is compared with python-graphblas (SuiteSparse) on
the same operands: same pattern, same values. The keys of a full or bitmap result are not
made by the product (they are what the form saves) but on first use."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from graphcase import dev, host

graphblas = pytest.importorskip("graphblas")
from graphblas import Matrix as GMatrix, Vector as GVector, binary as gbin  # noqa: E402
from graphblas import monoid as gmon, semiring as gsr, unary as gun  # noqa: E402

N = 48
# empty rows of A -> the form of A·x: none (full), a few (bitmap), most (sparse)
EMPTY = {"full": 0, "bitmap": 6, "sparse": 40}


def _matrix(rng, empty):
    A = sps.random(N, N, density=0.25, format="lil", random_state=rng, dtype=np.float64)
    for i in range(N):  # every row stored, then `empty` of them cleared
        A[i, rng.integers(N)] = rng.random() + 0.5
    for i in rng.choice(N, size=empty, replace=False):
        A[i, :] = 0
    A = A.tocsr()
    A.eliminate_zeros()
    return A


def _peer(A):
    c = A.tocoo()
    return GMatrix.from_coo(c.row, c.col, c.data, nrows=N, ncols=N)


def _same(ours, theirs, rtol=1e-12):
    """gbdist's vector equals python-graphblas's: pattern, then values."""
    ours = host(ours)
    idx, vals = theirs.to_coo()
    np.testing.assert_array_equal(np.asarray(ours.indices), idx)
    np.testing.assert_allclose(np.asarray(ours.values, dtype=float), np.asarray(vals, float),
                               rtol=rtol)
    assert ours.nvals == theirs.nvals and ours.size == theirs.size


@pytest.fixture(params=list(EMPTY))
def case(request, kernels):
    rng = np.random.default_rng(sorted(EMPTY).index(request.param) + 7)
    A = _matrix(rng, EMPTY[request.param])
    x = rng.random(N) + 0.25
    G, xv = dev(kernels, gb.Matrix(A)), dev(kernels, gb.Vector(x))
    P, xg = _peer(A), GVector.from_dense(x)
    w = gr.mxv(G, xv, gb.semirings.plus_times, backend=kernels)
    wg = P.mxv(xg, gsr.plus_times).new()
    return request.param, kernels, G, P, w, wg, rng


def test_a_dense_input_is_full_without_keys():
    v = gb.Vector(np.arange(5.0))
    assert v.format == "full" and v._sparse_idx is None and v.nvals == 5
    np.testing.assert_array_equal(v.indices, np.arange(5))  # made on first use
    assert not v.indices.flags.writeable
    assert v.isequal(gb.Vector.from_coo(range(5), np.arange(5.0), 5))


def test_mxv_result_form_and_no_keys_made(case):
    form, kernels, G, P, w, wg, _ = case
    assert w.format == form
    if form != "sparse":
        assert w._sparse_idx is None  # the product made no int64 keys
    _same(w, wg)


def test_a_bitmap_is_zero_where_absent(kernels):
    """min_plus's identity (inf) is what the kernel leaves in an empty row: the bitmap holds
    0 there (dense_parts' contract) and the entry is absent."""
    rng = np.random.default_rng(3)
    A = _matrix(rng, EMPTY["bitmap"])
    x = rng.random(N)
    w = gr.mxv(dev(kernels, gb.Matrix(A)), dev(kernels, gb.Vector(x)), gb.semirings.min_plus,
               backend=kernels)
    assert w.format == "bitmap"
    vals, present = (host_array(a) for a in w.dense_parts())
    empty = np.diff(A.indptr) == 0
    np.testing.assert_array_equal(present, ~empty)
    assert (vals[empty] == 0).all()
    _same(w, _peer(A).mxv(GVector.from_dense(x), gsr.min_plus).new())


def host_array(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def test_operations_on_each_form_match_graphblas(case):
    form, kernels, G, P, w, wg, rng = case
    other = rng.random(N)
    other[rng.random(N) < 0.3] = 0
    oi = np.flatnonzero(other)
    o = dev(kernels, gb.Vector.from_coo(oi, other[oi], N))
    og = GVector.from_coo(oi, other[oi], size=N)
    _same(gr.ewise_add(w, o, gb.ops.plus), wg.ewise_add(og, gbin.plus).new())
    _same(gr.ewise_mult(w, o, gb.ops.times), wg.ewise_mult(og, gbin.times).new())
    _same(gr.ewise_add(o, w, gb.ops.minus), og.ewise_add(wg, gbin.minus).new())
    _same(gr.apply(gb.ops.neg, w), wg.apply(gun.ainv).new())
    _same(gr.apply(gb.ops.times, w, right=3.0), wg.apply(gbin.times, right=3.0).new())
    _same(gr.select(w, ">", 0.5), wg.select(">", 0.5).new())
    assert np.isclose(float(gr.reduce_scalar(w, gb.ops.plus)), wg.reduce(gmon.plus).new().value)
    idx = [3, 0, 7, 7, 40, 11]
    _same(gr.extract(w, idx), wg[idx].new())
    _same(gr.vxm(w, G, gb.semirings.plus_times, backend=kernels),
          wg.vxm(P, gsr.plus_times).new())
    _same(gr.mxv(G, w, gb.semirings.min_plus, backend=kernels), P.mxv(wg, gsr.min_plus).new())
    _same(gr.mxv(G, o, gb.semirings.plus_times, mask=w.S, backend=kernels),
          P.mxv(og, gsr.plus_times).new(mask=wg.S))
    _same(gr.ewise_add(o, o, gb.ops.plus, mask=~w.S), og.ewise_add(og, gbin.plus).new(mask=~wg.S))
    # writes: out= and assign into a copy of the result, the original unchanged
    c, cg = w.dup(), wg.dup()
    assert c.format == w.format
    gr.ewise_add(c, o, gb.ops.plus, out=c, accum=gb.ops.plus)
    cg(accum=gbin.plus) << cg.ewise_add(og, gbin.plus)
    _same(c, cg)
    d, dg = w.dup(), wg.dup()
    gr.assign(d, 2.5, [1, 5, 9])
    dg[[1, 5, 9]] << 2.5
    _same(d, dg)
    _same(w, wg)
    assert w.isequal(w.dup()) and not w.isequal(d)
    dense = host_array(w.to_dense(fill=-1.0))
    np.testing.assert_allclose(dense, wg.to_dense(fill_value=-1.0))


def test_row_and_column_reductions_take_the_smallest_form(case):
    """reduce_rows / reduce_cols return the kernel's dense result in the form of mxv's
    (full where every row has an entry: no keys made); masked and written onto out=, the
    same entries as python-graphblas."""
    form, kernels, G, P, w, wg, rng = case
    for ours, theirs, monoid in ((gr.reduce_rows, "reduce_rowwise", "plus"),
                                 (gr.reduce_cols, "reduce_columnwise", "max")):
        r = ours(G, getattr(gb.ops, monoid), backend=kernels)
        rg = getattr(P, theirs)(getattr(gmon, monoid)).new()
        if ours is gr.reduce_rows:  # A's rows hold the entries A·x sums over: one pattern
            assert r.format == form
            if form != "sparse":
                assert r._sparse_idx is None  # the reduction made no int64 keys
        _same(r, rg)
        _same(ours(G, getattr(gb.ops, monoid), mask=~w.S, backend=kernels),
              getattr(P, theirs)(getattr(gmon, monoid)).new(mask=~wg.S))
        c, cg = w.dup(), wg.dup()
        ours(G, getattr(gb.ops, monoid), out=c, accum=gb.ops.plus, backend=kernels)
        cg(accum=gbin.plus) << getattr(P, theirs)(getattr(gmon, monoid))
        _same(c, cg)


def test_a_cast_copy_keeps_the_form(case):
    form, kernels, G, P, w, wg, _ = case
    c = gb.Vector(w, dtype=np.int64)
    assert c.format == form and c.dtype == np.int64
    _same(c, wg.dup(dtype="INT64"))
    assert host(w).values.dtype == np.float64  # the original is not cast
