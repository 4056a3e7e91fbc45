"""The dense union (kernels/dense_union.cuh) run on the host (no GPU needed): the Spec the
code generator prints for chebyshev and for a user min-union, gb_densify (kernels/dense.cuh)
and gb_dense_union compiled with g++ against tests/backends/cuda_host/gather_host.h (a
std::thread per CUDA thread, blocks over a 3-D grid), launched as strategies.py launches
them (split K: the partial accumulators combined by gb_dense_union_finish), beside the
gather kernel's two passes on the same data, against SciPy's cdist.

Checked: equal to gather bit for bit (NaN where gather gives NaN) and to SciPy within
rounding, in float64 and float32 (float32 accumulators, as chebyshev's plan runs, and
float64 ones), on negative values, NaN values, empty rows, columns stored in no row,
output tiles cut at the rows' and columns' edges (m, n not multiples of 16·TM, 16·TN),
K-chunk edges (K not a multiple of BK) and split-K edges (the largest |x − y| of some pairs
placed in the last column, in a chunk's last and first columns and at a split's edges).
A mutant kernel that drops the last column of each K-range, and one that drops the last
left row, fail the same comparison.

This checks the kernel's logic as written, not the GPU's memory model or its compiler: the
GPU tests are tests/backends/test_dense_union_gpu.py."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import gbdist as gb
from gbdist.backends.cuda.codegen import DENSE_UNION_TILES, generate
from gbdist.pairwise import metric_program
from gbdist.resources import read

from host_build import GXX, build, csr_lines
NEEDS_GXX = pytest.mark.skipif(GXX is None, reason="needs g++")

TM, TN, BK = 2, 3, 8  # a 32 × 48 output tile, K-chunks of 8 columns (small: many edges)
R, G, BLOCK = 4, 8, 64  # the gather kernel's rows per block, lanes per row, threads

DRIVER = r"""
#include <cstdio>
static std::vector<int> ints(size_t n) { std::vector<int> v(n); for (auto& x : v) if (scanf("%d", &x) != 1) exit(2); return v; }
static std::vector<double> reals(size_t n) { std::vector<double> v(n); for (auto& x : v) if (scanf("%lf", &x) != 1) exit(2); return v; }
struct Csr { long long rows; std::vector<int> ptr, idx; std::vector<gb_real> val; };
static Csr csr(long long rows) {
  Csr c; c.rows = rows; c.ptr = ints(rows + 1); c.idx = ints(c.ptr[rows]);
  for (double x : reals(c.ptr[rows])) c.val.push_back((gb_real)x);
  if (c.idx.empty()) { c.idx.push_back(0); c.val.push_back(0); }
  return c;
}
static std::vector<gb_real> densify(const Csr& c, long long K) {  // as _raw_densified
  std::vector<gb_real> d(c.rows * K + 1, (gb_real)0);
  gb_launch2((unsigned)((c.rows * 32 + 63) / 64 > 0 ? (c.rows * 32 + 63) / 64 : 1), 1, 64, [&] {
    gb_densify<gb_raw_map<Spec>, int>(c.ptr.data(), c.idx.data(), c.val.data(), c.rows, K, 0,
                                      d.data()); });
  return d;
}
int main() {
  long long m, n, K, kper;
  if (scanf("%lld %lld %lld %lld", &m, &n, &K, &kper) != 4) return 2;
  Csr L = csr(m), B = csr(n);
  std::vector<gb_acc> red(1), wts(1);
  // the dense union, launched as dense_strategies._dense_union_launch does
  std::vector<gb_real> da = densify(L, K), db = densify(B, K);
  const long long gx = (n + 16 * @TN@ - 1) / (16 * @TN@), gy = (m + 16 * @TM@ - 1) / (16 * @TM@);
  const long long gz = K > 0 ? (K + kper - 1) / kper : 1;
  std::vector<gb_acc> tmp(gz * Spec::NACC * m * n + 1, (gb_acc)-12345);
  std::vector<gb_real> out(m * n, (gb_real)-12345);
  gb_launch3((unsigned)gx, (unsigned)gy, (unsigned)gz, 256, [&] {
    gb_dense_union<Spec, @TM@, @TN@, @BK@>(da.data(), db.data(), m, n, K, kper, out.data(),
                                          tmp.data(), red.data(), red.data(), wts.data()); });
  if (gz > 1)
    gb_launch2(2, 1, 64, [&] {
      gb_dense_union_finish<Spec>(tmp.data(), (int)gz, m, n, K, out.data(), red.data(), red.data()); });
  // gather's two passes (one k-chunk: the kernel's chunking is tested elsewhere)
  std::vector<gb_acc> gtmp(Spec::NACC * m * n, (gb_acc)-12345);
  std::vector<gb_real> gout(m * n, (gb_real)-12345);
  const long long kc = K > 0 ? K : 1;
  gb_launch2((unsigned)((m + @R@ - 1) / @R@), 2, @BLOCK@, [&] {
    gb_gather<Spec, @R@, 1, @G@, int>(L.ptr.data(), L.idx.data(), L.val.data(), m, B.ptr.data(),
      B.idx.data(), B.val.data(), n, K, kc, L.ptr.data(), B.ptr.data(), gout.data(), gtmp.data(),
      m, n, red.data(), red.data(), wts.data(), 0); });
  gb_launch2((unsigned)((n + @R@ - 1) / @R@), 2, @BLOCK@, [&] {
    gb_gather<Spec, @R@, 2, @G@, int>(B.ptr.data(), B.idx.data(), B.val.data(), n, L.ptr.data(),
      L.idx.data(), L.val.data(), m, K, kc, B.ptr.data(), L.ptr.data(), gout.data(), gtmp.data(),
      m, n, red.data(), red.data(), wts.data(), 0); });
  for (long long t = 0; t < m * n; ++t) printf("%.17g %.17g\n", (double)out[t], (double)gout[t]);
  return 0;
}
"""


def _source(gen, mutate=None, tiles=(TM, TN, BK)) -> str:
    """The generated Spec, then gather.cuh, dense.cuh, dense_union.cuh and the driver."""
    assert "dense_union" in gen.strategies
    head = gen.source[:gen.source.index(read("kernels", "row_reduce.cuh"))]
    kernel = read("kernels", "dense_union.cuh")
    if mutate:
        old, new = mutate
        assert kernel.count(old) == 1, old
        kernel = kernel.replace(old, new)
    driver = DRIVER
    for k, v in dict(zip(("TM", "TN", "BK"), tiles), R=R, G=G, BLOCK=BLOCK).items():
        driver = driver.replace(f"@{k}@", str(v))
    return head + read("kernels", "gather.cuh") + read("kernels", "dense.cuh") + kernel + driver


def _build(tmp_path, gen, mutate=None, name="dense_union_host", tiles=(TM, TN, BK)) -> str:
    return build(tmp_path, name, _source(gen, mutate, tiles))


def _run(exe, X, Y, kper):
    """(dense union, gather), each m × n."""
    lines = [f"{X.shape[0]} {Y.shape[0]} {X.shape[1]} {kper}"] + csr_lines(X) + csr_lines(Y)
    out = subprocess.run([exe], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True, timeout=300).stdout
    both = np.array(out.split(), dtype=np.float64).reshape(X.shape[0], Y.shape[0], 2)
    return both[..., 0], both[..., 1]


def _data(storage, seed=0, m=37, n=53, k=53):
    """Negative values, an empty row on each side, columns stored in no row, a NaN, and the
    largest |x − y| of some rows in the last column, at chunk and split edges."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(m, k)), 2) * (rng.random((m, k)) < 0.35)
    Y = np.round(rng.normal(size=(n, k)), 2) * (rng.random((n, k)) < 0.35)
    X[:, [4, 19]] = 0.0
    Y[:, [4, 19, 30]] = 0.0  # column 30: stored on the left only
    X[5] = 0.0
    Y[7] = 0.0
    Y[3] = X[3]
    for i, col in ((1, k - 1), (9, 7), (10, 8), (11, 23), (12, 24), (13, 47), (14, 48)):
        X[i, col] = 40.0 + i  # |x − y| largest at this column for row i
    Y[2, k - 1] = -60.0  # column j = 2's largest on the right side, last column
    X[m - 1, k - 1] = 70.0  # the last row's last column (a tile's and the K-range's edge)
    X[6, 11] = np.nan
    Y[8, 12] = np.nan
    return X.astype(storage).astype(np.float64), Y.astype(storage).astype(np.float64)


