"""The SpGEMM's global-table kernel (kernels/graph_kernels.cuh's ``gb_spgemm_global``) run on
the host (no GPU needed): the generated plus_times source compiled with g++ against
tests/backends/cuda_host/graph_host.h (a std::thread per CUDA thread), both passes launched
as :meth:`gbdist.backends.cuda.graph.CudaGraphKernels.spgemm` launches them, against SciPy.

Dense tables (a slot per result column; rows written in column order by the block scan)
must give every row sorted, with no sort afterwards; hashed tables (a power of two >= twice
the row's bound) the same entries in any order. Plain, masked and complemented. A mutant of
the dense write-out whose warps do not count the warps before them fails.

This checks the kernel's logic as written, not the GPU's memory model or its compiler: the
GPU tests are in tests/backends/test_cuda_graph.py."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist.backends.cuda import graph_codegen as gc

from host_build import GXX, build

pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")

PRELUDE = '#include "graph_host.h"\n#undef __shared__\n#define __shared__ static\n'

DRIVER = r"""
static std::vector<long long> ints(const char* what) {
  long long n; if (scanf("%lld", &n) != 1) { fprintf(stderr, "%s\n", what); exit(1); }
  std::vector<long long> v(n); for (auto& x : v) if (scanf("%lld", &x) != 1) exit(1); return v; }
static std::vector<double> reals() {
  long long n; if (scanf("%lld", &n) != 1) exit(1);
  std::vector<double> v(n); for (auto& x : v) if (scanf("%lf", &x) != 1) exit(1); return v; }
