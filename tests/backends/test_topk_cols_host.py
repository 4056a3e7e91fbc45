"""The columns' top-k (kernels/topk.cuh's gb_topk_cols, then gb_topk over its runs' lists,
as :func:`gbdist.backends.cuda.topk.select_k_columns` launches them) run on the host (no
GPU needed): compiled with g++ against tests/backends/cuda_host/gather_host.h (a
std::thread per CUDA thread; warp votes through a per-warp barrier), against the CPU
reference's ``select_k`` of the transposed tile.

Checked bit for bit (values as stored, -0.0 and NaN included, and row indices): ties
between rows of one run and of different runs, NaN and ±0.0, float32 and float64, k at
the register lists' edges (16, 17, 32), one run and several (the last run longer), a column
count that is not a multiple of the block. A mutant whose last run stops at its chunk
(the rows past the last whole chunk unread) fails the same comparison.

This checks the kernels' logic as written, not the GPU's memory model or its compiler: the
GPU test is tests/backends/test_topk_cols_gpu.py."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from gbdist.backends.cpu import select_k
from gbdist.backends.cuda.topk import column_runs
from gbdist.resources import read

from host_build import GXX, build

pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")

PRELUDE = r"""
#undef __shared__
#define __shared__ static
"""  # gb_topk's static shared arrays: one per kernel, the blocks run one after another

DRIVER = r"""
typedef @T@ T;
template <int S> void cols(const T* D, long long rows, long long width, int kk, long long chunk,
                           int runs, T* pd, int* pr) {
  gb_launch2((unsigned)((width + 127) / 128), (unsigned)runs, 128, [&] {
    gb_topk_cols<T, S>(D, rows, width, kk, chunk, pd, pr); });
}
int main() {
  long long rows, width, chunk; int kk, runs;
  if (scanf("%lld %lld %d %lld %d", &rows, &width, &kk, &chunk, &runs) != 5) return 1;
  std::vector<T> D(rows * width);
  for (auto& v : D) { double x; if (scanf("%lf", &x) != 1) return 1; v = (T)x; }
  std::vector<T> pd(width * runs * kk);
  std::vector<int> pr(width * runs * kk);
  if (kk <= 16) cols<16>(D.data(), rows, width, kk, chunk, runs, pd.data(), pr.data());
  else cols<32>(D.data(), rows, width, kk, chunk, runs, pd.data(), pr.data());
  std::vector<T> od(width * kk);
  std::vector<long long> oi(width * kk);
  if (runs == 1) {
    for (long long t = 0; t < width * kk; ++t) { od[t] = pd[t]; oi[t] = pr[t]; }
  } else {  // the runs' lists by (distance, position), positions back to rows
    std::vector<long long> pos(width * kk);
    const long long blocks = (width + 3) / 4;
    gb_launch2((unsigned)blocks, 1, 128, [&] {
      gb_topk<T, 64, 4>(pd.data(), width, (long long)runs * kk, kk, kk, 0, od.data(), pos.data()); });
    for (long long c = 0; c < width; ++c)
      for (int j = 0; j < kk; ++j) oi[c * kk + j] = pr[c * runs * kk + pos[c * kk + j]];
  }
  for (long long t = 0; t < width * kk; ++t) printf("%.17g %lld\n", (double)od[t], oi[t]);
  return 0;
}
"""


def _exe(tmp_path, ctype: str, mutate=None) -> str:
    kernel = read("kernels", "topk.cuh")
    if mutate:
        old, new = mutate
        assert kernel.count(old) == 1, old
        kernel = kernel.replace(old, new)
    return build(tmp_path, f"topk_cols_{ctype}", PRELUDE + kernel + DRIVER.replace("@T@", ctype))


def _run(exe, D, kk, chunk):
    rows, width = D.shape
    runs = max(1, rows // chunk)
    text = f"{rows} {width} {kk} {chunk} {runs}\n" + " ".join(repr(float(v)) for v in D.ravel())
    out = subprocess.run([exe], input=text + "\n", capture_output=True, text=True, check=True,
                         timeout=600).stdout.split()
    d = np.array(out[0::2], dtype=np.float64).reshape(width, kk).astype(D.dtype)
    i = np.array(out[1::2], dtype=np.int64).reshape(width, kk)
    return d, i


def _tile(dtype, rows, width, seed=0):
    """Few distinct values (ties within and across runs), NaN, -0.0 beside 0.0."""
    rng = np.random.default_rng(seed)
    D = rng.integers(0, 6, size=(rows, width)).astype(dtype) / dtype(4)
    D[rng.random(D.shape) < 0.03] = np.nan
    D[rng.random(D.shape) < 0.05] = dtype(-0.0)
    D[:, 3] = np.nan  # a column of NaN only
    D[:, 5] = D[:, 5].min()  # a column of ties only
    return D


def _same(got, D, kk):
    rd, ri = select_k(np.ascontiguousarray(D.T), kk)
    np.testing.assert_array_equal(got[1], ri)
    np.testing.assert_array_equal(got[0].view(np.uint8), rd.astype(D.dtype).view(np.uint8))


@pytest.mark.parametrize("ctype,dtype", [("float", np.float32), ("double", np.float64)])
def test_columns_top_k_equals_the_transposed_selection(tmp_path, ctype, dtype):
    exe = _exe(tmp_path, ctype)
    for rows, width, kk, chunk in ((300, 133, 11, 64), (300, 133, 16, 100), (200, 70, 17, 64),
                                   (130, 40, 32, 64), (50, 129, 11, 64), (20, 9, 20, 64)):
        D = _tile(dtype, rows, width, seed=rows + kk)
        _same(_run(exe, D, kk, chunk), D, kk)


def test_runs_hold_at_least_k_rows_and_enough_threads():
    for rows, width, kk in ((20_724, 13_816, 11), (100, 5, 32), (40, 10_000, 11), (7, 3, 7),
                            (1_000_000, 2, 1)):
        runs, chunk = column_runs(rows, width, kk)
        assert runs >= 1 and chunk >= min(kk, rows) and (runs == 1 or chunk >= 64)
        assert runs * chunk <= rows or runs == 1  # the last run to the end: at least chunk
    runs, _ = column_runs(20_724, 13_816, 11)
    assert runs * 13_816 >= 2**18 - 13_816  # enough threads for the device


def test_a_mutant_whose_last_run_stops_short_fails(tmp_path):
    exe = _exe(tmp_path, "float", mutate=("run + 1 == runs ? rows : r0 + chunk",
                                          "r0 + chunk < rows ? r0 + chunk : rows"))
    D = _tile(np.float32, 300, 40, seed=3)
    D[290, :] = -1.0  # every column's best is in the rows past the last whole chunk
    with pytest.raises(AssertionError):
        _same(_run(exe, D, 11, 64), D, 11)


TRANSPOSE = r"""
int main() {
  long long rows, cols, ld; unsigned gy;
  if (scanf("%lld %lld %lld %u", &rows, &cols, &ld, &gy) != 4) return 1;
  std::vector<unsigned> src(rows * ld);
  for (auto& v : src) if (scanf("%u", &v) != 1) return 1;
  std::vector<unsigned> dst(rows * cols, 0xDEADBEEFu);
  gb_launch2((unsigned)((cols + 31) / 32), gy, 256, [&] {
    gb_transpose<unsigned>(src.data(), rows, cols, ld, dst.data()); });
  for (auto v : dst) printf("%u\n", v);
  return 0;
}
"""


def test_transpose_moves_every_word_of_a_strided_tile(tmp_path):
    """gb_transpose on raw words: sizes off the 32-tile, a row stride past the columns (a
    column slice of a wider tile), and fewer grid rows than row tiles (the blocks step)."""
    exe = build(tmp_path, "transpose", PRELUDE + read("kernels", "topk.cuh") + TRANSPOSE)
    rng = np.random.default_rng(7)
    for rows, cols, ld, gy in ((70, 45, 45, 3), (33, 100, 131, 1), (130, 7, 9, 2), (1, 40, 40, 1)):
        src = rng.integers(0, 2**32, size=(rows, ld), dtype=np.uint64).astype(np.uint32)
        text = f"{rows} {cols} {ld} {gy}\n" + " ".join(map(str, src.ravel()))
        out = subprocess.run([exe], input=text + "\n", capture_output=True, text=True, check=True,
                             timeout=600).stdout.split()
        got = np.array(out, dtype=np.uint64).astype(np.uint32).reshape(cols, rows)
        np.testing.assert_array_equal(got, src[:, :cols].T)
