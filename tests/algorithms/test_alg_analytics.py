"""PageRank, triangles, components, k-truss and edge similarities against networkx/SciPy."""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_array_equal
from scipy.sparse import csgraph

import gbdist as gb
from gbdist import algorithms as alg
from gbdist.algorithms import triangles as tri

from .graphs_for_tests import random_graph, shuffled

CASES = [(seed, directed) for seed in range(3) for directed in (False, True)]


def edges_of(M):
    r, c, v = M.to_coo()
    r, c, v = np.asarray(r), np.asarray(c), np.asarray(v)
    return {(int(i), int(j)): float(x) for i, j, x in zip(r, c, v)}


@pytest.mark.parametrize("seed,directed", CASES)
def test_pagerank_matches_networkx(seed, directed):
    A, G = random_graph(seed, directed=directed, p=0.12)
    n = A.shape[0]
    got = alg.pagerank(A, alpha=0.85, tol=1e-10, max_iter=500)
    ref = nx.pagerank(G, alpha=0.85, tol=1e-10, max_iter=500, weight="weight")
    ref = np.array([ref[i] for i in range(n)])
    np.testing.assert_allclose(got, ref, rtol=1e-7, atol=1e-12)
    assert abs(got.sum() - 1.0) < 1e-9


def test_pagerank_dangling_and_zero_weight_rows():
    # vertex 2 has one stored edge of weight 0: out-weight 0, dangling like vertex 3
    A = sps.csr_matrix(([1.0, 2.0, 0.0, 1.0], ([0, 0, 2, 1], [1, 2, 0, 3])), shape=(5, 5))
    G = nx.DiGraph()
    G.add_nodes_from(range(5))
    G.add_weighted_edges_from([(0, 1, 1.0), (0, 2, 2.0), (2, 0, 0.0), (1, 3, 1.0)])
    ref = nx.pagerank(G, alpha=0.9, tol=1e-12, max_iter=1000)
    np.testing.assert_allclose(alg.pagerank(A, alpha=0.9, tol=1e-12, max_iter=1000),
                               [ref[i] for i in range(5)], rtol=1e-8)
    with pytest.raises(alg.PowerIterationFailedConvergence):
        alg.pagerank(A, tol=1e-15, max_iter=2)
    with pytest.raises(gb.ParameterError):
        alg.pagerank(A, alpha=1.5)


def power_steps(A, steps, alpha=0.85):
    """``steps`` power steps of networkx's PageRank iteration in NumPy (float64, dense):
    x' = α (Pᵀ x + dangling mass / n) + (1 - α) / n, P the row-normalised weights."""
    W = np.asarray(sps.csr_matrix(A).toarray(), dtype=np.float64)
    n = W.shape[0]
    s = W.sum(axis=1)
    P = np.divide(W, s[:, None], out=np.zeros_like(W), where=s[:, None] != 0)
    x = np.full(n, 1.0 / n)
    for _ in range(steps):
        x = alpha * (P.T @ x + x[s == 0].sum() / n) + (1.0 - alpha) / n
    return x


def test_pagerank_fixed_steps():
    # steps=N: exactly N steps, no convergence test (tol=0 would raise), whatever tol says
    A, G = random_graph(4, directed=True, p=0.08)  # dangling vertices, stored zeros
    A = sps.csr_matrix(A)
    for steps in (0, 1, 3, 20):
        want = power_steps(A, steps)
        for method in ("auto", "operations"):
            got = alg.pagerank(A, steps=steps, tol=0.0, max_iter=1, method=method)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    ref = nx.pagerank(G, tol=1e-13, max_iter=1000, weight="weight")
    np.testing.assert_allclose(alg.pagerank(A, steps=200), [ref[i] for i in range(A.shape[0])],
                               rtol=1e-8, atol=1e-13)
    for bad in (-1, 2.5, True, "3"):
        with pytest.raises(gb.ParameterError):
            alg.pagerank(A, steps=bad)


