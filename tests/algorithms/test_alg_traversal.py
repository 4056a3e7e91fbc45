"""BFS (levels, parents) and Bellman–Ford SSSP against networkx and SciPy csgraph."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_array_equal
from scipy.sparse import csgraph

import gbdist as gb
from gbdist import algorithms as alg

from .graphs_for_tests import random_graph, shuffled

CASES = [(seed, directed) for seed in range(3) for directed in (False, True)]


def nx_levels(G, s, n):
    out = np.full(n, -1)
    for v, d in nx.single_source_shortest_path_length(G, s).items():
        out[v] = d
    return out


@pytest.mark.parametrize("seed,directed", CASES)
@pytest.mark.parametrize("direction", ["auto", "push", "pull"])
def test_bfs_levels_match_networkx(seed, directed, direction):
    A, G = random_graph(seed, directed=directed, p=0.15)
    n = A.shape[0]
    for s in (0, n - 1, n // 2):  # n - 1 is an isolated vertex
        got = alg.bfs_levels(A, s, direction=direction)
        ref = nx_levels(G, s, n)
        assert got.dtype == np.int64
        assert_array_equal(got, ref)
        if s == n - 1:  # a lone vertex: nothing else is reachable
            assert (got == -1).sum() == n - 1


def test_bfs_levels_unreachable_and_formats():
    A, G = random_graph(7, n=60, p=0.1)
    A = shuffled(A, 1)
    G = nx.from_scipy_sparse_array(A)
    ref = nx_levels(G, 3, 60)
    assert (ref == -1).any() and ref.max() >= 2
    C = A.tocoo()
    dense = np.zeros(A.shape, dtype=bool)
    dense[C.row, C.col] = True  # the stored zeros are edges too
    for X in (A.tocsc(), A.tocoo(), gb.Matrix(A), dense):
        assert_array_equal(alg.bfs_levels(X, 3), ref)


def test_bfs_levels_against_csgraph_on_a_long_path():
    n = 50  # a path: 49 levels, the frontier stays small (push), then a dense star (pull)
    r = np.arange(n - 1)
    P = sps.csr_matrix((np.zeros(n - 1), (r, r + 1)), shape=(n, n))  # zero weights: edges
    got = alg.bfs_levels(P, 0)
    dist = csgraph.shortest_path(P.astype(bool).astype(float), unweighted=True, indices=0)
    assert_array_equal(got, np.where(np.isinf(dist), -1, dist).astype(int))
    assert got[-1] == n - 1


@pytest.mark.parametrize("seed,directed", CASES)
@pytest.mark.parametrize("direction", ["push", "pull", "auto"])
def test_bfs_parents_form_the_smallest_id_bfs_tree(seed, directed, direction):
    A, G = random_graph(seed, directed=directed, p=0.15)
    n = A.shape[0]
    s = 1
    par = alg.bfs_parents(A, s, direction=direction)
    lev = nx_levels(G, s, n)
    assert par.dtype == np.int64
    assert par[s] == s
    assert_array_equal(par == -1, lev == -1)
    pattern = np.zeros((n, n), bool)
    C = A.tocoo()
    pattern[C.row, C.col] = True  # stored entries, zeros included
    for v in range(n):
        if v == s or lev[v] < 0:
            continue
        candidates = [u for u in range(n) if pattern[u, v] and lev[u] == lev[v] - 1]
        assert par[v] == min(candidates)


@pytest.mark.parametrize("seed,directed", CASES)
def test_sssp_matches_networkx_and_csgraph(seed, directed):
    A, G = random_graph(seed, directed=directed, p=0.15)
    n = A.shape[0]
    s = 2
    got = alg.sssp(A, s)
    ref = np.full(n, np.inf)
    for v, d in nx.single_source_bellman_ford_path_length(G, s, weight="weight").items():
        ref[v] = d
    assert np.isinf(ref).any() and (ref[ref > 0] > 0).all()
    np.testing.assert_allclose(got, ref)
    # csgraph: the same distances (stored zeros turned into a tiny positive weight, which
    # csgraph would otherwise read as "no edge"; rounding makes the offsets invisible)
    B = A.copy()
    B.data = np.where(B.data == 0, 1e-12, B.data)
    np.testing.assert_allclose(got, csgraph.shortest_path(B, method="BF", indices=s),
                               atol=1e-9)


def test_sssp_zero_weight_edge_is_an_edge():
    # 0 -(0)-> 1 -(5)-> 2, and 0 -(1)-> 3 -(7)-> 2
    A = sps.csr_matrix(([0.0, 5.0, 1.0, 7.0], ([0, 1, 0, 3], [1, 2, 3, 2])), shape=(5, 5))
    assert_array_equal(alg.sssp(A, 0), [0.0, 0.0, 5.0, 1.0, np.inf])


def test_sssp_negative_weights_without_a_cycle_match_csgraph():
    rng = np.random.default_rng(3)
    n = 40
    keep = np.triu(rng.random((n, n)) < 0.15, 1)  # a DAG: no cycle at all
    r, c = np.nonzero(keep)
    w = rng.integers(-5, 6, size=r.size).astype(float)
    w[w == 0] = -1.0  # csgraph reads stored zeros as missing: avoid them here
    A = sps.csr_matrix((w, (r, c)), shape=(n, n))
    ref = csgraph.shortest_path(A, method="BF", indices=0)
    got = alg.sssp(A, 0)
    assert (got < 0).any()
    np.testing.assert_allclose(got, ref)


def test_sssp_negative_cycle_is_a_typed_error():
    A = sps.csr_matrix(([1.0, -3.0, 1.0, 2.0], ([0, 1, 2, 0], [1, 2, 1, 3])), shape=(5, 5))
    with pytest.raises(alg.NegativeCycleError) as e:
        alg.sssp(A, 0)
    assert isinstance(e.value, ValueError) and isinstance(e.value, gb.GbdistError)
    assert "negative" in str(e.value) and "Hint" in str(e.value)
    # the same cycle, unreachable from vertex 3: fine
    assert_array_equal(alg.sssp(A, 3), [np.inf, np.inf, np.inf, 0.0, np.inf])
    loop = sps.csr_matrix(([-1.0], ([0], [0])), shape=(2, 2))  # a negative self loop
    with pytest.raises(alg.NegativeCycleError):
        alg.sssp(loop, 0)


@pytest.mark.parametrize("fn", [alg.bfs_levels, alg.bfs_parents, alg.sssp])
def test_source_and_shape_are_checked(fn):
    A, _ = random_graph(0, n=10)
    for bad in (-1, 10, 99):
        with pytest.raises(gb.InputError, match="source"):
            fn(A, bad)
    with pytest.raises(gb.ParameterError):
        fn(A, 1.5)
    with pytest.raises(gb.InputError, match="square"):
        fn(sps.random(4, 5, density=0.5, format="csr", random_state=0), 0)


def test_integer_and_boolean_adjacency():
    A, G = random_graph(4, directed=True, p=0.15)
    n = A.shape[0]
    ref_levels = nx_levels(G, 0, n)
    C = A.tocoo()
    B = sps.csr_matrix((np.ones(C.nnz, dtype=bool), (C.row, C.col)), shape=A.shape)
    assert B.nnz == A.nnz  # every edge, the 0-weight ones included
    assert_array_equal(alg.bfs_levels(B, 0), ref_levels)
    assert_array_equal(alg.bfs_parents(gb.Matrix(B), 0), alg.bfs_parents(A, 0))
    I = A.astype(np.int32)
    d = alg.sssp(I, 0)
    assert d.dtype == np.float64
    ref = np.full(n, np.inf)
    for v, x in nx.single_source_bellman_ford_path_length(G, 0).items():
        ref[v] = x
    assert_array_equal(d, ref)


def _road(side, seed, remove=0.1):
    """A side × side grid with a share of its edges removed (high diameter, some vertices
    cut off), weights in [1, 2): the road-like benchmark graph, small."""
    from benchmarks.graphs import road_grid
    return road_grid(side, remove=remove, seed=seed)


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize("direction", ["auto", "push", "pull"])
def test_high_diameter_grid_matches_csgraph(backend, direction):
    A = _road(30, seed=1, remove=0.3)
    n = A.shape[0]
    d = csgraph.shortest_path(A, unweighted=True, indices=0)
    want = np.where(np.isinf(d), -1, d).astype(np.int64)
    assert want.max() > 50 and (want < 0).any()  # deep, and some vertices cut off
    assert_array_equal(alg.bfs_levels(A, 0, direction=direction, backend=backend), want)
    par = alg.bfs_parents(A, 0, direction=direction, backend=backend)
    # parent = the smallest-id neighbour one level closer (brute force over the rows)
    for v in range(n):
        if want[v] <= 0:
            assert par[v] == (0 if v == 0 else -1)
            continue
        nb = A.indices[A.indptr[v]:A.indptr[v + 1]]
        assert par[v] == nb[want[nb] == want[v] - 1].min()
    np.testing.assert_allclose(alg.sssp(A, 0, backend=backend),
                               csgraph.dijkstra(A, indices=0), rtol=1e-12)


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_long_directed_path_and_empty_frontiers(backend):
    n = 700
    A = sps.csr_matrix((np.ones(n - 1), (np.arange(n - 1), np.arange(1, n))), shape=(n, n))
    assert_array_equal(alg.bfs_levels(A, 0, backend=backend), np.arange(n))
    assert_array_equal(alg.bfs_levels(A, n - 1, backend=backend), [-1] * (n - 1) + [0])
    assert_array_equal(alg.bfs_parents(A, 5, backend=backend),
                       [-1] * 5 + [5] + list(range(5, n - 1)))
    np.testing.assert_array_equal(alg.sssp(A, n - 1, backend=backend),
                                  [np.inf] * (n - 1) + [0.0])
    # a source whose only edge is a self loop: the first frontier is empty
    B = sps.csr_matrix(([1.0, 1.0, 1.0], ([0, 1, 2], [0, 2, 1])), shape=(3, 3))
    assert_array_equal(alg.bfs_levels(B, 0, backend=backend), [0, -1, -1])
    assert_array_equal(alg.bfs_parents(B, 0, backend=backend), [0, -1, -1])


def test_direction_rule():
    from gbdist.algorithms.bfs import choose_direction
    assert not choose_direction(False, m_f=10, m_u=1000, n_f=5, n=1000)    # small: push
    assert choose_direction(False, m_f=200, m_u=1000, n_f=100, n=1000)     # large: pull
    assert choose_direction(True, m_f=0, m_u=0, n_f=100, n=1000)           # stays pulling
    assert not choose_direction(True, m_f=0, m_u=0, n_f=10, n=1000)        # back to push


@pytest.mark.parametrize("only_new", [True, False])
@pytest.mark.parametrize("semiring", ["min_plus", "min_first", "any_pair"])
def test_spmspv_update_compiled_equals_reference(only_new, semiring):
    from gbdist.algorithms import _common as c
    from gbdist.graph import get_kernels
    sr = getattr(c, semiring)
    A, _ = random_graph(4, n=300, p=0.05, directed=True)
    rng = np.random.default_rng(0)
    dt = np.dtype(bool) if semiring == "any_pair" else np.dtype(np.float64)
    u_idx = np.unique(rng.integers(0, 300, 60))
    u_val = rng.random(u_idx.size) * 4
    p0 = (rng.random(300) < 0.4).astype(np.uint8)
    d0 = (rng.random(300) * 6).astype(dt)
    outs = []
    for name in ("reference", "compiled"):
        d, p = d0.copy(), p0.copy()
        idx, vals = get_kernels(name).spmspv_update(A, u_idx, u_val.astype(dt), sr, d, p,
                                                    only_new=only_new, out_dtype=dt)
        outs.append((idx, vals, d, p))
    for a, b in zip(*outs):
        assert_array_equal(a, b)
    # brute force: the product over the frontier, then the merge rule
    idx, vals, d, p = outs[0]
    T = sps.csr_matrix(A[u_idx])
    assert set(idx) <= set(T.indices)
    assert (p[idx] == 1).all() and (p >= p0).all()
    if only_new:
        assert (p0[idx] == 0).all()


@pytest.mark.parametrize("backend", ["reference", "compiled"])
@pytest.mark.parametrize("directed", [False, True])
def test_pull_reads_A_itself_when_the_pattern_is_symmetric(backend, directed):
    """A pull level needs each vertex's in-neighbours: for an undirected graph those are its
    row of A (no Aᵀ built and kept on A, issue 28's first-call memory); a directed graph
    still pulls through Aᵀ. Answers against networkx either way, with weights that differ
    from their mirrors' (the pattern, not the values, decides)."""
    A, G = random_graph(5, directed=directed, p=0.15)
    A = A.tocsr()
    A.data = np.random.default_rng(0).random(A.nnz) + 1.0  # A[i, j] != A[j, i]
    n = A.shape[0]
    M = gb.Matrix(A)
    for s in (0, n // 2):
        assert_array_equal(alg.bfs_levels(M, s, direction="pull", backend=backend),
                           nx_levels(G, s, n))
        par = alg.bfs_parents(M, s, direction="pull", backend=backend)
        lv = nx_levels(G, s, n)
        for v in range(n):
            if lv[v] <= 0:
                assert par[v] == (s if v == s else -1)
                continue
            preds = [u for u in G.predecessors(v)] if directed else list(G.neighbors(v))
            assert par[v] == min(u for u in preds if lv[u] == lv[v] - 1)
    assert M.has_transpose() == directed
