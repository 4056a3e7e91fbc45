"""CUDA graph kernels (issue 12) against brute force in float64 (and SciPy where it applies):
SpGEMM (every shared bin and the global-memory table, masks and complements), SpMV (every
degree bin), SpMSpV and segment reductions, on random power-law graphs with empty rows and
explicit zeros, in bool/int32/int64/float32/float64, with a user monoid."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist.algebra.evaluate import apply_binary
from gbdist.algebra.formulas import X, Y
from gbdist.algebra.ops import as_monoid, make_op

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")

from gbdist.backends.base import DeviceCSR  # noqa: E402
from gbdist.backends.cuda.graph import CudaGraphKernels  # noqa: E402

SR = gb.semirings
PROBOR = make_op("probor", X + Y - X * Y)
SR_PROB = gb.semiring(gb.ops.times, PROBOR)


def powerlaw(m, n, seed, dtype=np.float64, long_row=0, avg=6.0):
    """Random CSR (SciPy) with power-law row degrees and column popularity (duplicates drawn
    are merged), every 5th row empty, row 1 holding ``long_row`` distinct columns; values in
    -2..4 (0 included: stored zeros) or random bools (False included)."""
    rng = np.random.default_rng(seed)
    deg = np.minimum((rng.pareto(1.3, m) * avg / 2).astype(np.int64) + 1, n)
    deg[::5] = 0
    if long_row:
        deg[1] = 0
    cdf = np.cumsum(1.0 / np.arange(1, n + 1) ** 0.7)
    perm = rng.permutation(n)
    rows = np.repeat(np.arange(m, dtype=np.int64), deg)
    cols = perm[np.minimum(np.searchsorted(cdf, rng.random(rows.size) * cdf[-1]), n - 1)]
    if long_row:
        rows = np.concatenate([rows, np.ones(min(long_row, n), np.int64)])
        cols = np.concatenate([cols, rng.choice(n, size=min(long_row, n), replace=False)])
    keys = np.unique(rows * n + cols)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(keys // n, minlength=m))])
    if np.dtype(dtype) == np.bool_:
        data = rng.random(keys.size) < 0.8
    else:
        data = rng.integers(-2, 5, keys.size).astype(dtype)
    return sps.csr_matrix((data, (keys % n).astype(np.int32), indptr.astype(np.int32)), shape=(m, n))


def dev(S):
    """SciPy CSR → device operand (cupyx where it holds the dtype, else DeviceCSR)."""
    parts = (cupy.asarray(S.data), cupy.asarray(S.indices), cupy.asarray(S.indptr))
    if S.dtype.char in "?fd":
        return cps.csr_matrix(parts, shape=S.shape)
    return DeviceCSR(*parts, S.shape)


def reduce_groups(keys, vals, monoid):
    """(unique keys, ⊕ of vals per key) in float64, with the monoid's formula."""
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], vals[order]
    uniq, starts = np.unique(keys, return_index=True)
    if len(uniq) == 0:
        return uniq, vals[:0]
    try:
        return uniq, monoid.ufunc.reduceat(vals, starts)
    except gb.DefinitionError:
        out = np.empty(len(uniq))
        bounds = list(starts) + [len(vals)]
        for g in range(len(uniq)):
            acc = vals[bounds[g]]
            for v in vals[bounds[g] + 1:bounds[g + 1]]:
                acc = float(apply_binary(monoid.op, np.float64(acc), np.float64(v)))
            out[g] = acc
        return uniq, out


def cast(vals, dtype):
    return vals != 0 if np.dtype(dtype) == np.bool_ else vals.astype(dtype)


