"""kNN on the GPU (tiles, top-k and merging on the device) against the CPU path.

The device top-k kernels are checked value for value against the CPU
reference (neighbors.select_k / merge_k) on data full of ties, NaN, ±0 and
inf; kNN is checked against the CPU backend for every named metric (indices
must agree wherever distances are not tied within the float tolerance), and
exactly on integer data, where every distance is exact.
"""
import numpy as np
import pytest
from metric_cases import fit_columns  # noqa: E402
import scipy.sparse as sps

import gbdist as gb
from gbdist import neighbors
from gbdist.pairwise import metric_program

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")
from gbdist.backends.cuda import CUDABackend, topk  # noqa: E402
from gbdist.runtime import symmetric_side  # noqa: E402

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

NONNEG = {"hellinger", "jensenshannon", "jensenshannon_unnormalized", "kl_divergence"}
BINARY = {"jaccard", "dice", "russellrao"}


def _data(seed, m, n, k, density=0.2, nonneg=False, binary=False):
    rng = np.random.default_rng(seed)
    X = sps.random(m, k, density=density, random_state=rng, format="csr")
    Y = sps.random(n, k, density=density, random_state=rng, format="csr")
    for M in (X, Y):
        if binary:
            M.data[:] = 1.0
        elif not nonneg:
            M.data = M.data * 4 - 1.5
    if nonneg and not binary:
        X = sps.csr_matrix(X.multiply(1 / np.maximum(X.sum(1), 1e-12)))
        Y = sps.csr_matrix(Y.multiply(1 / np.maximum(Y.sum(1), 1e-12)))
    return sps.csr_matrix(X), sps.csr_matrix(Y)


