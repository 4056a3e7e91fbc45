"""The generated CUDA source of a column-weighted product run on the host (no GPU needed):
the Spec the code generator prints for the plan and kernels/gather.cuh compiled with g++
against tests/backends/cuda_host/gather_host.h (a std::thread per CUDA thread, warp
shuffles and __syncthreads as barriers, blocks over a 2-D grid), launched as the backend
launches it (pass 1: dense left rows, streamed right rows; pass 2: roles swapped, the
columns the dense row stores skipped: SKIP_SHARED), with k-chunks and several blocks per
streamed range, against SciPy's cdist(..., w=) and Gower written out in float64.

This checks the kernel's logic as written (the union counted once, κ(w) read at the
column k0 + k of each pair), not the GPU's memory model or its compiler: the GPU tests
are tests/backends/test_weighted_gpu.py."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from gbdist.backends.cuda.codegen import generate
from gbdist.pairwise import metric_program
from gbdist.resources import read

from host_build import GXX, build, csr_lines
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")

R, G, BLOCK = 4, 8, 64  # rows per block, lanes per streamed row, threads per block

DRIVER = r"""
#include <cstdio>
static std::vector<int> ints(size_t n) { std::vector<int> v(n); for (auto& x : v) if (scanf("%d", &x) != 1) exit(2); return v; }
static std::vector<double> reals(size_t n) { std::vector<double> v(n); for (auto& x : v) if (scanf("%lf", &x) != 1) exit(2); return v; }
struct Csr { long long rows; std::vector<int> ptr, idx, cp; std::vector<gb_real> val; };
static Csr csr(long long rows, long long K, long long kchunk) {
  Csr c; c.rows = rows; c.ptr = ints(rows + 1); c.idx = ints(c.ptr[rows]);
  for (double x : reals(c.ptr[rows])) c.val.push_back((gb_real)x);
  const long long nch = (K + kchunk - 1) / kchunk;
  for (long long r = 0; r < rows; ++r)  // gb_chunk_ptr: each row's first entry of each chunk
    for (long long q = 0; q <= nch; ++q)
      c.cp.push_back(q == nch ? c.ptr[r + 1] : (int)(std::lower_bound(c.idx.begin() + c.ptr[r],
                     c.idx.begin() + c.ptr[r + 1], (int)(q * kchunk)) - c.idx.begin()));
  if (c.idx.empty()) { c.idx.push_back(0); c.val.push_back(0); }
  return c;
}
int main() {
  long long m, n, K, kchunk, gy, nw, upper;
  if (scanf("%lld %lld %lld %lld %lld %lld %lld", &m, &n, &K, &kchunk, &gy, &nw, &upper) != 7) return 2;
  Csr L = csr(m, K, kchunk), B = csr(n, K, kchunk);
  std::vector<gb_acc> wts(1);
  if (nw) { wts.clear(); for (double x : reals(nw * K)) wts.push_back((gb_acc)x); }
  std::vector<gb_acc> tmp(Spec::NACC * m * n, (gb_acc)-12345), red(1);
  std::vector<gb_real> out(m * n, (gb_real)-12345);
  gb_launch2((unsigned)((m + @R@ - 1) / @R@), (unsigned)gy, @BLOCK@, [&] {
    gb_gather<Spec, @R@, 1, @G@, int>(L.ptr.data(), L.idx.data(), L.val.data(), m, B.ptr.data(),
      B.idx.data(), B.val.data(), n, K, kchunk, L.cp.data(), B.cp.data(), out.data(), tmp.data(),
      m, n, red.data(), red.data(), wts.data(), (int)upper); });
  gb_launch2((unsigned)((n + @R@ - 1) / @R@), (unsigned)gy, @BLOCK@, [&] {
    gb_gather<Spec, @R@, 2, @G@, int>(B.ptr.data(), B.idx.data(), B.val.data(), n, L.ptr.data(),
      L.idx.data(), L.val.data(), m, K, kchunk, B.cp.data(), L.cp.data(), out.data(), tmp.data(),
      m, n, red.data(), red.data(), wts.data(), (int)upper); });
  for (long long t = 0; t < m * n; ++t) printf("%.17g\n", (double)out[t]);
  return 0;
}
"""


def _source(gen) -> str:
    """The generated source up to its kernel templates, then gather.cuh and the driver."""
    head = gen.source[:gen.source.index(read("kernels", "row_reduce.cuh"))]
    return (head + read("kernels", "gather.cuh")
            + DRIVER.replace("@R@", str(R)).replace("@G@", str(G)).replace("@BLOCK@", str(BLOCK)))


def _build(tmp_path, gen) -> str:
    return build(tmp_path, "gather_host", _source(gen))


def _run(exe, X, Y, wrows, kchunk, gy, upper=False) -> np.ndarray:
    K = X.shape[1]
    lines = [f"{X.shape[0]} {Y.shape[0]} {K} {kchunk} {gy} {len(wrows)} {int(upper)}"]
    lines += csr_lines(X) + csr_lines(Y)
    lines += [" ".join(repr(float(v)) for v in w) for w in wrows]
    out = subprocess.run([exe], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return np.array(out.split(), dtype=np.float64).reshape(X.shape[0], Y.shape[0])


def _data(seed=0, m=13, n=11, k=40, offset=0.0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(m, k)), 1) * (rng.random((m, k)) < 0.4)
    Y = np.round(rng.normal(size=(n, k)), 1) * (rng.random((n, k)) < 0.4)
    Y[3] = X[3]
    X[5] = 0.0
    w = rng.uniform(0.0, 2.0, k)
    w[2] = 0.0
    if offset:  # every column stored in every row: pass 2 skips everything
        X, Y = X + offset, Y + offset
    return X, Y, w


SLOW = pytest.mark.skipif(not os.environ.get("GBDIST_SLOW_TESTS"),
                          reason="one more g++ build (~3 s): GBDIST_SLOW_TESTS=1")


@pytest.mark.parametrize("metric,storage,acc", [
    ("canberra", np.float64, None), ("hamming", np.float32, np.float64),
    pytest.param("canberra", np.float32, np.float64, marks=SLOW),
    pytest.param("hamming", np.float64, None, marks=SLOW)])
def test_weighted_gather_on_the_host(tmp_path, metric, storage, acc):
    """One k-chunk and one block per streamed range; k-chunks of 16 and 7 columns with 2
    and 3 blocks per range; offset data (every column stored: pass 2 skips all)."""
    plan = metric_program(f"weighted_{metric}", w=np.ones(40)).plan
    gen = generate(plan, storage, acc)
    assert gen.weights and not gen.reductions
    exe = _build(tmp_path, gen)
    tol = dict(rtol=1e-6, atol=1e-7) if storage == np.float32 else dict(rtol=1e-12, atol=1e-13)
    for offset, kchunk, gy in ((0.0, 40, 1), (0.0, 16, 2), (0.0, 7, 3), (1e4, 16, 2)):
        X, Y, w = _data(offset=offset)
        X, Y = X.astype(storage).astype(np.float64), Y.astype(storage).astype(np.float64)
        wrow = w * (w.size / w.sum()) if metric == "hamming" else w  # relative: Σ w = k
        D = _run(exe, X, Y, [wrow], kchunk, gy)
        with np.errstate(all="ignore"):
            want = cdist(X, Y, metric, w=w)
        np.testing.assert_allclose(D, want, **tol, err_msg=f"kchunk {kchunk}, gy {gy}")


@SLOW
def test_weighted_gower_mixed_on_the_host(tmp_path):
    """Gower with w= and cat=: the kernel reads w; the values are the scaled operands."""
    from tests.front.test_gower_weights_and_categories import _mixed, brute
    X, Y, cat, w = _mixed(offset=1e4)
    plan = metric_program("gower_mixed", cat=cat, w=w).plan
    gen = generate(plan, np.float64)
    import scipy.sparse as sps
    from gbdist.runtime.columns import statistic
    both = [sps.csr_matrix(X), sps.csr_matrix(Y)]
    r, g = (statistic(kind, both, X.shape[1]) for kind in ("range", "gap"))
    s = np.where(cat > 0, 1.0 / g, 1.0 / (2 * r))  # the scaling explain shows
    D = _run(_build(tmp_path, gen), X * s, Y * s, [w * (w.size / w.sum())], 5, 2)
    np.testing.assert_allclose(D, brute(X, Y, cat, w), rtol=1e-9, atol=1e-12)


@SLOW
def test_unweighted_direct_union_on_the_host(tmp_path, monkeypatch):
    """The same pass for the accuracy rule's direct plans (codegen.DIRECT_UNION; once wrong
    on an H200, right there since): minkowski p = 3 summed as written over the union, on
    blobs offset by +100 (the GPU test that failed then), against SciPy."""
    from sklearn.datasets import make_blobs
    from gbdist.backends.cuda import codegen
    from gbdist.compiler.accuracy import direct_plan
    monkeypatch.setattr(codegen, "DIRECT_UNION", True)
    gen = generate(direct_plan(metric_program("minkowski", p=3).plan), np.float64)
    assert gen.direct_union and not gen.weights and not gen.reductions
    exe = _build(tmp_path, gen)
    X = make_blobs(40, 5, random_state=0)[0] + 100.0
    Xs = X.copy()
    Xs[Xs < 99.0] = 0.0  # sparse rows too: columns stored on one side only
    for data in (X, Xs):
        for kchunk, gy in ((5, 1), (2, 3)):
            D = _run(exe, data[:20], data[20:], [], kchunk, gy)
            want = cdist(data[:20], data[20:], "minkowski", p=3)
            np.testing.assert_allclose(D, want, rtol=1e-12, atol=1e-12)


def test_upper_computes_the_diagonal_tile_on_and_above_it(tmp_path):
    """A diagonal tile of a symmetric self-join (the backend's Job.upper): both passes of the
    union with ``upper`` set give the cells on and above the diagonal bit for bit as the
    whole tile does, and leave the cells below it that no block's own rows cover unwritten
    (the driver's -12345: the work is skipped, the mirror fills them on the GPU); k-chunks
    and several blocks per streamed range included."""
    plan = metric_program("weighted_canberra", w=np.ones(40)).plan
    gen = generate(plan, np.float64)
    exe = _build(tmp_path, gen)
    X, _, w = _data(m=23)
    X[7] = X[2]  # duplicate rows, and an empty one (row 5)
    i, j = np.indices((X.shape[0], X.shape[0]))
    for kchunk, gy in ((40, 1), (16, 2), (7, 3)):
        full = _run(exe, X, X, [w], kchunk, gy)
        up = _run(exe, X, X, [w], kchunk, gy, upper=True)
        assert np.array_equal(up[i <= j], full[i <= j]), (kchunk, gy)
        assert (up[(i > j) & (i // R != j // R)] == -12345).all(), (kchunk, gy)
        np.testing.assert_allclose(full, cdist(X, X, "canberra", w=w), rtol=1e-12, atol=1e-13)
