"""``ewise_union`` of matrices without mask or ``out`` merges two sorted CSR rows at a time
(the kernel sets' ``union_merge``: Numba in the compiled set, the NumPy key form in the
reference, the same on CuPy in the CUDA set). Each set against python-graphblas's
``ewise_union`` (pattern, values, dtype) on random matrices with empty rows, disjoint,
identical and nested patterns, empty operands, bool / int / float values, int32 and int64
index arrays; the merge kernel of every set against NumPy brute force; the masked and
``out=`` forms (the key path) against the same peer."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr

graphblas = pytest.importorskip("graphblas")
from graphblas import binary  # noqa: E402

HOST_SETS = ("reference", "compiled")


def related(P, Q, kind):
    """Two random patterns made ``kind``: random (as drawn), disjoint, identical, nested
    (Q within P), empty_a, empty_b or both_empty."""
    if kind == "disjoint":
        Q &= ~P
    elif kind == "identical":
        Q = P.copy()
    elif kind == "nested":
        Q &= P
    if kind in ("empty_a", "both_empty"):
        P[:] = False
    if kind in ("empty_b", "both_empty"):
        Q[:] = False
    return P, Q


def _pair(seed, shape, kind, dtypes=(np.float64, np.float64)):
    """Two patterns of one shape (``kind``: random, disjoint, identical, nested, empty_a,
    empty_b), rows 0 and 3 empty in both, stored zeros among the values."""
    rng = np.random.default_rng(seed)
    m, n = shape
    P, Q = related(rng.random(shape) < 0.3, rng.random(shape) < 0.3, kind)
    for R in (P, Q):
        R[0, :] = False
        R[min(3, m - 1), :] = False
    out = []
    for R, dt in zip((P, Q), dtypes):
        r, c = np.nonzero(R)
        v = rng.integers(-2, 4, r.size).astype(dt)
        out.append((r, c, v))
    return out


def _both(rc, shape, dtype):
    r, c, v = rc
    return (gb.Matrix.from_coo(r, c, v, shape),
            graphblas.Matrix.from_coo(r, c, v, nrows=shape[0], ncols=shape[1],
                                      dtype=np.dtype(dtype).name))


def _same(got, want):
    r, c, v = got.to_coo()
    wr, wc, wv = want.to_coo()
    assert np.array_equal(r, wr.astype(np.int64)) and np.array_equal(c, wc.astype(np.int64))
    assert np.dtype(got.dtype) == np.dtype(want.dtype.np_type), (got.dtype, want.dtype)
    assert np.array_equal(np.asarray(v, np.float64), np.asarray(wv, np.float64))


KINDS = ("random", "disjoint", "identical", "nested", "empty_a", "empty_b")


@pytest.mark.parametrize("backend", HOST_SETS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(9, 9), (6, 14), (15, 4)])
def test_union_rows_against_graphblas(backend, kind, shape):
    a, b = _pair(KINDS.index(kind) * 31 + shape[0] * shape[1], shape, kind)
    A, GA = _both(a, shape, np.float64)
    B, GB = _both(b, shape, np.float64)
    for op in ("minus", "first", "second", "max", "times"):
        got = gr.ewise_union(A, B, getattr(gb.ops, op), 10.0, -2.5, backend=backend)
        _same(got, GA.ewise_union(GB, getattr(binary, op), 10.0, -2.5).new())
        assert got.decision is not None


@pytest.mark.parametrize("backend", HOST_SETS)
@pytest.mark.parametrize("dtypes,defaults", [
    ((np.bool_, np.bool_), (True, False)),
    ((np.int32, np.int64), (3, -1)),
    ((np.int64, np.float64), (2, 0.5)),
    ((np.float32, np.int32), (1.5, 4)),
])
def test_union_rows_domains(backend, dtypes, defaults):
    shape = (12, 10)
    a, b = _pair(5, shape, "random", dtypes)
    A, GA = _both(a, shape, dtypes[0])
    B, GB = _both(b, shape, dtypes[1])
    ops = ("plus", "max", "first") if dtypes[0] == np.bool_ else ("minus", "plus", "max")
    for op in ops:
        got = gr.ewise_union(A, B, getattr(gb.ops, op), *defaults, backend=backend)
        _same(got, GA.ewise_union(GB, getattr(binary, op), *defaults).new())


@pytest.mark.parametrize("backend", HOST_SETS)
def test_union_rows_masked_and_out_take_the_key_path(backend):
    shape = (11, 13)
    a, b = _pair(9, shape, "random")
    A, GA = _both(a, shape, np.float64)
    B, GB = _both(b, shape, np.float64)
    M, GM = _both(_pair(10, shape, "random")[0], shape, np.float64)
    _same(gr.ewise_union(A, B, gb.ops.minus, 1.0, 2.0, mask=M.S, backend=backend),
          GA.ewise_union(GB, binary.minus, 1.0, 2.0).new(mask=GM.S))
    _same(gr.ewise_union(A, B, gb.ops.minus, 1.0, 2.0, mask=~M.S, backend=backend),
          GA.ewise_union(GB, binary.minus, 1.0, 2.0).new(mask=~GM.S))
    out = M.dup()
    gr.ewise_union(A, B, gb.ops.minus, 1.0, 2.0, out=out, accum=gb.ops.plus, backend=backend)
    want = GM.dup()
    want(accum=binary.plus) << GA.ewise_union(GB, binary.minus, 1.0, 2.0)
    _same(out, want)


def _brute_merge(A, B, xa, xb):
    """C's rows, columns and values (NaN where both store) and, in C's order, the shared
    entries' positions in C, A and B: NumPy on dense position grids."""
    PA, PB = A.toarray() != 0, B.toarray() != 0
    C = PA | PB
    r, c = np.nonzero(C)
    pos = -np.ones(C.shape, np.int64)
    pos[r, c] = np.arange(r.size)
    apos, bpos = -np.ones(C.shape, np.int64), -np.ones(C.shape, np.int64)
    apos[PA] = np.arange(PA.sum())
    bpos[PB] = np.arange(PB.sum())
    vals = np.full(r.size, np.nan)
    only_a, only_b, both = PA & ~PB, PB & ~PA, PA & PB
    vals[pos[only_a]] = xa[apos[only_a]]
    vals[pos[only_b]] = xb[bpos[only_b]]
    sr, sc = np.nonzero(both)
    return r, c, vals, pos[sr, sc], apos[sr, sc], bpos[sr, sc]


