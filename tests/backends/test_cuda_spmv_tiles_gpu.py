"""The row-tile SpMV (issue 30, ``gb_spmv_stream``) against SciPy and NumPy brute force:
rows of 0, 1, 32, 33 (the thread/warp split), 2 * tile (the most a block stages) and more
(a block-wide pass) entries, clumps of thousands of empty rows, a long first and last row,
int32 and int64 indices, both tile sizes, present flags, masks and compensated sums — and
the same answers as issue 12's degree-binned kernel."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")

from gbdist.backends.cuda import graph_codegen as gc  # noqa: E402
from gbdist.backends.base import DeviceCSR  # noqa: E402
from gbdist.backends.cuda.graph import CudaGraphKernels  # noqa: E402
from gbdist.backends.cuda.graph_tiles import spmv_tiles  # noqa: E402

SR = gb.semirings


def awkward(seed, n=6000):
    """CSR with awkward row lengths (see the module docstring), values in -2..4 (stored 0s)."""
    rng = np.random.default_rng(seed)
    degs = [5000, 0, 1, 32, 33, 2048, 2049, 4096, 31, 34, 64, 1000]
    degs += list(rng.integers(0, 40, 3000)) + [0] * 4000 + list(rng.integers(0, 6, 3000)) + [2048, 5001]
    rows, cols = [], []
    for i, d in enumerate(degs):
        rows.append(np.full(d, i))
        cols.append(rng.choice(n, d, replace=False))
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    data = rng.integers(-2, 5, rows.size).astype(np.float64)
    A = sps.csr_matrix((data, (rows, cols)), shape=(len(degs), n))
    A.sort_indices()
    return A


def dev(S, index=np.int32):
    parts = (cupy.asarray(S.data), cupy.asarray(S.indices.astype(index)), cupy.asarray(S.indptr.astype(index)))
    if S.dtype.char in "?fd":
        return cps.csr_matrix(parts, shape=S.shape) if index == np.int32 else DeviceCSR(*parts, S.shape)
    return DeviceCSR(*parts, S.shape)


def kernels(kind, tile):
    K = CudaGraphKernels()
    K.spmv_kernel, K.spmv_tile = kind, tile
    return K


@pytest.mark.parametrize("tile", gc.SPMV_TILES)
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_tiles_partition_the_rows(tile, index):
    A = awkward(1)
    Ad = dev(A, index)
    starts, blocks, _ = spmv_tiles(Ad, Ad.indptr, tile)
    s = starts.get()
    assert s[0] == 0 and s[-1] == A.shape[0] and len(s) == blocks + 1 and (np.diff(s) >= 0).all()
    coord = A.indptr[:-1] + np.arange(A.shape[0])
    for b in range(blocks):  # block b holds exactly the rows whose merge coordinate is in its tile
        rows = np.arange(s[b], s[b + 1])
        assert ((coord[rows] >= b * tile) & (coord[rows] < (b + 1) * tile)).all()


@pytest.mark.parametrize("tile", gc.SPMV_TILES)
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_plus_times_matches_scipy(tile, index):
    A = awkward(2)
    x = np.random.default_rng(3).random(A.shape[1])
    y, yp = kernels("stream", tile).spmv(dev(A, index), cupy.asarray(x), None, SR.plus_times,
                                          out_dtype=np.float64)
    np.testing.assert_allclose(y.get(), A @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(yp.get(), np.diff(A.indptr) > 0)


@pytest.mark.parametrize("tile", gc.SPMV_TILES)
@pytest.mark.parametrize("masked", [None, False, True])
def test_min_plus_with_present_flags_and_masks(tile, masked):
    A = awkward(4)
    rng = np.random.default_rng(5)
    m, n = A.shape
    x = rng.random(n)
    present = rng.random(n) < 0.5
    mask = rng.random(m) < 0.5
    kw = {} if masked is None else {"mask": cupy.asarray(mask), "complement": masked}
    y, yp = kernels("stream", tile).spmv(dev(A), cupy.asarray(x), cupy.asarray(present), SR.min_plus,
                                          out_dtype=np.float64, **kw)
    y, yp = y.get(), yp.get()
    for i in range(m):
        seg = slice(A.indptr[i], A.indptr[i + 1])
        ok = present[A.indices[seg]]
        terms = (A.data[seg] + x[A.indices[seg]])[ok]
        allowed = masked is None or (mask[i] != masked)
        assert bool(yp[i]) == (allowed and terms.size > 0), i
        if yp[i]:
            assert y[i] == terms.min(), i


@pytest.mark.parametrize("dtype,name", [(np.float64, "plus_times"), (np.float32, "plus_times"),
                                        (np.int64, "max_times"), (np.bool_, "lor_land"),
                                        (np.float64, "plus_pair"), (np.float64, "min_plus")])
def test_same_answers_as_the_binned_kernel(dtype, name):
    A = awkward(6)
    rng = np.random.default_rng(7)
    A = A.astype(dtype)
    x = (rng.random(A.shape[1]) < 0.6) if dtype == np.bool_ else rng.integers(-2, 5, A.shape[1]).astype(dtype)
    present = rng.random(A.shape[1]) < 0.8
    args = (cupy.asarray(x), cupy.asarray(present), SR[name])
    y0, p0 = kernels("binned", 1024).spmv(dev(A), *args, out_dtype=dtype)
    y1, p1 = kernels("stream", gc.SPMV_TILE).spmv(dev(A), *args, out_dtype=dtype)
    np.testing.assert_array_equal(p1.get(), p0.get())
    # integer-valued operands: every sum is exact in either order
    np.testing.assert_array_equal(y1.get()[p1.get()], y0.get()[p0.get()])


def test_compensated_sums_are_run_to_run_identical():
    A = awkward(8)
    rng = np.random.default_rng(9)
    A.data = rng.standard_normal(A.nnz) * 10.0 ** rng.integers(0, 8, A.nnz)
    x = rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0], A.shape[1])  # products exact
    K = kernels("stream", gc.SPMV_TILE)
    ys = [K.spmv(dev(A), cupy.asarray(x), None, SR.plus_times, out_dtype=np.float64, compensated=True)[0].get()
          for _ in range(3)]
    assert all(np.array_equal(ys[0], y) for y in ys[1:])
    import math
    for i in range(A.shape[0]):
        seg = slice(A.indptr[i], A.indptr[i + 1])
        exact = math.fsum(A.data[seg] * x[A.indices[seg]])
        scale = float(np.abs(A.data[seg] * x[A.indices[seg]]).max(initial=0.0))
        # Neumaier: about one rounding of the sum, plus second-order terms of the row's size
        assert abs(ys[0][i] - exact) <= 4.5e-16 * abs(exact) + 1e-28 * scale * (seg.stop - seg.start) ** 2, i


# --- the in-order kernel (gb_spmv_rows) and the planner rule that picks it -------------------

def in_order(group):
    K = CudaGraphKernels()
    K.spmv_kernel, K.spmv_group = "rows", group
    return K


@pytest.mark.parametrize("group", gc.SPMV_GROUPS)
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_in_order_kernel_matches_scipy(group, index):
    A = awkward(2)  # long rows, empty clumps: correct whatever the rule would pick
    x = np.random.default_rng(3).random(A.shape[1])
    y, yp = in_order(group).spmv(dev(A, index), cupy.asarray(x), None, SR.plus_times,
                                 out_dtype=np.float64)
    np.testing.assert_allclose(y.get(), A @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(yp.get(), np.diff(A.indptr) > 0)


@pytest.mark.parametrize("group", [2, 32])
@pytest.mark.parametrize("dtype,name", [(np.float64, "min_plus"), (np.int64, "max_times"),
                                        (np.bool_, "lor_land"), (np.float32, "plus_times")])
@pytest.mark.parametrize("masked", [None, False, True])
def test_in_order_kernel_flags_masks_semirings_as_the_row_tiles(group, dtype, name, masked):
    A = awkward(6).astype(dtype)
    rng = np.random.default_rng(7)
    m, n = A.shape
    x = (rng.random(n) < 0.6) if dtype == np.bool_ else rng.integers(-2, 5, n).astype(dtype)
    present, mask = rng.random(n) < 0.8, rng.random(m) < 0.5
    kw = {} if masked is None else {"mask": cupy.asarray(mask), "complement": masked}
    args = (cupy.asarray(x), cupy.asarray(present), SR[name])
    y0, p0 = kernels("stream", gc.SPMV_TILE).spmv(dev(A), *args, out_dtype=dtype, **kw)
    y1, p1 = in_order(group).spmv(dev(A), *args, out_dtype=dtype, **kw)
    np.testing.assert_array_equal(p1.get(), p0.get())
    np.testing.assert_array_equal(y1.get()[p1.get()], y0.get()[p0.get()])  # exact sums


def test_in_order_compensated_sums_on_a_stencil():
    import math

    from benchmarks import stencils as st
    A = st.as_scipy(st.fem27(8, seed=3))
    rng = np.random.default_rng(9)
    A.data = A.data * 10.0 ** rng.integers(0, 8, A.nnz)
    x = rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0], A.shape[1])  # products exact
    K = in_order(8)
    y = K.spmv(dev(A), cupy.asarray(x), None, SR.plus_times, out_dtype=np.float64, compensated=True)[0].get()
    for i in range(A.shape[0]):
        seg = slice(A.indptr[i], A.indptr[i + 1])
        exact = math.fsum(A.data[seg] * x[A.indices[seg]])
        scale = float(np.abs(A.data[seg] * x[A.indices[seg]]).max(initial=0.0))
        # Neumaier, as the row tiles' test: about one rounding, plus second-order terms
        assert abs(y[i] - exact) <= 4.5e-16 * abs(exact) + 1e-28 * scale * (seg.stop - seg.start) ** 2, i


def test_rule_routes_stencils_in_order_and_power_law_graphs_to_row_tiles():
    from benchmarks import stencils as st
    from benchmarks.graphs import power_law_graph
    from gbdist import graph as gr
    from gbdist.backends.cuda.graph_tiles import full_choice
    # lanes a row from the H200 sweep (spmv_choice.ROWS_GROUPS): 2 at ~7 entries a row,
    # 4 at ~27 and ~41
    cases = [(st.as_scipy(st.poisson3d(16, seed=1)), ("rows", 2)),
             (st.as_scipy(st.fem27(10, seed=2)), ("rows", 4)),
             (st.as_scipy(st.band(5000, 20, seed=4)), ("rows", 4)),
             (sps.csr_matrix(power_law_graph(20000, avg_degree=8, seed=1)), ("stream", 0))]
    K = CudaGraphKernels()  # spmv_kernel "auto": the rule
    for A, want in cases:
        A.sort_indices()
        D = dev(A)
        x = np.random.default_rng(1).standard_normal(A.shape[1])
        y, yp = K.spmv(D, cupy.asarray(x), None, SR.plus_times, out_dtype=np.float64)
        choice, _ = full_choice(D, D.indptr)
        assert (choice.kernel, choice.group) == want
        np.testing.assert_allclose(y.get(), A @ x, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(yp.get(), np.diff(A.indptr) > 0)
        w = gr.mxv(gb.Matrix(A).to_device(), gb.Vector(x).to_device(), SR.plus_times)
        np.testing.assert_allclose(cupy.asnumpy(w.to_dense()), A @ x, rtol=1e-12, atol=1e-12)