def brute_spgemm(A, B, sr, out, mask=None, complement=False):
    n = B.shape[1]
    Ai = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    degB = np.diff(B.indptr)[A.indices]
    rows = np.repeat(Ai, degB)
    first = np.repeat(B.indptr[A.indices], degB)
    within = np.arange(len(rows)) - np.repeat(np.cumsum(degB) - degB, degB)
    q = first + within
    cols = B.indices[q].astype(np.int64)
    vals = apply_binary(sr.mul, np.repeat(A.data.astype(np.float64), degB), B.data[q].astype(np.float64))
    keys = rows * n + cols
    if mask is not None:
        Mi = np.repeat(np.arange(mask.shape[0]), np.diff(mask.indptr))
        inside = np.isin(keys, Mi * n + mask.indices)
        keep = ~inside if complement else inside
        keys, vals = keys[keep], vals[keep]
    uk, uv = reduce_groups(keys, np.asarray(vals, dtype=np.float64), sr.add)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(uk // n, minlength=A.shape[0]))])
    return sps.csr_matrix((cast(uv, out), (uk % n).astype(np.int32), indptr), shape=(A.shape[0], n))


def check_csr(C, ref, dtype, rtol=0.0):
    assert C.shape == ref.shape
    host = C.get()
    assert host.dtype == np.dtype(dtype)
    ref = ref.tocsr()
    ref.sort_indices()
    np.testing.assert_array_equal(np.asarray(host.indptr, np.int64), ref.indptr)
    np.testing.assert_array_equal(host.indices, ref.indices)
    if rtol:
        np.testing.assert_allclose(host.data, ref.data, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(host.data, ref.data)


K = CudaGraphKernels()


def _passes(monkeypatch, form):
    """The SpGEMM's form: "one" (the default: one numeric pass on the bounds' bins, compacted
    into a copy allocated with them, the result's size read last), "late" (one pass, the size
    read before the compacted copy is allocated: the larger products') or "two" (symbolic then
    numeric)."""
    from gbdist.backends.cuda import graph_spgemm
    monkeypatch.setattr(graph_spgemm, "ONE_PASS", form != "two")
    if form == "late":
        monkeypatch.setattr(graph_spgemm, "_EARLY_BYTES", 0)


FORMS = ["one", "late", "two"]


@pytest.mark.parametrize("form", FORMS)
def test_spgemm_plus_times_matches_scipy_every_bin(monkeypatch, form):
    _passes(monkeypatch, form)
    # a long row (global-memory table), hubs (large shared tables), empty rows, stored zeros
    A = powerlaw(1500, 6000, 1, long_row=900, avg=10)
    B = powerlaw(6000, 6000, 2, avg=10)
    C = K.spgemm(dev(A), dev(B), SR.plus_times, out_dtype=np.float64)
    assert isinstance(C, cps.csr_matrix)
    ub = np.minimum([np.diff(B.indptr)[A.indices[A.indptr[i]:A.indptr[i + 1]]].sum() for i in range(1500)], 6000)
    assert ub.max() > 4096 and ((ub > 32) & (ub <= 64)).any() and ((ub > 1024) & (ub <= 4096)).any()
    ones = sps.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
    pattern = ones @ sps.csr_matrix((np.ones(B.nnz), B.indices, B.indptr), shape=B.shape)
    pattern.sort_indices()
    values = (A @ B).toarray()
    host = C.get()
    host.sort_indices()
    np.testing.assert_array_equal(host.indptr, pattern.indptr)  # structural: zero sums stay stored
    np.testing.assert_array_equal(host.indices, pattern.indices)
    np.testing.assert_allclose(host.toarray(), values, rtol=1e-12, atol=1e-9)
    check_csr(C, brute_spgemm(A, B, SR.plus_times, np.float64), np.float64, rtol=1e-12)


@pytest.mark.parametrize("tables,chunk_slots", [("dense", None), ("hashed", None),
                                                ("hashed", 1 << 15), ("wide", None)])
@pytest.mark.parametrize("mask", [None, "mask", "complement"])
@pytest.mark.parametrize("form", FORMS)
def test_spgemm_global_table_rows_match_scipy(monkeypatch, tables, chunk_slots, mask, form):
    """Rows whose bound passes the largest shared table (8,192 columns) take a global-memory
    table; the rest of the rows the shared bins. Dense tables (the default while rows x n
    columns fit _DENSE_SLOTS): a column its own slot, rows written in order, no sort.
    Hashed (_DENSE_SLOTS 0): the sort afterwards; with the default limit the global rows'
    tables fit one chunk, with a small one (_GLOBAL_SLOTS) they are split into several, and a
    row whose table alone passes the limit gets a chunk of its own. Plain, masked and
    complemented, against SciPy; hashed also where n passes _DENSE_COLUMNS ("wide"). In one
    pass the global rows are those whose bound passes the shared tables."""
    from gbdist.backends.cuda import graph_spgemm as cuda_graph
    _passes(monkeypatch, form)
    if tables == "hashed":
        monkeypatch.setattr(cuda_graph, "_DENSE_SLOTS", 0)
    elif tables == "wide":  # n past the dense tables' width: hashed whatever rows x n
        monkeypatch.setattr(cuda_graph, "_DENSE_COLUMNS", 29_999)
        tables = "hashed"
    if chunk_slots is not None:
        monkeypatch.setattr(cuda_graph, "_GLOBAL_SLOTS", chunk_slots)
    sorts = []
    sort_rows = cuda_graph.sort_rows
    monkeypatch.setattr(cuda_graph, "sort_rows", lambda *a: sorts.append(1) or sort_rows(*a))
    A = powerlaw(600, 30000, 4, long_row=1500, avg=10)
    B = powerlaw(30000, 30000, 5, avg=12)
    ub = np.minimum([np.diff(B.indptr)[A.indices[A.indptr[i]:A.indptr[i + 1]]].sum() for i in range(600)], 30000)
    assert ub.max() > 8192 and ((ub > 16) & (ub <= 512)).any()
    ones = sps.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
    pattern = ones @ sps.csr_matrix((np.ones(B.nnz), B.indices, B.indptr), shape=B.shape)
    want = sps.csr_matrix(A @ B)
    M = None
    if mask is not None:
        M = sps.random(600, 30000, density=0.3, random_state=6, format="csr")
        M.data[:] = 1.0
        inside = sps.csr_matrix(pattern.multiply(M)), sps.csr_matrix(want.multiply(M))
        if mask == "mask":
            pattern, want = inside
        else:
            pattern, want = sps.csr_matrix(pattern - inside[0]), sps.csr_matrix(want - inside[1])
        pattern.eliminate_zeros()  # counts of products: zero only where removed
    want = want.toarray()
    C = K.spgemm(dev(A), dev(B), SR.plus_times, out_dtype=np.float64,
                 mask=None if M is None else dev(M), complement=mask == "complement").get()
    pattern.sort_indices()
    np.testing.assert_array_equal(C.indptr, pattern.indptr)
    np.testing.assert_array_equal(C.indices, pattern.indices)  # sorted by column in every row
    np.testing.assert_allclose(C.toarray(), want, rtol=1e-12, atol=1e-9)
    if tables == "dense":
        assert not sorts  # rows written in column order
    elif mask is None:  # the mask may leave no numeric row above the shared tables
        assert sorts


def _fetched(monkeypatch, prefix: str) -> list:
    """The names of graph_spgemm's bin-module kernels fetched from now on that start with
    ``prefix`` (a spy on graph_spgemm._bin_module): which kernels a product launched."""
    from gbdist.backends.cuda import graph_spgemm
    got, real = [], graph_spgemm._bin_module

    def spy():
        mod = real()

        class M:
            def get_function(self, name):
                if name.startswith(prefix):
                    got.append(name)
                return mod.get_function(name)
        return M()
    monkeypatch.setattr(graph_spgemm, "_bin_module", spy)
    return got


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", ["stencil", "no_combining", "memory", "poisson", "wide", "free",
                                  "no_room"])
