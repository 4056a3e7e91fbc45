"""Reductions to rows, columns and a scalar: graphs ignore unstored entries (the issue's
wrong answer: a graph's row min is the stored minima), fill-0 data counts its zeros;
built-in and user monoids, every dtype, masks and accum."""
from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from graphcase import assert_matches, dev, random_graph

POR = gb.monoid(gb.op("por", lambda x, y: x + y - x * y))


def test_row_min_of_a_graph_is_the_stored_minima(kernels):
    # the case: GraphBLAS gives [1, 2, 3, 1]; counting unstored entries gave [0, 0, 0, 0]
    A = sps.csr_matrix(np.array([[0, 1, 4, 0], [2, 0, 0, 5], [0, 3, 0, 0], [1, 0, 7, 0.]]))
    w = gr.reduce_rows(dev(kernels, gb.Matrix(A)), gb.ops.min)
    np.testing.assert_array_equal(w.to_host().to_dense(), [1, 2, 3, 1])
    assert w.nvals == 4
    wx = gr.reduce_rows(gb.Matrix(A, fill=0), gb.ops.min)  # data: the zeros count
    np.testing.assert_array_equal(wx.to_dense(fill=-9), [0, 0, 0, 0])
    assert "stored minima" in gr.explain(w)


def _py(name):
    return {"plus": lambda a, b: a + b, "min": min, "max": max, "times": lambda a, b: a * b,
            "lor": lambda a, b: float(a != 0 or b != 0), "por": lambda a, b: a + b - a * b}[name]


def _monoid(name):
    return POR if name == "por" else getattr(gb.ops, name)


@pytest.mark.parametrize("name,dtype", [("plus", np.float64), ("plus", np.int32), ("min", np.int64),
                                        ("max", np.float32), ("times", np.int64),
                                        ("lor", np.bool_), ("por", np.float64)])
@pytest.mark.parametrize("axis", ["rows", "cols", "scalar"])
@pytest.mark.parametrize("fill", ["absent", 0])
def test_reductions_match_brute_force(kernels, name, dtype, axis, fill):
    rng = np.random.default_rng(2)
    A, W, P = random_graph(rng, 11, 8, p=0.4, dtype=dtype)
    if name == "por":
        A.data, W = A.data / 5, W / 5
    if name == "times":
        A.data, W = np.minimum(A.data, 2), np.minimum(W, 2)  # no overflow
    Am = dev(kernels, gb.Matrix(A, fill=fill))
    add = _py(name)
    P2 = P if fill == "absent" else np.ones_like(P)
    Wt, Pt = (W, P2) if axis != "cols" else (W.T, P2.T)
    if axis == "scalar":
        terms = Wt[Pt].tolist()  # row-major order
        want = functools.reduce(add, terms) if terms else None
        got = gr.reduce_scalar(Am, _monoid(name))
        assert np.asarray(got).dtype == np.dtype(dtype)
        np.testing.assert_allclose(float(got), float(np.asarray(want).astype(dtype)), rtol=1e-6)
        return
    fn = gr.reduce_rows if axis == "rows" else gr.reduce_cols
    w = fn(Am, _monoid(name))
    want = np.zeros(Wt.shape[0])
    present = Pt.any(axis=1)
    for i in np.nonzero(present)[0]:
        want[i] = functools.reduce(add, Wt[i][Pt[i]].tolist())
    assert_matches(w, want, present, dtype, rtol=1e-6 if np.dtype(dtype).kind == "f" else 0)
    if fill == "absent":
        assert not present.all()  # the empty row / column is absent from the result


def test_reduce_scalar_empty_is_the_identity():
    E = gb.Matrix.sparse((3, 4), np.float64)
    assert gr.reduce_scalar(E, gb.ops.plus) == 0
    assert gr.reduce_scalar(E, gb.ops.min) == np.inf
    assert gr.reduce_scalar(gb.Matrix.sparse((3, 4), np.int32), gb.ops.min) == np.iinfo(np.int32).max
    assert gr.reduce_scalar(gb.Vector.sparse(5, np.bool_), gb.ops.land) is np.True_ or \
        gr.reduce_scalar(gb.Vector.sparse(5, np.bool_), gb.ops.land) == True  # noqa: E712


def test_reduce_rows_with_mask_and_accum():
    A = gb.Matrix(sps.csr_matrix(np.array([[1, 2, 0], [0, 0, 0], [4, 0, 5.]])))
    out = gb.Vector.from_coo([0, 1], [10.0, 20.0], 3)
    m = gb.Vector.from_coo([0, 2], [True, True], 3)
    r = gr.reduce_rows(A, gb.ops.plus, mask=m.S, accum=gb.ops.plus, out=out)
    assert r is out
    assert r.indices.tolist() == [0, 1, 2] and r.values.tolist() == [13.0, 20.0, 9.0]


def test_bool_plus_stays_bool_unless_dtype_given():
    A = gb.Matrix(sps.csr_matrix(np.array([[1, 1, 0], [0, 1, 0]], dtype=bool)))
    assert gr.reduce_rows(A, gb.ops.plus).dtype == np.bool_
    np.testing.assert_array_equal(gr.reduce_rows(A, gb.ops.plus, dtype=np.int64).to_dense(), [2, 1])
