"""The in-order symmetric SpMV (issue 30, kernels/graph_symmetric.cuh) against SciPy on the
seed's matrix classes (7-point Poisson 3D, 27-point stencil, bands; values perturbed
symmetrically), with and without the shared-memory tile, every lane count; U by diagonals
(its slots, its holes, its refusals) bit-equal to the offsets kernel; the reproducible
fixed-point variant bit-equal across runs and tiles and within about one rounding of an
exact host sum (math.fsum); Inf/NaN in x fall back to float sums."""
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
@pytest.mark.parametrize("method", ["atomic", "tile", "offsets", "dia"])
def test_rows_kernel_matches_scipy(name, method):
    A, U = pair(name)
    x = np.random.default_rng(1).random(A.shape[0]) - 0.5
    dU = cps.csr_matrix(U)
    y, present = gs.spmv_rows(K, dU, dU.indptr, dU.indices, dU.data, cupy.asarray(x), SR.plus_times,
                              np.dtype(np.float64), np.dtype(np.float64), tile=method == "tile",
                              method=method if method in ("offsets", "dia") else "atomic")
    np.testing.assert_allclose(y.get(), A @ x, rtol=1e-12, atol=1e-12)
    assert present.get().all()


def _dU(U):
    dU = cps.csr_matrix(U)
    return dU, (dU, dU.indptr, dU.indices, dU.data)


def test_diagonals_form_layout_and_holes():
    """U by diagonals: each slot holds U(i, i + d) or the hole bits; the default product takes
    it (plain and compensated), the same bits run after run, compensated bit-equal to the
    offsets kernel's (same terms, same order); an Inf in x next to a hole stays out of the
    row (0 * Inf is not summed)."""
    A, U = pair("poisson")
    dU, parts = _dU(U)
    dia = gs.diagonals(K, *parts, SR.plus_times, np.dtype(np.float64))
    offs = gs.structure(*parts)["offsets"].get()
    n = U.shape[0]
    got = dia.get().reshape(offs.size, n)
    hole = gs.DIA_HOLE[np.dtype(np.float64)]
    D = U.todok()
    for k, d in enumerate(offs):
        for i in range(0, n, 7):
            want = D.get((i, i + d)) if (i + d < n and (i, i + d) in D) else None
            assert (got[k, i] == hole) if want is None else got[k, i] == np.float64(want).view(np.uint64)
    rng = np.random.default_rng(11)
    x = rng.random(n) - 0.5
    x[[10, 100, 200]] = [np.inf, -np.inf, np.nan]
    dx = cupy.asarray(x)
    for comp in (False, True):
        run = lambda **kw: gs.spmv_rows(K, *parts, dx, SR.plus_times, np.dtype(np.float64),  # noqa: E731
                                        np.dtype(np.float64), compensated=comp, **kw)[0].get()
        a, b = run(), run(method="offsets")
        assert np.array_equal(a.view(np.int64), run().view(np.int64))  # no atomics: run after run
        if comp:  # plain sums may contract a product into the addition differently per kernel
            assert np.array_equal(a.view(np.int64), b.view(np.int64))
        ref = A @ x
        np.testing.assert_array_equal(np.isnan(a), np.isnan(ref))
        fin = np.isfinite(ref)
        np.testing.assert_array_equal(a[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)])
        np.testing.assert_allclose(a[fin], ref[fin], rtol=1e-12, atol=1e-12)


def test_diagonals_under_min_plus_and_float32():
    """A hole is no term under any semiring: min_plus over U by diagonals equals the full
    CSR's product (an absent entry is not a 0 + x[j]); float32 values and x."""
    A, U = pair("band20")
    x = np.random.default_rng(12).random(A.shape[0]) * 4 - 2
    y, yp = K.spmv(dev(A), cupy.asarray(x), None, SR.min_plus, out_dtype=np.float64)
    dU, parts = _dU(U)
    assert gs.diagonals(K, *parts, SR.min_plus, np.dtype(np.float64)) is not None
    ys, _ = gs.spmv_rows(K, *parts, cupy.asarray(x), SR.min_plus, np.dtype(np.float64),
                         np.dtype(np.float64), method="dia")
    np.testing.assert_array_equal(ys.get(), y.get())
    A32, U32 = pair("fem27", np.float32)
    x32 = np.random.default_rng(13).random(A32.shape[0]).astype(np.float32)
    d32, p32 = _dU(U32)
    y32, _ = gs.spmv_rows(K, *p32, cupy.asarray(x32), SR.plus_times, np.dtype(np.float32),
                          np.dtype(np.float32), method="dia")
    ref = A32.astype(np.float64) @ x32.astype(np.float64)
    np.testing.assert_allclose(y32.get(), ref, rtol=2e-6, atol=1e-6 * np.abs(ref).max())


