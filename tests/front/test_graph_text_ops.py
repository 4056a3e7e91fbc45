"""The GraphBLAS operations added to the Python API (ewise_union, index-unary select and
apply with built-in and user ops, count / argmin / argmax, kronecker, diag, concat,
resize) written in graph definitions: each equals the Python call on the same operands,
and the Python call is checked against NumPy here too. Also: a positional semiring on
data operands is a clear TypeCheckError."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from gbdist.errors import ArityError, TypeCheckError, UnknownNameError

pytestmark = pytest.mark.usefixtures("isolated_definitions")


def matrix(m, n, density, seed):
    A = sps.random(m, n, density=density, random_state=seed, format="csr")
    A.data = np.round(A.data * 10 - 4)  # negative, zero and positive stored values
    return A


A = matrix(7, 6, 0.45, 1)
B = matrix(7, 6, 0.45, 2)
C = matrix(3, 4, 0.5, 3)


def stored(M):
    out = np.zeros(M.shape, bool)
    coo = M.tocoo()
    out[coo.row, coo.col] = True
    return out


def dense_of(x, fill=0):
    return x.to_dense(fill=fill) if hasattr(x, "to_dense") else np.asarray(x)


def same(a, b):
    assert type(a) is type(b)
    assert a.shape == b.shape and np.dtype(a.dtype) == np.dtype(b.dtype)
    assert a.isequal(b)


def test_ewise_union_in_text():
    gb.define("graph u(A, B) = ewise_union(A, B, minus, 10, -3)")
    got = gr.run("u", A, B)
    same(got, gr.ewise_union(gb.Matrix(A), gb.Matrix(B), gb.ops.minus, 10, -3))
    a, b = A.toarray(), B.toarray()
    pa, pb = stored(A), stored(B)  # stored zeros are entries of a graph
    want = np.where(pa, a, 10) - np.where(pb, b, -3)
    union = pa | pb
    assert np.array_equal(dense_of(got)[union], want[union])
    assert got.nvals == union.sum()


@pytest.mark.parametrize("text, python", [
    ("select(A, valuegt, 0)", lambda M: gr.select(M, "valuegt", 0)),
    ("select(A, valuele, -1)", lambda M: gr.select(M, "valuele", -1)),
    ("select(A, rowle, 3)", lambda M: gr.select(M, "rowle", 3)),
    ("select(A, colgt, 2)", lambda M: gr.select(M, "colgt", 2)),
    ("apply(rowindex, A)", lambda M: gr.apply("rowindex", M)),
    ("apply(colindex, A, right=2)", lambda M: gr.apply("colindex", M, thunk=2)),
    ("apply(diagindex, A)", lambda M: gr.apply("diagindex", M)),
])
def test_builtin_index_unary_ops_in_text(text, python):
    g = gb.define(f"graph t(A) = {text}").graphs["t"]
    got = gr.run(g, A)
    same(got, python(gb.Matrix(A)))
    i, j = np.nonzero(stored(A))
    if text.startswith("apply(rowindex"):
        assert np.array_equal(got.to_dense()[i, j], i)
    if text.startswith("select(A, valuegt"):
        assert np.array_equal(got.to_dense(), np.where(A.toarray() > 0, A.toarray(), 0))


def test_user_index_unary_ops_in_text_equal_python_ones():
    gb.define("""
    # entries within w of the diagonal, positive
    op band(v, r, c, w) = abs(r - c) <= w and v > 0
    op scaled(v, r, c, w) = v * (r + 1) + w
    graph b(A) = select(A, band, 1)
    graph s(A) = apply(scaled, A, right=0.5)
    """)
    band = gr.index_unary("band", lambda x, i, j, y: gb.where(abs(i - j) <= y, x > 0, False))
    scaled = gr.index_unary("scaled", lambda x, i, j, y: x * (i + 1) + y, result="value")
    M = gb.Matrix(A)
    same(gr.run("b", A), gr.select(M, band, 1))
    same(gr.run("s", A), gr.apply(scaled, M, thunk=0.5))
    a = A.toarray()
    i, j = np.indices(a.shape)
    keep = stored(A) & (np.abs(i - j) <= 1) & (a > 0)
    assert np.array_equal(gr.run("b", A).to_dense(), np.where(keep, a, 0))
    r, c = np.nonzero(stored(A))
    assert np.allclose(gr.run("s", A).to_dense()[r, c], a[r, c] * (r + 1) + 0.5)
    assert "band(x, i, j, y) = " in gb.explain("b").__str__()


@pytest.mark.parametrize("name", ["count", "argmin", "argmax"])
@pytest.mark.parametrize("axis", ["rows", "cols"])
def test_count_argmin_argmax_in_text(name, axis):
    g = gb.define(f"graph t(A) = {name}(A, axis={axis})").graphs["t"]
    got = gr.run(g, A)
    same(got, getattr(gr, name)(gb.Matrix(A), axis))
    if name == "count":
        want = np.diff((A if axis == "rows" else A.tocsc()).indptr)
        assert np.array_equal(got.to_dense(), want)


def test_kronecker_diag_concat_resize_in_text():
    gb.define("""
    graph k(A, C) = kronecker(A, C, times)
    graph d(A) = diag(count(A), -1)
    graph dm(A) = diag(A, 1)
    graph cr(A, B) = concat(A, B, A)
    graph cc(A, B) = concat(A, B, axis=cols)
    graph cv(A) = concat(count(A), reduce_rows(A, max))
    graph r(A) = resize(A, 4, 9)
    """)
    MA, MB, MC = gb.Matrix(A), gb.Matrix(B), gb.Matrix(C)
    same(gr.run("k", A, C), gr.kronecker(MA, MC, gb.ops.times))
    assert np.array_equal(gr.run("k", A, C).to_dense(), np.kron(A.toarray(), C.toarray()))
    same(gr.run("d", A), gr.diag(gr.count(MA), -1))
    same(gr.run("dm", A), gr.diag(MA, 1))
    assert np.array_equal(gr.run("dm", A).to_dense(), np.diag(A.toarray(), 1))
    same(gr.run("cr", A, B), gr.concat([[MA], [MB], [MA]]))
    assert np.array_equal(gr.run("cr", A, B).to_dense(),
                          np.vstack([A.toarray(), B.toarray(), A.toarray()]))
    assert np.array_equal(gr.run("cc", A, B).to_dense(), np.hstack([A.toarray(), B.toarray()]))
    cv = gr.run("cv", A)
    assert cv.size == 14 and cv.dtype == np.float64
    r = gr.run("r", A)
    assert r.shape == (4, 9)
    assert np.array_equal(r.to_dense()[:, :6], A.toarray()[:4])
    assert A.shape == (7, 6)  # the operand is not resized


def test_new_operations_are_checked_when_defined():
    with pytest.raises(TypeCheckError, match="predicate"):
        gb.define("graph e(A) = select(A, rowindex)")
    with pytest.raises(ArityError, match="compares with k"):
        gb.define("graph e(A) = select(A, valuelt)")
    with pytest.raises(UnknownNameError, match="axis"):
        gb.define("graph e(A) = count(A, axis=diagonal)")
    with pytest.raises(TypeCheckError, match="needs a matrix"):
        gb.define("graph e(A) = count(reduce_rows(A, plus))")
    with pytest.raises(TypeCheckError, match="whole number"):
        gb.define("graph e(A) = diag(A, 0.5)")
    with pytest.raises(ArityError, match="right="):
        gb.define("graph e(A) = apply(rowindex, A, left=1)")
    with pytest.raises(ArityError):
        gb.define("graph e(A, B) = ewise_union(A, B, minus, 0)")
    with pytest.raises(TypeCheckError, match="needs a matrix"):
        gb.define("graph e(A) = kronecker(reduce_rows(A, plus), A, times)")


def test_positional_semiring_on_data_operands_is_a_typed_error():
    X = np.arange(12.0).reshape(3, 4)
    Y = np.ones((4, 2))
    with pytest.raises(TypeCheckError) as info:
        gb.mxm(X, Y, gb.semirings.min_firstj)
    e = info.value
    assert "positional semirings take graph operands" in e.message
    assert "gr.mxm(gb.Matrix(X)" in e.expected and "gb.Matrix(X)" in e.hint
    with pytest.raises(TypeCheckError, match="positional"):
        gb.mxv(X, np.ones(4), gb.semirings.any_secondi)
    # as graphs every entry is stored: min over k of the column k of X's entry is 0, and
    # secondj is j
    got = gb.mxm(gb.Matrix(sps.csr_matrix(X + 1)), gb.Matrix(sps.csr_matrix(Y)),
                 gb.semirings.min_firstj)
    assert np.array_equal(got.to_dense(), np.zeros((3, 2)))
    got = gb.mxm(gb.Matrix(sps.csr_matrix(X + 1)), gb.Matrix(sps.csr_matrix(Y)),
                 gb.semirings.max_secondj)
    assert np.array_equal(got.to_dense(), np.tile([0, 1], (3, 1)))
