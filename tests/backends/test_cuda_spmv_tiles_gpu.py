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
from gbdist.backends.cuda.graph import CudaGraphKernels, DeviceCSR  # noqa: E402
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