def test_spgemm_one_pass_where_bounds_overshoot_or_match(monkeypatch, form, case):
    """The one-pass product's edges against SciPy: a 27-point stencil squared (a row's 729
    products make 125 entries: rows compacted far), A with one entry a row (no product
    combines: every row fills its bound, and with the size read first nothing moves), and a
    memory share of 0 (the
    bounds never fit: the two-pass product runs); 7-point Poisson squared (short rows in
    registers), and with its columns spread past 2^25 (their pairs sorted, not 32-bit keys);
    past the memory share with room free (one pass) and no room for the compacted copy (the
    numeric step on the exact counts instead)."""
    from gbdist.backends.cuda import graph_spgemm
    _passes(monkeypatch, form)
    compacts = _fetched(monkeypatch, "gb_compact_rows")
    if case == "stencil":
        g = 12
        T = sps.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(g, g))
        I = sps.identity(g)
        A = sps.csr_matrix(sps.kron(sps.kron(T, T), T) + 0.5 * sps.kron(sps.kron(I, I), I))
        B = A
    elif case in ("poisson", "wide"):  # 7-point: 49 products a row, 25 entries: short rows in registers
        g = 14
        T = sps.diags([-1.0, 6.0, -1.5], [-1, 0, 1], shape=(g, g))
        I = sps.identity(g)
        A = sps.csr_matrix(sps.kron(sps.kron(I, I), T) + sps.kron(sps.kron(I, T), I) * 0.5
                           + sps.kron(sps.kron(T, I), I) * 0.25)
        B = A
        if case == "wide":  # columns past 2^25: gb_esc_row sorts (column, value) pairs
            B = sps.csr_matrix((A.data, A.indices.astype(np.int64) << 14, A.indptr),
                               shape=(A.shape[0], A.shape[1] << 14))
    elif case == "no_combining":
        B = powerlaw(3000, 3000, 12, avg=12)
        rng = np.random.default_rng(3)
        A = sps.csr_matrix((rng.random(2000) + 0.5, rng.integers(0, 3000, 2000), np.arange(2001)),
                           shape=(2000, 3000))
    else:  # past the memory share: the free memory decides ("free": room; "memory": none)
        monkeypatch.setattr(graph_spgemm, "_ONE_PASS_FRACTION", 0.0)
        if case == "memory":
            monkeypatch.setattr(graph_spgemm, "_ONE_PASS_FREE", 0.0)
        if case == "no_room":  # one pass, but the compacted copy does not fit: exact numeric
            real_buffers, calls = graph_spgemm._buffers, []

            def buffers(size, work):  # the bounds' slots fit, the compacted copy does not
                calls.append(size)
                return real_buffers(size, work) if len(calls) == 1 else (None, None)
            monkeypatch.setattr(graph_spgemm, "_buffers", buffers)
        A = powerlaw(800, 4000, 13, long_row=600)
        B = powerlaw(4000, 4000, 14)
    C = K.spgemm(dev(A), dev(B), SR.plus_times, out_dtype=np.float64)
    check_csr(C, brute_spgemm(A, B, SR.plus_times, np.float64), np.float64, rtol=1e-12)
    combined = case in ("stencil", "poisson", "wide", "free")
    assert bool(compacts) == (form == "late" and combined or form == "one" and (combined or case == "no_combining"))


