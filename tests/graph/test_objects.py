"""gb.Matrix / gb.Vector: construction from every input kind, dtypes, fills, caching of
prepared forms, conversions, equality; extract and assign against NumPy indexing."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from graphcase import dev, random_graph


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "dok", "bsr"])
@pytest.mark.parametrize("array_class", [False, True])
def test_matrix_from_scipy_keeps_stored_zeros(fmt, array_class):
    rng = np.random.default_rng(0)
    A, W, P = random_graph(rng, 8, 6, zeros=3)
    src = (sps.csr_array(A) if array_class else A).asformat(fmt)
    assert src.nnz == P.sum()  # the stored zeros survive the conversion
    M = gb.Matrix(src)
    assert M.shape == (8, 6) and M.nvals == P.sum() and M.dtype == np.float64
    r, c, v = M.to_coo()
    got = np.zeros((8, 6), bool)
    got[r, c] = True
    np.testing.assert_array_equal(got, P)
    np.testing.assert_array_equal(v, W[r, c])
    assert M.fill == "absent" and not M.on_device


def test_matrix_from_dense_and_duplicates_summed():
    M = gb.Matrix(np.array([[0, 2], [3, 0]], dtype=np.int32))
    assert M.nvals == 2 and M.dtype == np.int32
    coo = sps.coo_matrix(([1.0, 2.0, 0.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    M = gb.Matrix(coo)  # SciPy's rule: duplicates are summed; the stored 0 stays
    np.testing.assert_array_equal(M.to_dense(fill=-1), [[-1, 3], [0, -1]])


def test_from_coo_duplicates():
    with pytest.raises(gb.InputError, match="duplicate"):
        gb.Matrix.from_coo([0, 0], [1, 1], [1.0, 2.0], (2, 2))
    M = gb.Matrix.from_coo([0, 0, 1], [1, 1, 0], [5.0, 2.0, 1.0], (2, 2), dup_op=gb.ops.minus)
    np.testing.assert_array_equal(M.to_dense(), [[0, 3.0], [1.0, 0]])
    M = gb.Matrix.from_coo([1], [1], True, (2, 3))
    assert M.dtype == np.bool_ and M.nvals == 1
    with pytest.raises(gb.InputError, match="outside"):
        gb.Matrix.from_coo([2], [0], [1.0], (2, 2))
    v = gb.Vector.from_coo([3, 1], [1, 2], 5, dtype=np.float32)
    assert v.indices.tolist() == [1, 3] and v.values.tolist() == [2.0, 1.0]
    assert v.dtype == np.float32


@pytest.mark.parametrize("dtype,want", [(np.int8, np.int64), (np.uint16, np.int64),
                                        (np.float16, np.float32), (np.bool_, np.bool_)])
def test_dtypes_widen_to_the_five_graph_types(dtype, want):
    assert gb.Matrix(np.eye(3, dtype=dtype)).dtype == want
    with pytest.raises(gb.InputError, match="dtype"):
        gb.Matrix(np.eye(2, dtype=np.complex128))


def test_fill_and_effective_fill():
    with pytest.raises(gb.InputError, match="fill"):
        gb.Matrix(np.eye(2), fill=1)
    X = gb.Matrix(np.eye(2), fill=0)
    assert X.fill == 0 and X.effective_fill == 0
    assert gb.Matrix(np.ones((2, 2))).effective_fill is None  # every entry stored


def test_prepared_forms_cached_and_invalidated():
    A = gb.Matrix(sps.random(20, 20, 0.2, format="csr", random_state=1))
    calls = []
    build = lambda: calls.append(1) or len(calls)  # noqa: E731
    assert A.prepared("x", build) == 1 and A.prepared("x", build) == 1
    k1 = A.keys()
    assert A.keys() is k1
    gr.assign(A, 7.0, [0], [0])
    assert A.prepared("x", build) == 2  # rebuilt after the change
    assert A.keys() is not k1 and A.to_dense()[0, 0] == 7.0


def test_vector_basics_and_isequal():
    v = gb.Vector(np.array([0.0, 2.0, 3.0]))  # every entry stored, the 0 too
    assert v.nvals == 3 and v.size == 3 and v.to_dense().tolist() == [0, 2, 3]
    w = gb.Vector.from_coo([1, 2], [2.0, 3.0], 3)
    assert not v.isequal(w) and w.isequal(gb.Vector.from_coo([2, 1], [3.0, 2.0], 3))
    assert w.to_dense(fill=np.nan)[0] != w.to_dense(fill=np.nan)[0]
    assert gb.Vector.sparse(4, np.int32).nvals == 0
    A = gb.Matrix(np.array([[1, 0], [0, 2]]))
    assert A.isequal(gb.Matrix(np.array([[1, 0], [0, 2]], dtype=np.int32)))  # same family
    assert not A.isequal(gb.Matrix(np.array([[1.0, 0], [0, 2]])))


@pytest.mark.parametrize("rows,cols", [(None, None), ([3, 0, 3], [1, 4]), (slice(1, 8, 2), None),
                                       ([-1], slice(None, None, -1)), ([], [0])])
def test_extract_matches_numpy(kernels, rows, cols):
    rng = np.random.default_rng(4)
    A, W, P = random_graph(rng, 9, 7, p=0.5)
    r = gr.extract(dev(kernels, gb.Matrix(A)), rows, cols).to_host()
    ri = np.arange(9)[slice(None) if rows is None else rows]
    ci = np.arange(7)[slice(None) if cols is None else cols]
    ri, ci = np.arange(9)[ri], np.arange(7)[ci]
    want_p, want_w = P[np.ix_(ri, ci)], W[np.ix_(ri, ci)]
    got = r.to_dense(fill=-1)
    np.testing.assert_array_equal(got >= 0, want_p)
    np.testing.assert_array_equal(got[want_p], want_w[want_p])
    v = gb.Vector.from_coo([1, 4, 5], [1.0, 0.0, 3.0], 7)
    e = gr.extract(v, [5, 1, 1, 2])
    assert e.indices.tolist() == [0, 1, 2] and e.values.tolist() == [3.0, 1.0, 1.0]


def test_assign_submatrix_scalar_accum_mask():
    C = gb.Matrix(np.array([[1.0, 2, 0], [0, 3, 4], [5, 0, 0]]))
    V = gb.Matrix(sps.csr_matrix(([9.0, 0.0], ([0, 1], [0, 0])), shape=(2, 2)))
    gr.assign(C, V, [0, 2], [1, 2])  # C(0,1)=9, C(2,1)=0 stored; C(0,2),(2,2) unstored
    np.testing.assert_array_equal(C.to_dense(fill=-1), [[1, 9, -1], [-1, 3, 4], [5, 0, -1]])
    gr.assign(C, 1.0, [1], None, accum=gb.ops.plus)  # row 1 += 1, unstored become 1
    np.testing.assert_array_equal(C.to_dense(fill=-1), [[1, 9, -1], [1, 4, 5], [5, 0, -1]])
    M = gb.Matrix(np.array([[1, 0, 0], [0, 0, 0], [0, 0, 1]], dtype=bool))
    gr.assign(C, 7.0, None, None, mask=M.S, replace=True)
    np.testing.assert_array_equal(C.to_dense(fill=-1), [[7, -1, -1], [-1, -1, -1], [-1, -1, 7]])
    with pytest.raises(gb.InputError, match="duplicate"):
        gr.assign(C, 1.0, [0, 0], [1])
    with pytest.raises(gb.InputError, match="shape"):
        gr.assign(C, V, [0], [1])
    v = gb.Vector.sparse(5)
    gr.assign(v, 2.0, [1, 3])
    assert v.indices.tolist() == [1, 3] and v.values.tolist() == [2.0, 2.0]
