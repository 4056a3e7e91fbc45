"""Typed errors with Expected / Got / Hint: shapes, masks, out=, ops of the wrong kind,
fill-0 products and unions that would be dense, mixed fills, devices, backends."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr

A = gb.Matrix(sps.random(4, 5, 0.5, format="csr", random_state=0))
B = gb.Matrix(sps.random(5, 3, 0.5, format="csr", random_state=1))


def test_shape_mismatches():
    with pytest.raises(gb.InputError, match="inner dimensions") as e:
        gr.mxm(A, A, gb.semirings.plus_times)
    assert isinstance(e.value, ValueError) and "Expected" in str(e.value)
    with pytest.raises(gb.InputError, match="size"):
        gr.mxv(A, gb.Vector(np.ones(4)), gb.semirings.plus_times)
    with pytest.raises(gb.InputError, match="size"):
        gr.vxm(gb.Vector(np.ones(5)), A, gb.semirings.plus_times)
    with pytest.raises(gb.InputError, match="shapes differ"):
        gr.ewise_add(A, B, gb.ops.plus)


def test_bad_masks_and_out():
    with pytest.raises(gb.InputError, match="mask's shape"):
        gr.mxm(A, B, gb.semirings.plus_times, mask=A.S)
    with pytest.raises(gb.InputError, match="a mask must be"):
        gr.mxm(A, B, gb.semirings.plus_times, mask=np.ones((4, 3), bool))
    with pytest.raises(gb.InputError, match="out="):
        gr.mxm(A, B, gb.semirings.plus_times, out=gb.Matrix.sparse((3, 3)))
    with pytest.raises(gb.InputError, match="out="):
        gr.mxv(A, gb.Vector(np.ones(5)), gb.semirings.plus_times, out=A)


def test_wrong_kinds_of_ops():
    with pytest.raises(gb.TypeCheckError, match="semiring"):
        gr.mxm(A, B, gb.ops.plus)
    with pytest.raises(gb.TypeCheckError, match="monoid"):
        gr.reduce_rows(A, gb.ops.minus)
    with pytest.raises(gb.TypeCheckError, match="unary"):
        gr.apply(gb.ops.plus, A)
    with pytest.raises(gb.TypeCheckError, match="binary op"):
        gr.ewise_add(A, A, gb.semirings.plus_times)
    with pytest.raises(gb.InputError, match="selector"):
        gr.select(A, "upper")
    with pytest.raises(gb.DefinitionError, match="not an identity"):
        gb.monoid(gb.ops.plus, identity=1)


def test_fill0_product_without_exact_sparse_result_is_refused():
    X = gb.Matrix(sps.random(4, 4, 0.5, format="csr", random_state=2), fill=0)
    with pytest.raises(gr.GraphSemanticsError, match="no exact sparse result") as e:
        gr.mxm(X, X, gb.semirings.min_plus)
    msg = str(e.value)
    assert "gb.mxm" in msg and "pairwise_distances" in msg and isinstance(e.value, ValueError)
    with pytest.raises(gr.GraphSemanticsError, match="identity"):
        gr.mxv(X, gb.Vector.from_coo([0], [1.0], 4, fill=0), gb.semirings.max_plus)
    with pytest.raises(gr.GraphSemanticsError):  # plus_absdiff: |x - 0| is not 0
        gr.mxm(X, X, gb.semirings.plus_absdiff)


def test_mixed_fills_refused():
    X = gb.Matrix(sps.random(4, 4, 0.5, format="csr", random_state=2), fill=0)
    G = gb.Matrix(sps.random(4, 4, 0.5, format="csr", random_state=3))
    with pytest.raises(gb.InputError, match="different fills"):
        gr.mxm(X, G, gb.semirings.plus_times)
    # a fully stored operand has no unstored entries: its fill does not matter
    w = gr.mxv(X, gb.Vector(np.ones(4)), gb.semirings.plus_times)
    np.testing.assert_allclose(w.to_dense(), X.to_dense() @ np.ones(4))


def test_backends():
    with pytest.raises(gb.ParameterError, match="unknown graph backend"):
        gr.mxm(A, B, gb.semirings.plus_times, backend="gpu")
    with pytest.raises(gb.BackendError, match="device"):
        gr.mxm(A, B, gb.semirings.plus_times, backend="cuda")
    r = gr.mxm(A, B, gb.semirings.plus_times, backend="reference")
    np.testing.assert_allclose(r.to_dense(), A.to_dense() @ B.to_dense())


def test_duplicates_and_index_errors():
    with pytest.raises(gb.InputError, match="duplicate"):
        gb.Vector.from_coo([1, 1], [1.0, 2.0], 3)
    with pytest.raises(gb.InputError, match="out of range"):
        gr.extract(A, [7], None)
    with pytest.raises(gb.InputError, match="integers"):
        gr.extract(A, [0.5], None)


def test_fully_stored_data_keeps_fill0_and_accum_is_checked():
    X = gb.Matrix(np.arange(1.0, 10.0).reshape(3, 3), fill=0)  # every entry stored
    assert X.effective_fill is None
    S = gr.select(X, "tril")
    assert S.fill == 0 and S.nvals == 6  # dropped entries of data are zeros
    np.testing.assert_array_equal(S.to_dense(), np.tril(X.to_dense()))
    assert gr.mxm(X, X, gb.semirings.plus_times).fill == 0
    with pytest.raises(gb.TypeCheckError, match="binary op"):
        gr.mxm(A, B, gb.semirings.plus_times, accum=gb.semirings.plus_times)
    assert A.decision is None
