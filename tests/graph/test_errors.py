"""Typed errors with Expected / Got / Hint: shapes, masks, out=, ops of the wrong kind,
fill-0 products and unions that would be dense, mixed fills, devices, backends."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from gbdist.pairwise import metric_program

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


_DIST_ENTRY_POINTS = {
    "pairwise_distances(X)": lambda X: gb.pairwise_distances(X, metric="euclidean", backend="cpu"),
    "pairwise_distances(Y)": lambda Y: gb.pairwise_distances(np.eye(3), Y, metric="euclidean",
                                                             backend="cpu"),
    "pairwise_distances(precomputed)": lambda X: gb.pairwise_distances(X, metric="precomputed"),
    "knn(X)": lambda X: gb.knn(X, k=2, backend="cpu"),
    "knn(Y)": lambda Y: gb.knn(np.eye(3), Y, k=2, backend="cpu"),
    "NearestNeighbors.fit": lambda X: gb.NearestNeighbors(n_neighbors=2, backend="cpu").fit(X),
    "NearestNeighbors.fit(precomputed)":
        lambda X: gb.NearestNeighbors(n_neighbors=2, metric="precomputed").fit(X),
    "NearestNeighbors.kneighbors":
        lambda X: gb.NearestNeighbors(n_neighbors=2, backend="cpu").fit(np.eye(3)).kneighbors(X),
    "kneighbors_graph": lambda X: gb.kneighbors_graph(X, 2, backend="cpu"),
    "a compiled metric": lambda X: metric_program("euclidean")(backend="cpu", A=X, B=np.eye(3)),
}


@pytest.mark.parametrize("obj", ["Matrix", "Vector"])
@pytest.mark.parametrize("entry", sorted(_DIST_ENTRY_POINTS))
def test_distance_functions_refuse_graph_objects(entry, obj):
    """A gb.Matrix / gb.Vector given to a distance or neighbor function is an InputError
    that says what to pass instead (before: "X must be numeric", "Expected 2D array, got
    scalar array"), raised where the input first arrives (gbdist.pairwise.as_input, the
    estimators' validation, and host_csr for a compiled program)."""
    x = (gb.Matrix.from_coo([0, 1, 2], [0, 1, 2], [1.0, 2.0, 3.0], (3, 3)) if obj == "Matrix"
         else gb.Vector(np.array([1.0, 2.0, 3.0])))
    with pytest.raises(gb.InputError) as e:
        _DIST_ENTRY_POINTS[entry](x)
    err = e.value
    assert isinstance(err, ValueError)
    assert f"is a gb.{obj}" in err.message
    assert err.got.startswith(f"gb.{obj}") and "SciPy" in err.expected
    want = ".to_scipy()" if obj == "Matrix" else ".to_dense().reshape(1, -1)"
    assert want in err.hint and "read as 0" in err.hint
    if obj == "Matrix":  # the hint's conversion is accepted by the same entry point
        _DIST_ENTRY_POINTS[entry](x.to_scipy())
