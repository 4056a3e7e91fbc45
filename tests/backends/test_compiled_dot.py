"""The compiled CPU backend's dot-product family: the fused kNN kernel (``gb_knn``, products,
epilogue, proven d(a, a) and top-k in one pass) and the compiled identical-row detection,
against the NumPy oracle (``backend="cpu"`` with ``GBDIST_CPU_BACKEND=numpy``), the
tile path of the same backend and brute force.
"""
from __future__ import annotations

import numpy as np
import pytest
from metric_cases import fit_columns
import scipy.sparse as sps
from scipy.spatial.distance import squareform

pytest.importorskip("numba")

import gbdist as gb  # noqa: E402
from gbdist.backends import rows  # noqa: E402
from gbdist.backends.compiled import CompiledCPUBackend, generated, hashes_host, same_host  # noqa: E402
from gbdist.pairwise import metric_program  # noqa: E402

from test_compiled_cpu import close, sparse  # noqa: E402  (tests/backends is on the path)

# the metrics whose plans get a fused kNN kernel (every product a scatter): the dot family,
# and unions by correction (a scatter and row reductions); not the ordered two-pass unions
# (not haversine: its rows map to 3 columns, where the accuracy rule sums every product as
# written, compiler.accuracy.FEW_COLUMNS: no dot kernel runs)
FUSED = [m for m in gb.metric_names() if generated(metric_program(m).plan).knn
         and m != "haversine"]


def test_the_dot_family_has_fused_knn_kernels():
    assert {"cosine", "euclidean", "sqeuclidean", "correlation", "manhattan"} <= set(FUSED)
    assert "chebyshev" not in FUSED


@pytest.fixture(autouse=True)
def numpy_oracle(monkeypatch):
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "numpy")


@pytest.fixture
def fused_calls(monkeypatch):
    """Records whether each search ran the fused kernel (search_k returned an answer)."""
    calls = []
    real = CompiledCPUBackend.search_k

    def spy(self, p, k, half, budget):
        out = real(self, p, k, half, budget)
        calls.append((half, out is not None))
        return out

    monkeypatch.setattr(CompiledCPUBackend, "search_k", spy)
    return calls


def _inputs(metric, X, Y):
    try:
        # every row: mahalanobis' default VI needs more rows than columns (SciPy's rule)
        gb.pairwise_distances(X, Y, metric=metric, backend="cpu")
    except gb.errors.DomainError:
        X, Y = abs(X), (abs(Y) if Y is not None else None)
    return X, Y


def _check_top_k(d, i, R, k, exclude_self=False):
    """d, i are a true top k of R (by value, NaN last): the distances are R's at i, and
    they are R's k smallest."""
    R = np.array(R, dtype=np.float64)
    if exclude_self:
        np.fill_diagonal(R, np.inf)
    key = np.where(np.isnan(R), np.inf, R)
    best = np.sort(key, axis=1)[:, :k]
    got = np.take_along_axis(R, i, axis=1)
    close(d, got, rtol=1e-6, atol=1e-6)
    close(np.where(np.isnan(got), np.inf, got), best, rtol=1e-6, atol=1e-6)
    for q in range(i.shape[0]):
        assert len(set(i[q])) == i.shape[1]