def _min_union_plan():
    op = gb.op("du_host_inv", lambda x, y: 1 / (1 + abs(x - y)))
    return metric_program(lambda A, B: gb.mxm(A, B.T, gb.semiring(op, gb.ops.min))).plan


def _want(kind, X, Y):
    """SciPy's cdist, with NaN where a row holds one: gather's semantics (gb_max, gb_min
    propagate NaN, as NumPy's max does; SciPy's chebyshev skips it)."""
    with np.errstate(all="ignore"):
        d = cdist(np.nan_to_num(X), np.nan_to_num(Y), "chebyshev")
        d[np.isnan(X).any(axis=1)] = np.nan
        d[:, np.isnan(Y).any(axis=1)] = np.nan
        if X.shape[1]:  # the brute form agrees where a NaN is involved
            brute = np.abs(X[:, None, :] - Y[None, :, :]).max(axis=2)
            np.testing.assert_array_equal(np.isnan(brute), np.isnan(d))
        return d if kind == "chebyshev" else 1.0 / (1.0 + d)


def _check(exe, kind, storage, X, Y, kper):
    D, Dg = _run(exe, X, Y, kper)
    np.testing.assert_array_equal(D, Dg, err_msg=f"dense union vs gather, kper {kper}")
    tol = dict(rtol=2e-7, atol=0) if storage == np.float32 else dict(rtol=1e-15, atol=0)
    np.testing.assert_allclose(D, _want(kind, X, Y), **tol, err_msg=f"vs SciPy, kper {kper}")


