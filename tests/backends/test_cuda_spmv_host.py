"""The CUDA SpMV kernels (kernels/graph_kernels.cuh's ``gb_spmv_stream``, the row tiles, and
``gb_spmv_rows``, in order) run on the host (no GPU needed): the generated plus_times source
compiled with g++ against tests/backends/cuda_host/graph_host.h (a std::thread per CUDA
thread), launched as :meth:`gbdist.backends.cuda.graph.CudaGraphKernels.spmv` launches them
(the tiles' starts from ``graph_tiles.tile_starts``), against NumPy.

Rows of every kind the tiles treat apart: empty, short (a thread), over 32 entries (a warp),
longer than a tile (the whole block); x with absent entries, a row mask and its
complement, compensated sums; every lane count of the in-order kernel. The present flags
must be exactly the rows with a present term (and kept by the mask). A mutant of the tile
kernel that drops a tile's last row fails.

This checks the kernels' logic as written, not the GPU's memory model or its compiler: the
GPU tests are in tests/backends/test_cuda_spmv_tiles_gpu.py."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
import scipy.sparse as sps

from gbdist.backends.cuda import graph_codegen as gc
from gbdist.backends.cuda.graph_tiles import tile_starts

from host_build import GRAPH_PRELUDE, GXX, build, graph_source, number_line

pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")

TILE = gc.SPMV_TILE

DRIVER = r"""
int main() {
  long long m; int kind, comp, csum, masked, present;
  if (scanf("%lld %d %d %d %d %d", &m, &kind, &comp, &csum, &masked, &present) != 6) return 1;
  auto Ap64 = gb_read_ints(), Aj64 = gb_read_ints(); auto Ax = gb_read_reals(); auto x = gb_read_reals();
  auto xp64 = gb_read_ints(), ym64 = gb_read_ints(), starts = gb_read_ints();
  std::vector<int> Ap(Ap64.begin(), Ap64.end()), Aj(Aj64.begin(), Aj64.end());
  std::unique_ptr<bool[]> xp(new bool[xp64.size() + 1]), ym(new bool[ym64.size() + 1]);
  for (size_t i = 0; i < xp64.size(); ++i) xp[i] = xp64[i];
  for (size_t i = 0; i < ym64.size(); ++i) ym[i] = ym64[i];
  std::vector<double> y(m, -777.0);
  std::unique_ptr<bool[]> yp(new bool[m + 1]);
  for (long long i = 0; i < m; ++i) yp[i] = true;  // the kernels must write every flag
  const bool* xpp = present ? xp.get() : nullptr;
  const bool* ymp = masked ? ym.get() : nullptr;
  auto go = [&](auto C, auto S, auto G) {
    constexpr bool CO = decltype(C)::value != 0, CS = decltype(S)::value != 0;
    constexpr int g = decltype(G)::value;
    if constexpr (g == 0) {
      const long long blocks = (long long)starts.size() - 1;
      gb_launch2((unsigned)blocks, 1, 256, [&] {
        gb_spmv_stream<GbF, int, double, double, CO, CS, @TILE@>(starts.data(), Ap.data(), Aj.data(),
            Ax.data(), x.data(), xpp, ymp, y.data(), yp.get()); });
    } else {
      gb_launch2((unsigned)((m * g + 255) / 256), 1, 256, [&] {
        gb_spmv_rows<GbF, int, double, double, CO, CS, g>(m, Ap.data(), Aj.data(), Ax.data(),
            x.data(), xpp, ymp, y.data(), yp.get()); });
    }
  };
  auto lanes = [&](auto C, auto S) {
    switch (kind) {
      case 0: go(C, S, gb_int<0>{}); break;
      case 2: go(C, S, gb_int<2>{}); break;
      case 4: go(C, S, gb_int<4>{}); break;
      case 8: go(C, S, gb_int<8>{}); break;
      default: go(C, S, gb_int<32>{});
    }
  };
  if (comp) { if (csum) lanes(gb_int<1>{}, gb_int<1>{}); else lanes(gb_int<1>{}, gb_int<0>{}); }
  else { if (csum) lanes(gb_int<0>{}, gb_int<1>{}); else lanes(gb_int<0>{}, gb_int<0>{}); }
  for (long long i = 0; i < m; ++i) printf("%d %.17g\n", (int)yp[i], y[i]);
  return 0;
}
"""


def _exe(tmp_path, mutate=None) -> str:
    return build(tmp_path, "spmv", GRAPH_PRELUDE + graph_source(mutate) + DRIVER.replace("@TILE@", str(TILE)))


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return _exe(tmp_path_factory.mktemp("spmv"))


def _matrix(seed=5):
    """Rows of 0, 1-31, 33-300 and 1,500-2,500 entries (past a tile), runs of empty rows."""
    rng = np.random.default_rng(seed)
    m, n = 700, 3000
    deg = rng.choice([0, 0, 1, 3, 7, 20, 31, 33, 60, 300], size=m)
    deg[[5, 300, 301, 650]] = [1500, 2500, 1200, 2100]
    deg[100:140] = 0
    indptr = np.concatenate([[0], np.cumsum(deg)])
    indices = np.concatenate([np.sort(rng.choice(n, d, replace=False)) for d in deg])
    data = rng.random(indices.size) + 0.5
    return sps.csr_matrix((data, indices, indptr), shape=(m, n))


def _run(exe, A, x, kind, comp=False, csum=False, xp=None, ym=None):
    m = A.shape[0]
    starts = tile_starts(A.indptr.astype(np.int64), TILE, np)[0] if kind == 0 else np.zeros(1)
    text = "\n".join([f"{m} {kind} {int(comp)} {int(csum)} {int(ym is not None)} {int(xp is not None)}",
                      number_line(A.indptr), number_line(A.indices), number_line(A.data), number_line(x),
                      number_line(np.zeros(1, np.int64) if xp is None else xp.astype(np.int64)),
                      number_line(np.zeros(1, np.int64) if ym is None else ym.astype(np.int64)),
                      number_line(starts.astype(np.int64))])
    out = subprocess.run([exe], input=text + "\n", capture_output=True, text=True, check=True,
                         timeout=900).stdout.split()
    return np.array(out[0::2], dtype=np.int64).astype(bool), np.array(out[1::2], dtype=np.float64)


def _want(A, x, xp, ym, comp):
    keep = np.ones(A.shape[1], bool) if xp is None else xp
    Ak = A @ sps.diags(keep.astype(np.float64))
    y = Ak @ x
    present = np.diff(sps.csr_matrix(A[:, keep]).indptr) > 0
    if ym is not None:
        present &= (~ym if comp else ym)
    return present, y


@pytest.mark.parametrize("kind", [0, 2, 4, 8, 32])
def test_spmv_kernels_give_numpys_sums_and_flags(exe, kind):
    A = _matrix()
    rng = np.random.default_rng(kind)
    x = rng.random(A.shape[1]) + 0.25
    xp = rng.random(A.shape[1]) < 0.8
    ym = rng.random(A.shape[0]) < 0.5
    cases = [dict(), dict(xp=xp), dict(ym=ym), dict(ym=ym, comp=True),
             dict(xp=xp, ym=ym, csum=True), dict(csum=True)]
    for case in cases if kind in (0, 2) else cases[::4]:  # wider lane counts: two cases
        got_p, got_y = _run(exe, A, x, kind, **case)
        want_p, want_y = _want(A, x, case.get("xp"), case.get("ym"), case.get("comp", False))
        np.testing.assert_array_equal(got_p, want_p, err_msg=str(sorted(case)))
        np.testing.assert_allclose(got_y[want_p], want_y[want_p], rtol=1e-12, err_msg=str(sorted(case)))


def test_a_tile_kernel_that_misses_rows_fails(tmp_path):
    src_line = "constexpr int LONG = 32;       // rows above this many entries get a warp"
    exe = _exe(tmp_path, mutate=(src_line, src_line.replace("32;", "32; if (blockIdx.x == 1) return;")))
    A = _matrix()
    x = np.ones(A.shape[1])
    got_p, got_y = _run(exe, A, x, 0)
    want_p, want_y = _want(A, x, None, None, False)
    assert not (np.array_equal(got_p, want_p) and np.allclose(got_y[want_p], want_y[want_p]))