def test_spgemm_on_the_callers_stream_with_side_streams():
    """The larger bins' kernels run on side streams after the work the caller queued: A built
    on a non-blocking stream of the caller's just before the product (its values written
    there), every bin used, the answer read after that stream alone is synchronised."""
    A = powerlaw(1500, 6000, 1, long_row=900, avg=10)
    B = powerlaw(6000, 6000, 2, avg=10)
    want = brute_spgemm(A, B, SR.plus_times, np.float64)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        Ad = dev(A)
        Ad.data *= 1.0  # the operand's last write: queued on this stream only
        Ad.data += 0.0
        C = K.spgemm(Ad, dev(B), SR.plus_times, out_dtype=np.float64)
        C = cps.csr_matrix((C.data.copy(), C.indices.copy(), C.indptr.copy()), shape=C.shape)
    stream.synchronize()
    check_csr(C, want, np.float64, rtol=1e-12)


def test_spgemm_kept_spans_follow_b_s_own_buffers():
    """B's kept row spans are keyed by B's own buffers, not by the index-type copies a call
    makes: an int64-indexed A times an int32-indexed B (B's indices copied to int64 each call),
    then B given another matrix's arrays of the same sizes, whose rows reach far wider columns.
    The second product is the new one (its spans computed again), not one bounded by the first
    B's spans of at most 11 columns (its rows far longer). Integer values: DeviceCSR keeps the
    index types as given."""
    rng = np.random.default_rng(21)
    k, n = 400, 5000
    deg = rng.integers(1, 12, k)
    ptr = np.concatenate([[0], np.cumsum(deg)])
    narrow = np.concatenate([np.arange(d) for d in deg])  # every row within columns 0-10: spans of <= 11
    wide = np.concatenate([np.sort(rng.choice(n, d, replace=False)) for d in deg])
    vals = rng.integers(1, 4, ptr[-1]).astype(np.int64)
    B1 = sps.csr_matrix((vals, narrow, ptr), shape=(k, n))
    B2 = sps.csr_matrix((vals, wide, ptr), shape=(k, n))
    A = powerlaw(300, k, 22, np.int64, avg=20)
    Ad = DeviceCSR(cupy.asarray(A.data), cupy.asarray(A.indices.astype(np.int64)),
                   cupy.asarray(A.indptr.astype(np.int64)), A.shape)
    first = [cupy.asarray(B1.data), cupy.asarray(B1.indices.astype(np.int32)), cupy.asarray(B1.indptr.astype(np.int32))]
    Bd = DeviceCSR(*first, B1.shape)
    check_csr(K.spgemm(Ad, Bd, SR.plus_times, out_dtype=np.int64), brute_spgemm(A, B1, SR.plus_times, np.int64),
              np.int64)
    Bd.indices = cupy.asarray(B2.indices.astype(np.int32))  # `first` keeps B1's arrays alive
    check_csr(K.spgemm(Ad, Bd, SR.plus_times, out_dtype=np.int64), brute_spgemm(A, B2, SR.plus_times, np.int64),
              np.int64)