CASES = [("chebyshev", np.float64, None), ("chebyshev", np.float32, np.float32),
         ("chebyshev", np.float32, np.float64), ("min_union", np.float64, None),
         ("min_union", np.float32, np.float64)]


@NEEDS_GXX
@pytest.mark.parametrize("kind,storage,acc", CASES)
def test_dense_union_on_the_host(tmp_path, kind, storage, acc):
    """One K-range; three (24, 24 and 5 columns: split edges at 24 and 48); a range of one
    chunk each (seven ranges); one column past the data (K = 1)."""
    plan = metric_program("chebyshev").plan if kind == "chebyshev" else _min_union_plan()
    gen = generate(plan, storage, acc)
    exe = _build(tmp_path, gen)
    X, Y = _data(storage)
    for kper in (56, 24, 8):
        _check(exe, kind, storage, X, Y, kper)
    _check(exe, kind, storage, X[:, :1], Y[:, :1], 8)  # K = 1: a chunk of one column


@NEEDS_GXX
def test_empty_operands(tmp_path):
    """Both sides without a stored entry: every pair is f(0, 0) only, the corner (K = 0 is
    refused before a backend runs: pairwise_distances needs a column)."""
    gen = generate(metric_program("chebyshev").plan, np.float64)
    exe = _build(tmp_path, gen)
    Z = np.zeros((17, 9))
    for kper in (8, 16):
        D, Dg = _run(exe, Z, Z[:5], kper)
        np.testing.assert_array_equal(D, Dg)
        np.testing.assert_array_equal(D, np.zeros((17, 5)))


@NEEDS_GXX
@pytest.mark.parametrize("mutant", [
    ("? da[i * K + k] : (T)0", "&& k + 1 < ke ? da[i * K + k] : (T)0"),  # a range's last column
    ("(i < n_left && k < ke)", "(i + 1 < n_left && k < ke)")])  # the last left row
def test_a_mutant_fails(tmp_path, mutant):
    gen = generate(metric_program("chebyshev").plan, np.float64)
    exe = _build(tmp_path, gen, mutate=mutant, name="mutant")
    X, Y = _data(np.float64)
    with pytest.raises(AssertionError):
        for kper in (56, 24):
            _check(exe, "chebyshev", np.float64, X, Y, kper)


SLOW = pytest.mark.skipif(not os.environ.get("GBDIST_SLOW_TESTS"),
                          reason="another g++ build: GBDIST_SLOW_TESTS=1")


@NEEDS_GXX
@SLOW
@pytest.mark.parametrize("tiles", DENSE_UNION_TILES)
def test_the_launched_tiles_on_the_host(tmp_path, tiles):
    """The (TM, TN, BK) the backend launches (codegen.DENSE_UNION_TILES): one partial tile."""
    gen = generate(metric_program("chebyshev").plan, np.float32, np.float32)
    exe = _build(tmp_path, gen, tiles=tiles)
    X, Y = _data(np.float32)
    for kper in (64, 2 * tiles[2]):
        _check(exe, "chebyshev", np.float32, X, Y, kper)


def test_which_plans_offer_it_and_the_planner_off():
    """chebyshev and a user min-union list it; intersections, union corrections and the
    accuracy rule's plus-over-the-union do not; while DENSE_UNION is off its estimate is
    None (never offered), forced it is still a strategy of the table; ⊗'s cost counts a
    division (the min-union's 1 / (1 + |x − y|))."""
    from gbdist.backends.cuda import dense_strategies, strategies
    from gbdist.backends.cuda.dense_strategies import _dense_union_estimate, _mul_cost
    from gbdist.backends.cuda.strategies import Job
    from gbdist.compiler.accuracy import direct_plan
    cheb = generate(metric_program("chebyshev").plan, np.float32, np.float32)
    mine = generate(_min_union_plan(), np.float64)
    assert "dense_union" in cheb.strategies and "dense_union" in mine.strategies
    for m in ("cosine", "manhattan", "euclidean", "jaccard"):
        assert "dense_union" not in generate(metric_program(m).plan, np.float64).strategies
    direct = generate(direct_plan(metric_program("minkowski", p=3).plan), np.float64)
    assert direct.union and "dense_union" not in direct.strategies
    assert "dense_union" in strategies.TABLE and dense_strategies.DENSE_UNION is False
    job = Job(cheb, None, None, 100, np.dtype(np.float32), np.dtype(np.float32), "int")
    assert _dense_union_estimate(job) is None
    assert _mul_cost(cheb) == 1.0 and _mul_cost(mine) == 1.0 + dense_strategies.DU_DIV
