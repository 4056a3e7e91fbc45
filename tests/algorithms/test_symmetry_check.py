"""The undirected-graph check (``pattern_is_symmetric``, behind triangle_count, ktruss and
components) answers without building Aᵀ: the kernel sets' ``pattern_symmetric`` against
NumPy brute force (A's pattern equal to its transpose's) on symmetric graphs with self
loops and empty rows, and on directed ones missing a single mirror (first row, last row, a
hub's row) or holding an extra entry below the diagonal whose mirror is absent; row ranges
split over several threads; the InputError of triangle_count / ktruss on a directed input;
and Aᵀ not kept on the matrix afterwards."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr
from gbdist.algorithms._common import pattern_is_symmetric

HOST_SETS = ("reference", "compiled")


def _sym(n, seed, loops=True):
    rng = np.random.default_rng(seed)
    P = rng.random((n, n)) < 0.15
    P[0, 0] = False
    P = P | P.T
    P[2, :] = P[:, 2] = False  # an empty row and column
    if not loops:
        np.fill_diagonal(P, False)
    P[5, :] = P[:, 5] = True  # a hub
    P[5, 2] = P[2, 5] = False
    return P


def _cases():
    out = []
    for seed in range(3):
        P = _sym(30, seed)
        out.append(("symmetric", P))
        for i, j in ((0, None), (29, None), (5, None)):  # drop one mirror in that row
            Q = P.copy()
            cols = np.flatnonzero(Q[i] & (np.arange(30) != i))
            Q[i, cols[len(cols) // 2]] = False
            out.append((f"missing in row {i}", Q))
        Q = P.copy()
        below = np.argwhere(~Q & np.tri(30, k=-1, dtype=bool))[0]
        Q[below[0], below[1]] = True  # an extra entry below the diagonal, no mirror
        out.append(("extra below", Q))
    out.append(("empty", np.zeros((7, 7), bool)))
    out.append(("self loops only", np.eye(6, dtype=bool)))
    return out


def _csr(P, itype=np.int64):
    r, c = np.nonzero(P)
    A = sps.csr_matrix((np.ones(r.size), (r, c)), shape=P.shape)
    A.indices, A.indptr = A.indices.astype(itype), A.indptr.astype(itype)
    return A


@pytest.mark.parametrize("backend", HOST_SETS)
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_pattern_symmetric_kernel(backend, itype):
    K = gr.get_kernels(backend)
    for what, P in _cases():
        assert K.pattern_symmetric(_csr(P, itype)) == bool((P == P.T).all()), what


def test_pattern_symmetric_compiled_ranges(monkeypatch):
    from gbdist.backends.compiled import graph as G
    monkeypatch.setattr(G, "SPMV_SERIAL", 1)
    monkeypatch.setattr(G, "threads", lambda: 3)
    K = gr.get_kernels("compiled")
    for what, P in _cases():
        A = _csr(P)
        assert len(G._nnz_ranges(A.indptr, P.shape[0])) > 1 or P.sum() < 8
        assert K.pattern_symmetric(A) == bool((P == P.T).all()), what


@pytest.mark.parametrize("backend", HOST_SETS)
def test_check_keeps_no_transpose_and_refuses_directed(backend):
    P = _sym(40, 7, loops=False)
    M = gb.Matrix(_csr(P))
    assert pattern_is_symmetric(M, backend)
    assert not M.has_transpose()  # the check built no Aᵀ to keep
    alg.triangle_count(M, backend=backend)
    alg.ktruss(M, 3, backend=backend)
    Q = P.copy()
    Q[0, np.flatnonzero(Q[0])[0]] = False
    D = gb.Matrix(_csr(Q))
    for call in (lambda: alg.triangle_count(D, backend=backend),
                 lambda: alg.ktruss(D, 3, backend=backend)):
        with pytest.raises(gb.InputError, match="undirected"):
            call()
    for X, want in ((D, False), (M, True)):  # with Aᵀ cached: the two CSR compared
        Y = gb.Matrix(X.csr.copy())
        Y.T
        assert Y.has_transpose() and pattern_is_symmetric(Y, backend) is want


def test_answer_kept_per_version():
    """The answer is kept on the matrix until it changes: a write that breaks the symmetry
    is seen."""
    P = _sym(20, 3, loops=False)
    M = gb.Matrix(_csr(P))
    assert pattern_is_symmetric(M)
    i, j = 0, int(np.flatnonzero(~P[0])[1])
    gr.assign(M, 1.0, [i], [j])  # in place: a new version of M
    assert not pattern_is_symmetric(M)
    with pytest.raises(gb.InputError, match="undirected"):
        alg.triangle_count(M)


@pytest.mark.gpu
def test_pattern_symmetric_cuda():
    pytest.importorskip("cupy")
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    for what, P in _cases():
        M = gb.Matrix(_csr(P)).to_device()
        assert pattern_is_symmetric(M) == bool((P == P.T).all()), what
        assert not M.has_transpose()
