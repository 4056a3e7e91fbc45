"""The CUDA SpGEMM's kernels (kernels/graph_kernels.cuh) run on the host (no GPU needed): the
generated plus_times source compiled with g++ against tests/backends/cuda_host/graph_host.h
(a std::thread per CUDA thread), both passes launched as
:meth:`gbdist.backends.cuda.graph.CudaGraphKernels.spgemm` launches them, against SciPy.

* ``gb_spgemm_global`` alone: dense tables (a slot per result column; rows written in column
  order by the block scan) give every row sorted, with no sort afterwards; hashed tables (a
  power of two >= twice the row's bound) the same entries in any order. Plain, masked and
  complemented. A mutant of the dense write-out whose warps do not count the warps before
  them fails.
* The whole product: rows in every bin of both passes (the one-launch ``gb_spgemm_binned``,
  the three large ``gb_spgemm_shared`` bins, the global tables dense and hashed), plain and
  complemented. A mutant of the one-launch kernel's bin dispatch fails.

This checks the kernels' logic as written, not the GPU's memory model or its compiler: the
GPU tests are in tests/backends/test_cuda_graph.py."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
import scipy.sparse as sps

from gbdist.backends.cuda import graph_codegen as gc
from gbdist.resources import read

from host_build import GRAPH_PRELUDE, GXX, build, graph_source, number_line

pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++")

DRIVER = r"""
int main() {
  long long m, n; int dense, mode;
  if (scanf("%lld %lld %d %d", &m, &n, &dense, &mode) != 4) return 1;
  auto Ap = gb_narrow(gb_read_ints()), Aj = gb_narrow(gb_read_ints()); auto Ax = gb_read_reals();
  auto Bp = gb_narrow(gb_read_ints()), Bj = gb_narrow(gb_read_ints()); auto Bx = gb_read_reals();
  auto Mp = gb_narrow(gb_read_ints()), Mj = gb_narrow(gb_read_ints());
  auto rows = gb_read_ints(), ub = gb_read_ints();
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
      if (dense) { if (mode == 0) go(gb_int<0>{}, T{});
                   else if (mode == 1) go(gb_int<1>{}, T{});
                   else go(gb_int<2>{}, T{}); }
      else { if (mode == 0) go(gb_int<0>{}, F{});
             else if (mode == 1) go(gb_int<1>{}, F{});
             else go(gb_int<2>{}, F{}); }
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


def _bins_source() -> str:
    """kernels/graph_bins.cuh (the bounds, the compaction) for the drivers."""
    return read("kernels", "graph_bins.cuh").replace('extern "C" ', "")


def _exe(tmp_path, mutate=None) -> str:
    return build(tmp_path, "spgemm_global", GRAPH_PRELUDE + graph_source(mutate) + DRIVER)


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return _exe(tmp_path_factory.mktemp("spgemm_global"))


@pytest.fixture(scope="module")
def exe_all(tmp_path_factory):
    return build(tmp_path_factory.mktemp("spgemm_all"), "spgemm_all", GRAPH_PRELUDE + graph_source() + _bins_source()
                 + DRIVER_ALL)


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
                      number_line(A.indptr), number_line(A.indices), number_line(A.data.astype(np.float64)),
                      number_line(B.indptr), number_line(B.indices), number_line(B.data.astype(np.float64)),
                      number_line(M.indptr), number_line(M.indices), number_line(rows), number_line(ub)])
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
    pattern.sort_indices()
    return pattern, sps.csr_matrix(values)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_dense_and_hashed_tables_give_scipy_rows(exe, mode):
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


