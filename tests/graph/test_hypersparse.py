"""Hypersparse matrices (2⁶⁰ vertices keyed by hashes) against python-graphblas, whose
SuiteSparse stores such matrices hypersparse too: construction, mxm, mxv, vxm, ewise,
apply and reductions, with no array of the dimension's size (the dimension could not be
allocated: 2⁶⁰ × 8 bytes)."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr

graphblas = pytest.importorskip("graphblas")
nx = pytest.importorskip("networkx")

N = 2 ** 60


def _ids(rng, k):
    return np.unique(rng.integers(0, N, k, dtype=np.int64))


def _pair(rng, ids_r, ids_c, nnz, m=N, n=N):
    r = rng.choice(ids_r, nnz)
    c = rng.choice(ids_c, nnz)
    key = np.unique(np.stack([r, c], 1), axis=0)
    v = rng.integers(-3, 5, key.shape[0]).astype(np.float64)
    H = gr.HyperMatrix.from_coo(key[:, 0], key[:, 1], v, (m, n))
    G = graphblas.Matrix.from_coo(key[:, 0].astype(np.uint64), key[:, 1].astype(np.uint64), v,
                                  nrows=m, ncols=n)
    return H, G


def _vec(rng, ids, k, n=N):
    i = np.unique(rng.choice(ids, k))
    v = rng.integers(-3, 5, i.size).astype(np.float64)
    return gr.HyperVector.from_coo(i, v, n), graphblas.Vector.from_coo(i.astype(np.uint64), v,
                                                                        size=n)


def same(h, g, exact=False):
    """A HyperMatrix/HyperVector equal to python-graphblas' ``g``: the same ids, values
    equal (``exact``) or close (products summed in another order)."""
    if isinstance(h, gr.HyperMatrix):
        r, c, v = h.to_coo()
        gr_, gc_, gv = g.to_coo()
        assert h.shape == g.shape
        assert np.array_equal(r, gr_.astype(np.int64)) and np.array_equal(c, gc_.astype(np.int64))
    else:
        assert isinstance(h, gr.HyperVector)
        r, v = h.to_coo()
        gr_, gv = g.to_coo()
        assert h.size == g.size and np.array_equal(r, gr_.astype(np.int64))
    assert np.array_equal(v, gv) if exact else np.allclose(v, gv)


@pytest.mark.parametrize("seed", range(3))
def test_hypersparse_against_graphblas(seed):
    rng = np.random.default_rng(seed)
    ids = _ids(rng, 40)  # shared vertex ids: products meet
    A, GA = _pair(rng, ids, ids, 80)
    B, GB = _pair(rng, ids, ids, 80)
    assert A.nvals == GA.nvals and A.shape == (N, N)
    sr = gb.semirings.plus_times
    same(gr.hyper.mxm(A, B, sr), GA.mxm(GB, graphblas.semiring.plus_times).new())
    same(gr.hyper.mxm(A, B, gb.semirings.min_plus), GA.mxm(GB, graphblas.semiring.min_plus).new())
    u, gu = _vec(rng, ids, 15)
    same(gr.hyper.mxv(A, u, sr), GA.mxv(gu, graphblas.semiring.plus_times).new())
    same(gr.hyper.vxm(u, A, sr), gu.vxm(GA, graphblas.semiring.plus_times).new())
    same(gr.hyper.ewise_add(A, B, gb.ops.plus), GA.ewise_add(GB, graphblas.binary.plus).new())
    same(gr.hyper.ewise_mult(A, B, gb.ops.times), GA.ewise_mult(GB, graphblas.binary.times).new())
    w, gw = _vec(rng, ids, 15)
    same(gr.hyper.ewise_add(u, w, gb.ops.max), gu.ewise_add(gw, graphblas.binary.max).new())
    same(gr.hyper.reduce_rows(A, gb.ops.plus), GA.reduce_rowwise(graphblas.monoid.plus).new())
    same(gr.hyper.reduce_cols(A, gb.ops.min), GA.reduce_columnwise(graphblas.monoid.min).new())
    assert gr.hyper.reduce_scalar(A, gb.ops.plus) == GA.reduce_scalar(graphblas.monoid.plus).new().value
    same(gr.hyper.apply(gb.ops.abs, A), GA.apply(graphblas.unary.abs).new())


def test_hypersparse_rectangular_and_memory():
    rng = np.random.default_rng(5)
    m, n, k = 2 ** 60, 2 ** 40, 2 ** 59 + 3  # SuiteSparse's dimensions end at 2⁶⁰
    A, GA = _pair(rng, _ids(rng, 30) % m, _ids(rng, 30) % k, 50, m, k)
    B, GB = _pair(rng, A.col_ids, _ids(rng, 20) % n, 50, k, n)
    C = gr.hyper.mxm(A, B, gb.semirings.plus_times)
    same(C, GA.mxm(GB, graphblas.semiring.plus_times).new())
    # storage follows the entries: the compact matrix is (stored rows × stored columns)
    assert C.compact.shape[0] <= C.nvals and C.compact.shape[1] <= C.nvals
    assert C.shape == (m, n)
    with pytest.raises(gb.InputError):
        gr.HyperMatrix.from_coo([m], [0], [1.0], (m, n))
    with pytest.raises(gb.InputError):
        gr.hyper.mxm(A, B, gb.semirings.plus_times, accum=gb.ops.plus)
    with pytest.raises(gb.InputError):
        gr.hyper.mxm(B, B, gb.semirings.plus_times)


def test_beyond_suitesparse_dimensions_brute_force():
    """2⁶² ids (past SuiteSparse's 2⁶⁰): mxm against a dictionary product in float64."""
    rng = np.random.default_rng(9)
    big = 2 ** 62
    ids = np.unique(rng.integers(0, big, 25, dtype=np.int64))
    A = {(int(a), int(b)): float(rng.integers(1, 5)) for a, b in
         zip(rng.choice(ids, 60), rng.choice(ids, 60))}
    r, c = np.array(list(A)).T
    H = gr.HyperMatrix.from_coo(r, c, list(A.values()), (big, big))
    C = gr.hyper.mxm(H, H, gb.semirings.plus_times)
    want = {}
    for (i, k), x in A.items():
        for (k2, j), y in A.items():
            if k == k2:
                want[(i, j)] = want.get((i, j), 0.0) + x * y
    cr, cc, cv = C.to_coo()
    assert dict(zip(zip(cr.tolist(), cc.tolist()), cv.tolist())) == want


@pytest.mark.parametrize("complement", [False, True])
def test_hypersparse_masks_against_graphblas(complement):
    rng = np.random.default_rng(21)
    ids = _ids(rng, 30)
    A, GA = _pair(rng, ids, ids, 70)
    M, GM = _pair(rng, ids, ids, 90)
    mask, gmask = (~M.S, ~GM.S) if complement else (M.S, GM.S)
    sr, gsr = gb.semirings.plus_times, graphblas.semiring.plus_times
    same(gr.hyper.mxm(A, A, sr, mask=mask), GA.mxm(GA, gsr).new(mask=gmask))
    u, gu = _vec(rng, ids, 10)
    w, gw = _vec(rng, ids, 12)
    vm, gvm = (~w.S, ~gw.S) if complement else (w.V, gw.V)
    same(gr.hyper.mxv(A, u, sr, mask=vm), GA.mxv(gu, gsr).new(mask=gvm))
    same(gr.hyper.ewise_add(A, M, gb.ops.plus, mask=mask),
         GA.ewise_add(GM, graphblas.binary.plus).new(mask=gmask))
    with pytest.raises(gb.InputError):
        gr.hyper.mxv(A, u, sr, mask=M.S)  # a matrix mask for a vector result


def test_hypersparse_bfs_matches_networkx():
    """BFS levels over vertices keyed by 60-bit hashes: frontier products masked by the
    complement of the visited set, against networkx on the same edges."""
    rng = np.random.default_rng(33)
    ids = _ids(rng, 200)
    src, dst = rng.choice(ids, 500), rng.choice(ids, 500)
    A = gr.HyperMatrix.from_coo(src, dst, 1.0, (N, N), dup_op=gb.ops.any)
    start = int(src[0])
    frontier = gr.HyperVector.from_coo([start], [1.0], N)
    levels = {start: 0}
    visited = frontier
    depth = 0
    while frontier.nvals:
        depth += 1
        frontier = gr.hyper.vxm(frontier, A, gb.semirings.any_pair, mask=~visited.S)
        for v in frontier.ids.tolist():
            levels[v] = depth
        visited = gr.hyper.ewise_add(visited, frontier, gb.ops.any)
    G = nx.DiGraph()
    G.add_edges_from(zip(src.tolist(), dst.tolist()))
    assert levels == nx.single_source_shortest_path_length(G, start)
