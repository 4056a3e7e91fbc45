"""Hypersparse select, ewise_union, extract and element access, apply of index-unary ops
and positional products, against python-graphblas on 2⁴⁰ and 2⁶⁰ dimensions with few
entries: positions are the *ids* (never the compact positions), and no array of the
dimension's size is made (it could not be: 2⁴⁰ bytes)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr

graphblas = pytest.importorskip("graphblas")
from graphblas import binary, indexunary, select as gselect, semiring as gsemiring  # noqa: E402
from test_hypersparse import _vec as _hvec, same as _same  # noqa: E402

DIMS = [2 ** 40, 2 ** 60]


def _ids(rng, k, n):
    """Ids clustered near n/2 (so that tril / diag relations between rows and columns
    occur) plus a few anywhere in [0, n)."""
    near = n // 2 + rng.integers(-12, 12, k)
    far = rng.integers(0, n, 4, dtype=np.int64)
    return np.unique(np.concatenate([near, far]))


def _pair(rng, n, nnz=60, ints=False):
    ids = _ids(rng, 25, n)
    key = np.unique(np.stack([rng.choice(ids, nnz), rng.choice(ids, nnz)], 1), axis=0)
    v = rng.integers(-3, 5, key.shape[0]).astype(np.int64 if ints else np.float64)
    H = gr.HyperMatrix.from_coo(key[:, 0], key[:, 1], v, (n, n))
    G = graphblas.Matrix.from_coo(key[:, 0].astype(np.uint64), key[:, 1].astype(np.uint64), v,
                                  nrows=n, ncols=n)
    return H, G, ids


def _vec(rng, ids, n, k=12):
    return _hvec(rng, ids, k, n)


def same(h, g):
    _same(h, g, exact=True)


@pytest.mark.parametrize("n", DIMS)
def test_select_against_graphblas(n):
    rng = np.random.default_rng(n % 97)
    A, GA, ids = _pair(rng, n)
    mid = n // 2
    for k in (-3, 0, 4):
        same(gr.hyper.select(A, "tril", k), GA.select(gselect.tril, k).new())
        same(gr.hyper.select(A, "triu", k), GA.select(gselect.triu, k).new())
        same(gr.hyper.select(A, "diag", k), GA.select(gselect.diag, k).new())
        same(gr.hyper.select(A, "offdiag", k), GA.select(gselect.offdiag, k).new())
    same(gr.hyper.select(A, ">", 0), GA.select(gselect.valuegt, 0).new())
    same(gr.hyper.select(A, "nonzero"), GA.select(gselect.valuene, 0).new())
    same(gr.hyper.select(A, "valuele", 1), GA.select(gselect.valuele, 1).new())
    same(gr.hyper.select(A, "rowle", mid), GA.select(gselect.rowle, mid).new())
    same(gr.hyper.select(A, "colgt", mid + 2), GA.select(gselect.colgt, mid + 2).new())
    u, gu = _vec(rng, ids, n)
    same(gr.hyper.select(u, "valuegt", 0), gu.select(gselect.valuegt, 0).new())
    same(gr.hyper.select(u, "indexle", mid), gu.select(gselect.indexle, mid).new())
    with pytest.raises(gb.InputError, match="positional"):
        gr.hyper.select(u, "tril")
    # masked, and written into out= with an accumulator
    M, GM, _ = _pair(rng, n, 80)
    same(gr.hyper.select(A, "tril", 0, mask=M.S), GA.select(gselect.tril, 0).new(mask=GM.S))
    out, gout = A.T, GA.T.new()
    gr.hyper.select(A, "rowgt", mid, out=out, accum=gb.ops.plus)
    gout(accum=binary.plus) << GA.select(gselect.rowgt, mid)
    same(out, gout)


@pytest.mark.parametrize("n", DIMS)
def test_ewise_union_against_graphblas(n):
    rng = np.random.default_rng(3 + n % 89)
    A, GA, ids = _pair(rng, n)
    B, GB, _ = _pair(rng, n)
    same(gr.hyper.ewise_union(A, B, gb.ops.minus, 10.0, -1.0),
         GA.ewise_union(GB, binary.minus, 10.0, -1.0).new())
    u, gu = _vec(rng, ids, n)
    w, gw = _vec(rng, ids, n)
    same(gr.hyper.ewise_union(u, w, gb.ops.max, -5.0, 7.0),
         gu.ewise_union(gw, binary.max, -5.0, 7.0).new())
    M, GM, _ = _pair(rng, n, 90)
    same(gr.hyper.ewise_union(A, B, gb.ops.plus, 1.0, 2.0, mask=~M.S),
         GA.ewise_union(GB, binary.plus, 1.0, 2.0).new(mask=~GM.S))


@pytest.mark.parametrize("n", DIMS)
def test_extract_and_getitem_against_graphblas(n):
    rng = np.random.default_rng(7 + n % 83)
    A, GA, ids = _pair(rng, n)
    rows = [int(x) for x in rng.choice(ids, 8)] + [int(ids[0])] * 2  # repeats
    cols = [int(x) for x in rng.choice(ids, 9)] + [n - 1]
    same(gr.hyper.extract(A, rows, cols), GA[rows, cols].new())
    mid = n // 2
    same(gr.hyper.extract(A, slice(mid - 5, mid + 9), slice(mid - 20, mid + 20)),
         GA[mid - 5:mid + 9, mid - 20:mid + 20].new())
    same(gr.hyper.extract(A, None, cols), GA[:, cols].new())   # n rows: stays hypersparse
    same(gr.hyper.extract(A, slice(mid - 9, mid + 30, 3), None), GA[mid - 9:mid + 30:3, :].new())
    i, j = int(A.row_ids[1]), int(A.col_ids[2])
    same(A[i, :], GA[i, :].new())
    same(A[:, j], GA[:, j].new())
    same(A[rows, :], GA[rows, :].new())
    r0, c0, v0 = A.to_coo()
    assert A[int(r0[3]), int(c0[3])].value == v0[3]
    assert GA[int(r0[3]), int(c0[3])].new().value == v0[3]
    assert A[0, 1].is_empty if (0, 1) not in set(zip(r0.tolist(), c0.tolist())) else True
    assert A[-1, -1].is_empty == GA[n - 1, n - 1].new().is_empty
    u, gu = _vec(rng, ids, n)
    same(gr.hyper.extract(u, rows), gu[rows].new())
    same(u[mid - 4:mid + 6], gu[mid - 4:mid + 6].new())
    assert u[int(u.ids[0])].value == gu[int(u.ids[0])].new().value
    M, GM, _ = _pair(rng, n, 40)
    Mx = gr.hyper.extract(M, rows, cols)
    GMx = GM[rows, cols].new()
    same(gr.hyper.extract(A, rows, cols, mask=Mx.S), GA[rows, cols].new(mask=GMx.S))


def test_extract_strided_slices_brute_force():
    """Negative steps (python-graphblas has none) and open-ended strides over 2⁶⁰ rows
    (SuiteSparse walks the 2⁵⁹/3 selected indices: minutes), against a dictionary of the
    entries."""
    rng = np.random.default_rng(11)
    n = 2 ** 60
    A, _, _ = _pair(rng, n)
    r, c, v = A.to_coo()
    entries = dict(zip(zip(r.tolist(), c.tolist()), v.tolist()))
    for sl in (slice(None, None, -1), slice(n // 2 + 10, n // 2 - 10, -3),
               slice(n // 2 - 9, None, 3), slice(5, None, 7)):
        rr = range(*sl.indices(n))
        X = gr.hyper.extract(A, sl, [int(c[0]), int(c[1])])
        assert X.shape == (len(rr), 2)
        want = {(rr.index(i), k): x for (i, j), x in entries.items() if i in rr
                for k, jj in enumerate([int(c[0]), int(c[1])]) if jj == j}
        xr, xc, xv = X.to_coo()
        assert dict(zip(zip(xr.tolist(), xc.tolist()), xv.tolist())) == want


@pytest.mark.parametrize("n", DIMS)
def test_positions_are_ids(n):
    """apply of an index-unary op and positional products read the ids (the compact
    positions would be 0, 1, 2 … : a silent wrong answer)."""
    rng = np.random.default_rng(13)
    A, GA, ids = _pair(rng, n)
    same(gr.hyper.apply("rowindex", A), GA.apply(indexunary.rowindex).new())
    same(gr.hyper.apply("colindex", A, thunk=2), GA.apply(indexunary.colindex, 2).new())
    u, gu = _vec(rng, ids, n)
    same(gr.hyper.apply("index", u), gu.apply(indexunary.index).new())
    for name in ("min_secondi", "max_firsti", "min_firstj", "max_secondj"):
        sr = gb.semirings[name]
        gsr = getattr(gsemiring.ss, name)
        same(gr.hyper.mxm(A, A.T, sr), GA.mxm(GA.T, gsr).new())
        if name == "max_firsti":
            # SuiteSparse 9.4 gives the hyperlist position for firsti in mxv of a
            # hypersparse matrix (0, 1, … where a CSR matrix gives the row): w(i) = i here
            w, gw = gr.hyper.mxv(A, u, sr), GA.mxv(gu, gsr).new()
            assert np.array_equal(w.ids, gw.to_coo()[0].astype(np.int64))
            assert np.array_equal(w.to_coo()[1], w.ids)
        else:
            same(gr.hyper.mxv(A, u, sr), GA.mxv(gu, gsr).new())
        same(gr.hyper.vxm(u, A, sr), gu.vxm(GA, gsr).new())


def test_small_memory_and_ordinary_operations_refuse():
    """2⁶⁰ × 2⁶⁰ with ~100 entries: every operation above stays within a few MiB (an array
    of the dimension would be 2⁶⁰ bytes); gr.select & co. refuse with a hint naming gr.hyper."""
    rng = np.random.default_rng(17)
    n = 2 ** 60
    A, _, ids = _pair(rng, n, 100)
    B, _, _ = _pair(rng, n, 100)
    u = gr.HyperVector.from_coo(ids[:5], 1.0, n)
    tracemalloc.start()
    try:
        gr.hyper.select(A, "tril", 0)
        gr.hyper.select(A, "colle", n // 2)
        gr.hyper.ewise_union(A, B, gb.ops.plus, 0.0, 0.0)
        gr.hyper.extract(A, None, slice(n // 2, None))
        A[int(ids[0]), :]
        gr.hyper.vxm(u, A, gb.semirings["min_secondj"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2 ** 20
    for call in (lambda: gr.select(A, "tril"), lambda: gr.extract(A, [0], [0]),
                 lambda: gr.ewise_union(A, B, gb.ops.plus, 0, 0), lambda: gr.select(u, ">", 0)):
        with pytest.raises(gb.InputError, match="hypersparse") as e:
            call()
        assert "gr.hyper" in str(e.value)
    with pytest.raises(gb.InputError, match="out of range"):
        gr.hyper.extract(A, [n], None)
    with pytest.raises(gb.InputError, match="two indices"):
        A[3]
