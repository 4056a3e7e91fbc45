"""The whole-algorithm CUDA kernels (issue 30, kernels/graph_algorithms.cuh) compiled with
g++ and run on the host (no GPU needed): tests/backends/cuda_host/ defines the CUDA
built-ins. The union-find kernels run one CUDA thread after another in shuffled orders
(each order is one interleaving a GPU may produce) against SciPy's csgraph; the warp-level
kernels (triangles' L, the fused PageRank step) run with a std::thread per CUDA thread,
warp intrinsics and __syncthreads as barriers, against the host ``lower`` and NumPy."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.sparse import csgraph

import gbdist as gb
from gbdist.algorithms import triangles as tri
from gbdist.backends.cuda import graph_codegen as gc
from gbdist.resources import folder

from tests.algorithms.graphs_for_tests import random_graph, shuffled

GXX = shutil.which("g++")
HERE = Path(__file__).parent / "cuda_host"
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")


def _build(tmp_path_factory, name, std):
    exe = tmp_path_factory.mktemp("cuda_host") / name
    r = subprocess.run([GXX, f"-std={std}", "-O0", "-pthread", "-I", str(HERE), "-I",
                        str(folder("kernels")), "-o", str(exe), str(HERE / f"{name}.cpp")],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.fail(r.stderr[-3000:])
    return str(exe)


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return _build(tmp_path_factory, "cc_host", "c++17")


@pytest.fixture(scope="module")
def threads(tmp_path_factory):
    if not os.environ.get("GBDIST_SLOW_TESTS"):
        pytest.skip("a std::thread per CUDA thread: slow on a loaded box (GBDIST_SLOW_TESTS=1)")
    return _build(tmp_path_factory, "tri_rank_host", "c++20")


def _run(exe, args, lines):
    text = "\n".join(" ".join(map(str, line)) for line in lines) + "\n"
    return subprocess.run([exe] + args, input=text, capture_output=True, text=True,
                          check=True).stdout


def _bins(A):
    """The SpMV degree bins as graph._spmv_bins lays them out (gc.SPMV_BINS)."""
    deg = np.diff(A.indptr)
    b = np.searchsorted([e for e, _ in gc.SPMV_BINS], deg, side="left")
    rows = np.concatenate([np.flatnonzero(b == q) for q in range(5)])
    sizes = np.array([(b == q).sum() for q in range(5)])
    blocks = -(-sizes // np.array([256 // g for _, g in gc.SPMV_BINS] + [1]))
    return rows, np.concatenate([[0], np.cumsum(sizes), [0], np.cumsum(blocks)]), int(blocks.sum())


def _smallest(A):
    P = sps.csr_matrix(A, copy=True)
    P.data = np.ones_like(P.data)  # csgraph would drop stored zeros as edges
    k, lab = csgraph.connected_components(P, directed=True, connection="weak")
    first = np.full(k, A.shape[0])
    np.minimum.at(first, lab, np.arange(A.shape[0]))
    return first[lab]


def _graphs():
    from benchmarks.graphs import power_law_graph
    for seed, directed in ((0, False), (1, True), (2, False)):
        yield shuffled(random_graph(seed, n=300, p=0.01, directed=directed)[0], seed), directed
    P = power_law_graph(3000, avg_degree=8, seed=1, weighted=False)  # hubs: the block bin
    m = 2000
    path = sps.diags([np.ones(m - 1), np.ones(m - 1)], [-1, 1], shape=(m, m), format="csr")
    yield shuffled(sps.block_diag([P, path, sps.csr_matrix((20, 20))], format="csr").tocsr(), 3), False


def test_union_find_in_shuffled_thread_orders(serial):
    for A, directed in _graphs():
        A = sps.csr_matrix(A)
        A.sort_indices()
        rows, meta, blocks = _bins(A)
        ref = _smallest(A)
        assert len(np.unique(ref)) > 2
        for seed in range(2):
            for half in ((False,) if directed else (False, True)):
                out = _run(serial, [], [
                    (A.shape[0], A.nnz, int(half), blocks, seed), A.indptr, A.indices, rows, meta])
                np.testing.assert_array_equal(np.array(out.split(), dtype=np.int64), ref)


def test_lower_and_intersect_kernels_every_order(threads):
    import networkx as nx
    from benchmarks.graphs import power_law_graph
    for A in (shuffled(sps.csr_matrix(power_law_graph(120, avg_degree=8, seed=5)), 5),
              random_graph(7, n=40, p=0.3)[0]):
        ref = sum(nx.triangles(nx.from_scipy_sparse_array(A)).values()) // 3
        assert ref > 0
        A = sps.csr_matrix(A)
        A.sort_indices()
        n = A.shape[0]
        for (mode, order), G in zip(enumerate(("none", "increasing", "decreasing", "none", "increasing",
                                               "decreasing")), (32, 4, 32, 4, 16, 16)):
            mode %= 3
            out = _run(threads, ["tri"],
                       [(n, A.nnz, mode, G), A.indptr, A.indices]).split("\n")
            counts = np.array(out[0].split(), dtype=np.int64).reshape(3, n)
            only = np.array(out[1].split(), dtype=np.int64).reshape(3, n)
            L = tri.lower(gb.Matrix(A), order).to_scipy()  # the host kernels' L, with values
            np.testing.assert_array_equal(counts[mode], np.diff(L.indptr))
            np.testing.assert_array_equal(only[0], counts[0])  # index order only: row 0 written
            assert not only[1:].any()
            np.testing.assert_array_equal(np.array(out[2].split(), dtype=np.int64), L.indices)
            pos = np.array(out[3].split(), dtype=np.int64)  # where each kept entry is in A
            np.testing.assert_array_equal(A.data[pos], L.data)
            np.testing.assert_array_equal(A.indices[pos], L.indices)
            assert int(out[4]) == ref  # gb_tri_intersect over this L
            got = [int(v) for v in out[5].split()]  # gb_tri_sums: the device rule's sums
            want = tri.device_sums(np.diff(A.indptr),
                                   {o: counts[tri.MODES[o]] for o in ("increasing", "decreasing")})
            assert got == [*want["increasing"], *want["decreasing"]]


def test_fused_rank_step(threads):
    rng = np.random.default_rng(0)
    for n, blocks in ((700, 3), (37, 1)):
        y, x, inv = rng.random(n), rng.random(n), rng.random(n)
        dang = (rng.random(n) < 0.2).astype(int)
        inv[dang == 1] = 0.0
        lost, alpha, t = 0.3, 0.85, 2
        tele = (1 - alpha) / n
        fl = lambda a: [repr(float(v)) for v in a]  # noqa: E731
        out = _run(threads, ["rank"],
                   [(n, repr(alpha), repr(tele), t, blocks), fl(y), fl(x), fl(inv), dang,
                    (repr(lost),)]).split("\n")
        new = np.array(out[0].split(), dtype=np.float64)
        ref = (tele + alpha * lost / n) + y * alpha  # the operations' order, exactly
        np.testing.assert_array_equal(new, ref)
        np.testing.assert_array_equal(np.array(out[1].split(), dtype=np.float64), ref * inv)
        err, lost2, done = out[2].split()
        assert np.isclose(float(err), np.abs(ref - x).sum(), rtol=1e-13, atol=0)
        assert np.isclose(float(lost2), ref[dang == 1].sum(), rtol=1e-13, atol=0)
        assert done == "0"  # the counter is reset for the next step