def test_diagonals_without_room_keep_the_csr_kernels(monkeypatch):
    """No device memory for the diagonals: the product runs on the CSR kernels (the same
    answer), and the refusal is kept for the matrix."""
    A, U = pair("poisson")
    dU, parts = _dU(U)

    def no_room(*a, **k):
        raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 0, 0)
    with monkeypatch.context() as mp:
        mp.setattr(cupy, "full", no_room)
        assert gs.diagonals(K, *parts, SR.plus_times, np.dtype(np.float64)) is None
    x = np.random.default_rng(3).random(A.shape[0])
    for comp in (False, True):
        y, _ = K.spmv_symmetric(dU, cupy.asarray(x), None, SR.plus_times, out_dtype=np.float64,
                                compensated=comp)
        np.testing.assert_allclose(y.get(), A @ x, rtol=1e-12)
    assert gs.structure(*parts)["dia"] is None


def test_diagonals_refused_where_they_do_not_pay_or_collide():
    """No diagonals form (the offsets / fixed kernels run, same answers) when U's diagonals
    are mostly holes (past DIA_FILL), when a stored value has the hole's bits, or for integer
    values."""
    n = 400
    rows = np.r_[np.arange(n), 0, 1, 2]
    cols = np.r_[np.arange(n), 150, 251, 352]  # three diagonals of one entry each
    sparse_diags = sps.csr_matrix((np.random.default_rng(1).random(rows.size) + 1, (rows, cols)), shape=(n, n))
    hole = gs.DIA_HOLE[np.dtype(np.float64)].view(np.float64)
    _, U = pair("band2")
    clash = U.copy()
    clash.data[5] = hole
    for M in (sparse_diags, clash, (U * 8).astype(np.int64)):
        dU, parts = _dU(M) if M.dtype.kind == "f" else (dev(M), (dev(M), *(cupy.asarray(a) for a in (M.indptr, M.indices, M.data))))
        out = np.dtype(M.dtype)
        assert gs.diagonals(K, *parts, SR.plus_times, out) is None
        full = (M + sps.triu(M, 1).T).tocsr()
        x = np.random.default_rng(2).integers(-3, 4, n if M is sparse_diags else M.shape[0]).astype(M.dtype)
        y, _ = K.spmv_symmetric(parts[0], cupy.asarray(x), None, SR.plus_times, out_dtype=out)
        ref = full @ x
        if M is clash:  # the NaN is a value like any other: it reaches its row and its column
            np.testing.assert_array_equal(np.isnan(y.get()), np.isnan(ref))
            keep = ~np.isnan(ref)
            np.testing.assert_allclose(y.get()[keep], ref[keep], rtol=1e-12)
        else:
            np.testing.assert_allclose(y.get(), ref, rtol=1e-12)


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
    # float32 terms (each product rounded to float32, as every float32 product's), their sum
    # compensated: within about one rounding of the exact sum of those terms (math.fsum)
    Af = A.astype(np.float32)
    terms = Af.copy()
    terms.data = Af.data * x32[Af.indices]  # float32 products
    ex = _fsum_rows(terms.astype(np.float64), np.ones(A.shape[0]))
    absum = np.abs(terms.astype(np.float64)) @ np.ones(A.shape[0])
    err = np.abs(y.get().astype(np.float64) - ex)
    assert np.all(err <= 2.0 ** -22 * np.abs(ex) + 1e-9 * absum), err.max()
    # (against float64 products the float32 terms' own roundings remain: about 2^-24 each)
    np.testing.assert_allclose(y.get(), A32 @ x32.astype(np.float64), rtol=0, atol=2.0 ** -23 * absum.max())
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