@pytest.mark.parametrize("seed", range(4))
def test_triangle_count_matches_networkx(seed):
    A, G = random_graph(seed, n=50, p=0.25)
    A = shuffled(A, seed)
    G = nx.from_scipy_sparse_array(A)
    ref = sum(nx.triangles(G).values()) // 3
    assert ref > 0
    assert alg.triangle_count(A) == ref
    assert alg.triangle_count(gb.Matrix(A.tocsc())) == ref
    # brute force: trace(B^3) / 6 on the 0/1 pattern without self loops
    C = A.tocoo()
    B = np.zeros(A.shape, dtype=np.int64)
    B[C.row, C.col] = 1
    np.fill_diagonal(B, 0)
    assert alg.triangle_count(A) == np.trace(B @ B @ B) // 6


def test_triangle_count_counts_zero_weight_edges_and_rejects_directed():
    # a triangle whose edges all weigh 0 is still a triangle
    r, c = [0, 1, 1, 2, 0, 2], [1, 0, 2, 1, 2, 0]
    A = sps.csr_matrix((np.zeros(6), (r, c)), shape=(4, 4))
    assert A.nnz == 6 and alg.triangle_count(A) == 1
    assert alg.triangle_count(sps.csr_matrix((4, 4))) == 0
    D, _ = random_graph(0, directed=True)
    with pytest.raises(gb.InputError, match="undirected") as e:
        alg.triangle_count(D)
    assert isinstance(e.value, ValueError)
    with pytest.raises(gb.InputError, match="square"):
        alg.triangle_count(sps.csr_matrix((3, 4)))


@pytest.mark.parametrize("seed,directed", CASES)
def test_connected_components_smallest_id_labels(seed, directed):
    A, G = random_graph(seed, directed=directed, n=60, p=0.05)
    A = shuffled(A, seed + 10)
    n = A.shape[0]
    got = alg.connected_components(A)
    # SciPy: its own numbering; relabel each component by its smallest vertex
    P = A.copy()
    P.data = np.ones_like(P.data)  # csgraph would drop stored zeros as edges
    k, lab = csgraph.connected_components(P, directed=True, connection="weak")
    ref = np.empty(n, dtype=np.int64)
    for c in range(k):
        members = np.flatnonzero(lab == c)
        ref[members] = members.min()
    assert k >= 4  # two parts and lone vertices
    assert_array_equal(got, ref)
    H = nx.from_scipy_sparse_array(A, create_using=nx.DiGraph if directed else nx.Graph)
    comps = nx.weakly_connected_components(H) if directed else nx.connected_components(H)
    assert sorted(min(c) for c in comps) == sorted(set(got.tolist()))


def test_connected_components_long_path_and_zero_edges():
    n = 70
    order = np.random.default_rng(0).permutation(n)  # a path through shuffled ids
    r, c = order[:-1], order[1:]
    A = sps.csr_matrix((np.zeros(2 * (n - 1)), (np.r_[r, c], np.r_[c, r])), shape=(n + 2, n + 2))
    got = alg.connected_components(A)
    assert_array_equal(got, np.r_[np.zeros(n, dtype=np.int64), n, n + 1])


@pytest.mark.parametrize("k", [3, 4, 5])
@pytest.mark.parametrize("seed", range(3))
def test_ktruss_matches_networkx(seed, k):
    A, G = random_graph(seed, n=40, p=0.35)
    G.remove_edges_from(list(nx.selfloop_edges(G)))
    T = alg.ktruss(A, k)
    got = set(edges_of(T))
    ref = set(nx.k_truss(G, k).edges())
    ref = ref | {(j, i) for i, j in ref}
    assert got == ref
    if k == 3:
        assert ref
    # values: each edge's support inside the truss, counted by brute force
    S = np.zeros(A.shape, dtype=np.int64)
    for i, j in got:
        S[i, j] = 1
    common = S @ S
    for (i, j), v in edges_of(T).items():
        assert v == common[i, j] >= k - 2
    with pytest.raises(gb.ParameterError):
        alg.ktruss(A, 2)


