"""The in-order symmetric SpMV kernels (kernels/graph_symmetric.cuh) run on the host (no GPU
needed): the generated plus_times source compiled with g++ against
tests/backends/cuda_host/graph_host.h (a std::thread per CUDA thread), launched as
``gbdist.backends.cuda.graph_symmetric.spmv_rows`` launches them, against SciPy's product
with the full symmetric matrix and ``math.fsum``.

* ``gb_spmv_sym_rows``: 1, 2, 4 and 32 lanes a row, with and without the shared-memory
  tile (global atomics for the terms outside a block's rows).
* ``gb_maxabs``, ``gb_spmv_sym_fixed``, ``gb_sym_fixed_finish`` (reproducible): equal to
  ``math.fsum`` of each row's terms to the last bit but for the dropped tail, and bit-equal
  across runs whose threads' atomics land in other orders.
* ``gb_spmv_sym_offsets``, plain and with compensated sums.
* ``gb_sym_dia_build`` and ``gb_spmv_sym_dia`` (U by diagonals, holes where U has no entry):
  plain, and compensated to the offsets kernel's bits.

On a band (the tile's near diagonals), a Poisson-like stencil and a U with a long row and
empty rows. A mutant whose tile skips the transposed terms fails.

This checks the kernels' logic as written, not the GPU's memory model or its compiler: the
GPU tests are in tests/backends/test_cuda_graph_symmetric.py."""
from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest
import scipy.sparse as sps

from gbdist.backends.cuda import graph_symmetric as gs

from host_build import GRAPH_PRELUDE, GXX, build, graph_source, number_line

pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")

DRIVER = r"""
int main() {
  long long n; int method, G, tile, csum, S, L;
  if (scanf("%lld %d %d %d %d %d %d", &n, &method, &G, &tile, &csum, &S, &L) != 7) return 1;
  auto Up64 = gb_read_ints(), Uj64 = gb_read_ints(); auto Ux = gb_read_reals(); auto x = gb_read_reals(); auto offs = gb_read_ints();
  std::vector<int> Up(Up64.begin(), Up64.end()), Uj(Uj64.begin(), Uj64.end());
  std::vector<double> y(n, 0.0);
  const unsigned P = tile ? @PASSES@ : 1;
  const long long blocks = (n + (256 / G) * P - 1) / ((256 / G) * P);
  auto rows = [&](auto g, auto t) {
    constexpr int GG = decltype(g)::value; constexpr bool T = decltype(t)::value != 0;
    constexpr int PP = T ? @PASSES@ : 1;
    if (method == 0) {
      gb_launch2((unsigned)blocks, 1, 256, [&] {
        gb_spmv_sym_rows<GbF, int, double, double, GG, T, PP>(n, Up.data(), Uj.data(), Ux.data(),
                                                              x.data(), y.data()); });
    } else {
      double ma = 0; for (double v : Ux) ma = std::max(ma, std::fabs(v));
      unsigned long long ba; std::memcpy(&ba, &ma, 8);
      unsigned long long bx = 0;
      std::vector<long long> hi(n, 0), lo(n, 0);
      gb_launch2((unsigned)std::min<long long>(1024, (n + 255) / 256), 1, 256, [&] {
        gb_maxabs<double>(x.data(), n, &bx); });
      gb_launch2((unsigned)blocks, 1, 256, [&] {
        gb_spmv_sym_fixed<GbF, int, double, double, GG, T, PP>(n, Up.data(), Uj.data(), Ux.data(),
            x.data(), &ba, &bx, S, L, hi.data(), lo.data()); });
      gb_launch2((unsigned)std::min<long long>(2048, (n + 255) / 256), 1, 256, [&] {
        gb_sym_fixed_finish<double>(n, &ba, &bx, S, L, hi.data(), lo.data(), y.data()); });
    }
  };
  auto by_tile = [&](auto g) { if (tile) rows(g, gb_int<1>{}); else rows(g, gb_int<0>{}); };
  if (method == 3) {  // U by diagonals: built, then the product (plain or compensated)
    const long long K = (long long)offs.size();
    std::vector<unsigned long long> dia((size_t)(K * n), gb_dia_hole<double>::bits);
    gb_launch2((unsigned)((n + 255) / 256), 1, 256, [&] {
      gb_sym_dia_build<int, double>(n, Up.data(), Uj.data(), Ux.data(), offs.data(), dia.data()); });
    gb_launch2((unsigned)((n + 255) / 256), 1, 256, [&] {
      if (csum) gb_spmv_sym_dia<GbF, double, double, true>(n, dia.data(), offs.data(), (int)K, x.data(), y.data());
      else gb_spmv_sym_dia<GbF, double, double, false>(n, dia.data(), offs.data(), (int)K, x.data(), y.data()); });
  } else if (method == 2) {
    gb_launch2((unsigned)((n + 255) / 256), 1, 256, [&] {
      if (csum) gb_spmv_sym_offsets<GbF, int, double, double, true>(n, Up.data(), Uj.data(), Ux.data(),
          x.data(), offs.data(), (int)offs.size(), y.data());
      else gb_spmv_sym_offsets<GbF, int, double, double, false>(n, Up.data(), Uj.data(), Ux.data(),
          x.data(), offs.data(), (int)offs.size(), y.data()); });
  } else if (G == 1) by_tile(gb_int<1>{});
  else if (G == 2) by_tile(gb_int<2>{});
  else if (G == 4) by_tile(gb_int<4>{});
  else by_tile(gb_int<32>{});
  for (long long i = 0; i < n; ++i) printf("%a\n", y[i]);
  return 0;
}
"""