def test_spgemm_keeps_b_row_spans_and_holds_no_slack(monkeypatch):
    """Each B row's column span (gb_row_span) is computed once per B object: a second product
    with the same B launches no span kernel and gives the same answer. A product whose rows
    combine far (27-point stencil squared: 729 products a row, 125 entries) returns arrays of
    its own size, not views of the bounds' larger copy."""
    spans = _fetched(monkeypatch, "gb_row_span")
    A = powerlaw(900, 3000, 5, long_row=500)
    B = powerlaw(3000, 3000, 6)
    Bd = dev(B)
    want = brute_spgemm(A, B, SR.plus_times, np.float64)
    for i in range(2):
        check_csr(K.spgemm(dev(A), Bd, SR.plus_times, out_dtype=np.float64), want, np.float64, rtol=1e-12)
        assert len(spans) == 1
    g = 12
    T = sps.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(g, g))
    S = sps.csr_matrix(sps.kron(sps.kron(T, T), T))
    C = K.spgemm(dev(S), dev(S), SR.plus_times, out_dtype=np.float64)
    check_csr(C, brute_spgemm(S, S, SR.plus_times, np.float64), np.float64, rtol=1e-12)
    for a in (C.indices, C.data):
        assert a.size == C.nnz and a.data.mem.size <= a.nbytes + max(a.nbytes // 8, 1 << 20) + 1024


@pytest.mark.parametrize("skip_zero", [False, True])
def test_row_bins_are_a_stable_partition(skip_zero):
    """_bins: every row (but the zero-key ones when skipped) in exactly one bin, the bin its key
    falls in, rows ascending inside each bin (the order the kernels read memory in)."""
    from gbdist.backends.cuda.graph_bins import _bins
    rng = np.random.default_rng(7)
    keys = (rng.pareto(1.1, 100_003) * 20).astype(np.int64)
    keys[::7] = 0
    edges = [1, 4, 16, 64, 256, 1024]
    bins = [b.get() for b in _bins(cupy.asarray(keys), edges, skip_zero=skip_zero)]
    want_bin = np.searchsorted(edges, keys, side="left")
    seen = np.concatenate(bins)
    expect_rows = np.flatnonzero(keys != 0) if skip_zero else np.arange(keys.size)
    np.testing.assert_array_equal(np.sort(seen), expect_rows)
    for b, rows in enumerate(bins):
        assert np.all(np.diff(rows) > 0)
        assert np.all(want_bin[rows] == b)


@pytest.mark.parametrize("size", [0, 1, 1000, 1_000_003])
@pytest.mark.parametrize("cub", [True, False])
def test_inclusive_sum_into_a_view(monkeypatch, size, cub):
    """graph_bins.inclusive_sum: the running sums of int64 keys into a view past a leading
    zero (the SpGEMM's row pointers), by CUB's device scan and by CuPy's cumsum where CUB is
    missing, against NumPy; the leading zero untouched and the source unchanged."""
    from gbdist.backends.cuda import graph_bins
    if not cub:
        monkeypatch.setattr(graph_bins, "_cub_scan", lambda: None)
    rng = np.random.default_rng(size)
    keys = rng.integers(0, 1 << 40, size)
    src = cupy.asarray(keys)
    out = cupy.zeros(size + 1, dtype=cupy.int64)
    graph_bins.inclusive_sum(src, out[1:])
    np.testing.assert_array_equal(out.get(), np.concatenate([[0], np.cumsum(keys)]))
    np.testing.assert_array_equal(src.get(), keys)


CASES = [
    (np.float64, "min_plus"), (np.float32, "plus_times"), (np.int32, "plus_times"),
    (np.int64, "min_plus"), (np.int64, "max_times"), (np.bool_, "lor_land"),
    (np.int32, "plus_pair"), (np.float64, "any_pair"),
]


@pytest.mark.parametrize("short_rows", [True, False])
@pytest.mark.parametrize("dtype,name", CASES, ids=[f"{np.dtype(d).name}-{n}" for d, n in CASES])
def test_spgemm_semirings_and_dtypes(monkeypatch, dtype, name, short_rows):
    """Every semiring and domain, with the short rows sorted in registers (gb_esc_row) and
    without (every row in a table)."""
    from gbdist.backends.cuda import graph_spgemm
    monkeypatch.setattr(graph_spgemm, "SHORT_ROWS", short_rows)
    A = powerlaw(700, 5000, 3, dtype, long_row=800)
    B = powerlaw(5000, 5000, 4, dtype)
    sr = SR[name]
    C = K.spgemm(dev(A), dev(B), sr, out_dtype=dtype)
    assert isinstance(C, DeviceCSR) == (np.dtype(dtype).kind == "i")
    check_csr(C, brute_spgemm(A, B, sr, dtype), dtype, rtol=1e-5 if dtype == np.float32 else 0.0)


@pytest.mark.parametrize("complement", [False, True])
@pytest.mark.parametrize("dtype,name", [(np.float64, "plus_times"), (np.int64, "min_plus")])
def test_spgemm_masked(dtype, name, complement):
    A = powerlaw(600, 5000, 5, dtype, long_row=700)
    B = powerlaw(5000, 5000, 6, dtype)
    M = powerlaw(600, 5000, 7, np.bool_, long_row=3000, avg=40)
    C = K.spgemm(dev(A), dev(B), SR[name], mask=dev(M), complement=complement, out_dtype=dtype)
    ref = brute_spgemm(A, B, SR[name], dtype, mask=M, complement=complement)
    assert ref.nnz > 0
    check_csr(C, ref, dtype)


def test_spgemm_user_monoid_and_float32_accumulating_in_float64():
    rng = np.random.default_rng(8)
    A = powerlaw(400, 3000, 9, np.float64, long_row=300)
    B = powerlaw(3000, 3000, 10, np.float64)
    A.data = rng.random(A.nnz) * 0.5
    B.data = rng.random(B.nnz) * 0.5
    C = K.spgemm(dev(A), dev(B), SR_PROB, out_dtype=np.float64)
    check_csr(C, brute_spgemm(A, B, SR_PROB, np.float64), np.float64, rtol=1e-12)
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    C64 = CudaGraphKernels(acc64=True).spgemm(dev(A32), dev(B32), SR.plus_times, out_dtype=np.float32)
    ref = brute_spgemm(A32, B32, SR.plus_times, np.float64)
    check_csr(C64, ref.astype(np.float32), np.float32, rtol=1e-6)


def test_spgemm_empty_operands():
    A = sps.csr_matrix((5, 7))
    B = powerlaw(7, 9, 11)
    C = K.spgemm(dev(A), dev(B), SR.plus_times, out_dtype=np.float64)
    assert C.shape == (5, 9) and C.nnz == 0
    C = K.spgemm(dev(sps.csr_matrix((0, 7))), dev(B), SR.plus_times, out_dtype=np.float64)
    assert C.shape == (0, 9) and C.nnz == 0
    E = sps.csr_matrix((np.ones(3), [0, 5, 6], [0, 2, 3, 3, 3, 3]), shape=(5, 7))  # rows of B: empty
    Bz = B.tolil()
    Bz[[0, 5, 6], :] = 0
    Bz = sps.csr_matrix(Bz)
    Bz.eliminate_zeros()
    C = K.spgemm(dev(E), dev(Bz), SR.plus_times, out_dtype=np.float64)
    assert C.shape == (5, 9) and C.nnz == 0


def brute_spmv(A, x, present, sr, out, mask=None, complement=False):
    m = A.shape[0]
    rows = np.repeat(np.arange(m), np.diff(A.indptr))
    keep = np.ones(A.nnz, bool) if present is None else present[A.indices]
    vals = apply_binary(sr.mul, A.data.astype(np.float64), x[A.indices].astype(np.float64))
    uk, uv = reduce_groups(rows[keep], np.asarray(vals, np.float64)[keep], sr.add)
    yp = np.zeros(m, bool)
    yp[uk] = True
    if mask is not None:
        allowed = ~mask if complement else mask
        yp &= allowed
    y = np.zeros(m, np.float64)
    y[uk] = uv
    return cast(y, out), yp


@pytest.mark.parametrize("dtype,name,masked", [
    (np.float64, "plus_times", None), (np.float32, "plus_times", False), (np.int32, "min_plus", True),
    (np.bool_, "lor_land", False), (np.int64, "max_times", None), (np.float64, "probor", True)])
def test_spmv_every_degree_bin(dtype, name, masked):
    sr = SR_PROB if name == "probor" else SR[name]
    A = powerlaw(3000, 3000, 12, dtype, long_row=2500, avg=20)
    assert (np.diff(A.indptr) > 1024).any() and (np.diff(A.indptr) <= 4).any()
    rng = np.random.default_rng(13)
    x = (rng.random(3000) < 0.7) if dtype == np.bool_ else rng.integers(-2, 5, 3000).astype(dtype)
    if name == "probor":
        A.data = rng.random(A.nnz)
        x = rng.random(3000)
    present = rng.random(3000) < 0.6
    mask = rng.random(3000) < 0.5
    kw = {} if masked is None else {"mask": cupy.asarray(mask), "complement": masked}
    y, yp = K.spmv(dev(A), cupy.asarray(x), cupy.asarray(present), sr, out_dtype=dtype, **kw)
    ry, rp = brute_spmv(A, x, present, sr, dtype, mask if masked is not None else None, bool(masked))
    np.testing.assert_array_equal(yp.get(), rp)
    assert y.dtype == np.dtype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y.get()[rp].astype(np.float64), ry[rp].astype(np.float64), rtol=tol, atol=tol)
    if name == "plus_times" and masked is None:
        full, fp = K.spmv(dev(A), cupy.asarray(x), None, sr, out_dtype=dtype)
        np.testing.assert_allclose(full.get(), A @ x, rtol=tol)
        np.testing.assert_array_equal(fp.get(), np.diff(A.indptr) > 0)


