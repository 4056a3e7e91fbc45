"""The unmasked ``mxm`` of the compiled kernels against python-graphblas (SuiteSparse) on
operands made to reach every row form of ``spgemm_fill``: rows read off the bitmap in
column order (at least (n/64)/BITMAP columns), rows whose few columns are sorted (many
terms on a handful of columns), the small-row form, empty rows, a row of A holding every
column and a row of B holding every column (C rows of all n columns); int32, int64,
float32 and float64 values, plus_times, plus_pair and min_plus; 1 and 2 threads, the rows
split into ranges. Patterns exact; integer values exact, float64 within 1e-12 relative
(⊕ may fold in another order), float32 within 1e-6."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr

grb = pytest.importorskip("graphblas")
cg = pytest.importorskip("gbdist.backends.compiled.graph")
gs = pytest.importorskip("gbdist.backends.compiled.graph_spgemm")


def operands(dtype, m=300, k=260, n=3000, seed=0):
    """(A, B) CSR with int32 indices: A's row 0 and every 7th row empty, row 1 all k
    columns, rows 2-9 on B's rows 0-39 only (each of those holds the same 3 columns: over
    32 terms, 3 distinct columns: sorted), the rest random (2-12 entries); B's row 40 all n
    columns, rows 41-99 empty, the rest 0-60 random columns."""
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    for i in range(m):
        if i == 0 or i % 7 == 0:
            continue
        if i == 1:
            c = np.arange(k)
        elif i < 10:
            c = rng.choice(40, size=12, replace=False)
        else:
            c = rng.choice(k, size=rng.integers(2, 13), replace=False)
        rows += [i] * c.size
        cols += list(c)
    A = _csr(rows, cols, (m, k), dtype, rng)
    rows, cols = [], []
    for r in range(k):
        if r < 40:
            c = np.array([5, 1700, 2999])
        elif r == 40:
            c = np.arange(n)
        elif r < 100:
            continue
        else:
            c = rng.choice(n, size=rng.integers(0, 61), replace=False)
        rows += [r] * c.size
        cols += list(c)
    return A, _csr(rows, cols, (k, n), dtype, rng)


def _csr(rows, cols, shape, dtype, rng):
    kind = np.dtype(dtype).kind
    vals = rng.integers(-3, 6, len(rows)) if kind in "iu" else rng.uniform(-1, 2, len(rows))
    M = sps.csr_matrix((vals.astype(dtype), (rows, cols)), shape=shape)
    M.sort_indices()
    M.indices, M.indptr = M.indices.astype(np.int32), M.indptr.astype(np.int32)
    return M


def peer(A, B, name, dtype):
    a, b = grb.io.from_scipy_sparse(A), grb.io.from_scipy_sparse(B)
    sr = getattr(grb.semiring, name)
    C = a.mxm(b, sr if name == "plus_pair" else sr[grb.dtypes.lookup_dtype(dtype)]).new()
    S = grb.io.to_scipy_sparse(C, format="csr")
    S.sort_indices()
    return S


CASES = [("plus_times", np.float64), ("plus_times", np.float32), ("plus_times", np.int64),
         ("plus_times", np.int32), ("plus_pair", np.int64), ("min_plus", np.float64),
         ("min_plus", np.int32)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name,dtype", CASES)
def test_unmasked_mxm_row_forms_vs_graphblas(monkeypatch, name, dtype, threads):
    monkeypatch.setenv("GBDIST_NUM_THREADS", str(threads))
    monkeypatch.setattr(cg, "SERIAL_WORK", 0)  # the rows split into ranges
    monkeypatch.setattr(cg, "HASH_MIN_N", 10 ** 9)  # the dense accumulator's forms
    A, B = operands(dtype)
    C = gr.mxm(gb.Matrix(A), gb.Matrix(B), getattr(gb.semirings, name), backend="compiled")
    got = C.to_scipy()
    want = peer(A, B, name, dtype)
    c = np.diff(got.indptr)
    n, nw = B.shape[1], (B.shape[1] + 63) // 64
    big = c[c > 32]  # over the small-row form's terms, at least
    assert c[1] == n and c[0] == 0 and c[2] == 3  # a full row, an empty one, a sorted one
    assert (big * gs.BITMAP >= nw).any() and (c[2:10] * gs.BITMAP < nw).all()
    assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
    assert got.has_sorted_indices
    wv = want.data.astype(np.float64)
    if np.dtype(dtype).kind == "f":
        rtol = 1e-6 if np.dtype(dtype) == np.float32 else 1e-12
        np.testing.assert_allclose(got.data.astype(np.float64), wv, rtol=rtol, atol=rtol)
    else:
        assert np.array_equal(got.data.astype(np.int64), want.data.astype(np.int64))


@pytest.mark.parametrize("threads", [1, 2])
def test_unmasked_mxm_forms_agree_bit_for_bit(monkeypatch, threads):
    """The small-row form off and on, hash and dense accumulators: the same bits."""
    monkeypatch.setenv("GBDIST_NUM_THREADS", str(threads))
    monkeypatch.setattr(cg, "SERIAL_WORK", 0)
    A, B = operands(np.float64, seed=3)
    got = []
    for small, hash_min_n, ratio in ((0, 10 ** 9, 64), (32, 10 ** 9, 64), (0, 0, 1e-9)):
        monkeypatch.setattr(cg, "SMALL_ROW", small)
        monkeypatch.setattr(cg, "HASH_MIN_N", hash_min_n)
        monkeypatch.setattr(cg, "HASH_RATIO", ratio)
        got.append(gr.mxm(gb.Matrix(A), gb.Matrix(B), gb.semirings.plus_times,
                          backend="compiled").to_scipy())
    for C in got[1:]:
        assert np.array_equal(C.indptr, got[0].indptr)
        assert np.array_equal(C.indices, got[0].indices)
        assert np.array_equal(C.data, got[0].data)