@pytest.mark.parametrize("seed", range(3))
def test_jaccard_matches_networkx(seed):
    # networkx leaves u and v out of the common neighbours of (u, v) but not out of the
    # union, which only differs with self loops: compare on a graph without them
    A, G = random_graph(seed, n=40, p=0.2, self_loops=0)
    J = alg.jaccard(A)
    got = edges_of(J)
    C = A.tocoo()
    assert set(got) == set(zip(C.row.tolist(), C.col.tolist()))  # every edge, zeros too
    ref = {(u, v): p for u, v, p in nx.jaccard_coefficient(G, list(got))}
    assert any(p == 0 for p in ref.values())  # edges with no shared neighbour
    for e, p in ref.items():
        assert got[e] == pytest.approx(p, abs=1e-15)


@pytest.mark.parametrize("backend", ["auto", "compiled"])
@pytest.mark.parametrize("seed,directed", CASES)
def test_cosine_matches_brute_force(seed, directed, backend):
    """Directed and undirected (where Pᵀ is P: no transpose) graphs, on the kernel set
    chosen for the size (auto: NumPy's) and on the compiled one."""
    if backend == "compiled":
        pytest.importorskip("numba")
    A, _ = random_graph(seed, n=40, p=0.2, directed=directed)
    C = A.tocoo()
    nbrs = {i: set() for i in range(A.shape[0])}
    for i, j in zip(C.row.tolist(), C.col.tolist()):
        nbrs[i].add(j)
    got = edges_of(alg.cosine(A, backend=backend))
    assert set(got) == set(zip(C.row.tolist(), C.col.tolist()))
    for (i, j), v in got.items():
        norm = math.sqrt(len(nbrs[i]) * len(nbrs[j]))  # 0 when j has no out-neighbour
        assert v == pytest.approx(len(nbrs[i] & nbrs[j]) / norm if norm else 0.0, abs=1e-15)
    got_j = edges_of(alg.jaccard(A, backend=backend))  # out-neighbourhoods, self loops in
    assert set(got_j) == set(got)
    for (i, j), v in got_j.items():
        assert v == pytest.approx(len(nbrs[i] & nbrs[j]) / len(nbrs[i] | nbrs[j]), abs=1e-15)


def test_similarity_on_an_edge_into_a_sink():
    # 0 -> 1, 0 -> 2, 2 -> 1; vertex 1 has no out-edge (empty neighbourhood)
    A = sps.csr_matrix(([0.0, 3.0, 1.0], ([0, 0, 2], [1, 2, 1])), shape=(3, 3))
    cos, jac = edges_of(alg.cosine(A)), edges_of(alg.jaccard(A))
    assert cos == {(0, 1): 0.0, (0, 2): pytest.approx(1 / math.sqrt(2)), (2, 1): 0.0}
    assert jac == {(0, 1): 0.0, (0, 2): 0.5, (2, 1): 0.0}


def test_integer_and_boolean_inputs():
    A, G = random_graph(5, n=50, p=0.25)
    C = A.tocoo()
    B = sps.csr_matrix((np.ones(C.nnz, dtype=bool), (C.row, C.col)), shape=A.shape)
    I = A.astype(np.int64)
    ref = sum(nx.triangles(G).values()) // 3
    assert alg.triangle_count(B) == alg.triangle_count(I) == ref
    assert_array_equal(alg.connected_components(B), alg.connected_components(A))
    assert set(edges_of(alg.ktruss(I, 3))) == set(edges_of(alg.ktruss(A, 3)))
    got = edges_of(alg.jaccard(B))
    assert got == pytest.approx(edges_of(alg.jaccard(A)))
    # PageRank on integer weights: the same as on their float64 copy
    np.testing.assert_allclose(alg.pagerank(I.astype(np.int32)), alg.pagerank(A), rtol=1e-12)