@pytest.mark.parametrize("dtype,name,masked", [
    (np.float64, "plus_times", None), (np.int64, "min_plus", True), (np.bool_, "any_pair", False),
    (np.float32, "probor", None)])
def test_spmspv_push(dtype, name, masked):
    sr = SR_PROB if name == "probor" else SR[name]
    A = powerlaw(2000, 1500, 14, dtype, long_row=1200, avg=12)
    rng = np.random.default_rng(15)
    idx = np.sort(rng.choice(2000, 300, replace=False))
    if name == "probor":
        A.data = rng.random(A.nnz).astype(dtype)
        val = rng.random(300).astype(dtype)
    else:
        val = (rng.random(300) < 0.8) if dtype == np.bool_ else rng.integers(-2, 5, 300).astype(dtype)
    mask = rng.random(1500) < 0.5
    kw = {} if masked is None else {"mask": cupy.asarray(mask), "complement": masked}
    y, yp = K.spmspv(dev(A), cupy.asarray(idx), cupy.asarray(val), sr, out_dtype=dtype, **kw)
    # brute force: y = u^T A restricted to the frontier rows (mul(u(k), A(k, j)))
    S = A[idx].tocsr()
    u = np.repeat(val.astype(np.float64), np.diff(S.indptr))
    vals = apply_binary(sr.mul, u, S.data.astype(np.float64))
    uk, uv = reduce_groups(S.indices.astype(np.int64), np.asarray(vals, np.float64), sr.add)
    rp = np.zeros(1500, bool)
    rp[uk] = True
    if masked is not None:
        rp &= ~mask if masked else mask
    ry = np.zeros(1500)
    ry[uk] = uv
    np.testing.assert_array_equal(yp.get(), rp)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y.get()[rp].astype(np.float64), cast(ry, dtype)[rp].astype(np.float64),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype,monoid", [
    (np.float64, "plus"), (np.int32, "min"), (np.int64, "max"), (np.bool_, "lor"), (np.float32, "probor")])
