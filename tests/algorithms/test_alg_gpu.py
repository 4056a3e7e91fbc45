"""The algorithms on device data (CuPy): the same answers as on the host, and matrices that
stay on the device. Run on a GPU machine (``pytest -m gpu``)."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import gbdist as gb
from gbdist import algorithms as alg

from .graphs_for_tests import random_graph

pytestmark = pytest.mark.gpu


def device(A):
    import cupyx.scipy.sparse as cps
    return cps.csr_matrix(A)


@pytest.mark.parametrize("directed", [False, True])
def test_traversals_on_the_device(directed):
    A, _ = random_graph(11, n=80, p=0.1, directed=directed)
    D = device(A)
    for direction in ("push", "pull", "auto"):
        assert_array_equal(alg.bfs_levels(D, 0, direction=direction), alg.bfs_levels(A, 0))
        assert_array_equal(alg.bfs_parents(D, 0, direction=direction), alg.bfs_parents(A, 0))
    np.testing.assert_allclose(alg.sssp(D, 0), alg.sssp(A, 0))
    np.testing.assert_allclose(alg.pagerank(D, tol=1e-10), alg.pagerank(A, tol=1e-10),
                               rtol=1e-9)
    assert_array_equal(alg.connected_components(D), alg.connected_components(A))


def test_triangles_truss_similarity_on_the_device():
    A, _ = random_graph(12, n=80, p=0.3)
    D = gb.Matrix(A).to_device()
    assert alg.triangle_count(D) == alg.triangle_count(A) > 0
    for f in (lambda M: alg.ktruss(M, 4), alg.jaccard, alg.cosine):
        got, ref = f(D), f(A)
        assert got.on_device
        g, r = got.to_host().to_scipy(), ref.to_scipy()
        assert_array_equal(g.indptr, r.indptr)
        assert_array_equal(g.indices, r.indices)
        np.testing.assert_allclose(g.data, r.data, rtol=1e-12)


def test_high_diameter_traversals_on_the_device():
    # the frontier-proportional path (spmspv_update on CuPy) over ~100 levels
    from benchmarks.graphs import road_grid
    A = road_grid(40, remove=0.2, seed=2)
    D = device(A)
    for direction in ("push", "pull", "auto"):
        assert_array_equal(alg.bfs_levels(D, 0, direction=direction), alg.bfs_levels(A, 0))
        assert_array_equal(alg.bfs_parents(D, 0, direction=direction), alg.bfs_parents(A, 0))
    np.testing.assert_allclose(alg.sssp(D, 0), alg.sssp(A, 0), rtol=1e-12)
