"""The graph operations on device (CuPy) operands give the host results: masks,
accumulation, out=, element-wise, apply, select, reductions, extract/assign, transposes,
conversions. Runs the real CUDA kernel set when it is present; otherwise a stand-in that
runs the reference kernels on host copies, so the device plumbing (keys, merges, masks on
CuPy arrays) is tested on its own."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr
from gbdist.graph import dispatch
from graphcase import random_graph, random_vector

pytestmark = pytest.mark.gpu


class _HostStandIn:
    name = "cuda-standin"

    def __init__(self):
        import cupy
        import cupyx.scipy.sparse as cps
        from gbdist.backends.graph_reference_kernels import ReferenceGraphKernels
        self.xp, self._cps, self._ref = cupy, cps, ReferenceGraphKernels()

    def _h(self, x):
        return None if x is None else x.get()

    def spgemm(self, A, B, sr, *, mask=None, complement=False, out_dtype, symmetric=None):
        C = self._ref.spgemm(A.get(), B.get(), sr, mask=None if mask is None else mask.get(),
                             complement=complement, out_dtype=out_dtype)
        from gbdist.graph.sparse import to_device_csr
        return to_device_csr(C)

    def spmv(self, A, x, x_present, sr, *, mask=None, complement=False, out_dtype,
             compensated=False):
        y, p = self._ref.spmv(A.get(), x.get(), self._h(x_present), sr, mask=self._h(mask),
                              complement=complement, out_dtype=out_dtype, compensated=compensated)
        return self.xp.asarray(y), self.xp.asarray(p)

    def spmspv(self, A, u_idx, u_val, sr, *, mask=None, complement=False, out_dtype):
        y, p = self._ref.spmspv(A.get(), u_idx.get(), u_val.get(), sr, mask=self._h(mask),
                                complement=complement, out_dtype=out_dtype)
        return self.xp.asarray(y), self.xp.asarray(p)

    def segment_reduce(self, indptr, values, monoid, *, out_dtype):
        y, p = self._ref.segment_reduce(indptr.get(), values.get(), monoid, out_dtype=out_dtype)
        return self.xp.asarray(y), self.xp.asarray(p)


@pytest.fixture(autouse=True)
def _device_kernels(monkeypatch):
    if not dispatch.available("cuda"):
        dispatch._failed.pop("cuda", None)
        monkeypatch.setitem(dispatch._made, "cuda", _HostStandIn())
    yield


def _same(dev_result, host_result):
    h = dev_result.to_host()
    assert h.isequal(host_result) or _close(h, host_result), (h, host_result)
    assert dev_result.on_device


def _close(a, b):
    if a.nvals != b.nvals or a.shape != b.shape:
        return False
    if a.ndim == 2:
        return np.array_equal(a.keys(), b.keys()) and np.allclose(a.csr.data, b.csr.data)
    return np.array_equal(a.indices, b.indices) and np.allclose(a.values, b.values)


def test_every_operation_on_device_matches_host():
    rng = np.random.default_rng(0)
    A, _, _ = random_graph(rng, 30, p=0.2)
    B, _, _ = random_graph(rng, 30, p=0.2)
    M, _, _ = random_graph(rng, 30, p=0.5, zeros=10)
    Ah, Bh, Mh = gb.Matrix(A), gb.Matrix(B), gb.Matrix(M)
    Ad, Bd, Md = Ah.to_device(), Bh.to_device(), Mh.to_device()
    assert Ad.on_device and Ad.to_host().isequal(Ah)
    sr = gb.semirings.min_plus
    _same(gr.mxm(Ad, Bd, sr), gr.mxm(Ah, Bh, sr))
    _same(gr.mxm(Ad.T, Bd, sr, mask=~Md.V), gr.mxm(Ah.T, Bh, sr, mask=~Mh.V))
    Cd, Ch = Md.dup(), Mh.dup()
    gr.mxm(Ad, Bd, gb.semirings.plus_times, mask=Md.S, accum=gb.ops.plus, out=Cd, replace=True)
    gr.mxm(Ah, Bh, gb.semirings.plus_times, mask=Mh.S, accum=gb.ops.plus, out=Ch, replace=True)
    _same(Cd, Ch)
    u, _, _ = random_vector(rng, 30, p=0.5)
    f = gb.Vector.from_coo([3], [1.0], 30)
    vis, _, _ = random_vector(rng, 30, p=0.3)
    for vec in (u, f):
        ud, vd = vec.to_device(), vis.to_device()
        _same(gr.mxv(Ad, ud, sr, mask=~vd.S), gr.mxv(Ah, vec, sr, mask=~vis.S))
        _same(gr.vxm(ud, Ad, gb.semirings.any_pair, mask=~vd.S),
              gr.vxm(vec, Ah, gb.semirings.any_pair, mask=~vis.S))
    _same(gr.ewise_add(Ad, Bd, gb.ops.min), gr.ewise_add(Ah, Bh, gb.ops.min))
    _same(gr.ewise_mult(Ad, Bd, gb.ops.times, mask=Md.S), gr.ewise_mult(Ah, Bh, gb.ops.times, mask=Mh.S))
    _same(gr.apply(gb.ops.minus, Ad, right=2), gr.apply(gb.ops.minus, Ah, right=2))
    _same(gr.select(Ad, "tril", -1), gr.select(Ah, "tril", -1))
    _same(gr.select(Ad, ">", 1), gr.select(Ah, ">", 1))
    por = gb.monoid(gb.op("por", lambda x, y: x + y - x * y))
    _same(gr.reduce_rows(Ad, gb.ops.min), gr.reduce_rows(Ah, gb.ops.min))
    _same(gr.reduce_cols(Ad, por), gr.reduce_cols(Ah, por))
    assert float(gr.reduce_scalar(Ad, gb.ops.plus)) == pytest.approx(float(gr.reduce_scalar(Ah, gb.ops.plus)))
    _same(gr.extract(Ad, [3, 1, 1], slice(0, 20, 3)), gr.extract(Ah, [3, 1, 1], slice(0, 20, 3)))
    gr.assign(Cd, 5.0, [0, 2], [1, 4], accum=gb.ops.plus)
    gr.assign(Ch, 5.0, [0, 2], [1, 4], accum=gb.ops.plus)
    _same(Cd, Ch)
    np.testing.assert_array_equal(Ad.to_dense().get(), Ah.to_dense())
    assert Ad.to_scipy().nnz == Ah.nvals


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.float32])
def test_integer_and_bool_matrices_on_device(dtype):
    # cupyx.scipy.sparse holds no integers: those live in gbdist.graph.sparse.DeviceCSR
    rng = np.random.default_rng(1)
    A, _, _ = random_graph(rng, 25, p=0.25, dtype=dtype)
    Ah = gb.Matrix(A)
    Ad = Ah.to_device()
    assert Ad.on_device and Ad.dtype == np.dtype(dtype)
    _same(gr.mxm(Ad, Ad, gb.semirings.plus_times), gr.mxm(Ah, Ah, gb.semirings.plus_times))
    _same(gr.mxm(Ad, Ad.T, gb.semirings.min_plus, mask=Ad.S),
          gr.mxm(Ah, Ah.T, gb.semirings.min_plus, mask=Ah.S))
    _same(gr.ewise_add(Ad, Ad.T, gb.ops.lor), gr.ewise_add(Ah, Ah.T, gb.ops.lor))
    _same(gr.apply(gb.ops.nonzero, Ad), gr.apply(gb.ops.nonzero, Ah))
    _same(gr.reduce_rows(Ad, gb.ops.max), gr.reduce_rows(Ah, gb.ops.max))
    _same(gr.select(Ad, "triu", 1), gr.select(Ah, "triu", 1))
    _same(gr.extract(Ad, [0, 4, 2], None), gr.extract(Ah, [0, 4, 2], None))
    D = gb.Matrix(__import__("cupy").asarray(A.toarray()))
    assert D.on_device and D.dtype == np.dtype(dtype) and D.nvals == (A.toarray() != 0).sum()
    assert gb.Matrix(Ad.to_cupy()).isequal(Ah)
