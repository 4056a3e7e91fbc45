"""The algorithms' method rules (issue 30) on host data: the compiled CPU set has the
union-find components kernel (the reference stays FastSV), PageRank and triangles keep the
operations there; a method the kernel set lacks is a typed error, an unknown one too."""
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

components = importlib.import_module("gbdist.algorithms.components")
pagerank = importlib.import_module("gbdist.algorithms.pagerank")  # the function hides it


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_host_kernel_sets_methods(backend):
    if not gr.available(backend):
        pytest.skip(f"{backend} kernels unavailable")
    K = gr.get_kernels(backend, False)
    # the compiled set has the union-find kernel (one thread); the reference stays FastSV
    assert components.choose_method(K) == ("union-find" if backend == "compiled" else "fastsv")
    assert pagerank.choose_method(K) == "operations"
    assert tri.choose_method(K) == "mxm"


def _smallest(A):
    P = sps.csr_matrix(A, copy=True)
    P.data = np.ones_like(P.data)  # csgraph would drop stored zeros as edges
    k, lab = csgraph.connected_components(P, directed=True, connection="weak")
    first = np.full(k, A.shape[0])
    np.minimum.at(first, lab, np.arange(A.shape[0]))
    return first[lab]


@pytest.mark.parametrize("seed,directed", [(s, d) for s in range(3) for d in (False, True)])
def test_compiled_union_find_matches_csgraph(seed, directed):
    if not gr.available("compiled"):
        pytest.skip("compiled kernels unavailable")
    A = shuffled(random_graph(seed, n=200, p=0.015, directed=directed)[0], seed)
    ref = _smallest(A)
    assert len(np.unique(ref)) > 3
    G = gb.Matrix(A)
    assert_array_equal(alg.connected_components(G, method="union-find", backend="compiled"), ref)
    if not directed:
        G.T  # noqa: B018 - transpose cached: symmetric, half the entries joined
        assert_array_equal(alg.connected_components(G, backend="compiled"), ref)
    K = gr.get_kernels("compiled", False)
    B = A.copy()
    B.data[:] = 1.0  # the pattern (A + Aᵀ would drop the stored zeros)
    up = sps.triu(B + B.T, format="csr")  # one direction of each edge: the same components
    up.sort_indices()
    assert_array_equal(K.components(up, half=False), ref)
    m = 3000  # a long path, numbered backwards: deep trees before the halving finds
    path = sps.diags([np.ones(m - 1), np.ones(m - 1)], [-1, 1], shape=(m, m), format="csr")
    q = np.arange(m)[::-1]
    P = sps.csr_matrix(path[q][:, q])
    P.sort_indices()
    assert_array_equal(K.components(P, half=True), np.zeros(m, dtype=np.int64))


class _WithKernels:
    """A stand-in kernel set that offers the whole-algorithm kernels (the rule reads only
    whether they are there)."""
    name = "stand-in"

    def components(self, A, *, half):  # pragma: no cover - never called
        raise AssertionError

    def power_rank(self, *args):  # pragma: no cover - never called
        raise AssertionError


def test_rules_pick_the_kernels_where_offered():
    assert components.choose_method(_WithKernels()) == "union-find"
    assert pagerank.choose_method(_WithKernels()) == "fused"


def test_forced_and_unknown_methods_on_the_host():
    A, G = random_graph(4, n=30, p=0.15)
    with pytest.raises(gb.BackendError):
        alg.connected_components(A, method="union-find", backend="reference")
    with pytest.raises(gb.BackendError):
        alg.pagerank(A, method="fused")
    with pytest.raises(gb.ParameterError):
        alg.connected_components(A, method="bfs")
    with pytest.raises(gb.ParameterError):
        alg.pagerank(A, method="gauss-seidel")
    with pytest.raises(gb.BackendError):
        alg.triangle_count(A, method="intersect")
    with pytest.raises(gb.ParameterError):
        alg.triangle_count(A, method="merge")
    assert alg.triangle_count(A, method="mxm") == alg.triangle_count(A) == \
        sum(nx.triangles(G).values()) // 3
    # the explicit GraphBLAS methods are the default ones on the host
    k, lab = csgraph.connected_components(A, directed=False)
    first = np.full(k, A.shape[0])
    np.minimum.at(first, lab, np.arange(A.shape[0]))
    assert_array_equal(alg.connected_components(shuffled(A, 1), method="fastsv"),
                       alg.connected_components(shuffled(A, 1)))
    assert_array_equal(alg.connected_components(A, method="fastsv"), first[lab])
    ref = nx.pagerank(G, tol=1e-10, max_iter=500)
    np.testing.assert_allclose(alg.pagerank(A, tol=1e-10, max_iter=500, method="operations"),
                               [ref[i] for i in range(A.shape[0])], rtol=1e-7, atol=1e-12)


def test_pagerank_without_steps_raises_the_convergence_error():
    A, _ = random_graph(5, n=20, p=0.2)
    with pytest.raises(alg.PowerIterationFailedConvergence):
        alg.pagerank(A, max_iter=0)