def test_segment_reduce(dtype, monoid):
    rng = np.random.default_rng(16)
    lens = rng.integers(0, 70, 500)
    lens[::4] = 0
    lens[3] = 5000
    ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    mon = as_monoid(PROBOR) if monoid == "probor" else as_monoid(getattr(gb.ops, monoid))
    if dtype == np.bool_:
        vals = rng.random(ptr[-1]) < 0.1
    elif monoid == "probor":
        vals = (rng.random(ptr[-1]) * 0.01).astype(dtype)
    else:
        vals = rng.integers(-50, 50, ptr[-1]).astype(dtype)
    out, present = K.segment_reduce(cupy.asarray(ptr), cupy.asarray(vals), mon, out_dtype=dtype)
    seg = np.repeat(np.arange(500), lens)
    uk, uv = reduce_groups(seg, vals.astype(np.float64), mon)
    np.testing.assert_array_equal(present.get(), lens > 0)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.get()[uk].astype(np.float64), cast(uv, dtype).astype(np.float64),
                               rtol=tol, atol=tol)


def test_against_the_reference_kernels():
    ref_mod = pytest.importorskip("gbdist.backends.graph_reference_kernels")
    R = next(getattr(ref_mod, n) for n in dir(ref_mod)
             if n.endswith("GraphKernels") and n != "GraphKernels" and n[0].isupper())()
    A = powerlaw(300, 400, 17, np.float64, long_row=200)
    B = powerlaw(400, 400, 18, np.float64)
    M = powerlaw(300, 400, 19, np.bool_, avg=30)
    for sr in (SR.plus_times, SR.min_plus, SR_PROB):
        for mask, comp in ((None, False), (M, False), (M, True)):
            r = R.spgemm(A, B, sr, mask=mask, complement=comp, out_dtype=np.float64)
            c = K.spgemm(dev(A), dev(B), sr, mask=None if mask is None else dev(mask),
                         complement=comp, out_dtype=np.float64)
            check_csr(c, sps.csr_matrix(r), np.float64, rtol=1e-12)
    x = np.arange(400) % 7 - 2.0
    r, rp = R.spmv(A, x, None, SR.min_plus, out_dtype=np.float64)
    c, cp_ = K.spmv(dev(A), cupy.asarray(x), None, SR.min_plus, out_dtype=np.float64)
    np.testing.assert_array_equal(cp_.get(), rp)
    np.testing.assert_allclose(c.get()[rp], np.asarray(r)[rp])


