"""The in-order symmetric SpMV (issue 30, kernels/graph_symmetric.cuh) against SciPy on the
seed's matrix classes (7-point Poisson 3D, 27-point stencil, bands; values perturbed
symmetrically), with and without the shared-memory tile, every lane count; the
reproducible fixed-point variant bit-equal across runs and tiles and within about one
rounding of an exact host sum (math.fsum); Inf/NaN in x fall back to float sums."""
import math

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from benchmarks import stencils as st

pytestmark = pytest.mark.gpu

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")

from gbdist.backends.cuda import graph_symmetric as gs  # noqa: E402
from gbdist.backends.base import DeviceCSR  # noqa: E402
from gbdist.backends.cuda.graph import CudaGraphKernels  # noqa: E402

K = CudaGraphKernels()
SR = gb.semirings

MATRICES = {"poisson": lambda **k: st.poisson3d(9, **k), "fem27": lambda **k: st.fem27(7, **k),
            "band20": lambda **k: st.band(900, 20, **k), "band70": lambda **k: st.band(700, 70, **k),
            "band2": lambda **k: st.band(1000, 2, **k)}


def pair(name, dtype=np.float64):
    A = st.as_scipy(MATRICES[name](seed=3)).astype(dtype)
    U = st.as_scipy(MATRICES[name](seed=3, upper=True)).astype(dtype)
    return A, U


def dev(M):
    """SciPy CSR → device operand (cupyx where it holds the dtype, else DeviceCSR)."""
    parts = (cupy.asarray(M.data), cupy.asarray(M.indices), cupy.asarray(M.indptr))
    if M.dtype.char in "?fd":
        return cps.csr_matrix(parts, shape=M.shape)
    return DeviceCSR(*parts, M.shape)


@pytest.mark.parametrize("name", sorted(MATRICES))
@pytest.mark.parametrize("method", ["atomic", "tile", "offsets"])
def test_rows_kernel_matches_scipy(name, method):
    A, U = pair(name)
    x = np.random.default_rng(1).random(A.shape[0]) - 0.5
    dU = cps.csr_matrix(U)
    y, present = gs.spmv_rows(K, dU, dU.indptr, dU.indices, dU.data, cupy.asarray(x), SR.plus_times,
                              np.dtype(np.float64), np.dtype(np.float64), tile=method == "tile",
                              method="offsets" if method == "offsets" else "atomic")
    np.testing.assert_allclose(y.get(), A @ x, rtol=1e-12, atol=1e-12)
    assert present.get().all()


def test_offsets_kernel_needs_few_sorted_diagonals():
    _, U = pair("poisson")
    info = gs.structure(cps.csr_matrix(U), *(cupy.asarray(a) for a in (U.indptr, U.indices, U.data)))
    np.testing.assert_array_equal(info["offsets"].get(), [0, 1, 9, 81])
    P = sps.random(500, 500, density=0.3, random_state=1, format="csr")
    Pu = sps.triu(P + P.T, format="csr")
    info = gs.structure(cps.csr_matrix(Pu), *(cupy.asarray(a) for a in (Pu.indptr, Pu.indices, Pu.data)))
    assert info["offsets"] is None  # hundreds of diagonals


@pytest.mark.parametrize("dtype,sr", [(np.float32, "plus_times"), (np.float64, "min_plus"),
                                      (np.int64, "plus_times"), (np.int32, "max_times"),
                                      (np.bool_, "lor_land")])
def test_semirings_through_spmv_symmetric(dtype, sr):
    """K.spmv_symmetric(U) (unmasked, x full: the in-order kernel) equals K.spmv(A)."""
    A, U = pair("band20", np.float64)
    if dtype == np.bool_:
        A, U = (A > 0.5 * A.max()).astype(dtype), (U > 0.5 * U.max()).astype(dtype)
    else:
        A, U = (A * 4).astype(dtype), (U * 4).astype(dtype)
    A.eliminate_zeros(), U.eliminate_zeros()
    x = np.random.default_rng(2).integers(-3, 5, A.shape[0]).astype(dtype)
    y, yp = K.spmv(dev(A), cupy.asarray(x), None, SR[sr], out_dtype=dtype)
    ys, yps = K.spmv_symmetric(dev(U), cupy.asarray(x), None, SR[sr], out_dtype=dtype)
    np.testing.assert_array_equal(yps.get(), yp.get())
    keep = yp.get()
    # float32: each sum rounds in another order (atomics), so the bound is relative to the
    # row's size, not to a result that cancels (-0.696 from terms in the hundreds)
    want = y.get()[keep].astype(np.float64)
    tol = 1e-5 * np.abs(want).max() if dtype == np.float32 else 0.0
    np.testing.assert_allclose(ys.get()[keep].astype(np.float64), want, rtol=1e-12, atol=tol)


def _fsum_rows(A, x):
    """Each row's sum of rounded products, exactly rounded once (math.fsum)."""
    out = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        s = slice(A.indptr[i], A.indptr[i + 1])
        out[i] = math.fsum(A.data[s] * x[A.indices[s]])
    return out