@pytest.mark.parametrize("metric", FUSED)
@pytest.mark.parametrize("dtype,itype", [(np.float64, np.int32), (np.float32, np.int64)])
def test_fused_knn_matches_the_oracle(metric, dtype, itype, fused_calls):
    X, Y = _inputs(metric, *fit_columns(metric, sparse(21, 43, 19, dtype=dtype, itype=itype),
                                        sparse(22, 57, 19, dtype=dtype, itype=itype)))
    R = gb.cdist(X, Y, metric=metric, backend="cpu")  # gbdist's own metric (cosine: NaN)
    # knn(X, None)'s data-derived defaults (seuclidean's V, mahalanobis' VI) are over X once,
    # as pdist's (gb.cdist(X, X) stacks X twice, as SciPy's); the diagonal is excluded below
    Rs = (squareform(gb.pdist(X, metric=metric, backend="cpu"))
          if metric in ("seuclidean", "mahalanobis") else gb.cdist(X, X, metric=metric, backend="cpu"))
    d, i = gb.knn(X, Y, k=6, metric=metric, backend="compiled")
    ds, is_ = gb.knn(X, None, k=5, metric=metric, backend="compiled")
    assert (False, True) in fused_calls  # X against Y: the fused kernel ran
    assert d.dtype == ds.dtype == np.dtype(dtype) and i.dtype == np.int64
    _check_top_k(d, i, R, 6)
    _check_top_k(ds, is_, Rs, 5, exclude_self=True)
    # the tile path of the same backend (a budget too small for the fused lists) agrees
    # exactly: the same kernel arithmetic, cell by cell
    n_before = len(fused_calls)
    dt, it = gb.knn(X, Y, k=6, metric=metric, backend="compiled", working_memory=2048 / 2**20)
    assert fused_calls[n_before:] == [(False, False)]
    np.testing.assert_array_equal(dt, d)
    np.testing.assert_array_equal(it, i)


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "sqeuclidean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_self_join_writes_exact_zeros_for_equal_rows(metric, dtype, fused_calls):
    """A symmetric self-join computes each pair once (j >= i) and feeds both rows; rows
    equal to others get the proven d(a, a) = 0 exactly, empty rows included (where the
    metric is finite on them)."""
    X = sparse(31, 60, 25, dtype=dtype).tolil()
    X[10] = X[3]
    X[40] = X[3]
    X[41] = X[7]
    X = sps.csr_matrix(X, dtype=dtype)
    X.data[:5] *= 1e3  # values far from 1: the expanded forms round
    d, i = gb.knn(X, None, k=4, metric=metric, backend="compiled")
    assert (True, True) in fused_calls  # the symmetric fused kernel ran
    R = gb.cdist(X, X, metric=metric, backend="cpu")  # gbdist's own metric (cosine: NaN)
    _check_top_k(d, i, R, 4, exclude_self=True)
    for a, b in ((3, 10), (3, 40), (10, 40), (7, 41)):
        for q, other in ((a, b), (b, a)):
            assert other in i[q]
            assert d[q][list(i[q]).index(other)] == 0.0  # exact, not a rounding of 0
    # the oracle's full matrix agrees on where the exact zeros are
    assert R[3, 10] == R[10, 40] == R[7, 41] == 0.0


def test_fused_search_leaves_values_that_overflow_to_the_tiles(fused_calls):
    """Values large enough for x² to overflow need the runtime's direct-form repair, which
    acts on tiles: the search runs the tile loop, and gets the oracle's answer."""
    X = sparse(41, 30, 12)
    X.data[3] = 1e200
    X.data[4] = -3e160
    ref = gb.knn(X, None, k=3, metric="euclidean", backend="cpu")
    got = gb.knn(X, None, k=3, metric="euclidean", backend="compiled")
    assert fused_calls == []  # not even asked: a tile would need repair
    close(got[0], ref[0])
    assert np.isfinite(got[0]).all()


def test_fused_rows_balanced_over_blocks_cover_every_row():
    from gbdist.backends.compiled.topk import _balanced
    for m, parts in ((1, 8), (7, 16), (100, 3), (1000, 16)):
        w = np.random.default_rng(m).random(m)
        blocks = _balanced(w, parts)
        assert blocks[0][0] == 0 and blocks[-1][1] == m
        assert all(b0 < b1 for b0, b1 in blocks)
        assert all(a[1] == b[0] for a, b in zip(blocks[:-1], blocks[1:]))


# ---------------------------------------------------------------------------
# identical rows: compiled hashes and verification against the NumPy ones
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_compiled_row_hashes_equal_numpys(dtype, itype, monkeypatch):
    X = sparse(51, 200, 40, dtype=dtype, itype=itype)
    X.data[::9] = -0.0  # hashed as +0.0
    got = hashes_host(X.indptr, X.indices, X.data)
    monkeypatch.setattr(rows, "_HOST_ROWS", [])  # NumPy's
    ref = rows.row_hashes(X.indptr, X.indices, X.data)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, ref)


