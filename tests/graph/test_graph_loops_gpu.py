"""The loop algorithms of the built-in graph library (bfs_levels, bfs_parents, sssp,
pagerank, connected_components, written in text) on device (CuPy) operands: the loop
state stays on the device and the results equal the host run's and networkx's."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps

from gbdist import graph as gr

pytestmark = pytest.mark.gpu


@pytest.fixture
def cps():
    pytest.importorskip("cupy")
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    import cupyx.scipy.sparse as cps
    return cps


def _graph(seed=0):
    rng = np.random.default_rng(seed)
    G = nx.disjoint_union(nx.gnm_random_graph(300, 1200, seed=seed), nx.path_graph(40))
    for u, v in G.edges:
        G[u][v]["weight"] = float(rng.integers(1, 9))
    A = nx.to_scipy_sparse_array(G, nodelist=range(340), weight="weight", format="csr")
    return G, sps.csr_matrix(A.astype(np.float64))


@pytest.mark.parametrize("name, args", [("bfs_levels", (0,)), ("bfs_parents", (5,)),
                                        ("sssp", (7,)), ("pagerank", ()),
                                        ("connected_components", ())])
def test_loop_library_on_device_equals_host(cps, name, args):
    G, A = _graph()
    host = gr.run(name, A, *args)
    dev = gr.run(name, cps.csr_matrix(A), *args, backend="cuda")
    assert dev.on_device
    got = dev.to_host()
    if name == "pagerank":
        assert np.allclose(got.to_dense(), host.to_dense(), rtol=1e-10, atol=1e-14)
        want = nx.pagerank(G, weight="weight")
        assert np.allclose(got.to_dense(), [want[i] for i in range(340)], atol=1e-6)
    else:
        assert got.isequal(host)
    if name == "bfs_levels":
        assert dict(zip(got.indices.tolist(), got.values.tolist())) == \
            nx.single_source_shortest_path_length(G, 0)


def test_trace_of_a_loop_on_device(cps):
    G, A = _graph(1)
    t = gr.trace("connected_components", cps.csr_matrix(A), backend="cuda")
    assert t.result.on_device and "iteration(s); the last one's steps:" in str(t)
