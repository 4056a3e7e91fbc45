"""CI guard for the in-order symmetric SpMV (issue 30, kernels/graph_symmetric.cuh): every
instantiation the host launches (each lane count, tiled or not; the fixed-point kernel, its
finish and max|x|; U by diagonals and its kernel) compiles for sm_90 with nvcc for several
semirings and types (no GPU)."""
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import gbdist as gb
from gbdist.backends.cuda import graph_codegen as gc
from gbdist.backends.cuda import graph_functor as gf
from gbdist.backends.cuda.graph_symmetric import exact_eligible, lanes

NVCC = shutil.which("nvcc")
SR = gb.semirings
CASES = [(np.float64, "plus_times", "int"), (np.float32, "min_plus", "long long"),
         (np.int32, "max_times", "int"), (np.bool_, "lor_land", "int"), (np.int64, "plus_pair", "long long")]


def test_lanes_and_eligibility():
    assert [lanes(d) for d in (4, 6, 7, 14, 21, 60, 200)] == [1, 1, 2, 4, 4, 16, 32]
    assert exact_eligible(SR.plus_times, np.float64) and exact_eligible(SR.plus_times, np.float32)
    assert not exact_eligible(SR.plus_times, np.int64)
    assert not exact_eligible(SR.min_plus, np.float64) and not exact_eligible(SR.plus_pair, np.float64)


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("out,name,itype", CASES, ids=[f"{np.dtype(o).name}-{n}" for o, n, _ in CASES])
def test_symmetric_rows_kernels_compile(out, name, itype):
    sr = SR[name]
    tv = gc.CTYPES[np.dtype(out)]
    names = [gc.sym_rows_name(itype, tv, "double", g, t, 4 if t else 1) for g in (1, 2, 4, 8, 16, 32)
             for t in (False, True)]
    names += [gc.sym_offsets_name(itype, tv, "double", c) for c in (False, True)]
    if np.dtype(out).kind == "f":  # U by diagonals: float values only (the holes are NaN bits)
        names += [n for c in (False, True) for n in gc.sym_dia_names(itype, tv, "double", c)]
        names += [n for ta in ("float", "double") for n in gc.spgemm_dia_names(ta, "double")]
    if exact_eligible(sr, out):
        work = gc.CTYPES[gc.work_dtype(out)]
        names += [n for g in (1, 4) for t in (False, True)
                  for n in gc.sym_fixed_names(itype, tv, tv, g, t, 4 if t else 1, work)]
    src = gc.standalone(gf.functor(sr.mul, sr.add, out), list(dict.fromkeys(names)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o", os.path.join(d, "k.ptx"), path],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def _fixed_point_rows(terms, starts, dmax, bound):
    """The arithmetic of gb_spmv_sym_fixed + gb_sym_fixed_finish in NumPy int64 (the kernels'
    formulas: E from the bound, S = 52 - D, L = min(52, 62 - D), truncation, carries)."""
    D = max(int(dmax), 1).bit_length()
    S, L = 52 - D, min(52, 62 - D)
    E = int(np.frexp(bound[0])[1] - 1) + int(np.frexp(bound[1])[1] - 1) + 2  # ilogb + ilogb + 2
    q = np.ldexp(terms, S - E)
    h = np.trunc(q)
    lo = np.trunc(np.ldexp(q - h, L)).astype(np.int64)
    hs = np.add.reduceat(h.astype(np.int64), starts)
    ls = np.add.reduceat(lo, starts)
    carry = ls >> L
    return np.ldexp((hs + carry).astype(np.float64), E - S) + np.ldexp((ls - carry * (1 << L)).astype(np.float64), E - S - L)


@pytest.mark.parametrize("deg", [4, 27, 300, 5000])
def test_fixed_point_arithmetic_is_exact_and_order_free(deg):
    """The kernel's fixed-point words (emulated): no overflow at the longest row, the result
    within one rounding of math.fsum over terms spread across 2^-30 … 2^0 of the bound with
    cancellation, and the same bits for any order of the terms (integer sums)."""
    import math
    rng = np.random.default_rng(deg)
    rows = 40
    a = (rng.random(rows * deg) - 0.5) * 2.0 ** rng.integers(-15, 1, rows * deg)
    x = (rng.random(rows * deg) - 0.5) * 2.0 ** rng.integers(-15, 1, rows * deg)
    t = a * x
    starts = np.arange(0, rows * deg, deg)
    bound = (np.abs(a).max(), np.abs(x).max())
    y = _fixed_point_rows(t, starts, deg, bound)
    perm = np.concatenate([s + rng.permutation(deg) for s in starts])
    assert np.array_equal(y.view(np.int64), _fixed_point_rows(t[perm], starts, deg, bound).view(np.int64))
    ex = np.array([math.fsum(t[s:s + deg]) for s in starts])
    scale = bound[0] * bound[1]
    assert np.all(np.abs(y - ex) <= np.spacing(np.abs(ex)) + deg * 2.0 ** -90 * scale)
    plain = np.add.reduceat(t, starts)
    assert np.abs(plain - ex).max() >= np.abs(y - ex).max()


@pytest.mark.parametrize("which", ["poisson", "fem27", "band"])
def test_offsets_walk_finds_each_column_once(which):
    """gb_spmv_sym_offsets' walk (emulated): for each row j, the rows above it found through
    the diagonals (slot guess, else binary search; stop at the first row above row 0) are
    exactly the rows i < j with U(i, j) stored, so with the own row every entry of the full
    matrix's row j is used once."""
    import scipy.sparse as sps
    from benchmarks import stencils as st
    parts = {"poisson": lambda **k: st.poisson3d(5, **k), "fem27": lambda **k: st.fem27(4, **k),
             "band": lambda **k: st.band(60, 7, **k)}[which]
    U = st.as_scipy(parts(upper=True))
    n = U.shape[0]
    rows = np.repeat(np.arange(n), np.diff(U.indptr))
    offs = np.unique(U.indices - rows)
    C = sps.triu(U, 1).tocsc()
    for j in range(n):
        found = []
        for k, d in enumerate(offs):
            if d == 0:
                continue
            i = j - d
            if i < 0:
                break
            lo, hi = U.indptr[i], U.indptr[i + 1]
            p = lo + k
            if not (p < hi and U.indices[p] == j):
                q = np.searchsorted(U.indices[lo:hi], j)
                p = lo + q if q < hi - lo and U.indices[lo + q] == j else -1
            if p >= 0:
                found.append(i)
        assert sorted(found) == sorted(C.indices[C.indptr[j]:C.indptr[j + 1]]), j
