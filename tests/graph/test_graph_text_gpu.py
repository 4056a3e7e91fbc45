"""Graph definitions written in the text language run on device (CuPy) operands and give
the host results (the interpreter only calls the public operations, which keep the data
where it lives)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr

pytestmark = pytest.mark.gpu


@pytest.fixture
def cupyx_sparse():
    cp = pytest.importorskip("cupy")
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    import cupyx.scipy.sparse as cps
    return cp, cps


def _undirected(n=300, m=2000, seed=0):
    rng = np.random.default_rng(seed)
    r, c = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = r != c
    A = sps.coo_matrix((np.ones(keep.sum()), (r[keep], c[keep])), shape=(n, n)).tocsr()
    A = ((A + A.T) > 0).astype(np.float64)
    return sps.csr_matrix(A)


def test_library_graphs_on_device_equal_host(cupyx_sparse):
    cp, cps = cupyx_sparse
    A = _undirected()
    Ad = cps.csr_matrix(A)
    assert gr.run("triangle_count", Ad) == gr.run("triangle_count", A)
    host = gr.run("two_hop_count", A)
    dev = gr.run("two_hop_count", Ad)
    assert dev.on_device and dev.to_host().isequal(host)
    d = gr.Vector.from_coo([0], [0.0], A.shape[0])
    dd = gr.Vector.from_coo([0], [0.0], A.shape[0], on_device=True)
    assert gr.run("bellman_ford_step", Ad, dd).to_host().isequal(gr.run("bellman_ford_step", A, d))
    tr = gr.trace("bfs_step", Ad, dd, dd)
    assert tr.result.on_device and "ran: structural semantics" in str(tr)


@pytest.mark.usefixtures("isolated_definitions")
def test_subscripts_on_device_equal_host(cupyx_sparse):
    """A[i, :], A[:, j] and A[r, c] (index vectors computed on the device) stay there."""
    cp, cps = cupyx_sparse
    A = _undirected(200, 900, seed=3)
    Ad = cps.csr_matrix(A)
    gb.define("graph gpu_row(A, i) = A[i, :]\n"
              "graph gpu_col(A; j = 7) = A[:, j]\n"
              "graph gpu_sub(A, f) = let r = apply(identity, f) in A[r, r]")
    for i in (0, 17, -1):
        dev = gr.run("gpu_row", Ad, i)
        assert dev.on_device and dev.to_host().isequal(gr.run("gpu_row", A, i))
    dev = gr.run("gpu_col", Ad)
    assert dev.on_device and dev.to_host().isequal(gr.run("gpu_col", A))
    f = gr.Vector.from_coo(range(5), [3, 0, 3, 9, 150], 5, dtype=np.int64)
    fd = gr.Vector.from_coo(range(5), [3, 0, 3, 9, 150], 5, dtype=np.int64, on_device=True)
    dev = gr.run("gpu_sub", Ad, fd)
    assert dev.on_device and dev.to_host().isequal(gr.run("gpu_sub", A, f))
