"""Graphs in and out: networkx (against python-graphblas's gb.io and networkx itself) and
``gr.save`` / ``gr.load`` round trips (every dtype, fill, empty and vector cases) with
corrupt files refused."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr

nx = pytest.importorskip("networkx")


def _rand(rng, n=8, dtype=np.float64):
    P = rng.random((n, n)) < 0.3
    r, c = np.nonzero(P)
    return gb.Matrix.from_coo(r, c, rng.integers(-2, 5, r.size).astype(dtype), (n, n))


def test_to_from_networkx_against_graphblas():
    graphblas = pytest.importorskip("graphblas")
    rng = np.random.default_rng(1)
    A = _rand(rng)
    G = gr.to_networkx(A)
    r, c, v = A.to_coo()
    GA = graphblas.Matrix.from_coo(r, c, v, nrows=8, ncols=8)
    W = graphblas.io.to_networkx(GA)
    assert sorted(G.nodes) == sorted(W.nodes) == list(range(8))
    assert sorted(G.edges(data="weight")) == sorted(W.edges(data="weight"))
    H = nx.gnm_random_graph(12, 30, seed=3, directed=True)
    for k, (u, w) in enumerate(H.edges):
        H[u][w]["weight"] = float(k % 4)  # stored zeros too
    B = gr.from_networkx(H)
    GB = graphblas.io.from_networkx(H)
    br, bc, bv = B.to_coo()
    gr_, gc_, gv_ = GB.to_coo()
    assert np.array_equal(br, gr_.astype(np.int64)) and np.array_equal(bc, gc_.astype(np.int64))
    assert np.array_equal(bv, gv_)
    assert B.nvals == H.number_of_edges()  # zero-weight edges are stored edges


def test_networkx_round_trip_keeps_zero_weights():
    rng = np.random.default_rng(2)
    A = _rand(rng, 10)
    B = gr.from_networkx(gr.to_networkx(A))
    assert B.isequal(A)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("fill", ["absent", 0])
def test_save_load_round_trip(tmp_path, dtype, fill):
    rng = np.random.default_rng(3)
    A = _rand(rng, 9, dtype).dup(fill=fill)
    p = tmp_path / "a.npz"
    gr.save(p, A)
    B = gr.load(p)
    assert isinstance(B, gb.Matrix) and B.isequal(A) and B.dtype == A.dtype and B.fill == A.fill
    v = gb.Vector.from_coo([1, 4, 7], np.array([0, 2, 3]).astype(dtype), 10, fill=fill)
    gr.save(tmp_path / "v.npz", v)
    w = gr.load(tmp_path / "v.npz")
    assert isinstance(w, gb.Vector) and w.isequal(v) and w.dtype == v.dtype and w.fill == fill
    E = gb.Matrix.sparse((0, 5), dtype)
    gr.save(tmp_path / "e.npz", E)
    assert gr.load(tmp_path / "e.npz").shape == (0, 5)


def test_load_refuses_corrupt_files(tmp_path):
    p = tmp_path / "bad.npz"
    np.savez(p, kind=np.array("matrix"), format=np.array(1), shape=np.array([2, 2]),
             fill=np.array("absent"), indptr=np.array([0, 2, 1]), indices=np.array([1, 0]),
             data=np.array([1.0, 2.0]))
    with pytest.raises(gb.CorruptInputError):
        gr.load(p)
    (tmp_path / "junk.npz").write_bytes(b"not a file")
    with pytest.raises(gb.CorruptInputError):
        gr.load(tmp_path / "junk.npz")
    np.savez(p, kind=np.array("matrix"), format=np.array(1), shape=np.array([2, 2]),
             fill=np.array("absent"), indptr=np.array([0, 1, 2]), indices=np.array([1, 5]),
             data=np.array([1.0, 2.0]))
    with pytest.raises(gb.CorruptInputError):
        gr.load(p)


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_saved_arrays_are_suitesparse_csr_export(tmp_path, dtype):
    """The file holds what SuiteSparse exports for the same matrix (``ss.export("csr")``:
    indptr, sorted column indices, values) and vector (``ss.export("sparse")``)."""
    graphblas = pytest.importorskip("graphblas")
    rng = np.random.default_rng(4)
    P = rng.random((9, 11)) < 0.35
    r, c = np.nonzero(P)
    order = rng.permutation(r.size)  # given unsorted: both sides sort
    v = (rng.normal(size=r.size) * 10).astype(dtype)
    gr.save(tmp_path / "m.npz", gb.Matrix.from_coo(r[order], c[order], v[order], (9, 11)))
    want = graphblas.Matrix.from_coo(r[order], c[order], v[order], nrows=9, ncols=11).ss.export(
        "csr")
    with np.load(tmp_path / "m.npz") as f:
        assert np.array_equal(f["indptr"], want["indptr"].astype(np.int64))
        assert np.array_equal(f["indices"], want["col_indices"].astype(np.int64))
        assert f["data"].dtype == want["values"].dtype and np.array_equal(f["data"], want["values"])
        assert tuple(f["shape"]) == (want["nrows"], want["ncols"])
    idx = np.flatnonzero(rng.random(30) < 0.4)
    vals = rng.integers(-5, 5, idx.size).astype(dtype)
    gr.save(tmp_path / "v.npz", gb.Vector.from_coo(idx[::-1], vals[::-1], 30))
    want = graphblas.Vector.from_coo(idx[::-1], vals[::-1], size=30).ss.export("sparse")
    with np.load(tmp_path / "v.npz") as f:
        assert np.array_equal(f["indices"], want["indices"].astype(np.int64))
        assert np.array_equal(f["data"], want["values"]) and f["data"].dtype == want["values"].dtype


def test_hypersparse_save_load_against_graphblas(tmp_path):
    """A HyperMatrix at 2⁶⁰ is saved as SuiteSparse's hypersparse CSR (``ss.export("hypercsr")``:
    the stored rows' ids, indptr over them, column ids), loads back equal and usable."""
    graphblas = pytest.importorskip("graphblas")
    rng = np.random.default_rng(5)
    n = 2 ** 60
    k = 300
    rows = rng.integers(0, n, 40, dtype=np.int64)[rng.integers(0, 40, k)]
    cols = rng.integers(0, n, 50, dtype=np.int64)[rng.integers(0, 50, k)]
    vals = rng.normal(size=k)
    H = gr.HyperMatrix.from_coo(rows, cols, vals, (n, n), dup_op=gb.ops.plus)
    GH = graphblas.Matrix.from_coo(rows.astype(np.uint64), cols.astype(np.uint64), vals,
                                   nrows=n, ncols=n, dup_op=graphblas.binary.plus)
    gr.save(tmp_path / "h.npz", H)
    want = GH.ss.export("hypercsr")
    with np.load(tmp_path / "h.npz") as f:
        assert np.array_equal(f["row_ids"], want["rows"].astype(np.int64))
        assert np.array_equal(f["indptr"], want["indptr"].astype(np.int64))
        assert np.array_equal(f["col_ids"][f["indices"]], want["col_indices"].astype(np.int64))
        assert np.allclose(f["data"], want["values"])
    L = gr.load(tmp_path / "h.npz")
    assert isinstance(L, gr.HyperMatrix) and L.isequal(H) and L.shape == (n, n)
    C = gr.hyper.mxm(L, L.T, gb.semirings.plus_times)
    GC = GH.mxm(GH.T, graphblas.semiring.plus_times).new()
    cr, cc, cv = C.to_coo()
    wr, wc, wv = GC.to_coo()
    assert np.array_equal(cr, wr.astype(np.int64)) and np.array_equal(cc, wc.astype(np.int64))
    assert np.allclose(cv, wv)
    u = gr.HyperVector.from_coo([3, 2 ** 59, n - 1], np.array([1, 0, 7], np.int32), n)
    gr.save(tmp_path / "u.npz", u)
    w = gr.load(tmp_path / "u.npz")
    assert isinstance(w, gr.HyperVector) and w.isequal(u) and w.dtype == np.int32


def test_load_refuses_corrupt_hypersparse_files(tmp_path):
    p = tmp_path / "h.npz"
    good = dict(kind=np.array("hypermatrix"), format=np.array(1),
                shape=np.array([2 ** 60, 2 ** 60]), fill=np.array("absent"),
                row_ids=np.array([5, 2 ** 59]), col_ids=np.array([0, 9]),
                indptr=np.array([0, 1, 2]), indices=np.array([1, 0]), data=np.array([1.0, 2.0]))
    np.savez(p, **good)
    assert gr.load(p).to_coo()[0].tolist() == [5, 2 ** 59]
    for key, bad in (("row_ids", np.array([2 ** 59, 5])), ("col_ids", np.array([0, 2 ** 60])),
                     ("indices", np.array([1, 2])), ("indptr", np.array([0, 2, 1]))):
        np.savez(p, **dict(good, **{key: bad}))
        with pytest.raises(gb.CorruptInputError):
            gr.load(p)
    np.savez(p, kind=np.array("hypervector"), format=np.array(1), shape=np.array([2 ** 60]),
             fill=np.array("absent"), indices=np.array([7, 3]), data=np.array([1.0, 2.0]))
    with pytest.raises(gb.CorruptInputError):
        gr.load(p)