@pytest.mark.parametrize("name", ["poisson", "fem27", "band70"])
def test_reproducible_variant(name):
    A, U = pair(name)
    rng = np.random.default_rng(4)
    # magnitudes spread over 2^-20 … 2^20 with cancellation: a plain float sum differs by order
    x = (rng.random(A.shape[0]) - 0.5) * 2.0 ** rng.integers(-20, 20, A.shape[0])
    dU, dx = cps.csr_matrix(U), cupy.asarray(x)
    def run(**kw):
        return gs.spmv_rows(K, dU, dU.indptr, dU.indices, dU.data, dx, SR.plus_times, np.dtype(np.float64),
                            np.dtype(np.float64), compensated=True, **kw)[0].get()

    ex = _fsum_rows(A, x)
    scale = np.abs(A.data).max() * np.abs(x).max()
    # fixed point: exact up to the dropped bits (2^-(S+L) of max|A|max|x| a term), one rounding;
    # the same bits with and without the tile, run after run
    fixed = [run(method="fixed", tile=t) for t in (True, False, True)]
    for r in fixed[1:]:
        assert np.array_equal(r.view(np.int64), fixed[0].view(np.int64))
    assert np.all(np.abs(fixed[0] - ex) <= 2.3e-16 * np.abs(ex) + 1e-25 * scale)
    # offsets (the default here): a fixed order, compensated: the same bits every run, and
    # within a few roundings of the exact sum
    offs = [K.spmv_symmetric(dU, dx, None, SR.plus_times, out_dtype=np.float64, compensated=True)[0].get()
            for _ in range(3)]
    for r in offs[1:]:
        assert np.array_equal(r.view(np.int64), offs[0].view(np.int64))
    absum = np.abs(A) @ np.abs(x)
    assert np.all(np.abs(offs[0] - ex) <= 2.3e-16 * np.abs(ex) + 4e-32 * absum * A.getnnz(1).max() + 1e-300)
    assert np.array_equal(run(method="offsets").view(np.int64), offs[0].view(np.int64))


def test_reproducible_float32_and_nonfinite():
    A, U = pair("band20")
    x = np.random.default_rng(5).random(A.shape[0])
    x32 = x.astype(np.float32)
    A32 = A.astype(np.float32).astype(np.float64)
    y, _ = K.spmv_symmetric(cps.csr_matrix(U.astype(np.float32)), cupy.asarray(x32), None, SR.plus_times,
                            out_dtype=np.float32, compensated=True)
    np.testing.assert_allclose(y.get(), (A32 @ x32.astype(np.float64)).astype(np.float32), rtol=1e-6)
    x[[5, 40]] = [np.inf, np.nan]
    y, _ = K.spmv_symmetric(cps.csr_matrix(U), cupy.asarray(x), None, SR.plus_times, out_dtype=np.float64,
                            compensated=True)
    ref = A @ x
    np.testing.assert_array_equal(np.isnan(y.get()), np.isnan(ref))
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(y.get()[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)])
    np.testing.assert_allclose(y.get()[fin], ref[fin], rtol=1e-12)


def test_masked_and_sparse_x_keep_the_general_kernel():
    A, U = pair("poisson")
    n = A.shape[0]
    rng = np.random.default_rng(6)
    x, xp, m = rng.random(n), rng.random(n) < 0.5, rng.random(n) < 0.5
    y, yp = K.spmv_symmetric(cps.csr_matrix(U), cupy.asarray(x), cupy.asarray(xp), SR.plus_times,
                             mask=cupy.asarray(m), out_dtype=np.float64)
    ref = A @ np.where(xp, x, 0)
    hit = (A.astype(bool).astype(np.int64) @ xp.astype(np.int64)) > 0
    np.testing.assert_array_equal(yp.get(), hit & m)
    np.testing.assert_allclose(y.get()[hit & m], ref[hit & m], rtol=1e-12)


def test_mxv_declared_symmetric_on_the_device():
    """gr.mxv(..., symmetric=) on device data: the rule picks the symmetric kernel on a stencil
    (shown by gr.explain), the full CSR with a mask; both equal SciPy's full product."""
    from gbdist import graph as gr
    A, U = pair("fem27")
    x = np.random.default_rng(8).random(A.shape[0])
    u = gb.Vector(cupy.asarray(x))
    for M, mode in ((U, "upper"), (A, True)):
        y = gr.mxv(gb.Matrix(cps.csr_matrix(M)), u, SR.plus_times, symmetric=mode)
        assert y.spmv_choice.kernel == "symmetric" and "spmv kernel: symmetric" in gr.explain(y)
        np.testing.assert_allclose(cupy.asnumpy(y.dense_parts()[0]), A @ x, rtol=1e-12)
        yc = gr.mxv(gb.Matrix(cps.csr_matrix(M)), u, SR.plus_times, symmetric=mode, compensated=True)
        np.testing.assert_allclose(cupy.asnumpy(yc.dense_parts()[0]), A @ x, rtol=1e-14)
    mask = gb.Vector(cupy.asarray(np.arange(A.shape[0]) % 2 == 0))
    ym = gr.mxv(gb.Matrix(cps.csr_matrix(U)), u, SR.plus_times, symmetric="upper", mask=mask)
    assert ym.spmv_choice.kernel == "full"
    got = np.zeros(A.shape[0])
    got[cupy.asnumpy(ym._idx)] = cupy.asnumpy(ym._vals)
    np.testing.assert_allclose(got[::2], (A @ x)[::2], rtol=1e-12)
