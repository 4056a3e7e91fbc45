"""Tiny graphs run on the NumPy reference kernels (issue 25): below
``dispatch.SMALL_WORK`` stored entries, ``backend="auto"`` / ``"cpu"`` take the reference
(the definition the compiled kernels are tested against), so the first call on a small
graph needs no Numba. The choice is by size alone, the results are the compiled kernels'
(exactly for exact semirings), and a fresh process's first BFS loads no Numba (checked in a
subprocess: a module count, not a timing)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr
from gbdist.graph import dispatch


def _karate():
    return sps.csr_matrix(nx.to_scipy_sparse_array(nx.karate_club_graph(), weight=None,
                                                   dtype=np.float64))


def test_the_set_is_chosen_by_size():
    small, big = dispatch.SMALL_WORK - 1, dispatch.SMALL_WORK
    assert dispatch.get_kernels("auto", False, work=small).name == "reference"
    assert dispatch.get_kernels("cpu", False, work=small).name == "reference"
    assert dispatch.get_kernels("auto", False, work=None).name == \
        dispatch.get_kernels("auto", False, work=big).name
    if dispatch.available("compiled"):
        assert dispatch.get_kernels("auto", False, work=big).name == "compiled"
        assert dispatch.get_kernels("compiled", False, work=small).name == "compiled"


def test_tiny_graphs_take_the_reference(monkeypatch):
    called = {"reference": 0, "compiled": 0}
    for name in called:
        try:
            K = dispatch._load(name)
        except gb.BackendError:
            continue
        for method in ("spgemm", "spmv", "spmspv", "segment_reduce"):
            real = getattr(K, method)

            def counted(*a, _real=real, _name=name, **k):
                called[_name] += 1
                return _real(*a, **k)

            monkeypatch.setattr(K, method, counted)
    A = _karate()
    assert A.nnz < dispatch.SMALL_WORK
    alg.bfs_levels(A, 0)
    alg.pagerank(A)
    assert alg.triangle_count(A) == sum(nx.triangles(nx.karate_club_graph()).values()) // 3
    assert called["reference"] > 10 and called["compiled"] == 0


@pytest.mark.skipif(not dispatch.available("compiled"), reason="no compiled kernels here")
def test_small_results_are_the_compiled_kernels():
    A = _karate()
    G = gb.Matrix(A)
    s = 0
    np.testing.assert_array_equal(alg.bfs_levels(G, s), alg.bfs_levels(G, s, backend="compiled"))
    np.testing.assert_array_equal(alg.bfs_parents(G, s),
                                  alg.bfs_parents(G, s, backend="compiled"))
    np.testing.assert_array_equal(alg.connected_components(G),
                                  alg.connected_components(G, backend="compiled"))
    pr = alg.pagerank(G)
    np.testing.assert_allclose(pr, alg.pagerank(G, backend="compiled"), rtol=1e-12)
    want = nx.pagerank(nx.karate_club_graph(), weight=None)
    np.testing.assert_allclose(pr, [want[i] for i in range(A.shape[0])], rtol=1e-6)
    x = gb.Vector(np.random.default_rng(0).random(A.shape[0]))
    for sr in (gb.semirings.min_plus, gb.semirings.max_times, gb.semirings.any_pair):
        assert gr.mxv(G, x, sr).isequal(gr.mxv(G, x, sr, backend="compiled"))
    np.testing.assert_allclose(gr.mxv(G, x, gb.semirings.plus_times).to_dense(),
                               A @ x.to_dense(), rtol=1e-12)


FIRST_CALLS = """
import sys
import numpy as np, scipy.sparse as sps
import gbdist.algorithms as alg
rng = np.random.default_rng(0)
r, c = rng.integers(0, 40, 120), rng.integers(0, 40, 120)
A = sps.csr_matrix((np.ones(240), (np.r_[r, c], np.r_[c, r])), shape=(40, 40))
A.sum_duplicates()
assert A.nnz < __SMALL__
levels = alg.bfs_levels(A, 0)
parents = alg.bfs_parents(A, 0)
ranks = alg.pagerank(A)
print("numba" in sys.modules, int((levels >= 0).sum()), round(float(ranks.sum()), 9))
"""


def test_a_fresh_process_runs_a_small_bfs_without_numba():
    code = textwrap.dedent(FIRST_CALLS).replace("__SMALL__", str(dispatch.SMALL_WORK))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded, reached, total = out.stdout.split()
    assert loaded == "False" and int(reached) > 1 and float(total) == pytest.approx(1.0)