def test_backend_is_passed_through():
    A, _ = random_graph(6, n=40, p=0.2)
    ref = {"bfs": alg.bfs_levels(A, 0), "cc": alg.connected_components(A),
           "tc": alg.triangle_count(A), "pr": alg.pagerank(A, tol=1e-10)}
    got = {"bfs": alg.bfs_levels(A, 0, backend="reference"),
           "cc": alg.connected_components(A, backend="reference"),
           "tc": alg.triangle_count(A, backend="reference"),
           "pr": alg.pagerank(A, tol=1e-10, backend="reference")}
    assert_array_equal(got["bfs"], ref["bfs"])
    assert_array_equal(got["cc"], ref["cc"])
    assert got["tc"] == ref["tc"]
    np.testing.assert_allclose(got["pr"], ref["pr"], rtol=1e-12)
    with pytest.raises(gb.GbdistError):  # host data on the CUDA kernels: a typed error
        alg.bfs_levels(A, 0, backend="cuda")


@pytest.mark.parametrize("backend", ["auto", "reference", "compiled"])
def test_triangle_count_on_a_skewed_graph_in_every_order(backend, monkeypatch):
    if backend == "compiled":
        pytest.importorskip("numba")
        from gbdist.backends.compiled import graph as cg
        monkeypatch.setattr(cg, "SERIAL_WORK", 0)  # lower()'s kernels over several ranges
    # a hub joined to every vertex plus a sparse random part: max degree >> mean degree,
    # so triangle_count ranks the vertices by degree (the count must not change)
    rng = np.random.default_rng(8)
    n = 200
    keep = np.triu(rng.random((n, n)) < 0.02, 1)
    keep[0, 1:] = True
    r, c = np.nonzero(keep)
    A = sps.csr_matrix((np.ones(2 * r.size), (np.r_[r, c], np.r_[c, r])), shape=(n, n))
    deg = np.diff(A.indptr)
    assert deg.max() > 8 * deg.mean()
    ref = sum(nx.triangles(nx.from_scipy_sparse_array(A)).values()) // 3
    assert ref > 100
    assert alg.triangle_count(shuffled(A, 3), backend=backend) == ref
    assert tri.choose_order(deg, {"increasing": deg // 2, "decreasing": deg // 2}) != "none"
    assert tri.choose_order(np.full(9, 4), {}) == "none"  # even degrees: no ranking
    for order in tri.ORDERS:
        for cost in (0.0, 1e12):  # TRANSPOSE_COST: forces L·Lᵀ, then L·L
            monkeypatch.setattr(tri, "TRANSPOSE_COST", cost)
            assert alg.triangle_count(A, order=order, backend=backend) == ref
        L = tri.lower(gb.Matrix(A), order).to_scipy()
        assert L.nnz == A.nnz // 2 and (L + L.T != 0).nnz == A.nnz  # one copy of each edge
    with pytest.raises(gb.ParameterError):
        alg.triangle_count(A, order="random")


def test_device_ordering_rule_counts_the_masked_products_and_row_squares():
    """The GPU's ordering rule (triangles.device_costs) on a skewed graph: its sums equal a
    brute-force count of L's products per form and of its rows' squares, under both degree
    orderings; the two L·L orderings have about equal products (one L is nearly the other's
    transpose: ties go by index in both), so the rule takes the one with the shorter rows
    (decreasing degree, hubs first)."""
    rng = np.random.default_rng(5)
    n = 300
    keep = rng.random((n, n)) < 0.01
    keep[:3] |= rng.random((3, n)) < 0.6  # three hubs
    keep = np.triu(keep | keep.T, 1)
    r, c = np.nonzero(keep)
    A = sps.csr_matrix((np.ones(2 * r.size), (np.r_[r, c], np.r_[c, r])), shape=(n, n))
    deg = np.diff(A.indptr)
    assert tri._skewed(deg)
    below, want = {}, {}
    for o in ("increasing", "decreasing"):
        L = tri.lower(gb.Matrix(A), o).to_scipy().tocsr()
        row = np.diff(L.indptr)
        below[o] = row
        Lb = (L != 0).astype(np.int64)
        ll = int((Lb @ Lb).sum())
        llt = int((Lb @ Lb.T).sum())
        assert ll == int((deg - row) @ row) and llt == int((deg - row) @ (deg - row))
        want[o] = min(ll, llt + tri.DEVICE_TRANSPOSE_COST * L.nnz) + tri.DEVICE_ROW_WEIGHT * int(row @ row)
    got = tri.device_costs(deg, below)
    assert got == pytest.approx(want, rel=1e-12)
    assert (below["decreasing"] ** 2).sum() < (below["increasing"] ** 2).sum() / 4
    assert tri.choose_order(deg, below, on_device=True) == min(want, key=want.get) == "decreasing"
    assert tri.choose_order(np.full(9, 4), {}, on_device=True) == "none"


@pytest.mark.parametrize("backend", ["reference", "compiled",
                                     pytest.param("cuda", marks=pytest.mark.gpu)])
def test_rank_lower_kernels_against_brute_force(backend, monkeypatch):
    """The kernels behind triangles.lower (every kernel set: the CUDA set's are
    kernels/graph_algorithms.cuh's gb_tri_count / gb_tri_fill): per-row counts under the
    three rankings and the kept entries (columns, values, order), against the rank
    definition evaluated on every stored entry in NumPy; self loops kept by none."""
    from gbdist.graph import dispatch
    if backend == "compiled":
        pytest.importorskip("numba")
        from gbdist.backends.compiled import graph as cg
        monkeypatch.setattr(cg, "SERIAL_WORK", 0)
    K = dispatch._load(backend)
    rng = np.random.default_rng(11)
    n = 300
    keep = rng.random((n, n)) < 0.03
    keep[5, :] = True  # a hub, ties of degree elsewhere
    keep = keep | keep.T
    keep[np.arange(0, n, 17), np.arange(0, n, 17)] = True  # self loops
    r, c = np.nonzero(keep)
    A = sps.csr_matrix((rng.random(r.size) + 1, (r, c)), shape=(n, n))
    A.sort_indices()
    deg = np.diff(A.indptr).astype(np.int64)
    rows = np.repeat(np.arange(n), deg)
    cols = A.indices
    want = [cols < rows,
            (deg[cols] < deg[rows]) | ((deg[cols] == deg[rows]) & (cols < rows)),
            (deg[cols] > deg[rows]) | ((deg[cols] == deg[rows]) & (cols < rows))]
    On, on = A, (lambda a: a)  # the kernels' operands, their results on the host
    if backend == "cuda":
        import cupy
        import cupyx.scipy.sparse as cps
        On = cps.csr_matrix(A)
        on, host = cupy.asarray, (lambda a: a if a is None else cupy.asnumpy(a))
    else:
        host = (lambda a: a)
    counts = host(K.rank_lower_counts(On, on(deg)))
    assert counts.dtype == deg.dtype
    for mode, k in enumerate(want):
        assert_array_equal(counts[mode], np.bincount(rows[k], minlength=n))
        lp = np.r_[0, np.cumsum(counts[mode])]
        lc, lx = (host(a) for a in K.rank_lower_fill(On, on(deg), mode, on(lp), with_values=True))
        assert_array_equal(lc, cols[k])
        assert_array_equal(lx, A.data[k])
        lc2, lx2 = K.rank_lower_fill(On, on(deg), mode, on(lp), with_values=False)
        assert_array_equal(host(lc2), cols[k]) and lx2 is None
        # int32 row pointers, L's size given (no read on the device)
        lc3, _ = K.rank_lower_fill(On, on(deg), mode, on(lp.astype(np.int32)), with_values=False,
                                   nnz=int(k.sum()))
        assert_array_equal(host(lc3), cols[k])
    only = host(K.rank_lower_counts(On, on(deg), only_none=True))
    assert_array_equal(only[0], counts[0]) and not only[1:].any()
    fused = getattr(K, "rank_lower_sums", None)
    if fused is not None:  # the device rule's sums in one launch, as device_sums' array work
        from gbdist.algorithms import triangles as tri
        for dt in (np.int32, np.int64):
            want_sums = tri.device_sums(deg, {o: counts[tri.MODES[o]] for o in ("increasing", "decreasing")})
            assert fused(on(deg.astype(dt)), on(counts.astype(dt))) == want_sums
