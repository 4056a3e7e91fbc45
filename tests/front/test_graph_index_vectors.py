"""Extract and assign at indices computed by the graph (an index vector: its stored values),
in the Python API and in the text language (``extract(f, rows=f)``, ``f[f]``,
``assign(f, h, rows=f, accum=min)``), and connected_components written with them as
FastSV: against NumPy fancy indexing / ``np.minimum.at``, networkx and gbdist.algorithms."""
import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr
from gbdist.errors import InputError, TypeCheckError

pytestmark = pytest.mark.usefixtures("isolated_definitions")


def full(values, dtype=np.int64):
    values = np.asarray(values, dtype=dtype)
    return gb.Vector.from_coo(np.arange(values.size), values, values.size, dtype=dtype)


@pytest.mark.parametrize("backend", ["reference", "auto"])
def test_extract_at_an_index_vector_is_numpy_fancy_indexing(backend):
    rng = np.random.default_rng(0)
    v = rng.normal(size=50)
    sparse = v.copy()
    idx = rng.integers(0, 50, size=80)  # repeats
    x = gb.Vector.from_coo(np.arange(50)[::2], v[::2], 50)  # every other entry stored
    got = gr.extract(x, full(idx), backend=backend)
    present = idx % 2 == 0
    assert got.size == 80
    assert np.array_equal(got.indices, np.flatnonzero(present))
    assert np.array_equal(got.values, sparse[idx][present])
    # a matrix: rows and cols from vectors, floats that are whole numbers accepted
    M = rng.normal(size=(30, 20))
    M[M < 0.3] = 0
    r, c = rng.integers(0, 30, size=12), rng.integers(0, 20, size=7)
    E = gr.extract(gb.Matrix(sps.csr_matrix(M)), full(r, np.float64), full(c), backend=backend)
    assert np.array_equal(E.to_dense(), M[np.ix_(r, c)])
    # an index vector with unstored entries: its stored values, in the order of positions
    holes = gb.Vector.from_coo([1, 4, 6], [7, 0, 3], 9, dtype=np.int64)
    assert np.array_equal(gr.extract(full(v, np.float64), holes).to_dense(), v[[7, 0, 3]])


def test_index_vectors_refused_with_clear_errors():
    x = full(np.arange(5))
    with pytest.raises(InputError, match="whole numbers"):
        gr.extract(x, full([0.5, 1.0], np.float64))
    with pytest.raises(InputError, match="out of range"):
        gr.extract(x, full([0, 5]))
    with pytest.raises(InputError, match="holds integers"):
        gr.extract(x, full([True, False], bool))
    with pytest.raises(InputError, match="duplicate rows") as info:
        gr.assign(x.dup(), full([9, 8]), full([1, 1]))
    assert "accum=" in info.value.hint
    with pytest.raises(InputError, match="monoid"):
        gr.assign(x.dup(), full([9, 8]), full([1, 1]), accum=gb.ops.minus)


@pytest.mark.parametrize("backend", ["reference", "auto"])
@pytest.mark.parametrize("n, stored", [(40, 1.0), (40, 0.3), (20000, 0.001)])  # dense, sparse
def test_assign_with_repeated_indices_folds_them_with_the_accumulator(backend, n, stored):
    rng = np.random.default_rng(1)
    c = rng.integers(0, 100, size=n)
    keep = np.flatnonzero(rng.random(n) < stored) if stored < 1 else np.arange(n)
    C = gb.Vector.from_coo(keep, c[keep], n, dtype=np.int64)
    idx = rng.integers(0, n, size=60)
    h = rng.integers(0, 100, size=60)
    hk = np.flatnonzero(rng.random(60) < 0.7)  # the value vector's stored entries
    H = gb.Vector.from_coo(hk, h[hk], 60, dtype=np.int64)
    for accum, ufunc in ((gb.ops.min, np.minimum), (gb.ops.plus, np.add)):
        want = np.full(n, -1, dtype=np.int64)
        want[keep] = c[keep]
        got_present = np.zeros(n, bool)
        got_present[keep] = True
        dense = np.where(got_present, want, ufunc.reduce([]) if ufunc is np.add else 10**9)
        ufunc.at(dense, idx[hk], h[hk])  # as if assigned one after the other
        got_present[idx[hk]] = True
        out = gr.assign(C.dup(), H, full(idx), accum=accum, backend=backend)
        assert np.array_equal(out.indices, np.flatnonzero(got_present))
        assert np.array_equal(out.to_dense(fill=-1)[got_present], dense[got_present])