def _kernel_case(shape, kind, seed, itype):
    a, b = _pair(seed, shape, kind)
    A, B = (sps.csr_matrix((np.ones(r.size), (r, c)), shape=shape) for r, c, _ in (a, b))
    A.indices, B.indptr = A.indices.astype(itype), B.indptr.astype(itype)
    rng = np.random.default_rng(seed)
    return A, B, rng.random(A.nnz), rng.random(B.nnz)


def _check_merge(got, want, m):
    ptr, idx, vals, at, a_pos, b_pos = got
    r, c, wv, wat, wa, wb = want
    assert np.array_equal(ptr, np.concatenate(([0], np.cumsum(np.bincount(r, minlength=m)))))
    assert np.array_equal(idx, c)
    lone = ~np.isnan(wv)
    assert np.array_equal(vals[lone], wv[lone])
    for g, w in ((at, wat), (a_pos, wa), (b_pos, wb)):
        assert g.dtype == np.int64 and np.array_equal(g, w)


@pytest.mark.parametrize("backend", HOST_SETS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_union_merge_kernel(backend, kind, itype):
    shape = (40, 33)
    A, B, xa, xb = _kernel_case(shape, kind, 3, itype)
    got = gr.get_kernels(backend).union_merge(A, B, xa, xb, itype=np.dtype(np.int32))
    assert got[0].dtype == np.int32 and got[1].dtype == np.int32
    _check_merge(got, _brute_merge(A, B, xa, xb), shape[0])


def test_union_merge_compiled_parallel_ranges(monkeypatch):
    """Rows split over several ranges (the pool's work) give the one-range answer."""
    from gbdist.backends.compiled import graph as G
    monkeypatch.setattr(G, "SERIAL_WORK", 1)
    monkeypatch.setattr(G, "threads", lambda: 3)
    shape = (300, 200)
    A, B, xa, xb = _kernel_case(shape, "random", 11, np.int64)
    got = gr.get_kernels("compiled").union_merge(A, B, xa, xb, itype=np.dtype(np.int64))
    _check_merge(got, _brute_merge(A, B, xa, xb), shape[0])


@pytest.mark.gpu
def test_union_rows_cuda_equals_host():
    pytest.importorskip("cupy")
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    shape = (50, 37)
    for kind in KINDS:
        for dt in (np.float64, np.int64, np.bool_):
            a, b = _pair(13, shape, kind, (dt, dt))
            A, GA = _both(a, shape, dt)
            B, GB = _both(b, shape, dt)
            op = gb.ops.max if dt == np.bool_ else gb.ops.minus
            gop = binary.max if dt == np.bool_ else binary.minus
            got = gr.ewise_union(A.to_device(), B.to_device(), op, 1, 0).to_host()
            _same(got, GA.ewise_union(GB, gop, 1, 0).new())
