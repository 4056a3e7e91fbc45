"""``gb.mxm`` / ``gb.mxv`` / ``gb.reduce`` / ``gb.apply`` given a ``gb.Matrix`` / ``gb.Vector``
run the graph operation (issue 24, item 11): a python-graphblas user reaches for ``gb.mxm``
first, and it used to return an unevaluated expression node silently (``gb.mxv`` said "A
must be numeric"). The result is the graph operation's (a sparse ``gb.Matrix`` /
``gb.Vector``), its keyword arguments pass through, and what cannot be meant is refused
with a typed error."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr

ROWS, COLS, VALS = [0, 0, 1, 2, 3], [1, 2, 2, 3, 0], [1.0, 4.0, 2.0, 0.0, 1.0]


def _G():
    return gb.Matrix.from_coo(ROWS, COLS, VALS, (4, 4))


def _same(got, want):
    assert type(got) is type(want)
    assert got.isequal(want) and got.dtype == want.dtype


@pytest.mark.parametrize("sr", ["plus_times", "min_plus", "any_pair"])
def test_mxm_runs_gr_mxm(sr):
    G, s = _G(), gb.semirings[sr]
    _same(gb.mxm(G, G, s), gr.mxm(G, G, s))
    _same(gb.mxm(G, G.T, s), gr.mxm(G, G.T, s))
    # one operand a gb.Matrix is enough: the other is read as a graph, as gr.mxm reads it
    _same(gb.mxm(G, G.to_scipy(), s), gr.mxm(G, G, s))
    _same(gb.mxm(G.to_scipy(), G, s), gr.mxm(G, G, s))


def test_mxm_keywords_pass_through():
    G = _G()
    sr = gb.semirings.min_plus
    _same(gb.mxm(G, G, sr, mask=G.S), gr.mxm(G, G, sr, mask=G.S))
    _same(gb.mxm(G, G, sr, dtype=np.float32, backend="reference"),
          gr.mxm(G, G, sr, dtype=np.float32, backend="reference"))
    C = G.dup()
    out = gb.mxm(G, G, sr, mask=~G.S, accum=gb.ops.min, out=C, replace=True)
    assert out is C
    _same(C, gr.mxm(G, G, sr, mask=~G.S, accum=gb.ops.min, out=G.dup(), replace=True))


def test_mxv_runs_gr_mxv():
    G = _G()
    x = np.array([1.0, 2.0, 3.0, 4.0])
    _same(gb.mxv(G, x, gb.semirings.plus_times), gr.mxv(G, x, gb.semirings.plus_times))
    u = gb.Vector.from_coo([1, 3], [5.0, 7.0], 4)
    _same(gb.mxv(G, u, gb.semirings.min_plus), gr.mxv(G, u, gb.semirings.min_plus))
    _same(gb.mxv(G.to_scipy(), u, gb.semirings.min_plus), gr.mxv(G, u, gb.semirings.min_plus))
    m = gb.Vector.from_coo([0], [True], 4)
    _same(gb.mxv(G.T, u, gb.semirings.plus_times, mask=~m.S, compensated=True),
          gr.mxv(G.T, u, gb.semirings.plus_times, mask=~m.S, compensated=True))
    assert not hasattr(gb, "vxm")  # there is no gb.vxm: gr.vxm(u, G, sr) = gb.mxv(G.T, u, sr)


def test_reduce_runs_gr_reduce_rows():
    G = _G()
    _same(gb.reduce(G, gb.ops.min), gr.reduce_rows(G, gb.ops.min))
    assert gb.reduce(G, gb.ops.min).to_dense().tolist() == [1.0, 2.0, 0.0, 1.0]
    _same(gb.reduce(G.T, gb.ops.plus), gr.reduce_cols(G, gb.ops.plus))
    m = gb.Vector.from_coo([1], [True], 4)
    _same(gb.reduce(G, gb.ops.max, mask=m.S, dtype=np.int64),
          gr.reduce_rows(G, gb.ops.max, mask=m.S, dtype=np.int64))
    v = gb.Vector.from_coo([0, 2], [3, 4], 5)
    r = gb.reduce(v, gb.ops.plus)  # a vector reduces to a scalar (gr.reduce_scalar)
    assert r == 7 and r.dtype == gr.reduce_scalar(v, gb.ops.plus).dtype


def test_apply_runs_gr_apply():
    G = _G()
    _same(gb.apply(gb.ops.abs, G), gr.apply(gb.ops.abs, G))
    _same(gb.apply(gb.ops.plus, G, right=1), gr.apply(gb.ops.plus, G, right=1))
    _same(gb.apply(gb.ops.exp, G), gr.apply(gb.ops.exp, G))  # a graph: only stored values
    v = gb.Vector.from_coo([1], [-2.0], 3)
    _same(gb.apply(gb.ops.abs, v), gr.apply(gb.ops.abs, v))


def test_concrete_operands_keep_the_dense_route():
    X = sps.csr_matrix(np.array([[1.0, 0.0], [2.0, 3.0]]))
    got = gb.mxm(X, X.T, gb.semirings.plus_times)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, (X @ X.T).toarray())
    assert isinstance(gb.reduce(X, gb.ops.plus), np.ndarray)
    assert isinstance(gb.mxv(X, np.ones(2), gb.semirings.plus_times), np.ndarray)
    assert sps.issparse(gb.apply(gb.ops.abs, X))
    A = gb.matrices("A")  # symbolic operands still build expressions
    assert not isinstance(gb.mxm(A, A.T, gb.semirings.plus_times), (gb.Matrix, np.ndarray))


def test_refusals():
    G = _G()
    A = gb.matrices("A")
    with pytest.raises(gb.InputError, match="symbolic") as e:
        gb.mxm(G, A, gb.semirings.plus_times)
    assert "gr.mxm" in str(e.value)
    with pytest.raises(gb.InputError, match="symbolic"):
        gb.mxv(A, gb.Vector(np.ones(4)), gb.semirings.plus_times)
    # dense-route arguments are not the graph operation's: a ParameterError naming gr.mxm
    with pytest.raises(gb.ParameterError, match=r"gr\.mxm.*working_memory"):
        gb.mxm(G, G, gb.semirings.plus_times, working_memory=1 << 20)
    with pytest.raises(gb.ParameterError, match="gr.reduce_rows"):
        gb.reduce(G, gb.ops.plus, strategy="auto")
    with pytest.raises(gb.ParameterError, match="only for a gb.Matrix"):
        gb.reduce(G.to_scipy(), gb.ops.plus, mask=G)
    with pytest.raises(gb.ParameterError, match="only for a gb.Matrix"):
        gb.apply(gb.ops.abs, G.to_scipy(), out=G)
    # the graph operation's own checks apply
    with pytest.raises(gb.TypeCheckError):
        gb.apply(gb.ops.plus, G)  # a binary op needs left= or right=
    with pytest.raises(gb.InputError, match="inner dimensions"):
        gb.mxm(G, gb.Matrix.sparse((3, 3)), gb.semirings.plus_times)