def _exe(tmp_path, mutate=None) -> str:
    return build(tmp_path, "spmv_sym", GRAPH_PRELUDE + graph_source(mutate)
                 + DRIVER.replace("@PASSES@", str(gs.PASSES)))


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return _exe(tmp_path_factory.mktemp("spmv_sym"))


def _run(exe, U, x, method, G=1, tile=True, csum=False):
    U = sps.csr_matrix(U)
    U.sort_indices()
    n = U.shape[0]
    A = U + sps.triu(U, 1).T
    dmax = int(np.diff(sps.csr_matrix(A).indptr).max())
    D = max(dmax, 1).bit_length()
    S, L = 52 - D, min(52, 62 - D)
    coo = U.tocoo()
    offs = np.unique(coo.col - coo.row) if U.nnz else np.zeros(0, np.int64)
    text = "\n".join([f"{n} {method} {G} {int(tile)} {int(csum)} {S} {L}", number_line(U.indptr),
                      number_line(U.indices), number_line(U.data), number_line(x), number_line(offs.astype(np.int64))])
    out = subprocess.run([exe], input=text + "\n", capture_output=True, text=True, check=True,
                         timeout=900).stdout.split()
    return np.array([float.fromhex(t) for t in out])


def _matrices():
    rng = np.random.default_rng(4)
    n = 600
    band = sps.diags([rng.random(n - d) + 0.5 for d in range(4)], list(range(4)), format="csr")
    k = 9  # a 2-D 5-point stencil on a k x (n / k) grid: diagonals 0, 1, k
    stencil = sps.diags([rng.random(n) + 2, -rng.random(n - 1), -rng.random(n - k)], [0, 1, k], format="csr")
    U = sps.triu(sps.random(n, n, density=0.01, random_state=5), format="lil")
    U[3, 4:] = rng.random(n - 4)  # a long row
    U[100:140, :] = 0  # empty rows
    return {"band": band, "stencil": stencil, "scattered": sps.csr_matrix(U)}


def _fsum_rows(U, x):
    A = sps.csr_matrix(U + sps.triu(U, 1).T)
    return np.array([math.fsum(A.data[A.indptr[i]:A.indptr[i + 1]] * x[A.indices[A.indptr[i]:A.indptr[i + 1]]])
                     for i in range(A.shape[0])])