# Every kernel of a pass: the one-launch bins (gb_spgemm_binned), the three large shared bins
# (gb_spgemm_shared) and the global tables, launched as CudaGraphKernels.spgemm launches them
# from the rows and launch shapes the test computes (below) from graphs' own bins.
DRIVER_ALL = DRIVER[:DRIVER.index("int main() {")] + r"""
int main() {
  long long m, n; int dense, mode, numeric, onepass, esc;
  if (scanf("%lld %lld %d %d %d %d %d", &m, &n, &dense, &mode, &numeric, &onepass, &esc) != 7) return 1;
  auto Ap = gb_narrow(gb_read_ints()), Aj = gb_narrow(gb_read_ints()); auto Ax = gb_read_reals();
  auto Bp = gb_narrow(gb_read_ints()), Bj = gb_narrow(gb_read_ints()); auto Bx = gb_read_reals();
  auto Mp = gb_narrow(gb_read_ints()), Mj = gb_narrow(gb_read_ints());
  auto rows = gb_read_ints(), offsets = gb_read_ints(), ends = gb_read_ints(), ub = gb_read_ints();
  auto Cp = gb_read_ints();
  const long long grid = ends.back(), nb = ends[ends.size() - 2];  // then the blocks' count
  ends.resize(ends.size() - 2);
  std::vector<long long> counts(m, 0);
  std::vector<int> Cj(numeric ? Cp[m] + 1 : 1, -1); std::vector<double> Cx(Cj.size(), 0.0);
  const long long g0 = offsets[offsets.size() - 2], G = offsets.back() - g0;
  std::vector<long long> toff(G + 1, 0);
  for (long long r = 0; r < G; ++r) {
    long long s = 1; while (s < 2 * ub[rows[g0 + r]]) s <<= 1; toff[r + 1] = toff[r] + s; }
  std::vector<int> keys(dense ? G * n + 1 : toff[G] + 1); std::vector<double> vals(keys.size());
  auto run = [&](auto NUM, auto MASK, auto ESC) {
    constexpr bool U = decltype(NUM)::value; constexpr int K = decltype(MASK)::value;
    constexpr bool E = decltype(ESC)::value;
    auto args = [&](auto f) { f(Ap.data(), Aj.data(), Ax.data(), Bp.data(), Bj.data(), Bx.data(),
                                Mp.data(), Mj.data(), counts.data(), Cp.data(), Cj.data(), Cx.data()); };
    if (grid) gb_launch2((unsigned)grid, 1, 256, [&] { args([&](auto... a) {
      gb_spgemm_binned<GbF, int, double, double, U, K, E>(rows.data(), ends.data(), nb, a...); }); });
    auto shared = [&](auto S, auto WPR, int b) {
      const long long size = offsets[b + 1] - offsets[b];
      if (size) gb_launch2((unsigned)size, 1, 32 * decltype(WPR)::value, [&] { args([&](auto... a) {
        gb_spgemm_shared<GbF, int, double, double, decltype(S)::value, decltype(WPR)::value, 1, U, K>(
            rows.data() + offsets[b], size, a...); }); });
    };
    shared(gb_int<4096>{}, gb_int<16>{}, 7);
    shared(gb_int<8192>{}, gb_int<16>{}, 8);
    shared(gb_int<16384>{}, gb_int<32>{}, 9);
    if (G) gb_launch2((unsigned)G, 1, 512, [&] { args([&](auto... a) {
      if (dense) gb_spgemm_global<GbF, int, double, double, U, K, true>(
          rows.data() + g0, G, toff.data(), n, keys.data(), vals.data(), a...);
      else gb_spgemm_global<GbF, int, double, double, U, K, false>(
          rows.data() + g0, G, toff.data(), 0, keys.data(), vals.data(), a...); }); });
  };
  auto by_mask = [&](auto NUM, auto ESC) {
    if (mode == 0) run(NUM, gb_int<0>{}, ESC);
    else if (mode == 1) run(NUM, gb_int<1>{}, ESC);
    else run(NUM, gb_int<2>{}, ESC);
  };
  if (numeric) { if (esc) by_mask(std::true_type{}, std::true_type{});
                 else by_mask(std::true_type{}, std::false_type{}); }
  else by_mask(std::false_type{}, std::false_type{});
  if (!numeric) { for (auto c : counts) printf("%lld\n", c); return 0; }
  if (onepass) {  // Cp held the rows' places by their bounds: compact by the counts written
    std::vector<long long> to(m + 1, 0);
    for (long long i = 0; i < m; ++i) to[i + 1] = to[i] + counts[i];
    std::vector<int> dj(to[m] + 1, -1); std::vector<double> dx(dj.size(), 0.0);
    gb_launch2((unsigned)((m * 4 + 255) / 256), 1, 256, [&] {  // 4 lanes a row
      gb_compact_rows<unsigned long long>(Cp.data(), to.data(), m, Cj.data(),
          reinterpret_cast<const unsigned long long*>(Cx.data()), dj.data(),
          reinterpret_cast<unsigned long long*>(dx.data()), 4); });
    for (auto c : counts) printf("%lld\n", c);
    for (long long p = 0; p < to[m]; ++p) printf("%d %.17g\n", dj[p], dx[p]);
    return 0;
  }
  for (long long p = 0; p < Cp[m]; ++p) printf("%d %.17g\n", Cj[p], Cx[p]);
  return 0;
}
"""


