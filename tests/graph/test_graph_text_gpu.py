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
