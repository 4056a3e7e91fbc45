"""The SpGEMM of two matrices stored by diagonals (issue 30, gbdist.backends.cuda.graph_dia,
kernels/graph_symmetric.cuh's gb_spgemm_dia) against a brute-force structural product (every
pair of stored entries, ⊕ over them: explicit zeros and cancellations kept) on the seed's
matrix classes, a rectangular pair, two different operands, holes at the grid's boundaries
and stored zeros, several semirings and result types; and the rule's refusals (the binned
SpGEMM then, the same answers)."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from benchmarks import stencils as st

pytestmark = pytest.mark.gpu

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")

from gbdist.backends.cuda import graph_dia  # noqa: E402
from gbdist.backends.cuda.graph import CudaGraphKernels  # noqa: E402
from test_cuda_graph import brute_spgemm, check_csr, dev, powerlaw  # noqa: E402

K = CudaGraphKernels()
SR = gb.semirings


@pytest.fixture(autouse=True)
def small_matrices(monkeypatch):
    monkeypatch.setattr(graph_dia, "SPGEMM_MIN_ROWS", 0)


def _spy(monkeypatch):
    took = []
    real = graph_dia.spgemm

    def spgemm(*a, **k):
        got = real(*a, **k)
        took.append(got is not None)
        return got
    monkeypatch.setattr(graph_dia, "spgemm", spgemm)
    return took


def _pairs():
    rng = np.random.default_rng(3)
    P = st.as_scipy(st.poisson3d(9, seed=1))
    F = st.as_scipy(st.fem27(7, seed=2))
    Bd = st.as_scipy(st.band(729, 5, seed=3))
    zeros = P.copy()
    zeros.data[::11] = 0.0  # stored zeros: present, their products kept
    def diags(offs, shape):
        m, n = shape
        return sps.diags([rng.random(min(m, n - k) if k >= 0 else min(m + k, n)) + 0.5 for k in offs],
                         offs, shape=shape, format="csr")
    R1, R2 = diags([0, 1, 60], (300, 400)), diags([-50, 0, 7], (400, 350))
    return {"poisson": (P, P), "fem27": (F, F), "band": (Bd, Bd), "poisson_band": (P, Bd),
            "stored_zeros": (zeros, zeros), "rectangular": (R1, R2)}


@pytest.mark.parametrize("name", ["poisson", "fem27", "band", "poisson_band", "stored_zeros", "rectangular"])
def test_dia_spgemm_matches_the_structural_product(monkeypatch, name):
    took = _spy(monkeypatch)
    A, B = _pairs()[name]
    C = K.spgemm(dev(A), dev(B), SR.plus_times, out_dtype=np.float64)
    assert took == [True]
    check_csr(C, brute_spgemm(A, B, SR.plus_times, np.float64), np.float64, rtol=1e-12)


@pytest.mark.parametrize("sr,out", [("min_plus", np.float32), ("max_times", np.float64),
                                    ("plus_pair", np.float64), ("lor_land", np.bool_),
                                    ("plus_times", np.float32)])
def test_dia_spgemm_semirings(monkeypatch, sr, out):
    took = _spy(monkeypatch)
    A, B = _pairs()["poisson_band"]
    A = A.astype(np.float32) if out == np.float32 else A
    C = K.spgemm(dev(A), dev(B), SR[sr], out_dtype=out)
    assert took == [True]
    check_csr(C, brute_spgemm(A, B, SR[sr], out), out, rtol=1e-5 if out == np.float32 else 1e-12)


def test_dia_spgemm_refusals_run_the_binned_product(monkeypatch):
    """Many diagonals (a power law), a mask, integer values, too few rows by default, a value
    with the hole's bits: the binned SpGEMM runs, with the structural product's answer."""
    took = _spy(monkeypatch)
    G = powerlaw(800, 800, 5)
    C = K.spgemm(dev(G), dev(G), SR.plus_times, out_dtype=np.float64)
    check_csr(C, brute_spgemm(G, G, SR.plus_times, np.float64), np.float64, rtol=1e-12)
    assert took == [False]  # tried, no form: hundreds of diagonals
    P = _pairs()["poisson"][0]
    C = K.spgemm(dev(P), dev(P), SR.plus_times, out_dtype=np.float64, mask=dev(P))
    check_csr(C, brute_spgemm(P, P, SR.plus_times, np.float64, mask=P), np.float64, rtol=1e-12)
    Pi = (P * 4).astype(np.int64)
    C = K.spgemm(dev(Pi), dev(Pi), SR.plus_times, out_dtype=np.int64)
    check_csr(C, brute_spgemm(Pi, Pi, SR.plus_times, np.int64), np.int64)
    assert took == [False]  # neither the masked nor the integer product asked for the form
    clash = P.copy()
    from gbdist.backends.cuda.graph_symmetric import DIA_HOLE
    clash.data[3] = DIA_HOLE[np.dtype(np.float64)].view(np.float64)
    C = K.spgemm(dev(clash), dev(P), SR.plus_times, out_dtype=np.float64)
    assert took == [False, False]
    ref = brute_spgemm(clash, P, SR.plus_times, np.float64)
    host = C.get()
    np.testing.assert_array_equal(host.indices, ref.indices)
    np.testing.assert_array_equal(np.isnan(host.data), np.isnan(ref.data))
    monkeypatch.setattr(graph_dia, "SPGEMM_MIN_ROWS", 1 << 16)
    C = K.spgemm(dev(P), dev(P), SR.plus_times, out_dtype=np.float64)
    assert took == [False, False]  # 729 rows: not considered
    check_csr(C, brute_spgemm(P, P, SR.plus_times, np.float64), np.float64, rtol=1e-12)


def test_dia_spgemm_through_mxm_and_its_form_is_kept(monkeypatch):
    """gr.mxm on device matrices takes it; the operand's diagonals are built once (cached on
    its CSR) and reused by the next product."""
    from gbdist import graph as gr
    took = _spy(monkeypatch)
    P = _pairs()["poisson"][0]
    M = gb.Matrix(cps.csr_matrix(P))
    builds = []
    real = graph_dia.offsets
    monkeypatch.setattr(graph_dia, "offsets", lambda *a, **k: builds.append(1) or real(*a, **k))
    for _ in range(2):
        C = gr.mxm(M, M, SR.plus_times)
        check_csr(C._csr, brute_spgemm(P, P, SR.plus_times, np.float64), np.float64, rtol=1e-12)
    assert took == [True, True] and len(builds) == 1