static std::vector<int> narrow(const std::vector<long long>& v) { return std::vector<int>(v.begin(), v.end()); }
int main() {
  long long m, n; int dense, mode;
  if (scanf("%lld %lld %d %d", &m, &n, &dense, &mode) != 4) return 1;
  auto Ap = narrow(ints("Ap")), Aj = narrow(ints("Aj")); auto Ax = reals();
  auto Bp = narrow(ints("Bp")), Bj = narrow(ints("Bj")); auto Bx = reals();
  auto Mp = narrow(ints("Mp")), Mj = narrow(ints("Mj"));
  auto rows = ints("rows"), ub = ints("ub");
  const long long G = (long long)rows.size();
  std::vector<long long> toff(G + 1, 0);
  for (long long r = 0; r < G; ++r) {  // hashed: the power of two >= 2 * the row's bound
    long long s = 1; while (s < 2 * ub[r]) s <<= 1; toff[r + 1] = toff[r] + s; }
  const long long total = dense ? G * n : toff[G];
  std::vector<int> keys(total); std::vector<double> vals(total);
  std::vector<long long> counts(m, 0), Cp(m + 1, 0);
  std::vector<int> Cj(1); std::vector<double> Cx(1);
  auto pass = [&](auto numeric) {
    constexpr bool NUM = decltype(numeric)::value;
    gb_launch2((unsigned)G, 1, 512, [&] {
      auto go = [&](auto M, auto D) {
        gb_spgemm_global<GbF, int, double, double, NUM, decltype(M)::value, decltype(D)::value>(
            rows.data(), G, toff.data(), dense ? n : 0, keys.data(), vals.data(), Ap.data(), Aj.data(),
            Ax.data(), Bp.data(), Bj.data(), Bx.data(), Mp.data(), Mj.data(), counts.data(), Cp.data(),
            Cj.data(), Cx.data()); };
      using T = std::true_type; using F = std::false_type;
      if (dense) { if (mode == 0) go(std::integral_constant<int, 0>{}, T{});
                   else if (mode == 1) go(std::integral_constant<int, 1>{}, T{});
                   else go(std::integral_constant<int, 2>{}, T{}); }
      else { if (mode == 0) go(std::integral_constant<int, 0>{}, F{});
             else if (mode == 1) go(std::integral_constant<int, 1>{}, F{});
             else go(std::integral_constant<int, 2>{}, F{}); }
    });
  };
  pass(std::false_type{});
  for (long long i = 0; i < m; ++i) Cp[i + 1] = Cp[i] + counts[i];
  Cj.assign(Cp[m] + 1, -1); Cx.assign(Cp[m] + 1, 0.0);
  pass(std::true_type{});
  for (long long r = 0; r < G; ++r) {
    const long long i = rows[r];
    printf("%lld %lld", i, Cp[i + 1] - Cp[i]);
    for (long long p = Cp[i]; p < Cp[i + 1]; ++p) printf(" %d %.17g", Cj[p], Cx[p]);
    printf("\n");
  }
  return 0;
}
"""


def _exe(tmp_path, mutate=None) -> str:
    sr = gb.semirings.plus_times
    src = gc.source(gc.functor(sr.mul, sr.add, np.dtype(np.float64)))
    src = src.replace("extern __shared__", "extern")  # the block's memory: gather_host.h's gb_smem
    if mutate:
        assert src.count(mutate[0]) == 1, mutate[0]
        src = src.replace(*mutate)
    return build(tmp_path, "spgemm_global", PRELUDE + src + DRIVER)


def _line(v) -> str:
    v = np.asarray(v).ravel()
    return f"{v.size} " + " ".join(repr(float(x)) if v.dtype.kind == "f" else str(int(x)) for x in v)


def _run(exe, A, B, rows, dense: bool, mode: int, M=None):
    A, B = sps.csr_matrix(A), sps.csr_matrix(B)
    A.sort_indices()
    B.sort_indices()
    M = sps.csr_matrix((1, 1)) if M is None else sps.csr_matrix(M)
    M.sort_indices()
    deg = np.diff(B.indptr)
    ub = [min(int(deg[A.indices[A.indptr[i]:A.indptr[i + 1]]].sum()), B.shape[1]) for i in rows]
    ub = [max(u, 1) for u in ub]
    text = "\n".join([f"{A.shape[0]} {B.shape[1]} {int(dense)} {mode}",
                      _line(A.indptr), _line(A.indices), _line(A.data.astype(np.float64)),
                      _line(B.indptr), _line(B.indices), _line(B.data.astype(np.float64)),
                      _line(M.indptr), _line(M.indices), _line(rows), _line(ub)])
    out = subprocess.run([exe], input=text + "\n", capture_output=True, text=True, check=True,
                         timeout=600).stdout.splitlines()
    got = {}
    for ln in out:
        t = ln.split()
        i, c = int(t[0]), int(t[1])
        got[i] = (np.array(t[2:2 + 2 * c:2], dtype=np.int64), np.array(t[3:3 + 2 * c:2], dtype=np.float64))
    return got


def _graph(seed):
    """A: a few long rows (the global-table rows) and short ones; B: power-law columns."""
    rng = np.random.default_rng(seed)
    m, k, n = 12, 300, 700
    A = sps.random(m, k, density=0.02, random_state=seed, format="lil")
    for i in (1, 5, 9):
        A[i, rng.choice(k, 120, replace=False)] = rng.integers(-2, 4, 120)
    B = sps.random(k, n, density=0.03, random_state=seed + 1, format="csr")
    B.data = np.round(B.data * 8) - 3  # zeros and negatives: sums that cancel stay stored
    return sps.csr_matrix(A), B


def _want(A, B, M, mode):
    ones = lambda X: sps.csr_matrix((np.ones(X.nnz), X.indices, X.indptr), shape=X.shape)  # noqa: E731
    pattern, values = sps.csr_matrix(ones(A) @ ones(B)), sps.csr_matrix(A @ B)
    if mode:
        inside = sps.csr_matrix(pattern.multiply(M)), sps.csr_matrix(values.multiply(M))
        if mode == 1:
            pattern, values = inside
        else:
            pattern, values = pattern - inside[0], values - inside[1]
        pattern = sps.csr_matrix(pattern)
        pattern.eliminate_zeros()
    return pattern, sps.csr_matrix(values)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_dense_and_hashed_tables_give_scipy_rows(tmp_path, mode):
    exe = _exe(tmp_path)
    A, B = _graph(3)
    M = None
    if mode:
        M = sps.random(A.shape[0], B.shape[1], density=0.4, random_state=8, format="csr")
        M.data[:] = 1.0
    pattern, values = _want(A, B, M, mode)
    rows = [1, 5, 9, 0, 2]
    for dense in (True, False):
        got = _run(exe, A, B, rows, dense, mode, M)
        for i in rows:
            cols, vals = got[i]
            want_cols = pattern.indices[pattern.indptr[i]:pattern.indptr[i + 1]]
            want_cols = np.sort(want_cols)
            if dense:  # written in column order: nothing to sort
                np.testing.assert_array_equal(cols, want_cols)
            else:
                order = np.argsort(cols)
                cols, vals = cols[order], vals[order]
                np.testing.assert_array_equal(cols, want_cols)
            np.testing.assert_allclose(vals, values[i].toarray().ravel()[cols], rtol=1e-12, atol=1e-12)


def test_a_write_out_that_skips_the_warps_before_fails(tmp_path):
    exe = _exe(tmp_path, mutate=("for (int w = 0; w < warp; ++w) before += warp_n[w];", ""))
    A, B = _graph(3)
    pattern, _ = _want(A, B, None, 0)
    got = _run(exe, A, B, [1, 5, 9], True, 0)
    assert any(not np.array_equal(got[i][0], np.sort(pattern.indices[pattern.indptr[i]:pattern.indptr[i + 1]]))
               for i in (1, 5, 9))