@pytest.mark.parametrize("name", ["band", "stencil", "scattered"])
def test_symmetric_kernels_give_the_full_products(exe, name):
    U = _matrices()[name]
    x = np.random.default_rng(len(name)).random(U.shape[0]) - 0.3
    want = _fsum_rows(U, x)
    for G in (1, 2, 4, 32):
        for tile in (True, False):
            got = _run(exe, U, x, 0, G, tile)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"G={G} tile={tile}")
    first = _run(exe, U, x, 1, 2, True)
    np.testing.assert_allclose(first, want, rtol=1e-15, atol=1e-15)
    for G, tile in ((2, False), (4, True), (32, True)):  # same bits whatever the atomics' order
        np.testing.assert_array_equal(_run(exe, U, x, 1, G, tile).view(np.uint64), first.view(np.uint64))
    if name != "scattered":  # the offsets kernel: U on few diagonals; and U by diagonals
        np.testing.assert_allclose(_run(exe, U, x, 2), want, rtol=1e-12, atol=1e-12)
        offs = _run(exe, U, x, 2, csum=True)
        np.testing.assert_allclose(offs, want, rtol=1e-15, atol=1e-15)
        np.testing.assert_allclose(_run(exe, U, x, 3), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(_run(exe, U, x, 3, csum=True).view(np.uint64), offs.view(np.uint64))


def test_diagonals_with_holes_and_an_infinite_x(exe):
    """U by diagonals on a 2-D grid's stencil whose row ends lack their right neighbour (holes
    in diagonal 1): the holes add no term, so an Inf in x reaches only its row and its
    neighbours (as SciPy's full product), and the compensated sums equal the offsets kernel's
    bits, infinite rows infinite (not NaN)."""
    rng = np.random.default_rng(9)
    k, rows = 9, 60
    n = k * rows
    right = -(rng.random(n - 1) + 0.1)
    right[np.arange(k - 1, n - 1, k)] = 0.0  # the grid's row ends: holes, not stored zeros
    U = sps.diags([rng.random(n) + 4, right, -rng.random(n - k)], [0, 1, k], format="csr")
    U.eliminate_zeros()
    assert U.nnz < 3 * n - 1 - k
    x = rng.random(n) - 0.5
    x[[k - 1 + 5 * k, 200]] = [np.inf, -np.inf]  # one at a row end, beside a hole
    A = sps.csr_matrix(U + sps.triu(U, 1).T)
    with np.errstate(invalid="ignore"):
        want = A @ x
    for csum in (False, True):
        got = _run(exe, U, x, 3, csum=csum)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        fin = np.isfinite(want)
        np.testing.assert_allclose(got[fin], want[fin], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(_run(exe, U, x, 3, csum=True).view(np.uint64),
                                  _run(exe, U, x, 2, csum=True).view(np.uint64))


def test_a_tile_that_drops_the_near_transposed_terms_fails(tmp_path):
    """The tile kept the transposed terms whose column lies in the block's rows in shared
    memory; a mutant that drops them gives the band's rows too little."""
    old = "if (TILE && j >= r0 && j < rend) gb_atomic_combine_g<F>(&s[TILE ? j - r0 : 0], F::mul(a, xv));"
    exe = _exe(tmp_path, mutate=(old, "if (TILE && j >= r0 && j < rend) {}"))
    U = _matrices()["band"]
    x = np.random.default_rng(1).random(U.shape[0]) + 0.5
    got = _run(exe, U, x, 0, 1, True)
    assert not np.allclose(got, _fsum_rows(U, x), rtol=1e-12)


DIA_GEMM = r"""
int main() {
  long long m, kd, n;
  if (scanf("%lld %lld %lld", &m, &kd, &n) != 3) return 1;
  auto Ap64 = gb_read_ints(), Aj64 = gb_read_ints(); auto Ax = gb_read_reals(); auto ao = gb_read_ints();
  auto Bp64 = gb_read_ints(), Bj64 = gb_read_ints(); auto Bx = gb_read_reals(); auto bo = gb_read_ints();
  auto co = gb_read_ints(), ps64 = gb_read_ints(), pa64 = gb_read_ints(), pb64 = gb_read_ints();
  std::vector<int> Ap(Ap64.begin(), Ap64.end()), Aj(Aj64.begin(), Aj64.end());
  std::vector<int> Bp(Bp64.begin(), Bp64.end()), Bj(Bj64.begin(), Bj64.end());
  std::vector<int> ps(ps64.begin(), ps64.end()), pa(pa64.begin(), pa64.end()), pb(pb64.begin(), pb64.end());
  std::vector<unsigned long long> da(ao.size() * m, gb_dia_hole<double>::bits), db(bo.size() * kd, gb_dia_hole<double>::bits);
  gb_launch2((unsigned)((m + 255) / 256), 1, 256, [&] {
    gb_sym_dia_build<int, double>(m, Ap.data(), Aj.data(), Ax.data(), ao.data(), da.data()); });
  gb_launch2((unsigned)((kd + 255) / 256), 1, 256, [&] {
    gb_sym_dia_build<int, double>(kd, Bp.data(), Bj.data(), Bx.data(), bo.data(), db.data()); });
  const int KC = (int)co.size();
  std::vector<long long> counts(m), Cp(m + 1, 0);
  std::vector<int> none_j(1); std::vector<double> none_x(1);
  const unsigned grid = (unsigned)((m + 7) / 8 < 3 ? (m + 7) / 8 : 3);  // a grid-stride over the rows
  gb_launch2(grid, 1, 256, [&] {
    gb_spgemm_dia<GbF, double, double, false>(m, kd, n, da.data(), ao.data(), db.data(), bo.data(), co.data(),
        ps.data(), pa.data(), pb.data(), KC, counts.data(), Cp.data(), none_j.data(), none_x.data()); });
  for (long long i = 0; i < m; ++i) Cp[i + 1] = Cp[i] + counts[i];
  std::vector<int> Cj(Cp[m] + 1); std::vector<double> Cx(Cp[m] + 1);
  gb_launch2(grid, 1, 256, [&] {
    gb_spgemm_dia<GbF, double, double, true>(m, kd, n, da.data(), ao.data(), db.data(), bo.data(), co.data(),
        ps.data(), pa.data(), pb.data(), KC, counts.data(), Cp.data(), Cj.data(), Cx.data()); });
  for (long long i = 0; i <= m; ++i) printf("%lld ", Cp[i]);
  printf("\n");
  for (long long p = 0; p < Cp[m]; ++p) printf("%d ", Cj[p]);
  printf("\n");
  for (long long p = 0; p < Cp[m]; ++p) printf("%a ", Cx[p]);
  printf("\n");
  return 0;
}
"""


def _offsets(M):
    coo = M.tocoo()
    return np.unique(coo.col.astype(np.int64) - coo.row)


def test_dia_spgemm_kernel_gives_the_structural_product(tmp_path):
    """gb_spgemm_dia's two passes (a warp a row, a lane a result diagonal, grid-stride) on two
    different banded operands with holes and stored zeros, rectangular: Cp, the columns in
    order and the values against every pair of stored entries summed in float64."""
    from gbdist.backends.cuda import graph_dia
    exe = build(tmp_path, "spgemm_dia", GRAPH_PRELUDE + graph_source() + DIA_GEMM)
    rng = np.random.default_rng(12)
    m, kd, n = 70, 90, 80
    A = sps.diags([rng.random(70) + 0.5, rng.random(70) - 0.5, rng.random(60)], [0, 3, 30], shape=(m, kd), format="lil")
    A[9, 12] = 0  # (lil: assigning 0 removes it) a hole in diagonal 3
    A = sps.csr_matrix(A)
    A.data[(np.repeat(np.arange(m), np.diff(A.indptr)) == 5) & (A.indices == 8)] = 0.0  # a stored zero
    B = sps.diags([rng.random(80) + 1, rng.random(88), rng.random(79)], [-10, 0, 1], shape=(kd, n), format="csr")
    for M in (A, B):
        M.sort_indices()
    a, b = _offsets(A), _offsets(B)
    plan = graph_dia.pair_plan(a, b)
    text = "\n".join([f"{m} {kd} {n}", number_line(A.indptr), number_line(A.indices), number_line(A.data),
                      number_line(a), number_line(B.indptr), number_line(B.indices), number_line(B.data),
                      number_line(b)] + [number_line(v) for v in plan])
    out = subprocess.run([exe], input=text + "\n", capture_output=True, text=True, check=True,
                         timeout=600).stdout.split("\n")
    Cp = np.array(out[0].split(), dtype=np.int64)
    Cj = np.array(out[1].split(), dtype=np.int64)
    Cx = np.array([float.fromhex(t) for t in out[2].split()])
    # the structural product: every (i, k, j) with A(i,k) and B(k,j) stored
    P = {}
    for i in range(m):
        for p in range(A.indptr[i], A.indptr[i + 1]):
            k = A.indices[p]
            for q in range(B.indptr[k], B.indptr[k + 1]):
                P[(i, B.indices[q])] = P.get((i, B.indices[q]), 0.0) + A.data[p] * B.data[q]
    keys = sorted(P)
    want_p = np.searchsorted([i for i, _ in keys], np.arange(m + 1), side="left")
    np.testing.assert_array_equal(Cp, want_p)
    np.testing.assert_array_equal(Cj, [j for _, j in keys])
    np.testing.assert_allclose(Cx, [P[k] for k in keys], rtol=1e-14, atol=1e-15)
    assert (A.data == 0).any() and len(keys) > 100