def test_text_extract_and_assign_at_computed_indices_equal_the_python_api():
    gb.define("""
    graph grand(f) = f[f]
    graph grand2(f) = extract(f, rows=f)
    graph hook(f, h) = assign(f, h, rows=f, accum=min)
    graph rows_of(A, v) = extract(A, rows=reduce_rows(A, min), cols=v, dtype=int64)
    """)
    rng = np.random.default_rng(2)
    f = rng.integers(0, 30, size=30)
    h = rng.integers(0, 30, size=30)
    fv = full(f)
    assert np.array_equal(gr.run("grand", fv).to_dense(), f[f])
    assert gr.run("grand2", fv).isequal(gr.run("grand", fv))
    want = f.copy()
    np.minimum.at(want, f, h)
    assert np.array_equal(gr.run("hook", fv, full(h)).to_dense(), want)
    assert np.array_equal(fv.to_dense(), f)  # the operand is not changed
    # a matrix indexed by a reduction it computed (values: whole-number floats)
    A = sps.random(12, 12, density=0.4, random_state=3, format="csr")
    A.data = np.floor(A.data * 12)
    A.eliminate_zeros()
    mins = gr.reduce_rows(gb.Matrix(A), gb.ops.min)
    cols = [3, 1, 1]
    got = gr.run("rows_of", A, cols)
    assert np.array_equal(got.to_dense(), A.toarray()[np.ix_(mins.values.astype(int), cols)])
    g = gb.define("graph g(f) = f[f]").graphs["g"]
    assert g.step_text(g.steps[0]) == "extract(f, rows=f)"


def test_text_index_vector_errors_point_at_the_argument():
    with pytest.raises(TypeCheckError) as info:
        gb.define("graph e(A) = let S = mxm(A, A, plus_pair) in extract(A, rows=S)")
    assert "index array" in info.value.message and "a matrix" in info.value.got
    assert info.value.span.column == len("graph e(A) = let S = mxm(A, A, plus_pair) in "
                                         "extract(A, rows=") + 1
    with pytest.raises(TypeCheckError, match="transposed"):
        gb.define("graph e(A, r) = extract(A, rows=r.T)")


def road(side, drop=0.1, seed=0):
    G = nx.convert_node_labels_to_integers(nx.grid_2d_graph(side, side))
    rng = np.random.default_rng(seed)
    edges = list(G.edges)
    G.remove_edges_from([edges[i] for i in rng.choice(len(edges), int(drop * len(edges)),
                                                       replace=False)])
    return G


def labels_of(G):
    want = np.empty(G.number_of_nodes(), dtype=np.int64)
    comps = nx.weakly_connected_components(G) if G.is_directed() else nx.connected_components(G)
    for c in comps:
        want[list(c)] = min(c)
    return want


@pytest.mark.parametrize("name, G", [
    ("road", road(30)),
    ("power_law", nx.barabasi_albert_graph(400, 1, seed=4)),  # a tree: deep, many hubs
    ("disconnected", nx.disjoint_union_all([road(8, 0.4, 1), nx.path_graph(50),
                                            nx.star_graph(20), nx.empty_graph(5)])),
    ("directed", nx.gnm_random_graph(300, 280, seed=5, directed=True)),
])
@pytest.mark.parametrize("backend", ["reference", "auto"])
def test_fastsv_in_text_equals_networkx_and_python(name, G, backend):
    n = G.number_of_nodes()
    A = sps.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=range(n), format="csr")
                       .astype(np.float64))
    t = gr.trace("connected_components", A, backend=backend)
    labels = t.result.to_dense()
    assert t.result.dtype == np.int64 and t.result.nvals == n
    assert np.array_equal(labels, labels_of(G))
    assert np.array_equal(labels, alg.connected_components(A, backend=backend))


def test_fastsv_rounds_grow_with_the_log_of_the_diameter():
    """A path of 512 vertices (diameter 511): label propagation needs 511 rounds; FastSV's
    pointer jumping needs O(log n) (counted by the loop, not timed)."""
    from gbdist.graph.program import _execute, _graph
    P = nx.to_scipy_sparse_array(nx.path_graph(512), format="csr").astype(np.float64)
    result, values, _ = _execute(_graph("connected_components"), (P,), {}, "auto")
    iterations = next(v.iterations for v in values if hasattr(v, "iterations"))
    assert np.array_equal(result.to_dense(), np.zeros(512))
    assert iterations <= 2 * int(np.log2(512)) + 2


@pytest.mark.gpu
def test_index_vectors_and_fastsv_on_device_equal_the_host():
    pytest.importorskip("cupy")
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    rng = np.random.default_rng(6)
    n = 3000
    f = full(rng.integers(0, n, size=n))
    h = gb.Vector.from_coo(np.arange(0, n, 3), rng.integers(0, n, size=n // 3), n, dtype=np.int64)
    for C in (f, gb.Vector.from_coo(np.arange(0, n, 50), np.arange(0, n, 50), n, dtype=np.int64)):
        host = gr.assign(C.dup(), h, f, accum=gb.ops.min)
        dev = gr.assign(C.to_device(), h.to_device(), f.to_device(), accum=gb.ops.min,
                        backend="cuda")
        assert dev.on_device and dev.to_host().isequal(host)
    assert gr.extract(f.to_device(), f.to_device()).to_host().isequal(gr.extract(f, f))
    G = road(40)
    A = sps.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=range(1600), format="csr")
                       .astype(np.float64))
    import cupyx.scipy.sparse as cps
    dev = gr.run("connected_components", cps.csr_matrix(A), backend="cuda")
    assert dev.on_device and np.array_equal(dev.to_host().to_dense(), labels_of(G))