def _bins(keys):
    """(rows bin after bin, the bins' offsets) as graph_bins.binned makes them: bin b
    holds the rows with edges[b-1] < key <= edges[b] (edges: half of each shared table), the
    last the rows above; rows of key 0 in none; rows ascending inside a bin."""
    edges = np.array([S // 2 for S, _, _ in gc.SHARED_BINS])
    keys = np.asarray(keys)
    b = np.searchsorted(edges, keys, side="left")
    rows, offsets = [], [0]
    for q in range(len(edges) + 1):
        got = np.flatnonzero((b == q) & (keys > 0))
        rows.append(got)
        offsets.append(offsets[-1] + got.size)
    return np.concatenate(rows), np.array(offsets)


def _ends(offsets, nb: int = 3):
    """The binning's bin-major running sums as gb_bin_count's scan leaves them for ``nb``
    blocks (bin b's cumulative end at [(b + 1) * nb - 1]; the other entries -7, which the
    one-launch kernel must not read), then nb and the grid spgemm's launch() computes."""
    one = gc.ONE_LAUNCH
    sizes = np.diff(offsets)
    ends = np.full(len(sizes) * nb, -7, dtype=np.int64)
    ends[nb - 1::nb] = offsets[1:]
    rpb = np.array([r for _, _, r in gc.SHARED_BINS[:one]])
    return np.concatenate([ends, [nb], [(-(-sizes[:one] // rpb)).sum()]])


def _pass(exe, A, B, M, mode, dense, keys, Cp=None, onepass=False, esc=False):
    """One pass (symbolic without ``Cp``, numeric with it), the rows binned by ``keys`` here
    as spgemm's host offsets give them. ``onepass``: ``Cp`` holds the rows' places by their
    bounds, and the driver compacts the rows by the sizes the kernels counted. ``esc``: the
    one-launch kernel's short rows sorted in registers (gb_esc_row)."""
    rows, offsets = _bins(keys)
    M = sps.csr_matrix((1, 1)) if M is None else M
    numeric = Cp is not None
    text = "\n".join([f"{A.shape[0]} {B.shape[1]} {int(dense)} {mode} {int(numeric)} {int(onepass)} {int(esc)}",
                      number_line(A.indptr), number_line(A.indices), number_line(A.data.astype(np.float64)),
                      number_line(B.indptr), number_line(B.indices), number_line(B.data.astype(np.float64)),
                      number_line(M.indptr), number_line(M.indices), number_line(rows), number_line(offsets),
                      number_line(_ends(offsets)), number_line(np.maximum(_bounds(A, B), 1)),
                      number_line(np.zeros(A.shape[0] + 1, np.int64) if Cp is None else Cp)])
    out = subprocess.run([exe], input=text + "\n", capture_output=True, text=True, check=True,
                         timeout=900).stdout.split()
    return out


def _mask(A, B, mode, density, seed):
    """A random pattern of the result's shape for mask modes 1 and 2 (sorted rows); None for 0."""
    if not mode:
        return None
    M = sps.random(A.shape[0], B.shape[1], density=density, random_state=seed, format="csr")
    M.data[:] = 1.0
    M.sort_indices()
    return M


def _bounds(A, B):
    deg = np.diff(B.indptr)
    return np.array([min(int(deg[A.indices[A.indptr[i]:A.indptr[i + 1]]].sum()), B.shape[1])
                     for i in range(A.shape[0])], dtype=np.int64)


def _every_bin_graph():
    """Rows whose bounds fall in every bin (32 … 16,384-slot tables and the global ones) and
    whose distinct columns do too (the numeric pass's bins): B's rows 0-19 hold 600 entries
    (hubs), the rest 10; each row of A takes (hubs, others) of them."""
    rng = np.random.default_rng(11)
    k, n = 400, 20_000
    deg = np.where(np.arange(k) < 20, 600, 10)
    B = sps.csr_matrix((rng.integers(-2, 4, deg.sum()).astype(np.float64),
                        np.concatenate([np.sort(rng.choice(n, d, replace=False)) for d in deg]),
                        np.concatenate([[0], np.cumsum(deg)])), shape=(k, n))
    picks = [(0, 1), (0, 2), (0, 5), (0, 10), (0, 20), (0, 45), (1, 30), (2, 60), (5, 50),
             (10, 50), (20, 380), (12, 200)] * 2 + [(0, 0)] * 4
    rows = [np.concatenate([np.arange(h), 20 + rng.choice(k - 20, o, replace=False)]) for h, o in picks]
    A = sps.csr_matrix((np.concatenate([rng.integers(1, 4, r.size) for r in rows]).astype(np.float64),
                        np.concatenate([np.sort(r) for r in rows]),
                        np.concatenate([[0], np.cumsum([r.size for r in rows])])), shape=(len(rows), k))
    return A, B


@pytest.mark.parametrize("mode", [0, 2])
def test_every_kernel_of_both_passes_gives_scipy(exe_all, mode):
    """The whole product on the host: the one-launch bins, the three large shared bins and
    the global tables (dense and hashed), symbolic then numeric, against SciPy's pattern and
    values, every row sorted."""
    A, B = _every_bin_graph()
    ub = _bounds(A, B)
    edges = [S // 2 for S, _, _ in gc.SHARED_BINS]
    assert len(set(np.searchsorted(edges, ub[ub > 0], side="left"))) == len(edges) + 1  # every bin
    M = _mask(A, B, mode, 0.3, 2)
    pattern, values = _want(A, B, M, mode)
    exe = exe_all
    for dense in (True, False):
        counts = np.array(_pass(exe, A, B, M, mode, dense, ub), dtype=np.int64)
        np.testing.assert_array_equal(counts, np.diff(pattern.indptr))
        if mode == 0:  # the numeric pass's bins: every one of them too
            assert len(set(np.searchsorted(edges, counts[counts > 0], side="left"))) == len(edges) + 1
        Cp = np.concatenate([[0], np.cumsum(counts)])
        out = _pass(exe, A, B, M, mode, dense, counts, Cp)
        cols = np.array(out[0::2], dtype=np.int64)
        vals = np.array(out[1::2], dtype=np.float64)
        if not dense:  # the hashed global rows are written unsorted: sort them as spgemm does
            for i in np.flatnonzero(counts > gc.SHARED_BINS[-1][0] // 2):
                s = slice(Cp[i], Cp[i + 1])
                o = np.argsort(cols[s])
                cols[s], vals[s] = cols[s][o], vals[s][o]
        np.testing.assert_array_equal(cols, pattern.indices)
        want = np.asarray(values[np.repeat(np.arange(A.shape[0]), counts), cols]).ravel()
        np.testing.assert_allclose(vals, want, rtol=1e-12, atol=1e-12)


def test_a_one_launch_kernel_that_misplaces_a_bins_first_block_fails(tmp_path):
    """The same product with gb_spgemm_block_bin's bin test off by one block: the first block
    of each bin runs as the previous bin's, and the answer differs."""
    A, B = _every_bin_graph()
    pattern, _ = _want(A, B, None, 0)
    src = graph_source()
    old = "if (blk < first + blocks) break;"
    assert src.count(old) == 1
    exe = build(tmp_path, "spgemm_mutant", GRAPH_PRELUDE + src.replace(old, old.replace("<", "<=")) + _bins_source()
                + DRIVER_ALL)
    out = _pass(exe, A, B, None, 0, True, _bounds(A, B))
    assert not np.array_equal(np.array(out, dtype=np.int64), np.diff(pattern.indptr))


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_one_pass_on_the_bounds_bins_then_compacted_gives_scipy(exe_all, mode):
    """The one-pass product (graph_spgemm.ONE_PASS): no symbolic pass; the numeric pass on the
    rows' bins by their bounds, row i written at the sum of the bounds before it with its size
    counted by the kernel, then gb_compact_rows moves the rows together. Against SciPy, every
    bin and both global tables; the sizes the kernels count are the rows' sizes."""
    A, B = _every_bin_graph()
    ub = _bounds(A, B)
    M = _mask(A, B, mode, 0.3, 2)
    if mode == 1:
        ub = np.minimum(ub, np.diff(M.indptr))
    pattern, values = _want(A, B, M, mode)
    want_counts = np.diff(pattern.indptr)
    assert (want_counts < ub).sum() > 5  # rows whose products combine: compaction moves them
    Up = np.concatenate([[0], np.cumsum(ub)])
    for dense, esc in ((True, False), (False, False), (True, True)):
        out = _pass(exe_all, A, B, M, mode, dense, ub, Up, onepass=True, esc=esc)
        m = A.shape[0]
        counts = np.array(out[:m], dtype=np.int64)
        np.testing.assert_array_equal(counts, want_counts)
        Cp = np.concatenate([[0], np.cumsum(counts)])
        cols = np.array(out[m::2], dtype=np.int64)
        vals = np.array(out[m + 1::2], dtype=np.float64)
        if not dense:
            for i in np.flatnonzero(ub > gc.SHARED_BINS[-1][0] // 2):
                s = slice(Cp[i], Cp[i + 1])
                o = np.argsort(cols[s])
                cols[s], vals[s] = cols[s][o], vals[s][o]
        np.testing.assert_array_equal(cols, pattern.indices)
        want = np.asarray(values[np.repeat(np.arange(m), counts), cols]).ravel()
        np.testing.assert_allclose(vals, want, rtol=1e-12, atol=1e-12)


def test_a_compaction_that_ignores_the_rows_places_fails(tmp_path):
    """gb_compact_rows reading every row from the destination's place instead of its bound's
    place: rows land shifted and the answer differs."""
    A, B = _every_bin_graph()
    ub = _bounds(A, B)
    pattern, _ = _want(A, B, None, 0)
    old = "const long long a = from[row], b = to[row], c = to[row + 1] - b;"
    src = _bins_source()
    assert src.count(old) == 1
    exe = build(tmp_path, "spgemm_compact_mutant", GRAPH_PRELUDE + graph_source()
                + src.replace(old, old.replace("a = from[row]", "a = to[row]")) + DRIVER_ALL)
    out = _pass(exe, A, B, None, 0, True, ub, np.concatenate([[0], np.cumsum(ub)]), onepass=True)
    cols = np.array(out[A.shape[0]::2], dtype=np.int64)
    assert not np.array_equal(cols, pattern.indices)


DRIVER_BOUND = r"""
int main() {
  long long m, k, n; int masked, g, nospan;
  if (scanf("%lld %lld %lld %d %d %d", &m, &k, &n, &masked, &g, &nospan) != 6) return 1;
  auto Ap = gb_narrow(gb_read_ints()), Aj = gb_narrow(gb_read_ints());
  auto Bp = gb_narrow(gb_read_ints()), Bj = gb_narrow(gb_read_ints()), Mp = gb_narrow(gb_read_ints());
  std::vector<int> lo(k + 1), hi(k + 1); std::vector<long long> ub(m + 1, -7), up(m + 2, -7);
  gb_launch2((unsigned)((k * g + 255) / 256 + 1), 1, 256, [&] {
    gb_row_span<int>(Bp.data(), Bj.data(), k, n, lo.data(), hi.data(), g); });
  gb_launch2((unsigned)((m * g + 255) / 256 + 1), 1, 256, [&] {
    gb_spgemm_bound<int>(Ap.data(), Aj.data(), Bp.data(), nospan ? nullptr : lo.data(), nospan ? nullptr : hi.data(),
                         masked ? Mp.data() : nullptr, m, n, ub.data(), up.data(), g); });
  for (long long i = 0; i < m; ++i) printf("%lld\n", ub[i]);
  for (long long i = 0; i <= m + 1; ++i) printf("%lld\n", up[i]);  // 0, ub, then the guard
  return 0;
}
"""


@pytest.mark.parametrize("case", ["band", "scattered", "masked", "masked_nospan"])
def test_row_bounds_take_the_reachable_columns_span(tmp_path, case):
    """gb_row_span + gb_spgemm_bound: each row's bound is min(its products, n, the span
    between the smallest and largest column of the B rows it reaches, the mask row's size),
    with B's columns in any order, at 1, 4, 8 and 32 lanes a row; never below the row's true
    size. On a band the span is the product row's width, far below its products. Without the
    spans (null: what a plainly masked product passes) the span takes no part."""
    nospan = case == "masked_nospan"
    rng = np.random.default_rng(5)
    if case == "band":
        n = 400
        A = sps.diags([np.ones(n - abs(d)) for d in range(-6, 7)], list(range(-6, 7)), format="csr")
        B = A.copy()
    else:
        A = sps.random(90, 300, density=0.04, random_state=3, format="csr")
        B = sps.random(300, 500, density=0.05, random_state=4, format="csr")
        n = 500
    B = sps.csr_matrix(B)
    for r in range(B.shape[0]):  # columns in a shuffled order inside each row
        s = slice(B.indptr[r], B.indptr[r + 1])
        B.indices[s] = rng.permutation(B.indices[s])
    M = sps.random(A.shape[0], n, density=0.03, random_state=9, format="csr") if "masked" in case else None
    exe = build(tmp_path, "spgemm_bound", GRAPH_PRELUDE + _bins_source() + DRIVER_BOUND)
    Mp = M.indptr if M is not None else np.zeros(A.shape[0] + 1, dtype=np.int64)
    data = "\n".join([number_line(A.indptr), number_line(A.indices), number_line(B.indptr),
                      number_line(B.indices), number_line(Mp)])
    m = A.shape[0]
    outs = [np.array(subprocess.run([exe], input=f"{m} {B.shape[0]} {n} {int(M is not None)} {g} {int(nospan)}\n"
                                    + data + "\n", capture_output=True, text=True, check=True,
                                    timeout=300).stdout.split(), dtype=np.int64)
            for g in (1, 4, 8, 32)]  # lanes a row (graph_spgemm.lanes: the rows' mean length)
    ubs = [o[:m] for o in outs]
    for o in outs:  # the copy for the running sum in place: 0, then the bounds, nothing past
        np.testing.assert_array_equal(o[m:], np.concatenate([[0], o[:m], [-7]]))
    deg = np.diff(B.indptr)
    want = []
    for i in range(A.shape[0]):
        ks = A.indices[A.indptr[i]:A.indptr[i + 1]]
        u = min(int(deg[ks].sum()), n)
        cols = np.concatenate([B.indices[B.indptr[q]:B.indptr[q + 1]] for q in ks]) if ks.size else np.array([], int)
        if cols.size and not nospan:
            u = min(u, int(cols.max() - cols.min() + 1))
        if M is not None:
            u = min(u, int(M.indptr[i + 1] - M.indptr[i]))
        want.append(u)
    for ub in ubs:
        np.testing.assert_array_equal(ub, want)
    size = np.diff(sps.csr_matrix(abs(A) @ abs(B)).indptr)
    assert (ub >= (size if M is None else 0)).all()
    if case == "band":  # interior rows: 13 x 13 products, 25 columns reachable
        assert ub[200] == 25 and deg[A.indices[A.indptr[200]:A.indptr[201]]].sum() == 169


def _short_rows_graph(seed):
    """Rows of 1-64 products over a few columns, so most products combine: runs of equal
    columns of every length, crossing the warp's two registers (products 32 | 33); rows of
    65+ products (the table's) beside them, and empty ones."""
    rng = np.random.default_rng(seed)
    k, n = 60, 48
    degB = rng.integers(0, 9, k)
    B = sps.csr_matrix((rng.integers(-2, 4, degB.sum()).astype(np.float64),
                        np.concatenate([np.sort(rng.choice(n, d, replace=False)) for d in degB]),
                        np.concatenate([[0], np.cumsum(degB)])), shape=(k, n))
    rows = []
    while len(rows) < 120:
        r = np.sort(rng.choice(k, rng.integers(0, 14), replace=False))
        rows.append(r)
    A = sps.csr_matrix((rng.integers(1, 4, sum(r.size for r in rows)).astype(np.float64),
                        np.concatenate(rows), np.concatenate([[0], np.cumsum([r.size for r in rows])])),
                       shape=(len(rows), k))
    return A, B


def test_short_rows_past_2_25_columns_sort_their_pairs(exe_all):
    """gb_esc_row's rows with a column at or past 2^25 sort (column, value) pairs (the 32-bit
    keys hold a column below 2^25 and the product's place); the rows below it in the same
    launch take the 32-bit keys: both against SciPy, in one pass."""
    A, B = _short_rows_graph(22)
    B = sps.csr_matrix((B.data, B.indices.astype(np.int64) << 21, B.indptr), shape=(B.shape[0], B.shape[1] << 21))
    assert B.shape[1] > 2**25 and (B.indices < 2**25).any() and (B.indices >= 2**25).any()
    pattern, values = _want(A, B, None, 0)
    counts = np.diff(pattern.indptr)
    ub = _bounds(A, B)
    out = _pass(exe_all, A, B, None, 0, True, ub, np.concatenate([[0], np.cumsum(ub)]), onepass=True,
                esc=True)
    m = A.shape[0]
    np.testing.assert_array_equal(np.array(out[:m], dtype=np.int64), counts)
    cols = np.array(out[m::2], dtype=np.int64)
    np.testing.assert_array_equal(cols, pattern.indices)
    want = np.asarray(values[np.repeat(np.arange(m), counts), cols]).ravel()
    np.testing.assert_allclose(np.array(out[m + 1::2], dtype=np.float64), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_short_rows_sorted_in_registers_give_scipy(exe_all, mode):
    """gb_esc_row (the one-launch kernel with ESC): rows of at most 64 products expanded two a
    lane, sorted by a warp's bitonic network, equal columns combined by a segmented scan and
    written at their runs' ranks; with its table-less rows counted. In one pass and in two,
    plain, masked and complemented, against SciPy; the products per row cover 1 to 64 and
    beyond, and most rows' products combine."""
    A, B = _short_rows_graph(21)
    deg = np.diff(B.indptr)
    P = np.array([deg[A.indices[A.indptr[i]:A.indptr[i + 1]]].sum() for i in range(A.shape[0])])
    assert ((P > 32) & (P <= 64)).sum() >= 10 and (P > 64).any() and (P == 0).any()
    M = _mask(A, B, mode, 0.4, 3)
    pattern, values = _want(A, B, M, mode)
    want_counts = np.diff(pattern.indptr)
    assert (want_counts < np.minimum(P, B.shape[1])).sum() > 30  # products combine
    ub = _bounds(A, B)
    if mode == 1:
        ub = np.minimum(ub, np.diff(M.indptr))
    m = A.shape[0]
    # one pass: the bounds' bins, rows at the bounds' places, compacted by the counts
    out = _pass(exe_all, A, B, M, mode, True, ub, np.concatenate([[0], np.cumsum(ub)]), onepass=True,
                esc=True)
    np.testing.assert_array_equal(np.array(out[:m], dtype=np.int64), want_counts)
    cols = np.array(out[m::2], dtype=np.int64)
    vals = np.array(out[m + 1::2], dtype=np.float64)
    np.testing.assert_array_equal(cols, pattern.indices)
    want = np.asarray(values[np.repeat(np.arange(m), want_counts), cols]).ravel()
    np.testing.assert_allclose(vals, want, rtol=1e-12, atol=1e-12)
    # two passes: the numeric pass on the exact sizes' bins
    Cp = np.concatenate([[0], np.cumsum(want_counts)])
    out = _pass(exe_all, A, B, M, mode, True, want_counts, Cp, esc=True)
    np.testing.assert_array_equal(np.array(out[0::2], dtype=np.int64), pattern.indices)
    np.testing.assert_allclose(np.array(out[1::2], dtype=np.float64), want, rtol=1e-12, atol=1e-12)


ESC_MUTANTS = {
    # the run crossing from the warp's first register into its second loses the first sum
    "no_carry": ("if (st1 < 0) s1 = F::add(carry, s1);", ""),
    # after the 32-bit key sort, every value fetched from the first register
    "first_register": ("val[r] = src >= 32 ? x1 : x0;", "val[r] = x0;"),
    # the scan's steps cross a run's head
    "runs_ignored": ("if (lane - o >= st0) s0", "if (lane >= o) s0"),
}


@pytest.mark.parametrize("mutant", sorted(ESC_MUTANTS))
def test_short_rows_mutants_fail(tmp_path, mutant):
    """gb_esc_row's mutants give wrong sums on rows whose runs straddle the registers: without
    the run carried from the first register into the second, fetching every value from the
    first register after the 32-bit sort, or scanning across the runs' heads."""
    A, B = _short_rows_graph(21)
    pattern, values = _want(A, B, None, 0)
    src = graph_source()
    old, new = ESC_MUTANTS[mutant]
    assert src.count(old) == 1
    exe = build(tmp_path, "spgemm_esc_mutant", GRAPH_PRELUDE + src.replace(old, new) + _bins_source() + DRIVER_ALL)
    counts = np.diff(pattern.indptr)
    Cp = np.concatenate([[0], np.cumsum(counts)])
    out = _pass(exe, A, B, None, 0, True, counts, Cp, esc=True)
    vals = np.array(out[1::2], dtype=np.float64)
    want = np.asarray(values[np.repeat(np.arange(A.shape[0]), counts), pattern.indices]).ravel()
    assert not np.allclose(vals, want, rtol=1e-12, atol=1e-12)


DRIVER_BINS = r"""
int main() {
  long long m; int skip;
  if (scanf("%lld %d", &m, &skip) != 2) return 1;
  auto keys = gb_read_ints(), edges = gb_read_ints();
  const int ne = (int)edges.size();
  const long long nb = (m + 255) / 256;
  std::vector<int> bin(m + 1);
  std::vector<long long> ends((ne + 1) * nb, -7), tails(ne + 2, -7), extra = {12345};
  gb_launch2((unsigned)nb, 1, 256, [&] {
    gb_bin_count(keys.data(), m, edges.data(), ne, skip, bin.data(), ends.data()); });
  for (size_t q = 1; q < ends.size(); ++q) ends[q] += ends[q - 1];  // the scan in place
  gb_launch2(1, 1, 32, [&] { gb_bin_tails(ends.data(), nb, ne, extra.data(), tails.data()); });
  std::vector<long long> out(tails[ne], -1);
  gb_launch2((unsigned)nb, 1, 256, [&] { gb_bin_scatter(bin.data(), m, ne, ends.data(), out.data()); });
  for (auto t : tails) printf("%lld\n", t);
  for (auto r : out) printf("%lld\n", r);
  return 0;
}
"""


@pytest.mark.parametrize("skip_zero", [0, 1])
def test_bins_from_counts_scanned_in_place(tmp_path, skip_zero):
    """gb_bin_count, the counts' scan in place, gb_bin_tails and gb_bin_scatter (each block's
    start found from the scanned counts less its own count, counted again from its warps) as
    graph_bins.binned runs them: every row in its key's bin, ascending inside each bin, the
    tails the bins' cumulative ends then the extra value; over several blocks and bins whose
    rows share warps. A scatter that does not take its block's own count back fails."""
    rng = np.random.default_rng(4 + skip_zero)
    m = 1500
    keys = (rng.pareto(1.2, m) * 30).astype(np.int64)
    keys[::9] = 0
    edges = np.array([2, 8, 32, 128, 512])
    src = _bins_source()
    old = "for (int v = 0; v < 8; ++v) pos -= v < w ? 0 : warpcount[v][b];"
    assert src.count(old) == 1
    text = f"{m} {skip_zero}\n{number_line(keys)}\n{number_line(edges)}\n"
    want_bin = np.searchsorted(edges, keys, side="left")
    rows = np.flatnonzero(keys > 0) if skip_zero else np.arange(m)
    want = np.concatenate([rows[want_bin[rows] == b] for b in range(edges.size + 1)])
    tails = np.cumsum([np.sum(want_bin[rows] == b) for b in range(edges.size + 1)])
    for mutant in (False, True):
        exe = build(tmp_path, f"bins{int(mutant)}", GRAPH_PRELUDE + (src.replace(old, "") if mutant else src)
                    + DRIVER_BINS)
        r = subprocess.run([exe], input=text, capture_output=True, text=True, check=not mutant, timeout=300)
        got = np.array(r.stdout.split(), dtype=np.int64)
        if mutant:  # rows written past their bins (past the array's end: the driver may abort)
            assert r.returncode != 0 or not np.array_equal(got[edges.size + 2:], want)
            continue
        np.testing.assert_array_equal(got[:edges.size + 1], tails)
        assert got[edges.size + 1] == 12345
        np.testing.assert_array_equal(got[edges.size + 2:], want)
