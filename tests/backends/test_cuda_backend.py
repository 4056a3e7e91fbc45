"""The CUDA backend against the CPU backend (the reference semantics).

Every named metric, both dtypes, the edge cases of the core's tests (empty
rows, explicit zeros, duplicates, unsorted indices, negative values), device
inputs and outputs, user-defined metrics, min-plus, mxv and k-chunking.
"""
import numpy as np
import pytest
from metric_cases import device_plan, fit_columns  # noqa: E402
import scipy.sparse as sps

import gbdist as gb
from own_distances import own_distances  # gbdist's own metric and dtype path

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")

NONNEG = {"hellinger", "jensenshannon", "jensenshannon_unnormalized", "kl_divergence"}
BINARY = {"jaccard", "dice", "russellrao"}


def _data(seed, m, n, k, density=0.15, nonneg=False, binary=False):
    rng = np.random.default_rng(seed)
    X = sps.random(m, k, density=density, random_state=rng, format="csr")
    Y = sps.random(n, k, density=density * 1.5, random_state=rng, format="csr")
    for M in (X, Y):
        if binary:
            M.data[:] = 1.0
        elif not nonneg:
            M.data = M.data * 4 - 1.5
        M.data[::7] = 0.0  # explicit stored zeros
    X = sps.csr_matrix(X)
    X[3] = 0  # an empty row
    X.eliminate_zeros()
    X.data[::5] = 0.0
    if nonneg and not binary:
        X = sps.csr_matrix(X.multiply(1 / np.maximum(X.sum(1), 1e-12)))
        Y = sps.csr_matrix(Y.multiply(1 / np.maximum(Y.sum(1), 1e-12)))
    return X, Y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("metric", sorted(gb.metric_names()))
def test_metric_matches_cpu(metric, dtype):
    X, Y = fit_columns(metric, *_data(7, 37, 29, 61, nonneg=metric in NONNEG,
                                      binary=metric in BINARY))
    X, Y = X.astype(dtype), Y.astype(dtype)
    ref = own_distances(X, Y, metric=metric, backend="cpu", dtype=np.float64)
    got = own_distances(X, Y, metric=metric, backend="cuda")
    assert isinstance(got, np.ndarray) and got.dtype == dtype and got.shape == ref.shape
    tol = 2e-4 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * 10, equal_nan=True)


@pytest.mark.parametrize("strategy", ["gather", "scatter", "dense", "sorted", "dense_union"])
@pytest.mark.parametrize("metric", sorted(gb.metric_names()))
def test_each_strategy_matches_cpu(metric, strategy):
    from gbdist.backends.cuda import generated as _generated
    from gbdist.pairwise import metric_program
    gen = _generated(metric_program(metric).plan, "float64")
    if strategy not in gen.strategies:
        with pytest.raises(gb.InputError):
            own_distances(*_data(1, 5, 5, 9), metric=metric, backend="cuda", strategy=strategy)
        return
    X, Y = fit_columns(metric, *_data(19, 33, 41, 150, nonneg=metric in NONNEG,
                                      binary=metric in BINARY))
    if strategy not in _generated(device_plan(metric, X.shape[1]), "float64").strategies:
        # the accuracy rule sums this data's products as written: gather only, said
        with pytest.raises(gb.InputError, match="accuracy rule"):
            own_distances(X, Y, metric=metric, backend="cuda", strategy=strategy)
        return
    ref = own_distances(X, Y, metric=metric, backend="cpu")
    got = own_distances(X, Y, metric=metric, backend="cuda", strategy=strategy)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-8, equal_nan=True)