def _ints(seed, m, k, dup=0):
    """Small integers (every distance exact), with duplicated rows."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(m, k)).astype(np.float64)
    X[rng.random((m, k)) < 0.5] = 0
    if dup:
        X[-dup:] = X[:dup]
    return X


def _check_knn(got, ref, D, tol):
    """Distances close; an index may differ only where the distances tie within tol."""
    gd, gi = (cupy.asnumpy(a) if isinstance(a, cupy.ndarray) else a for a in got)
    rd, ri = ref
    assert gd.shape == rd.shape and gi.shape == ri.shape and gi.dtype == np.int64
    np.testing.assert_allclose(gd, rd, rtol=tol, atol=tol, equal_nan=True)
    for q in range(gi.shape[0]):
        assert len(set(gi[q])) == gi.shape[1]
        for j in np.flatnonzero(gi[q] != ri[q]):
            a, b = D[q, gi[q, j]], rd[q, j]
            assert a == b or (np.isnan(a) and np.isnan(b)) or abs(a - b) <= tol * (1 + abs(b)), \
                (q, j, gi[q], ri[q], a, b)


# --- the kernels ----------------------------------------------------------------


def _nasty(rng, rows, width, dtype):
    D = rng.integers(0, 6, size=(rows, width)).astype(dtype)
    D[rng.random((rows, width)) < 0.05] = np.nan
    D[rng.random((rows, width)) < 0.05] = -0.0
    D[rng.random((rows, width)) < 0.02] = np.inf
    D[rng.random((rows, width)) < 0.02] = -np.inf
    D[0] = np.nan  # a row of NaN only
    D[1] = 3.0     # a row of ties only
    return D


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 10, 64, 65, 200, 256, 300])
@pytest.mark.parametrize("width", [7, 257, 3000])
def test_select_k_matches_cpu_exactly(dtype, k, width):
    rng = np.random.default_rng(k * 31 + width)
    D = _nasty(rng, 37, width, dtype)
    rd, ri = neighbors.select_k(D.astype(np.float64), k, offset=1000)
    gd, gi = topk.select_k(cupy.asarray(D), k, offset=1000)
    assert gd.dtype == dtype and gi.dtype == np.int64
    np.testing.assert_array_equal(cupy.asnumpy(gi), ri)
    np.testing.assert_array_equal(cupy.asnumpy(gd).astype(np.float64), rd)


def test_select_k_random_values_and_decreasing_rows():
    rng = np.random.default_rng(3)
    D = rng.random((50, 5000)).astype(np.float32)
    D[:10] = np.sort(D[:10], axis=1)[:, ::-1]  # every column enters the list
    for k in (1, 10, 256):
        rd, ri = neighbors.select_k(D.astype(np.float64), k)
        gd, gi = topk.select_k(cupy.asarray(D), k)
        np.testing.assert_array_equal(cupy.asnumpy(gi), ri)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_merge_k_matches_cpu(dtype):
    rng = np.random.default_rng(5)
    for k1, k2, k in ((10, 10, 10), (10, 3, 10), (5, 9, 7), (256, 256, 256)):
        a = _nasty(rng, 40, 600, dtype)
        b = _nasty(rng, 40, 600, dtype)
        d1, i1 = neighbors.select_k(a.astype(np.float64), k1, 0)
        d2, i2 = neighbors.select_k(b.astype(np.float64), k2, 300)
        rd, ri = neighbors.merge_k(d1, i1, d2, i2, k)
        gd, gi = topk.merge_k(cupy.asarray(d1.astype(dtype)), cupy.asarray(i1),
                              cupy.asarray(d2.astype(dtype)), cupy.asarray(i2), k)
        np.testing.assert_array_equal(cupy.asnumpy(gi), ri)
        np.testing.assert_array_equal(cupy.asnumpy(gd).astype(np.float64), rd)


# --- kNN ------------------------------------------------------------------------


@pytest.mark.parametrize("metric", sorted(gb.metric_names()))
def test_every_metric_matches_cpu(metric):
    X, Y = fit_columns(metric, *_data(11, 45, 70, 40, nonneg=metric in NONNEG,
                                      binary=metric in BINARY))
    D = gb.pairwise_distances(X, Y, metric=metric, backend="cpu")
    ref = gb.knn(X, Y, k=7, metric=metric, backend="cpu")
    got = gb.knn(X, Y, k=7, metric=metric, backend="cuda")
    assert isinstance(got[0], np.ndarray)
    _check_knn(got, ref, D, 1e-9)
    # float32: tiles and selection in float32
    X32, Y32 = X.astype(np.float32), Y.astype(np.float32)
    got32 = gb.knn(X32, Y32, k=7, metric=metric, backend="cuda")
    assert got32[0].dtype == np.float32
    _check_knn(got32, ref, D, 2e-4)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev"])
def test_ties_go_to_the_lower_index(metric):
    X = _ints(2, 120, 12, dup=40)
    Y = np.vstack([X, X[::-1], X])  # every distance at least three times
    for k in (1, 10, 50):
        rd, ri = gb.knn(X, Y, k=k, metric=metric, backend="cpu")
        gd, gi = gb.knn(X, Y, k=k, metric=metric, backend="cuda")
        np.testing.assert_array_equal(gi, ri)
        np.testing.assert_allclose(gd, rd, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [1, 10, 256, 257, 400])
def test_large_k_and_fallback(k):
    X = _ints(3, 60, 16)
    Y = _ints(4, 500, 16)
    rd, ri = gb.knn(X, Y, k=k, metric="manhattan", backend="cpu")
    gd, gi = gb.knn(X, Y, k=k, metric="manhattan", backend="cuda")
    np.testing.assert_array_equal(gi, ri)
    np.testing.assert_array_equal(gd, rd)


@pytest.mark.parametrize("metric", ["euclidean", "canberra", "jaccard"])
def test_many_small_tiles(metric):
    X = _ints(5, 90, 20, dup=10)
    if metric == "jaccard":
        X = (X != 0).astype(np.float64)
    plan = metric_program(metric).plan
    wm = CUDABackend().cell_bytes(plan, np.float64) * 64  # one 8 x 8 tile
    calls = []
    got = neighbors.knn_plan(plan, X, X, 10, CUDABackend(), wm, True, on_block=calls.append,
                         symmetric=False)  # the ordinary tiling (symmetric: further down)
    assert len(calls) == 12 * 12
    ref = gb.knn(X, k=10, metric=metric, backend="cpu")
    D = gb.pairwise_distances(X, metric=metric, backend="cpu")
    np.fill_diagonal(D, np.inf)
    _check_knn(got, ref, D, 1e-9)  # canberra's sums are not exact: near-ties may swap
    # the public API with the same budget; the same tiles in one piece give the same answer
    got2 = gb.knn(X, k=10, metric=metric, backend="cuda", working_memory=wm / 2**20, symmetric=False)
    np.testing.assert_array_equal(got2[1], got[1])
    whole = gb.knn(X, k=10, metric=metric, backend="cuda")
    _check_knn(whole, ref, D, 1e-9)


def test_self_exclusion():
    X = _ints(6, 150, 10, dup=30)  # duplicates at distance 0 stay neighbours
    for metric in ("euclidean", "manhattan"):
        rd, ri = gb.knn(X, k=5, metric=metric, backend="cpu")
        gd, gi = gb.knn(X, k=5, metric=metric, backend="cuda")
        np.testing.assert_array_equal(gi, ri)
        assert not (gi == np.arange(150)[:, None]).any()
        nn = gb.NearestNeighbors(n_neighbors=5, metric=metric, backend="cuda").fit(X)
        d2, i2 = nn.kneighbors()
        np.testing.assert_array_equal(i2, ri)


@pytest.mark.parametrize("key", ["inner_product", "russellrao", "jaccard", "manhattan",
                                 "euclidean", "braycurtis"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_self_exclusion_is_by_index_against_brute_force(key, dtype):
    """Issue 24 item 1 on the device: the query's own index is dropped (else the last of
    k + 1), never a candidate picked by its value: brute force with the diagonal removed by
    index, ties by index (small integers: every distance exact)."""
    from self_exclusion_cases import (ISSUE_K1, ISSUE_X, KL_X, check_exact, exact_data,
                                      metric_args, reference)
    d, i = gb.knn(ISSUE_X.astype(dtype), k=1, metric="inner_product", backend="cuda")
    np.testing.assert_array_equal(i[:, 0], ISSUE_K1)
    assert d.dtype == dtype
    _, i = gb.knn(KL_X.astype(dtype), k=1, metric="kl_divergence", backend="cuda")
    np.testing.assert_array_equal(i[:, 0], [1, 0, 0])
    name, params, kind, ref = metric_args(key)
    for seed in (0, 1):
        X = exact_data(seed, kind=kind)
        R = reference(X, ref)
        plan = metric_program(name, **params).plan
        tiny = CUDABackend().cell_bytes(plan, dtype) * 64 / 2**20  # 8 x 8 tiles
        for k in (1, 2, 5):
            for symmetric, wm in ((None, None), (False, None), (None, tiny), (False, tiny)):
                check_exact(R, gb.knn(X.astype(dtype), k=k, metric=name, backend="cuda",
                                      symmetric=symmetric, working_memory=wm, **params), k)
        # CuPy in, CuPy out: the exclusion runs on the device
        g = gb.knn(cps.csr_matrix(sps.csr_matrix(X.astype(dtype))), k=2, metric=name,
                   backend="cuda", **params)
        assert isinstance(g[1], cupy.ndarray)
        check_exact(R, tuple(cupy.asnumpy(a) for a in g), 2)
    est = gb.NearestNeighbors(n_neighbors=1, metric="inner_product", backend="cuda")
    np.testing.assert_array_equal(est.fit(ISSUE_X).kneighbors()[1][:, 0], ISSUE_K1)


def test_cupy_inputs_give_cupy_outputs():
    X, Y = _data(8, 30, 60, 25)
    ref = gb.knn(X, Y, k=4, metric="manhattan", backend="cpu")
    D = gb.pairwise_distances(X, Y, metric="manhattan", backend="cpu")
    Xz = X.copy()
    Xz.data[::3] = 0.0  # explicit zeros, dropped on the device
    refz = gb.knn(Xz, Y, k=4, metric="manhattan", backend="cpu")
    Dz = gb.pairwise_distances(Xz, Y, metric="manhattan", backend="cpu")
    convs = {"csr": cps.csr_matrix, "dense": lambda m: cupy.asarray(m.toarray()),
             "csc": lambda m: cps.csr_matrix(m).tocsc()}
    for kind, conv in convs.items():
        for a, r, DD in ((X, ref, D), (Xz, refz, Dz)):
            d, i = gb.knn(conv(a), conv(Y), k=4, metric="manhattan", backend="cuda")
            assert isinstance(d, cupy.ndarray) and isinstance(i, cupy.ndarray), kind
            _check_knn((d, i), r, DD, 1e-9)
    d, i = gb.knn(cps.csr_matrix(X), k=4, metric="manhattan", backend="cuda")
    assert isinstance(i, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(i), gb.knn(X, k=4, metric="manhattan",
                                                           backend="cpu")[1])


def test_radius_and_graphs_on_the_device():
    X = _ints(9, 80, 8, dup=5)
    Q = _ints(10, 20, 8)
    for metric in ("euclidean", "manhattan"):
        cpu = gb.NearestNeighbors(radius=3.0, n_neighbors=6, metric=metric, backend="cpu").fit(X)
        gpu = gb.NearestNeighbors(radius=3.0, n_neighbors=6, metric=metric, backend="cuda").fit(X)
        for q in (None, Q):
            a = cpu.radius_neighbors_graph(q, mode="distance", sort_results=True)
            b = gpu.radius_neighbors_graph(q, mode="distance", sort_results=True)
            np.testing.assert_array_equal(a.indptr, b.indptr)
            np.testing.assert_array_equal(a.indices, b.indices)
            np.testing.assert_allclose(a.data, b.data, rtol=1e-12)
            g1 = cpu.kneighbors_graph(q, mode="distance")
            g2 = gpu.kneighbors_graph(q, mode="distance")
            np.testing.assert_array_equal(g1.indices, g2.indices)


def test_default_budget_comes_from_the_device():
    free, _ = cupy.cuda.runtime.memGetInfo()
    b = CUDABackend().default_budget()
    assert 64 * 2**20 <= b <= 8 * 2**30


# --- symmetric self-joins ---------------------------------------------------------

SYM_METRICS = ["cosine", "euclidean", "manhattan", "chebyshev", "canberra", "jensenshannon",
               "jaccard"]


@pytest.mark.parametrize("metric", SYM_METRICS)
@pytest.mark.parametrize("exclude", [True, False])
def test_symmetric_self_join_matches_non_symmetric(metric, exclude):
    """Integer data with duplicates, an empty row; tiles small enough for many blocks.
    Exact metrics must give identical answers; the others identical up to rounding ties."""
    X = _ints(7, 180, 30, dup=8)
    if metric in NONNEG or metric in BINARY:
        X = np.abs(X)
    X[20] = 0
    X = sps.csr_matrix(X)
    be = CUDABackend()
    kw = dict(k=7, metric=metric, backend=be, exclude_self=exclude)
    d0, i0 = gb.knn(X, symmetric=False, **kw)
    ref = gb.knn(X, backend="cpu", k=7, metric=metric, exclude_self=exclude, symmetric=False)
    for wm in (20_000, 200_000):
        d1, i1 = gb.knn(X, symmetric=True, working_memory=wm / 2**20, **kw)
        plan = metric_program(metric).plan
        assert symmetric_side(be, plan, 180, wm, np.float64) < 180  # really tiled
        if metric in ("canberra", "jensenshannon"):
            np.testing.assert_allclose(d1, d0, rtol=1e-9, atol=1e-7, equal_nan=True)
            D = gb.pairwise_distances(X, X, metric=metric, backend="cpu")
            if exclude:
                np.fill_diagonal(D, np.inf)
            _check_knn((d1, i1), ref, D, 1e-7)
        else:
            np.testing.assert_array_equal(i1, i0)
            np.testing.assert_array_equal(d1, d0)
            np.testing.assert_array_equal(i1, ref[1])


def test_symmetric_cupy_in_cupy_out_and_auto():
    X = _ints(3, 150, 20, dup=5)
    Xg = cps.csr_matrix(cupy.asarray(X))
    d, i = gb.knn(Xg, k=5, metric="manhattan", backend="cuda", working_memory=30_000 / 2**20)  # auto
    assert isinstance(d, cupy.ndarray) and isinstance(i, cupy.ndarray)
    d0, i0 = gb.knn(X, k=5, metric="manhattan", backend="cpu", symmetric=False)
    np.testing.assert_array_equal(cupy.asnumpy(i), i0)
    np.testing.assert_array_equal(cupy.asnumpy(d), d0)
    with pytest.raises(gb.InputError):
        gb.knn(np.abs(X), k=3, metric="kl_divergence", backend="cuda", symmetric=True)


def test_symmetric_float32_and_progress_counts():
    X = _ints(5, 130, 16, dup=4).astype(np.float32)
    seen = []
    plan = metric_program("cosine").plan
    d, i = neighbors.knn_plan(plan, X, X, 4, CUDABackend(), 20_000, True, None, seen.append,
                          symmetric=True)
    assert sum(seen) == 130 * 130 and d.dtype == np.float32
    d0, i0 = gb.knn(X, k=4, metric="cosine", backend="cuda", symmetric=False)
    np.testing.assert_array_equal(i, i0)


@pytest.mark.parametrize("symmetric", [False, True])
def test_device_tiles_shrink_on_out_of_memory(symmetric):
    """The CUDA backend running out of memory for tiles of more than 5 rows: the tile's
    rows are split until they fit, and the neighbours are the same as without limits."""
    class OutOfMemoryError(Exception):  # matched by name, as CuPy's is
        pass

    class Tight(CUDABackend):
        sizes = []

        def run_tile(self, prepared, r0, r1, c0, c1):
            Tight.sizes.append(r1 - r0)
            if r1 - r0 > 5:
                raise OutOfMemoryError("out of memory")
            return super().run_tile(prepared, r0, r1, c0, c1)

    X = _ints(3, 30, 12)
    ref = gb.knn(X, k=4, metric="manhattan", backend="cpu")
    got = gb.knn(X, k=4, metric="manhattan", backend=Tight(), symmetric=symmetric)
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=0)
    assert max(Tight.sizes) > 5 and min(Tight.sizes) <= 5
