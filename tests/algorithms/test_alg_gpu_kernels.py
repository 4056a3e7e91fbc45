"""The whole-algorithm CUDA kernels (issue 30) against SciPy's csgraph, networkx and the
GraphBLAS methods they replace on the device: union-find components, the fused PageRank
step, triangle counting's degree-ordered L. Run on a GPU machine (``pytest -m gpu``)."""
from __future__ import annotations

import importlib

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_array_equal
from scipy.sparse import csgraph

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr
from gbdist.algorithms import triangles as tri

from .graphs_for_tests import random_graph, shuffled

pytestmark = pytest.mark.gpu
pagerank_mod = importlib.import_module("gbdist.algorithms.pagerank")


def smallest_labels(A):
    """Weak components by csgraph, each labelled by its smallest vertex."""
    P = sps.csr_matrix(A, copy=True)
    P.data = np.ones_like(P.data)  # csgraph would drop stored zeros as edges
    k, lab = csgraph.connected_components(P, directed=True, connection="weak")
    first = np.full(k, A.shape[0], dtype=np.int64)
    np.minimum.at(first, lab, np.arange(A.shape[0]))
    return first[lab]


CASES = [(seed, directed) for seed in range(3) for directed in (False, True)]


@pytest.mark.parametrize("seed,directed", CASES)
def test_union_find_components_match_csgraph(seed, directed):
    A, _ = random_graph(seed, n=120, p=0.04, directed=directed)
    A = shuffled(A, seed)
    ref = smallest_labels(A)
    D = gb.Matrix(A).to_device()
    K = gr.get_kernels("auto", True)
    assert importlib.import_module("gbdist.algorithms.components").choose_method(K) == "union-find"
    assert_array_equal(alg.connected_components(D), ref)
    assert_array_equal(alg.connected_components(D, method="fastsv"), ref)
    if not directed:
        D.T  # noqa: B018 - the transpose cached: symmetry is checked, half the entries joined
        assert D.has_transpose()
        assert_array_equal(alg.connected_components(D, method="union-find"), ref)


def _big_graph(seed):
    """A power-law part (hubs), a long path (deep trees) and lone vertices, shuffled."""
    from benchmarks.graphs import power_law_graph
    P = power_law_graph(6000, avg_degree=8, seed=seed, weighted=False)
    m = 4000
    path = sps.diags([np.ones(m - 1), np.ones(m - 1)], [-1, 1], shape=(m, m), format="csr")
    A = sps.block_diag([P, path, sps.csr_matrix((50, 50))], format="csr")
    A.sort_indices()
    return shuffled(A, seed)


@pytest.mark.parametrize("seed", [0, 1])
def test_union_find_on_hubs_and_a_long_path_both_index_types(seed):
    import cupy
    from gbdist.backends.base import DeviceCSR
    A = _big_graph(seed)
    ref = smallest_labels(A)
    assert len(np.unique(ref)) > 50
    D = gb.Matrix(A).to_device()
    K = gr.get_kernels("cuda", True)
    csr = D.csr
    for half in (False, True):  # A is symmetric: either way
        assert_array_equal(K.components(csr, half=half).get(), ref)
    wide = DeviceCSR(csr.data, csr.indices.astype(cupy.int64), csr.indptr.astype(cupy.int64),
                     csr.shape)
    assert_array_equal(K.components(wide, half=True).get(), ref)
    # directed: one direction of each edge only, weak components are the same
    up = sps.triu(A, format="csr")
    up.sort_indices()
    assert_array_equal(alg.connected_components(gb.Matrix(up).to_device()), ref)


@pytest.mark.parametrize("seed,directed", CASES)
def test_fused_pagerank_matches_networkx_and_the_operations(seed, directed):
    A, G = random_graph(seed, directed=directed, p=0.12)
    n = A.shape[0]
    D = gb.Matrix(A).to_device()
    assert pagerank_mod.choose_method(gr.get_kernels("auto", True)) == "fused"
    got = alg.pagerank(D, tol=1e-10, max_iter=500)
    ref = nx.pagerank(G, alpha=0.85, tol=1e-10, max_iter=500, weight="weight")
    np.testing.assert_allclose(got, [ref[i] for i in range(n)], rtol=1e-7, atol=1e-12)
    assert_array_equal(alg.pagerank(D, tol=1e-10, max_iter=500), got)  # deterministic sums
    # the default tolerance: the same stopping step as the operations (else ~1e-7 apart)
    for tol in (1e-6, 1e-4):
        np.testing.assert_allclose(alg.pagerank(D, tol=tol),
                                   alg.pagerank(D, tol=tol, method="operations"),
                                   rtol=1e-12, atol=1e-15)