def test_compiled_verification_agrees_with_numpy(monkeypatch):
    X = sparse(61, 120, 30)
    X = sps.csr_matrix(sps.vstack([X, X[:20]]))  # rows 120.. equal rows 0..19
    Y = X.copy()
    Y.data[Y.indptr[5]] = -Y.data[Y.indptr[5]] if Y.indptr[6] > Y.indptr[5] else 0.0
    left = (X.indptr, X.indices, X.data)
    right = (Y.indptr, Y.indices, Y.data)
    neg = X.copy()
    neg.data[neg.data == 0] = -0.0
    i, j = rows.identical_pairs(left, right)
    i0, j0 = rows.identical_pairs((neg.indptr, neg.indices, neg.data), right)
    monkeypatch.setattr(rows, "_HOST_ROWS", [])
    ri, rj = rows.identical_pairs(left, right)
    assert sorted(zip(i.tolist(), j.tolist())) == sorted(zip(ri.tolist(), rj.tolist()))
    assert sorted(zip(i0.tolist(), j0.tolist())) == sorted(zip(ri.tolist(), rj.tolist()))
    # brute force: every pair of equal rows
    dense_l, dense_r = X.toarray(), Y.toarray()
    brute = {(a, b) for a in range(dense_l.shape[0]) for b in range(dense_r.shape[0])
             if np.array_equal(dense_l[a], dense_r[b]) and X[a].nnz == Y[b].nnz}
    assert set(zip(ri.tolist(), rj.tolist())) == brute
    ok = same_host(left, right, np.array([0, 5, 120]), np.array([0, 5, 0]))
    assert ok.tolist() == [True, Y.indptr[6] == Y.indptr[5], True]


def test_pairwise_writes_exact_zeros_in_float32():
    X = sparse(71, 30, 50, dtype=np.float32, nonneg=True).tolil()
    X[12] = X[2]
    X = sps.csr_matrix(X, dtype=np.float32)
    X.data *= np.float32(1234.5)
    for metric in ("cosine", "euclidean", "sqeuclidean"):
        # gbdist's own metric in float32 (pairwise_distances follows scikit-learn: float64
        # for sqeuclidean, and its cosine variant is not exact between distinct X and Y)
        D = gb.cdist(X, X[[2, 12, 3]], metric=metric, backend="compiled", dtype=np.float32)
        assert D.dtype == np.float32
        assert D[2, 0] == D[12, 0] == D[2, 1] == D[12, 1] == D[3, 2] == 0.0


# ---------------------------------------------------------------------------
# dense columns as a matrix product (CompiledPrepared.split)
# ---------------------------------------------------------------------------

def _dense_and_sparse(seed: int, m: int, dtype=np.float64) -> sps.csr_matrix:
    """Rows storing most of 60 common columns and a few of 3,000 rare ones (the shape of
    word counts or gene expression, where the split pays)."""
    rng = np.random.default_rng(seed)
    common = sps.random(m, 60, density=0.9, random_state=rng, format="csr")
    rare = sps.random(m, 3000, density=0.004, random_state=rng, format="csr")
    X = sps.hstack([common, rare], format="csr").astype(dtype)
    X.data = np.round(X.data * 8) - 3  # negative values, stored zeros dropped by binding
    return X


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "sqeuclidean", "correlation",
                                    "inner_product"])
def test_dense_columns_as_a_matrix_product_match_the_oracle(metric, monkeypatch):
    from gbdist.backends.compiled import CompiledPrepared
    X = _dense_and_sparse(81, 300)
    Y = _dense_and_sparse(82, 420)
    X = X.tolil()
    X[7] = Y[9]  # an equal pair: d(a, a) exact
    X = sps.csr_matrix(X)
    taken = []
    real = CompiledPrepared.split

    def spy(self):
        out = real(self)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(CompiledPrepared, "split", spy)
    got = gb.pairwise_distances(X, Y, metric=metric, backend="compiled")
    assert taken and all(taken)  # the product took the dense columns
    monkeypatch.setattr(CompiledPrepared, "split", lambda self: None)
    scattered = gb.pairwise_distances(X, Y, metric=metric, backend="compiled")
    ref = gb.pairwise_distances(X, Y, metric=metric, backend="cpu")
    close(got, ref, rtol=1e-10, atol=1e-10)
    close(scattered, ref, rtol=1e-10, atol=1e-10)
    if metric != "inner_product":
        assert got[7, 9] == ref[7, 9] == 0.0
    # several row and column tiles: each tile's product from the same dense blocks
    monkeypatch.setattr(CompiledPrepared, "split", real)
    tiled = gb.pairwise_distances(X, Y, metric=metric, backend="compiled",
                                  working_memory=200_000 / 2**20)
    close(tiled, got, rtol=1e-12, atol=1e-12)


