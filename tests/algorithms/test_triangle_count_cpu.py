"""Triangle counting's compiled CPU counts (``CompiledGraphKernels.count_triangles``):
Sandia's LL summed without forming the product, on L (any ranking) or, ``below=True``, on
the symmetric A itself under the index order (L read as each sorted row's prefix below
the diagonal: no L built). Every count against networkx on random, skewed and grid
graphs with self loops, stored zeros, empty rows and int32 / int64 indices, over one and
several row ranges; the planner rule (:func:`gbdist.algorithms.triangles.choose_method`)
and the methods ``"mxm"`` / ``"intersect"`` give the same count."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import algorithms as alg
from gbdist.algorithms import triangles as tri

pytest.importorskip("numba")


def _graph(kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "grid":  # a triangulated grid: each square with one diagonal, 10% dropped
        side = 12
        G = nx.grid_2d_graph(side, side)
        G.add_edges_from(((i, j), (i + 1, j + 1)) for i in range(side - 1)
                         for j in range(side - 1))
        G.remove_edges_from([e for e in list(G.edges) if rng.random() < 0.1])
        G = nx.convert_node_labels_to_integers(G)
        A = nx.to_scipy_sparse_array(G, format="csr")
    else:
        n = 150
        keep = np.triu(rng.random((n, n)) < 0.06, 1)
        if kind == "skewed":
            keep[0, 1:] = True  # a hub: degrees skewed, the vertices ranked by degree
        keep[5, :] = keep[:, 5] = False  # an empty row
        r, c = np.nonzero(keep)
        vals = rng.integers(0, 3, r.size).astype(float)  # stored zeros among the values
        A = sps.csr_matrix((np.r_[vals, vals], (np.r_[r, c], np.r_[c, r])), shape=(n, n))
    A = sps.csr_matrix(A)
    ref = sum(nx.triangles(nx.from_scipy_sparse_array(A)).values()) // 3
    A = A.tolil()
    A.setdiag(1.0)  # self loops: ignored by the count
    return sps.csr_matrix(A), ref


def _nx_count(A):
    G = nx.from_scipy_sparse_array(A)
    G.remove_edges_from(nx.selfloop_edges(G))
    return sum(nx.triangles(G).values()) // 3


@pytest.mark.parametrize("kind", ["random", "skewed", "grid"])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("several", [False, True])
def test_compiled_counts_match_networkx(kind, itype, several, monkeypatch):
    from gbdist.backends.compiled import graph as cg
    if several:  # row ranges on the pool
        monkeypatch.setattr(cg, "SPMV_SERIAL", 0)
        monkeypatch.setattr(cg, "threads", lambda: 3)
    A, ref = _graph(kind, 3)
    assert _nx_count(A) == ref and ref > 0
    A.indices, A.indptr = A.indices.astype(itype), A.indptr.astype(itype)
    M = gb.Matrix(A)
    K = gb.graph.get_kernels("compiled")
    assert K.count_triangles(M.csr, below=True) == ref  # index order, read in A
    for order in ("none", "increasing", "decreasing"):
        L = tri.lower(M, order, values=False)
        assert K.count_triangles(L.csr) == ref
        for method in ("mxm", "intersect", "auto"):
            assert alg.triangle_count(M, order=order, method=method, backend="compiled") == ref
    assert alg.triangle_count(M, backend="compiled") == ref


def test_planner_rule():
    """intersect on the compiled set when the product would be L·L; the CUDA and the
    reference sets keep the masked product."""
    class Named:
        def __init__(self, name):
            self.name = name
    assert tri.choose_method(Named("compiled"), "L.L") == "intersect"
    assert tri.choose_method(Named("compiled"), "L.LT") == "mxm"
    assert tri.choose_method(Named("cuda"), "L.L") == "mxm"
    assert tri.choose_method(Named("reference"), "L.L") == "mxm"


def test_reference_has_no_intersect_and_orders_are_checked():
    A, ref = _graph("random", 4)
    with pytest.raises(gb.BackendError):
        alg.triangle_count(A, method="intersect", backend="reference")
    with pytest.raises(gb.ParameterError):
        alg.triangle_count(A, order="random", backend="compiled")
    assert alg.triangle_count(A, backend="reference") == ref
