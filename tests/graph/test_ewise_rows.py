"""``ewise_add`` / ``ewise_mult`` of matrices without mask or ``out`` merge two sorted CSR
rows at a time (:mod:`gbdist.graph.rowwise`: the kernel sets' ``union_merge`` and
``intersect_merge``), and ``apply`` without them keeps A's pattern. Each host kernel set
against python-graphblas (pattern, values, dtype) on random matrices with empty rows and
disjoint, identical, nested and empty patterns, mixed value types; the intersection kernel
of each set against NumPy brute force (positions included, several row ranges on the
compiled set); the results never share an operand's arrays. A union where one pattern lies
within the other (nested, identical, empty) is the intersection on the larger pattern on
the compiled set."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr

from tests.graph.test_union_rows import HOST_SETS, KINDS, _both, _kernel_case, _pair, _same

graphblas = pytest.importorskip("graphblas")
from graphblas import binary, unary  # noqa: E402


@pytest.mark.parametrize("backend", HOST_SETS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(9, 9), (15, 4)])
def test_ewise_rows_against_graphblas(backend, kind, shape):
    a, b = _pair(KINDS.index(kind) * 17 + shape[0], shape, kind)
    A, GA = _both(a, shape, np.float64)
    B, GB = _both(b, shape, np.float64)
    for op in ("minus", "first", "second", "max", "times"):
        got = gr.ewise_mult(A, B, getattr(gb.ops, op), backend=backend)
        _same(got, GA.ewise_mult(GB, getattr(binary, op)).new())
        got = gr.ewise_add(A, B, getattr(gb.ops, op), backend=backend)
        _same(got, GA.ewise_add(GB, getattr(binary, op)).new())
        assert got.decision is not None
        # the other way round: A within B where "nested" put B within A
        _same(gr.ewise_add(B, A, getattr(gb.ops, op), backend=backend),
              GB.ewise_add(GA, getattr(binary, op)).new())


@pytest.mark.parametrize("backend", HOST_SETS)
@pytest.mark.parametrize("dtypes", [(np.bool_, np.bool_), (np.int32, np.int64),
                                    (np.int64, np.float64), (np.float32, np.int32)])
def test_ewise_rows_domains(backend, dtypes):
    shape = (12, 10)
    a, b = _pair(5, shape, "random", dtypes)
    A, GA = _both(a, shape, dtypes[0])
    B, GB = _both(b, shape, dtypes[1])
    ops = ("plus", "max", "first") if dtypes[0] == np.bool_ else ("minus", "plus", "max")
    for op in ops:
        _same(gr.ewise_mult(A, B, getattr(gb.ops, op), backend=backend),
              GA.ewise_mult(GB, getattr(binary, op)).new())
        _same(gr.ewise_add(A, B, getattr(gb.ops, op), backend=backend),
              GA.ewise_add(GB, getattr(binary, op)).new())


@pytest.mark.parametrize("backend", HOST_SETS)
def test_results_own_their_arrays(backend):
    """``first`` over one pattern and an identity apply could hand back A's own arrays:
    the result is a copy (writing into it leaves A unchanged)."""
    shape = (10, 8)
    a, _ = _pair(4, shape, "identical")
    A, GA = _both(a, shape, np.float64)
    B = A.dup()
    for C in (gr.ewise_mult(A, B, gb.ops.first, backend=backend),
              gr.apply(gb.ops.identity, A), gr.apply(gb.ops.first, A, right=1.0)):
        c, s = C.to_scipy(), A.to_scipy()
        for x, y in ((c.data, s.data), (c.indices, s.indices), (c.indptr, s.indptr)):
            assert not np.may_share_memory(x, y)
    _same(gr.apply(gb.ops.abs, A), GA.apply(unary.abs).new())
    _same(gr.apply(gb.ops.minus, A, right=2.0), GA.apply(binary.minus, right=2.0).new())
    _same(gr.apply(gb.ops.minus, A, left=2), GA.apply(binary.minus, left=2).new())


def _brute_intersect(A, B):
    PA, PB = A.toarray() != 0, B.toarray() != 0
    both = PA & PB
    r, c = np.nonzero(both)
    apos, bpos = -np.ones(A.shape, np.int64), -np.ones(A.shape, np.int64)
    apos[PA] = np.arange(PA.sum())
    bpos[PB] = np.arange(PB.sum())
    return r, c, apos[r, c], bpos[r, c]


def _check_intersect(got, A, B):
    ptr, idx, a_pos, b_pos = got
    r, c, wa, wb = _brute_intersect(A, B)
    m = A.shape[0]
    assert np.array_equal(ptr, np.concatenate(([0], np.cumsum(np.bincount(r, minlength=m)))))
    assert np.array_equal(idx, c)
    for g, w, nnz in ((a_pos, wa, A.nnz), (b_pos, wb, B.nnz)):
        if g is None:  # every entry of that operand, in order
            assert w.size == nnz and np.array_equal(w, np.arange(nnz))
        else:
            assert g.dtype == np.int64 and np.array_equal(g, w)


@pytest.mark.parametrize("backend", HOST_SETS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_intersect_merge_kernel(backend, kind, itype):
    shape = (40, 33)
    A, B, _, _ = _kernel_case(shape, kind, 7, itype)
    got = gr.get_kernels(backend).intersect_merge(A, B, itype=np.dtype(np.int32))
    assert got[0].dtype == np.int32 and got[1].dtype == np.int32
    _check_intersect(got, A, B)
    if kind == "nested" and backend == "compiled":  # B within A: C's pattern is B's
        assert got[3] is None


@pytest.mark.parametrize("kind", ["random", "identical", "nested"])
def test_intersect_merge_compiled_parallel_ranges(monkeypatch, kind):
    """Rows split over several ranges (the pool's work) give the one-range answer."""
    from gbdist.backends.compiled import graph as G
    monkeypatch.setattr(G, "SERIAL_WORK", 1)
    monkeypatch.setattr(G, "threads", lambda: 3)
    shape = (300, 200)
    A, B, _, _ = _kernel_case(shape, kind, 11, np.int64)
    _check_intersect(gr.get_kernels("compiled").intersect_merge(
        A, B, itype=np.dtype(np.int64)), A, B)


def test_masked_and_out_keep_the_key_path():
    shape = (11, 13)
    a, b = _pair(9, shape, "random")
    A, GA = _both(a, shape, np.float64)
    B, GB = _both(b, shape, np.float64)
    M, GM = _both(_pair(10, shape, "random")[0], shape, np.float64)
    _same(gr.ewise_mult(A, B, gb.ops.minus, mask=M.S), GA.ewise_mult(GB, binary.minus)
          .new(mask=GM.S))
    out = M.dup()
    gr.ewise_add(A, B, gb.ops.minus, out=out, accum=gb.ops.plus)
    want = GM.dup()
    want(accum=binary.plus) << GA.ewise_add(GB, binary.minus)
    _same(out, want)


@pytest.mark.gpu
def test_ewise_rows_cuda_equals_host():
    pytest.importorskip("cupy")
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    shape = (50, 37)
    for kind in KINDS:
        a, b = _pair(13, shape, kind)
        A, GA = _both(a, shape, np.float64)
        B, GB = _both(b, shape, np.float64)
        _same(gr.ewise_mult(A.to_device(), B.to_device(), gb.ops.minus).to_host(),
              GA.ewise_mult(GB, binary.minus).new())
        _same(gr.ewise_add(A.to_device(), B.to_device(), gb.ops.minus).to_host(),
              GA.ewise_add(GB, binary.minus).new())
        _same(gr.apply(gb.ops.abs, A.to_device()).to_host(), GA.apply(unary.abs).new())