def test_no_split_where_the_dense_columns_carry_little_work():
    from gbdist.backends.compiled import CompiledPrepared
    from gbdist.runtime import bind, get_backend
    X = sparse(91, 400, 300, density=0.01)
    be = get_backend("compiled")
    b = bind(metric_program("cosine").plan, {"A": X, "B": X}, drop_zeros=True)
    p = be.prepare(b)
    assert isinstance(p, CompiledPrepared) and p.split() is None
    # and a plan without an expansion (manhattan's correction) never splits
    b = bind(metric_program("manhattan").plan,
             {"A": _dense_and_sparse(1, 300), "B": _dense_and_sparse(2, 300)}, drop_zeros=True)
    assert be.prepare(b).split() is None


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_fused_knn_with_dense_columns_matches_the_oracle(metric, monkeypatch, fused_calls):
    """gb_knn with the dense columns' product per block of rows starting the sums, for a
    self-join (each pair once) and X against Y."""
    from gbdist.backends.compiled import CompiledPrepared
    X = _dense_and_sparse(83, 320).tolil()
    X[11] = X[4]
    X = sps.csr_matrix(X)
    Y = _dense_and_sparse(84, 350)
    taken = []
    real = CompiledPrepared.split
    monkeypatch.setattr(CompiledPrepared, "split",
                        lambda self: (lambda out: (taken.append(out is not None), out)[1])(real(self)))
    d, i = gb.knn(X, Y, k=7, metric=metric, backend="compiled")
    ds, is_ = gb.knn(X, None, k=5, metric=metric, backend="compiled")
    assert taken and all(taken) and (False, True) in fused_calls and (True, True) in fused_calls
    # the product in several super blocks of rows gives the same answer (up to the BLAS
    # rounding of a different row split)
    from gbdist.backends.compiled import topk
    monkeypatch.setattr(topk, "_BASE_BYTES", 8 * 350 * 40)
    monkeypatch.setattr(topk, "_BASE_MIN_ROWS", 1)
    for (a, _b), (c, _e) in ((gb.knn(X, Y, k=7, metric=metric, backend="compiled"), (d, i)),
                             (gb.knn(X, None, k=5, metric=metric, backend="compiled"),
                              (ds, is_))):
        close(a, c, rtol=1e-12, atol=1e-12)
    _check_top_k(d, i, gb.cdist(X, Y, metric=metric, backend="cpu"), 7)  # gbdist's own
    _check_top_k(ds, is_, gb.cdist(X, X, metric=metric, backend="cpu"), 5,
                 exclude_self=True)
    assert 11 in is_[4] and ds[4][list(is_[4]).index(11)] == 0.0


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "manhattan", "chebyshev", "canberra"])
def test_float32_results_are_written_directly_as_the_float64_tile_rounds(metric):
    """A float32 result is written by the fused kernel in float32: bit for bit the float64
    result of the same values rounded once (what the cast of a float64 tile gave)."""
    X = sparse(95, 40, 30, dtype=np.float32)
    Y = sparse(96, 50, 30, dtype=np.float32)
    X, Y = _inputs(metric, X, Y)
    got = gb.pairwise_distances(X, Y, metric=metric, backend="compiled", dtype=np.float32)
    wide = gb.pairwise_distances(X.astype(np.float64), Y.astype(np.float64), metric=metric,
                                 backend="compiled")
    assert got.dtype == np.float32 and wide.dtype == np.float64
    np.testing.assert_array_equal(got, wide.astype(np.float32))
    close(got, gb.pairwise_distances(X, Y, metric=metric, backend="cpu", dtype=np.float32),
          rtol=1e-6, atol=1e-6)