def test_sorted_union_min_monoid_and_ties():
    """min ⊕ (ascending walks), shared columns with equal values, empty rows.

    f = −|x − y| with min: the corner f(0, 0) = 0 is absorbed (f ≤ 0)."""
    negabs = gb.op("negabsdiff", lambda x, y: -abs(x - y))
    A, B = gb.matrices("A B")
    prog = gb.compile(gb.mxm(A, B.T, gb.semiring(negabs, gb.ops.min)))
    X, Y = _data(41, 30, 45, 60)
    Y = sps.vstack([Y, X[:5]]).tocsr()  # identical rows: every shared column ties
    ref = prog(A=X, B=Y, backend="cpu")
    for strategy in ("gather", "sorted"):
        np.testing.assert_allclose(prog(A=X, B=Y, backend="cuda", strategy=strategy), ref,
                                   rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sorted_union_short_rows_and_shared_first_entries(dtype):
    """The sorted union's first-entries table and flags (GB_UNION_TOP = 4): rows of 0 to 9
    entries over 12 columns, so that pairs share all, some or none of a row's first
    entries and the walks past them run; equal values (ties in the key order)."""
    rng = np.random.default_rng(47)
    rows = []
    for n in list(range(10)) * 6:
        r = np.zeros(12)
        c = rng.choice(12, size=n, replace=False)
        r[c] = rng.integers(-3, 4, size=n) + 0.5
        rows.append(r)
    X = sps.csr_matrix(np.array(rows, dtype=dtype))
    Y = sps.csr_matrix(np.vstack([X.toarray()[::-1], X.toarray()[:7]]))
    for metric in ("chebyshev",):
        ref = own_distances(X, Y, metric=metric, backend="cpu")
        got = own_distances(X, Y, metric=metric, backend="cuda", strategy="sorted")
        np.testing.assert_allclose(got, ref, rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_unabsorbed_corner_is_refused_not_wrong():
    """|x − y| with min: f(0, 0) = 0 changes results where the union misses a column."""
    A, B = gb.matrices("A B")
    prog = gb.compile(gb.mxm(A, B.T, gb.semiring(gb.ops.absdiff, gb.ops.min)))
    X, Y = _data(43, 10, 12, 20)
    with pytest.raises(gb.BackendError):
        prog(A=X, B=Y, backend="cuda")


def test_scatter_tiles_the_output_columns():
    """More output columns than one shared-memory tile holds (float64: ~28K)."""
    rng = np.random.default_rng(2)
    X = sps.random(6, 50, density=0.3, random_state=rng, format="csr")
    Y = sps.random(40000, 50, density=0.05, random_state=rng, format="csr")
    for metric, strategy in (("manhattan", "scatter"), ("chebyshev", "sorted")):
        ref = own_distances(X, Y, metric=metric, backend="cpu")
        got = own_distances(X, Y, metric=metric, backend="cuda", strategy=strategy)
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_auto_strategy_is_recorded():
    from gbdist.backends.cuda import last_run
    X, Y = _data(4, 20, 20, 30)
    own_distances(X, Y, metric="cosine", backend="cuda")
    assert last_run()["strategy"] in ("gather", "scatter", "dense")


@pytest.mark.parametrize("p", [1.0, 3.0, 4.0])
def test_minkowski(p):
    X, Y = _data(3, 20, 25, 40)
    ref = own_distances(X, Y, metric="minkowski", p=p, backend="cpu")
    got = own_distances(X, Y, metric="minkowski", p=p, backend="cuda")
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_device_inputs_give_device_outputs():
    X, Y = _data(11, 30, 30, 50)
    convs = {"csr": cps.csr_matrix, "csc": lambda m: cps.csr_matrix(m).tocsc(),
             "dense": lambda m: cupy.asarray(m.toarray())}
    for metric in ("manhattan", "kl_divergence"):
        a, b = (abs(X), abs(Y)) if metric == "kl_divergence" else (X, Y)
        ref = own_distances(a, b, metric=metric, backend="cpu")
        for kind, conv in convs.items():
            got = own_distances(conv(a), conv(b), metric=metric, backend="cuda")
            assert isinstance(got, cupy.ndarray)
            np.testing.assert_allclose(cupy.asnumpy(got), ref, rtol=1e-9, atol=1e-9,
                                       err_msg=f"{metric} from {kind}")


def test_auto_picks_gpu():
    from gbdist.runtime import get_backend
    assert get_backend("auto").name == "cuda"


def test_unsorted_duplicates_int64():
    rng = np.random.default_rng(5)
    rows = rng.integers(0, 20, 300)
    cols = rng.integers(0, 45, 300)
    vals = rng.normal(size=300)
    X = sps.coo_matrix((vals, (rows, cols)), shape=(20, 45))  # duplicates kept
    X64 = sps.csr_matrix((vals, (rows, cols)), shape=(20, 45))
    X64.indices = X64.indices.astype(np.int64)
    X64.indptr = X64.indptr.astype(np.int64)
    for metric in ("euclidean", "chebyshev", "canberra"):
        ref = own_distances(X.toarray(), metric=metric, backend="cpu")
        # atol: a self-distance is sqrt of a cancelled sum, ~1e-7 on either side.
        np.testing.assert_allclose(own_distances(X, metric=metric, backend="cuda"), ref,
                                   rtol=1e-9, atol=1e-6)
        np.testing.assert_allclose(own_distances(X64, metric=metric, backend="cuda"), ref,
                                   rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("metric", ["cosine", "manhattan", "chebyshev", "jaccard"])
def test_k_chunking_matches(metric):
    """Force several k-chunks (tiny shared-memory budget) and compare with one chunk."""
    from gbdist import runtime
    from gbdist.backends.cuda import CUDABackend, strategies
    from gbdist.pairwise import metric_program
    X, Y = _data(13, 21, 17, 300, binary=metric == "jaccard")
    plan = metric_program(metric).plan
    cfg = strategies.gather_config
    strategies.gather_config = lambda gen, K, dt, r: (2, 64, 0)
    try:
        got = runtime.run(plan, {"A": X, "B": Y}, backend=CUDABackend(), drop_zeros=True,
                          strategy="gather")
    finally:
        strategies.gather_config = cfg
    ref = own_distances(X, Y, metric=metric, backend="cpu")
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9, equal_nan=True)


def test_user_defined_metric_runs_fused():
    chi2 = gb.op("chi2_gpu", lambda x, y: gb.where(x + y == 0, 0, (x - y) ** 2 / (x + y)))
    gb.define_metric("chi2_gpu", lambda A, B: gb.mxm(A, B.T, gb.semiring(chi2, gb.ops.plus)),
                     replace=True)
    X, Y = _data(17, 25, 19, 33, nonneg=True)
    Xd, Yd = X.toarray(), Y.toarray()
    s = Xd[:, None, :] + Yd[None, :, :]
    d = (Xd[:, None, :] - Yd[None, :, :]) ** 2
    ref = np.where(s == 0, 0, d / np.where(s == 0, 1, s)).sum(-1)
    got = own_distances(X, Y, metric="chi2_gpu", backend="cuda")
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_min_plus_two_hop_structural():
    rng = np.random.default_rng(23)
    n = 30
    W = sps.random(n, n, density=0.1, random_state=rng, format="csr")
    W.data[::4] = 0.0  # zero-weight edges are edges (structural semantics)
    A = gb.matrices("A")
    got = gb.compile(gb.mxm(A, A, gb.semirings.min_plus))(A=W, backend="cuda")
    dense = np.full((n, n), np.inf)
    coo = W.tocoo()
    dense[coo.row, coo.col] = coo.data
    ref = np.min(dense[:, :, None] + dense[None, :, :], axis=1)
    np.testing.assert_array_equal(got, ref)


def test_mxv():
    X, _ = _data(29, 40, 1, 30)
    x = np.random.default_rng(1).normal(size=30)
    got = gb.mxv(X, x, gb.semirings.plus_times, backend="cuda")
    np.testing.assert_allclose(got, X @ x, rtol=1e-9, atol=1e-9)


def test_domain_error_on_gpu():
    X, Y = _data(31, 10, 10, 20)
    with pytest.raises(gb.DomainError):
        own_distances(X, Y, metric="hellinger", backend="cuda")


def test_dsl_text_metric_runs_on_the_gpu():
    """A metric defined in the text language compiles into the same fused kernels."""
    gb.define("""
    op chi2_text(x, y) = where(x + y == 0, 0, (x - y)^2 / (x + y))
    semiring chi2_sr_text = semiring(chi2_text, plus)
    metric bc_text(A, B) = mxm(A, B.T, plus_absdiff) / mxm(A, B.T, semiring(abssum, plus))
    metric chi2_text_metric(A, B) = sqrt(mxm(A, B.T, chi2_sr_text))
    """, source="<gpu-test>")
    X, Y = _data(47, 23, 31, 40, nonneg=True)
    Xd, Yd = X.toarray(), Y.toarray()
    from scipy.spatial.distance import cdist
    np.testing.assert_allclose(own_distances(X, Y, metric="bc_text", backend="cuda"),
                               cdist(Xd, Yd, "braycurtis"), rtol=1e-9, atol=1e-12, equal_nan=True)
    s = Xd[:, None, :] + Yd[None, :, :]
    d = (Xd[:, None, :] - Yd[None, :, :]) ** 2
    ref = np.sqrt(np.where(s == 0, 0, d / np.where(s == 0, 1, s)).sum(-1))
    for strategy in ("gather", "scatter"):
        np.testing.assert_allclose(own_distances(X, Y, metric="chi2_text_metric",
                                                         backend="cuda", strategy=strategy),
                                   ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("metric", ["manhattan", "cosine", "chebyshev"])
def test_working_memory_bounds_gpu_pairwise(metric, monkeypatch):
    """pairwise_distances on the GPU runs in row tiles within working_memory (the one
    memory model), and as one tile without it; the answers agree with each other and
    with the CPU backend. CuPy inputs give a CuPy result either way."""
    from gbdist.backends.cuda import CUDABackend
    X, Y = _data(5, 60, 40, 30)
    ref = own_distances(X, Y, metric=metric, backend="cpu")
    tiles = []
    real = CUDABackend.run_tile

    def spy(self, p, r0, r1, c0, c1):
        tiles.append((r0, r1, c0, c1))
        return real(self, p, r0, r1, c0, c1)

    monkeypatch.setattr(CUDABackend, "run_tile", spy)
    one = own_distances(X, Y, metric=metric, backend="cuda")
    assert tiles == [(0, 60, 0, 40)]
    tiles.clear()
    plan = gb.pairwise.metric_program(metric).plan
    wm = 7 * 40 * CUDABackend().cell_bytes(plan, np.float64)  # seven whole rows per tile
    many = own_distances(cps.csr_matrix(X), cps.csr_matrix(Y), metric=metric,
                                 backend="cuda", working_memory=wm / 2**20)
    assert isinstance(many, cupy.ndarray)
    assert tiles == [(r, min(60, r + 7), 0, 40) for r in range(0, 60, 7)]
    np.testing.assert_allclose(many.get(), one, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(one, ref, rtol=1e-9, atol=1e-9)


def test_backend_caches_are_public_and_clearable():
    from gbdist import runtime
    from gbdist.backends.cuda import cache, compile_log, last_run
    X, Y = _data(6, 10, 12, 20)
    own_distances(X, Y, metric="euclidean", backend="cuda")
    assert last_run()["strategy"] in ("gather", "scatter", "dense") and cache.MODULES
    runtime.clear_caches()
    assert not cache.MODULES and not cache.GENERATED and compile_log() == []
    assert last_run()["strategy"] is None
    D = own_distances(X, Y, metric="euclidean", backend="cuda")  # recompiled
    np.testing.assert_allclose(D, own_distances(X, Y, metric="euclidean", backend="cpu"),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("metric,strategy", [("cosine", "scatter"), ("manhattan", "scatter"),
                                             ("chebyshev", "sorted")])
def test_slice_forms_are_kept_across_tiles(metric, strategy, monkeypatch):
    """A budget that cuts the work into tiles: each operand slice's Bᵀ (scatter, sorted)
    and per-row orders (sorted) are built once and read again by the call's other tiles
    (the operand's memo when a tile reads it whole, else strategies.Kept), and the
    answers are the CPU backend's: a blocked distance matrix and a self-join kNN (whose
    symmetric tiles cut the index into blocks)."""
    from gbdist.backends.cuda import strategies
    calls, builds = [], []
    form = strategies.form

    def spy(job, side, key, build):
        calls.append((side, job.slices[side], key))
        return form(job, side, key, lambda: (builds.append(calls[-1]), build())[1])
    monkeypatch.setattr(strategies, "form", spy)
    choose = strategies.choose
    monkeypatch.setattr(strategies, "choose", lambda job, forced: choose(job, strategy))
    X, Y = _data(21, 300, 260, 90)
    want = gb.pairwise_distances(X, Y, metric=metric, backend="cpu")
    got = gb.pairwise_distances(cps.csr_matrix(X), cps.csr_matrix(Y), metric=metric,
                                backend="cuda", working_memory=0.05)
    np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-12, atol=1e-12)
    assert builds and len(calls) > len(builds) and len(set(builds)) == len(builds)
    calls.clear(), builds.clear()
    Z = sps.vstack([X, Y]).tocsr()
    dw, iw = gb.knn(Z, k=4, metric=metric, backend="cpu")
    d, i = gb.knn(cps.csr_matrix(Z), k=4, metric=metric, backend="cuda", working_memory=0.05)
    np.testing.assert_allclose(cupy.asnumpy(d), dw, rtol=1e-12, atol=1e-12)
    assert (cupy.asnumpy(i) == iw).mean() > 0.99  # ties at equal distances may go either way
    assert builds and len(calls) > len(builds) and len(set(builds)) == len(builds)
    assert any(s != (0, Z.shape[0]) for _, s, _ in builds)  # index blocks kept per call