def test_fused_pagerank_every_max_iter_as_the_operations():
    # the host reads each step's change one step behind: converging at the last allowed
    # step, or one after it, must end as the operations do
    from benchmarks.graphs import power_law_graph
    A = power_law_graph(3000, avg_degree=6, seed=3)
    A = sps.csr_matrix(sps.triu(A))  # directed, with dangling vertices
    D = gb.Matrix(A).to_device()
    steps = None
    for max_iter in range(1, 40):
        try:
            ref = alg.pagerank(D, max_iter=max_iter, method="operations")
        except alg.PowerIterationFailedConvergence:
            with pytest.raises(alg.PowerIterationFailedConvergence):
                alg.pagerank(D, max_iter=max_iter)
            continue
        steps = steps or max_iter
        np.testing.assert_allclose(alg.pagerank(D, max_iter=max_iter), ref, rtol=1e-12,
                                   atol=1e-15)
    assert steps is not None and steps > 3


def test_fused_pagerank_fixed_steps_as_the_operations():
    # steps=N on the device: exactly N fused steps (no host read between them), the
    # operations' and the host's rank after N steps
    from benchmarks.graphs import power_law_graph
    A = sps.csr_matrix(sps.triu(power_law_graph(3000, avg_degree=6, seed=3)))  # dangling
    D = gb.Matrix(A).to_device()
    for steps in (0, 1, 2, 7, 30):
        host_ref = alg.pagerank(A, steps=steps, method="operations")
        for method in ("auto", "operations"):
            np.testing.assert_allclose(alg.pagerank(D, steps=steps, tol=0.0, method=method),
                                       host_ref, rtol=1e-12, atol=1e-15)


def test_fused_pagerank_dangling_and_zero_weight_rows():
    A = sps.csr_matrix(([1.0, 2.0, 0.0, 1.0], ([0, 0, 2, 1], [1, 2, 0, 3])), shape=(5, 5))
    G = nx.DiGraph()
    G.add_nodes_from(range(5))
    G.add_weighted_edges_from([(0, 1, 1.0), (0, 2, 2.0), (2, 0, 0.0), (1, 3, 1.0)])
    ref = nx.pagerank(G, alpha=0.9, tol=1e-12, max_iter=1000)
    D = gb.Matrix(A).to_device()
    np.testing.assert_allclose(alg.pagerank(D, alpha=0.9, tol=1e-12, max_iter=1000),
                               [ref[i] for i in range(5)], rtol=1e-8)
    with pytest.raises(alg.PowerIterationFailedConvergence):
        alg.pagerank(D, tol=1e-15, max_iter=2)


@pytest.mark.parametrize("order", tri.ORDERS)
def test_device_triangle_count_and_lower_in_every_order(order):
    from benchmarks.graphs import power_law_graph
    A = shuffled(sps.csr_matrix(power_law_graph(3000, avg_degree=10, seed=5)), 5)
    ref = sum(nx.triangles(nx.from_scipy_sparse_array(A)).values()) // 3
    D = gb.Matrix(A).to_device()
    assert tri.choose_method(gr.get_kernels("auto", True)) == "mxm"  # measured faster
    assert alg.triangle_count(D, order=order) == ref > 0
    assert alg.triangle_count(D, order=order, method="intersect") == ref
    same = order  # the host L under the ordering the device takes (its own rule on "auto")
    if order == "auto":
        deg = np.diff(A.indptr)
        below = {o: np.diff(tri.lower(gb.Matrix(A), o).to_scipy().indptr) for o in ("increasing", "decreasing")}
        same = tri.choose_order(deg, below, on_device=True)
        assert same == "decreasing"  # a skewed graph: hubs first keeps L's rows short
    Ld = tri.lower(D, order, values=False).to_host().to_scipy()
    Lh = tri.lower(gb.Matrix(A), same, values=False).to_scipy()
    assert_array_equal(Ld.indptr, Lh.indptr)
    assert_array_equal(Ld.indices, Lh.indices)
    Vd = tri.lower(D, order, values=True).to_host().to_scipy()  # with values: same ordering
    Vh = tri.lower(gb.Matrix(A), same, values=True).to_scipy()
    assert_array_equal(Vd.indptr, Vh.indptr)
    assert_array_equal(Vd.indices, Vh.indices)
    assert_array_equal(Vd.data, Vh.data)
    B, G = random_graph(7, n=60, p=0.3)  # self loops, stored zeros, lone vertices
    for method in ("intersect", "mxm"):
        assert alg.triangle_count(gb.Matrix(B).to_device(), order=order, method=method) == \
            sum(nx.triangles(G).values()) // 3
