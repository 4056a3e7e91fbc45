"""``select`` on a host matrix without mask or ``out`` reads A's CSR directly (a flag per
entry, row pointers from the running count of kept flags): its entries, order, values and
index arrays against SciPy's ``tril`` / ``triu`` / ``diagonal`` and NumPy brute force, on
rectangular shapes, empty rows, stored zeros, int32 and int64 indices; and the same answer
as the masked path (a full structural mask takes the key path)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr


def _matrix(shape, index_dtype, dtype, seed):
    rng = np.random.default_rng(seed)
    A = sps.random(*shape, density=0.35, format="csr", random_state=rng)
    A.data = (np.round(A.data * 6) - 2).astype(dtype)  # some stored zeros, negatives
    A.data[::7] = 0
    A = A.tocsr()
    A.sort_indices()
    r = min(2, shape[0] - 1)
    A.data[A.indptr[r]:A.indptr[r + 1]] = 0  # an empty row
    A.eliminate_zeros()
    A.data[::5] = 0  # stored zeros that stay stored
    A.indices, A.indptr = A.indices.astype(index_dtype), A.indptr.astype(index_dtype)
    return A


def _dense_keep(A, op, k):
    i, j = np.nonzero(np.ones(A.shape, bool))
    d = (j - i).reshape(A.shape)
    return {"tril": d <= k, "triu": d >= k, "diag": d == k, "offdiag": d != k}[op]


@pytest.mark.parametrize("shape", [(9, 9), (7, 12), (13, 5)])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", ["tril", "triu", "diag", "offdiag"])
@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_positional_select_is_scipys(shape, index_dtype, op, k):
    A = _matrix(shape, index_dtype, np.float64, seed=shape[0] * 31 + k)
    got = gr.select(gb.Matrix(A), op, k).to_scipy()
    P = A.copy()
    P.data = np.arange(1, P.nnz + 1, dtype=np.float64)  # which stored entries survive
    keep = _dense_keep(A, op, k) & (P.toarray() != 0)
    want_pattern = np.flatnonzero(keep.ravel())
    got_pattern = np.flatnonzero(sps.csr_matrix((np.ones(got.nnz), got.indices, got.indptr),
                                                shape=got.shape).toarray().ravel())
    np.testing.assert_array_equal(got_pattern, want_pattern)
    np.testing.assert_array_equal(got.toarray(), np.where(keep, A.toarray(), 0))
    assert np.all(np.diff(got.indptr) >= 0) and got.indptr[-1] == got.nnz
    for r in range(got.shape[0]):  # sorted within rows, as the canonical form is
        row = got.indices[got.indptr[r]:got.indptr[r + 1]]
        assert np.all(np.diff(row) > 0)
    if op == "tril":
        ref = sps.tril(A, k=k, format="csr")
        assert got.nnz == ref.nnz


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("op,k", [(">", 0), ("<=", 1), ("==", 0), ("!=", 0), ("nonzero", 0)])
def test_value_select_matches_the_masked_path(dtype, op, k):
    A = _matrix((11, 8), np.int32, dtype, seed=4)
    M = gb.Matrix(A)
    fast = gr.select(M, op, k)
    keyed = gr.select(M, op, k, mask=gb.Matrix(A).S)  # the key path: the same entries
    assert fast.isequal(keyed) and fast.dtype == keyed.dtype
    vals = A.data
    want = {">": vals > k, "<=": vals <= k, "==": vals == k, "!=": vals != k,
            "nonzero": vals != 0}[op]
    assert fast.nvals == int(want.sum())


def test_empty_and_all_dropped():
    A = sps.csr_matrix((5, 5))
    assert gr.select(gb.Matrix(A), "tril", 0).nvals == 0
    B = sps.csr_matrix(np.triu(np.ones((4, 4)), 1))
    C = gr.select(gb.Matrix(B), "tril", 0)
    assert C.nvals == 0 and C.shape == (4, 4)
    np.testing.assert_array_equal(C.to_scipy().indptr, np.zeros(5))


def test_nothing_dropped_is_a_copy():
    """offdiag of a graph without self loops keeps every entry: the result equals A, in
    the requested domain, and holds arrays of its own."""
    rng = np.random.default_rng(2)
    A = sps.random(30, 30, density=0.2, format="csr", random_state=rng)
    A.setdiag(0)
    A.eliminate_zeros()
    A.sort_indices()
    M = gb.Matrix(A)
    C = gr.select(M, "offdiag", 0)
    assert C.isequal(M)
    for a, b in ((C.csr.data, M.csr.data), (C.csr.indices, M.csr.indices),
                 (C.csr.indptr, M.csr.indptr)):
        assert not np.shares_memory(a, b)
    D = gr.select(M, "offdiag", 0, dtype=np.int64)
    np.testing.assert_array_equal(D.to_scipy().toarray(), A.toarray().astype(np.int64))
