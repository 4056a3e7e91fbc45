"""The support form of C⟨A⟩ = A plus.pair A (:mod:`gbdist.backends.compiled.graph_support`:
each edge's triangles, found once under a ranking) against python-graphblas, and ktruss,
jaccard and cosine through it against networkx.

The form is forced here (``PER_ENTRY`` below 0: taken whatever the cost) under each ranking,
on one thread and on several ranges of the pool (each thread its own counts); a graph with
a self loop, a directed one and a semiring other than plus_pair keep the masked product.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps

pytest.importorskip("numba")
grb = pytest.importorskip("graphblas")

import gbdist as gb  # noqa: E402
from gbdist import algorithms as alg  # noqa: E402
from gbdist import graph as gr  # noqa: E402
from gbdist.backends.compiled import graph as cg  # noqa: E402
from gbdist.backends.compiled import graph_support as gsu  # noqa: E402


def rmat(scale: int, seed: int) -> sps.csr_matrix:
    from benchmarks.graphs import rmat_graph
    return rmat_graph(scale, seed=seed)


def skewed(seed: int, n: int = 300) -> sps.csr_matrix:
    """Undirected, no self loop: a few hubs joined to many, a sparse rest, isolated
    vertices, int32 indices."""
    rng = np.random.default_rng(seed)
    D = np.triu(rng.random((n, n)) < 0.02, 1)
    D[:4, :] |= np.triu(rng.random((4, n)) < 0.6, 1)
    D[-10:, :] = False
    D[:, -10:] = False
    D = D | D.T
    r, c = np.nonzero(D)
    A = sps.csr_matrix((rng.integers(1, 5, r.size).astype(np.float64), (r, c)), shape=(n, n))
    A.sort_indices()
    return A


def peer(A) -> sps.csr_matrix:
    P = grb.Matrix.from_coo(*sps.coo_matrix(A).nonzero(), 1, nrows=A.shape[0], ncols=A.shape[1])
    C = grb.Matrix(grb.dtypes.INT64, P.nrows, P.ncols)
    C(P.S) << P.mxm(P, grb.semiring.plus_pair)
    r, c, v = C.to_coo()
    return sps.csr_matrix((v, (r, c)), shape=A.shape)


def taken(monkeypatch):
    """A list that gets one entry per call of the support form."""
    calls = []
    real = gsu.support

    def spy(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(gsu, "support", spy)
    return calls


def same(got: gb.Matrix, want: sps.csr_matrix):
    g = sps.csr_matrix(got.to_scipy())
    assert g.shape == want.shape and g.nnz == want.nnz
    g.sort_indices()
    want.sort_indices()
    np.testing.assert_array_equal(g.indptr, want.indptr)
    np.testing.assert_array_equal(g.indices, want.indices)
    np.testing.assert_array_equal(g.data, want.data)


@pytest.mark.parametrize("order", ["auto", 0, 1, 2])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("graph", ["rmat", "skewed"])
@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32])
def test_support_against_graphblas(monkeypatch, order, threads, graph, dtype):
    monkeypatch.setattr(gsu, "PER_ENTRY", -1e30)
    monkeypatch.setattr(gsu, "ORDER", order)
    monkeypatch.setenv("GBDIST_NUM_THREADS", str(threads))
    if threads > 1:
        monkeypatch.setattr(cg, "SERIAL_WORK", 0)  # several ranges even on a small graph
    A = rmat(9, 3) if graph == "rmat" else skewed(5)
    calls = taken(monkeypatch)
    G = gb.Matrix(A)
    C = gr.mxm(G, G, gb.semirings.plus_pair, mask=G.S, dtype=dtype, backend="compiled")
    assert calls == [1]
    assert C.dtype == np.dtype(dtype)
    same(C, peer(A).astype(dtype))


def test_support_by_cost_on_rmat(monkeypatch):
    """Not forced: on R-MAT (hubs) the walk is far below the half product's terms."""
    calls = taken(monkeypatch)
    A = rmat(11, 0)
    G = gb.Matrix(A)
    C = gr.mxm(G, G, gb.semirings.plus_pair, mask=G.S, backend="compiled")
    assert calls == [1]
    same(C, peer(A).astype(C.dtype))