def test_graph_operations_run_on_the_device():
    """gb.graph on device operands dispatches here and agrees with the reference on the host."""
    from gbdist import graph as gr
    A = powerlaw(400, 400, 20, np.int64, long_row=300)
    Ad = gb.Matrix(A).to_device()
    C = gr.mxm(Ad, Ad, SR.plus_times)
    assert C.on_device and C.dtype == np.int64
    assert C.to_host().isequal(gr.mxm(A, A, SR.plus_times, backend="reference"))
    Mh = gb.Matrix(powerlaw(400, 400, 21, np.bool_, avg=30))
    Md = Mh.to_device()
    for mask_d, mask_h in ((Md.S, Mh.S), (~Md.S, ~Mh.S)):
        Cm = gr.mxm(Ad, Ad, SR.min_plus, mask=mask_d)
        assert Cm.to_host().isequal(gr.mxm(A, A, SR.min_plus, mask=mask_h, backend="reference"))
    rng = np.random.default_rng(22)
    for count in (5, 400):  # a sparse frontier (push) and a full vector (pull)
        idx = np.sort(rng.choice(400, count, replace=False))
        uh = gb.Vector.from_coo(idx, rng.integers(-2, 5, count).astype(np.int64), 400)
        for op in (gr.vxm, lambda u, M, sr, **kw: gr.mxv(M, u, sr, **kw)):
            w = op(uh.to_device(), Ad, SR.min_plus)
            assert w.to_host().isequal(op(uh, gb.Matrix(A), SR.min_plus, backend="reference"))
    r = gr.reduce_rows(Ad, gb.ops.max)
    assert r.to_host().isequal(gr.reduce_rows(A, gb.ops.max, backend="reference"))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_spmv_compensated_sums_match_fsum(dtype):
    """compensated=True: plus_times rows summed with Neumaier's compensation, in every degree
    bin (1 … 4,000 entries a row), come within a couple of roundings of math.fsum of the
    rounded products; the plain sum of the cancelling rows does not."""
    import math
    rng = np.random.default_rng(11)
    degs = [0, 3, 12, 50, 700, 4000]
    rows, cols, vals = [], [], []
    n = 5000
    for i, d in enumerate(degs * 3):
        c = rng.choice(n, d, replace=False)
        big = rng.choice([-1.0, 1.0], d) * 10.0 ** rng.integers(0, 9 if dtype == np.float64 else 4, d)
        v = np.where(np.arange(d) % 2 == 0, big, -big) + rng.random(d)  # pairs that cancel
        rows += [i] * d
        cols += list(c)
        vals += list(v)
    A = sps.csr_matrix((np.asarray(vals, dtype), (rows, cols)), shape=(len(degs) * 3, n))
    A.sort_indices()
    x = np.ones(n, dtype)
    y, yp = K.spmv(dev(A), cupy.asarray(x), None, SR.plus_times, out_dtype=dtype, compensated=True)
    y0, _ = K.spmv(dev(A), cupy.asarray(x), None, SR.plus_times, out_dtype=dtype)
    y, y0, yp = y.get(), y0.get(), yp.get()
    eps = np.finfo(dtype).eps
    worse = 0
    for i in range(A.shape[0]):
        seg = slice(A.indptr[i], A.indptr[i + 1])
        exact = math.fsum((A.data[seg].astype(dtype) * x[A.indices[seg]]).astype(np.float64))
        assert bool(yp[i]) == (A.indptr[i + 1] > A.indptr[i])
        if not yp[i]:
            continue
        scale = float(np.abs(A.data[seg]).max())
        assert abs(float(y[i]) - exact) <= 2 * eps * abs(exact) + 4 * eps * eps * scale * (A.indptr[i + 1] - A.indptr[i]), (i, y[i], exact)
        worse += abs(float(y0[i]) - exact) > abs(float(y[i]) - exact)
    assert worse > 0  # the plain sums lose digits the compensated ones keep


SYM_CASES = [(np.float64, "plus_times"), (np.float64, "min_plus"), (np.int64, "max_times"),
             (np.bool_, "lor_land"), (np.float32, "plus_times")]


@pytest.mark.parametrize("dtype,name", SYM_CASES, ids=[f"{np.dtype(d).name}-{n}" for d, n in SYM_CASES])
@pytest.mark.parametrize("variant", ["plain", "x_present", "mask", "complement"])
def test_spmv_symmetric_reads_one_triangle(dtype, name, variant):
    """spmv_symmetric(triu(A)) equals spmv(A) on a symmetric A (power-law degrees, a long row,
    empty rows, stored zeros on and off the diagonal), with a sparse x and with masks."""
    P = powerlaw(3000, 3000, 21, dtype, long_row=1500, avg=8)
    A = (P + P.T).tocsr() if dtype != np.bool_ else ((P + P.T) != 0).tocsr()
    A = A.astype(dtype)
    A.setdiag(np.where(np.arange(3000) % 3 == 0, 0, 2).astype(dtype))  # stored zeros on the diagonal
    A.sort_indices()
    assert (abs(A - A.T) > 0).nnz == 0
    U = sps.triu(A, format="csr")
    U.sort_indices()
    rng = np.random.default_rng(5)
    x = (rng.integers(-3, 5, 3000)).astype(dtype)
    xp = rng.random(3000) < 0.6 if variant == "x_present" else None
    mask = rng.random(3000) < 0.5 if variant in ("mask", "complement") else None
    comp = variant == "complement"
    sr = SR[name]
    dx = cupy.asarray(x)
    dxp = None if xp is None else cupy.asarray(xp)
    dm = None if mask is None else cupy.asarray(mask)
    y, yp = K.spmv(dev(A), dx, dxp, sr, mask=dm, complement=comp, out_dtype=dtype)
    ys, yps = K.spmv_symmetric(dev(U), dx, dxp, sr, mask=dm, complement=comp, out_dtype=dtype)
    yp, yps = yp.get(), yps.get()
    np.testing.assert_array_equal(yps, yp)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ys.get()[yp].astype(np.float64), y.get()[yp].astype(np.float64), rtol=rtol)
