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