@pytest.mark.parametrize("threads", [1, 2])
def test_support_past_uint16(monkeypatch, threads):
    """A hub of degree 70,000 (the counts in int32, not uint16): a star whose leaves are
    joined in pairs, and a few triangles through the hub with a second hub."""
    monkeypatch.setattr(gsu, "PER_ENTRY", -1e30)
    monkeypatch.setenv("GBDIST_NUM_THREADS", str(threads))
    if threads > 1:
        monkeypatch.setattr(cg, "SERIAL_WORK", 0)
    n = 70_003
    leaves = np.arange(2, n)
    r = [np.zeros(leaves.size, np.int64), np.ones(300, np.int64), leaves[0:-1:2]]
    c = [leaves, leaves[:300], leaves[1::2]]
    r, c = np.concatenate(r), np.concatenate(c)
    A = sps.csr_matrix((np.ones(2 * r.size), (np.r_[r, c], np.r_[c, r])), shape=(n, n))
    A.sum_duplicates()
    calls = taken(monkeypatch)
    G = gb.Matrix(A)
    C = gr.mxm(G, G, gb.semirings.plus_pair, mask=G.S, dtype=np.int64, backend="compiled")
    assert calls == [1]
    same(C, peer(A))


@pytest.mark.parametrize("case", ["self loop", "directed", "plus_times", "other mask"])
def test_masked_product_kept(monkeypatch, case):
    monkeypatch.setattr(gsu, "PER_ENTRY", -1e30)
    calls = taken(monkeypatch)
    A = skewed(7).tolil()
    sr = gb.semirings.plus_pair
    if case == "self loop":
        A[3, 3] = 1.0
    if case == "directed":
        A[0, A.shape[0] - 1] = 1.0
    if case == "plus_times":
        sr = gb.semirings.plus_times
    A = A.tocsr()
    A.sort_indices()
    G = gb.Matrix(A)
    M = gb.Matrix(sps.triu(A, format="csr")) if case == "other mask" else G
    C = gr.mxm(G, G, sr, mask=M.S, backend="compiled")
    assert calls == []
    if sr is gb.semirings.plus_pair:
        want = peer(A).multiply(sps.csr_matrix(M.to_scipy()) != 0).tocsr()
        want.eliminate_zeros()
        same(C, want.astype(C.dtype))


@pytest.mark.parametrize("seed", [0, 1])
def test_ktruss_jaccard_cosine_through_support(monkeypatch, seed):
    monkeypatch.setattr(gsu, "PER_ENTRY", -1e30)
    calls = taken(monkeypatch)
    A = skewed(seed, 120)
    Gx = nx.from_scipy_sparse_array(A)
    for k in (3, 4, 5):
        T = sps.csr_matrix(alg.ktruss(A, k, backend="compiled").to_scipy())
        r, c = T.nonzero()
        assert set(zip(r.tolist(), c.tolist())) == \
            {e for u, v in nx.k_truss(Gx, k).edges for e in ((u, v), (v, u))}
    J = sps.coo_matrix(alg.jaccard(A, backend="compiled").to_scipy())
    ref = {(u, v): p for u, v, p in nx.jaccard_coefficient(Gx, list(zip(J.row, J.col)))}
    np.testing.assert_allclose(J.data, [ref[e] for e in zip(J.row, J.col)], rtol=1e-12)
    Cs = sps.coo_matrix(alg.cosine(A, backend="compiled").to_scipy())
    deg = np.diff(A.indptr)
    B = (A != 0).astype(np.float64)
    shared = np.asarray((B @ B)[Cs.row, Cs.col]).ravel()
    np.testing.assert_allclose(Cs.data, shared / np.sqrt(deg[Cs.row] * deg[Cs.col]),
                               rtol=1e-12)
    assert len(calls) >= 5
