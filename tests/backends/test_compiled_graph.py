"""The compiled CPU graph kernels (Numba) against brute force and the NumPy reference.

Brute force: dense values plus a presence mask, every output entry folded in float64 from
its ⊗ terms in increasing k with the ops' own NumPy evaluation
(``gbdist.algebra.evaluate.apply_binary``), then cast to the output dtype. Random graphs
with empty rows and stored zeros (edges of weight 0), every dtype, int32 and int64
indices, masks and complements, built-in semirings and a user monoid (probabilistic or).
Every strategy is forced once (masked dot form and filtered Gustavson, dense and hash
accumulators, SpMSpV's column split). Kernels are compiled once per (semiring, types)
and shared by the tests (and cached on disk).
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

pytest.importorskip("numba")

import gbdist as gb  # noqa: E402
from gbdist.algebra.evaluate import apply_binary  # noqa: E402
from gbdist.backends.compiled import graph as cg  # noqa: E402

S = gb.semirings
POR = gb.semiring(gb.ops.times, gb.op("por", lambda x, y: x + y - x * y))
DTYPES = [np.bool_, np.int32, np.int64, np.float32, np.float64]
# each value type once with each index width, without the full cross product (compile time)
TYPED = [(np.bool_, np.int32), (np.int32, np.int64), (np.int64, np.int32),
         (np.float32, np.int64), (np.float64, np.int32), (np.float64, np.int64)]


@pytest.fixture(scope="module")
def K():
    return cg.CompiledGraphKernels()


def graph(seed: int, m: int, n: int, density=0.15, dtype=np.float64, itype=np.int32,
          values="int") -> sps.csr_matrix:
    """Random CSR, sorted, no duplicates, every third row empty, ~10% stored zeros."""
    rng = np.random.default_rng(seed)
    D = rng.random((m, n)) < density
    D[::3] = False
    r, c = np.nonzero(D)
    if values == "prob":
        v = rng.uniform(0.0, 1.0, r.size)
    else:
        v = rng.integers(1, 5, r.size).astype(np.float64) * np.where(rng.random(r.size) < 0.3,
                                                                    -1, 1)
    v[rng.random(r.size) < 0.1] = 0.0
    if np.dtype(dtype).kind in "bu":
        v = np.abs(v)
    A = sps.csr_matrix((v.astype(dtype), (r, c)), shape=(m, n))
    A.sort_indices()
    A.indices, A.indptr = A.indices.astype(itype), A.indptr.astype(itype)
    assert A.nnz == r.size  # stored zeros kept
    return A


def dense(A):
    A = sps.csr_matrix(A)
    V = np.zeros(A.shape)
    P = np.zeros(A.shape, dtype=bool)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    V[rows, A.indices] = A.data.astype(np.float64)
    P[rows, A.indices] = True
    return V, P


def fold(monoid, terms: np.ndarray) -> float:
    acc = terms[:1]
    for t in terms[1:]:
        acc = apply_binary(monoid.op, acc, np.array([t]))
    return float(acc[0])


def cast(values, dtype):
    values = np.asarray(values, dtype=np.float64)
    return values != 0 if np.dtype(dtype).kind == "b" else values.astype(dtype)


def brute_spgemm(A, B, sr, mask=None, complement=False):
    (Va, Pa), (Vb, Pb) = dense(A), dense(B)
    m, n = Va.shape[0], Vb.shape[1]
    V, P = np.zeros((m, n)), np.zeros((m, n), dtype=bool)
    allow = np.ones((m, n), dtype=bool)
    if mask is not None:
        Pm = dense(mask)[1]
        allow = ~Pm if complement else Pm
    for i in range(m):
        for j in range(n):
            ks = np.flatnonzero(Pa[i] & Pb[:, j])
            if ks.size and allow[i, j]:
                P[i, j] = True
                V[i, j] = fold(sr.add, apply_binary(sr.mul, Va[i, ks], Vb[ks, j]))
    return V, P


def check_csr(C, V, P, dtype, itypes):
    assert sps.isspmatrix_csr(C) or isinstance(C, sps.csr_array)
    assert C.dtype == np.dtype(dtype)
    Vc, Pc = dense(C)
    assert C.nnz == P.sum()  # no duplicates, nothing dropped
    np.testing.assert_array_equal(Pc, P)
    for i in range(C.shape[0]):  # sorted column indices
        seg = C.indices[C.indptr[i]:C.indptr[i + 1]]
        assert np.all(np.diff(seg) > 0)
    want = cast(V[P], dtype)
    got = C.data if np.dtype(dtype).kind != "b" else C.data.astype(bool)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(got, want)
    assert C.indices.dtype in itypes


MASKS = [None, "mask", "complement"]


@pytest.mark.parametrize("dtype,itype", TYPED, ids=str)
@pytest.mark.parametrize("masking", MASKS)
def test_spgemm_plus_times_every_type(K, dtype, itype, masking):
    A = graph(1, 13, 11, dtype=dtype, itype=itype)
    B = graph(2, 11, 17, dtype=dtype, itype=itype)
    M = graph(3, 13, 17, density=0.4, itype=itype) if masking else None
    out = np.int64 if np.dtype(dtype).kind in "bi" else dtype
    C = K.spgemm(A, B, S.plus_times, mask=M, complement=masking == "complement", out_dtype=out)
    V, P = brute_spgemm(A, B, S.plus_times, M, masking == "complement")
    check_csr(C, V, P, out, (np.dtype(itype),))


SEMIRINGS = [S.min_plus, S.plus_pair, S.any_pair, S.lor_land, S.max_times, POR]


@pytest.mark.parametrize("sr,masking", [(sr, mk) for sr in SEMIRINGS for mk in MASKS
                                         if mk != "mask" or sr in (S.min_plus, POR)],
                         ids=lambda v: getattr(v, "name", None) or str(v))
def test_spgemm_semirings(K, sr, masking):
    """Every semiring without a mask and with a complemented one (the Gustavson kernels);
    the masked kernels for min_plus and the user monoid here, for others below."""
    kind = "prob" if sr is POR else "int"
    A = graph(4, 16, 12, values=kind, itype=np.int64)
    B = graph(5, 12, 14, values=kind, itype=np.int64)
    M = graph(6, 16, 14, density=0.35) if masking else None
    out = np.bool_ if sr is S.lor_land else np.float64
    C = K.spgemm(A, B, sr, mask=M, complement=masking == "complement", out_dtype=out)
    V, P = brute_spgemm(A, B, sr, M, masking == "complement")
    check_csr(C, V, P, out, (np.dtype(np.int64),))


@pytest.mark.parametrize("form", ["dot", "gustavson"])
@pytest.mark.parametrize("sr", [S.plus_times, S.min_plus, POR], ids=lambda s: s.name or "por")
def test_masked_forms_agree_with_brute_force(K, monkeypatch, form, sr):
    monkeypatch.setattr(cg, "MASKED_FORM", form)
    monkeypatch.setattr(cg, "SERIAL_WORK", 0)  # several row ranges on the thread pool
    A = graph(7, 40, 30, values="prob" if sr is POR else "int")
    B = graph(8, 30, 35, values="prob" if sr is POR else "int")
    M = graph(9, 40, 35, density=0.3)
    C = K.spgemm(A, B, sr, mask=M, out_dtype=np.float64)
    V, P = brute_spgemm(A, B, sr, M)
    check_csr(C, V, P, np.float64, (np.dtype(np.int32),))


@pytest.mark.parametrize("block", [1, 7, 64])
@pytest.mark.parametrize("form", ["dot", "gustavson"])
@pytest.mark.parametrize("threads", [1, 0])
def test_masked_product_in_blocks_of_rows(K, monkeypatch, block, form, threads):
    """The masked product runs in blocks of at most ``BLOCK`` mask entries (issue 28's
    first-call memory): blocks smaller than a row (a row then a block alone), blocks of a
    few rows, empty mask rows between blocks, several ranges a block (``SERIAL_WORK`` 0):
    the same entries as brute force, with the result's arrays at their exact length."""
    from gbdist.backends.compiled import graph_masked as gm
    monkeypatch.setattr(gm, "BLOCK", block)
    monkeypatch.setattr(cg, "MASKED_FORM", form)
    if threads == 0:
        monkeypatch.setattr(cg, "SERIAL_WORK", 0)
    A = graph(17, 40, 30, values="int")
    B = graph(18, 30, 35, values="int")
    M = graph(19, 40, 35, density=0.3).tolil()
    M[5:12] = 0  # empty mask rows
    M = sps.csr_matrix(M)
    M.eliminate_zeros()
    M.sort_indices()
    C = K.spgemm(A, B, S.plus_times, mask=M, out_dtype=np.float64)
    V, P = brute_spgemm(A, B, S.plus_times, M)
    check_csr(C, V, P, np.float64, (np.dtype(np.int32),))
    assert C.indices.size == C.data.size == C.indptr[-1] == P.sum() > 0
    assert list(gm.blocks(M.indptr, M.shape[0], block))[-1][1] == M.shape[0]


@pytest.mark.parametrize("block", [3, 64])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_masked_product_empty_blocks_and_index_type(K, monkeypatch, block, itype):
    """Blocks whose rows have no entry in the product (A's first 20 rows empty: the
    rows' pointers written without compaction) before blocks that have some; the row
    pointers come out of ``masked_product`` in the result's index type (no int64 copy
    of n + 1 pointers beside the result's)."""
    from gbdist.backends.compiled import graph_masked as gm
    monkeypatch.setattr(gm, "BLOCK", block)
    monkeypatch.setattr(cg, "MASKED_FORM", "gustavson")
    A = graph(21, 40, 30, values="int", itype=itype).tolil()
    A[:20] = 0
    A = sps.csr_matrix(A)
    A.eliminate_zeros()
    A.indices, A.indptr = A.indices.astype(itype), A.indptr.astype(itype)
    B = graph(22, 30, 35, values="int", itype=itype)
    M = graph(23, 40, 35, density=0.3, itype=itype)
    seen, real = [], gm.masked_product

    def spy(*args):  # the arrays masked_product returns, and the index type it was given
        seen.append((real(*args), args[8]))
        return seen[-1][0]
    monkeypatch.setattr(gm, "masked_product", spy)
    C = K.spgemm(A, B, S.plus_times, mask=M, out_dtype=np.float64)
    V, P = brute_spgemm(A, B, S.plus_times, M)
    check_csr(C, V, P, np.float64, (np.dtype(itype),))
    (cp, ci, _), want = seen[0]
    assert cp.dtype == ci.dtype == want and C.indptr[20] == 0 < C.nnz


def test_triangle_count_masked_product(K):
    """C<L> = L plus_pair L.T counts each triangle once per edge: the sum is the number
    of triangles (dense brute force: trace(A^3) / 6)."""
    rng = np.random.default_rng(10)
    D = np.triu(rng.random((60, 60)) < 0.2, 1)
    A = sps.csr_matrix((D | D.T).astype(np.float64))
    L = sps.tril(A, -1).tocsr()
    L.sort_indices()
    LT = L.T.tocsr()
    LT.sort_indices()
    Ad = A.toarray()
    tri = int(round(np.trace(Ad @ Ad @ Ad) / 6))
    for form in ("dot", "gustavson"):
        cg.MASKED_FORM = form
        try:
            C = K.spgemm(L, LT, S.plus_pair, mask=L, out_dtype=np.int64)
        finally:
            cg.MASKED_FORM = "auto"
        assert int(C.sum()) == tri and tri > 0


@pytest.mark.parametrize("sr", [S.plus_times, S.min_plus], ids=lambda s: s.name)
def test_spgemm_hash_accumulator(K, monkeypatch, sr):
    monkeypatch.setattr(cg, "HASH_MIN_N", 0)
    monkeypatch.setattr(cg, "HASH_RATIO", 1e-9)  # every row's terms under n / ratio
    monkeypatch.setattr(cg, "SMALL_ROW", 0)  # no row by the small-row form
    monkeypatch.setattr(cg, "SERIAL_WORK", 0)
    A = graph(11, 30, 25)
    B = graph(12, 25, 40)
    C = K.spgemm(A, B, sr, out_dtype=np.float64)
    V, P = brute_spgemm(A, B, sr)
    check_csr(C, V, P, np.float64, (np.dtype(np.int32),))


FORMS = [(10 ** 9, False), (0, False), (0, True), (6, False), (6, True)]  # (SMALL_ROW, hash)


@pytest.mark.parametrize("masking", [None, "complement"])
@pytest.mark.parametrize("density", [0.12, 0.5])
@pytest.mark.parametrize("sr", [S.plus_times, S.min_plus, POR], ids=lambda s: s.name or "por")
def test_spgemm_small_row_form_is_exact(K, monkeypatch, sr, density, masking):
    """Rows by the small-row form (ESC), the hash and the dense accumulators, and mixes at
    a threshold of 6 terms, give the same columns and the same bits (the same terms
    folded in the same order), and brute force's values; float values, so any change of
    the fold's order would show. Density 0.5: rows of over 32 columns (NumPy's sort)."""
    monkeypatch.setattr(cg, "SERIAL_WORK", 0)
    A = graph(21, 45, 40, density=density, values="prob")
    B = graph(22, 40, 50, density=density, values="prob")
    M = graph(23, 45, 50, density=0.3) if masking else None
    V, P = brute_spgemm(A, B, sr, M, masking == "complement")
    got = []
    for small, hashed in FORMS:
        if hashed and masking:
            continue  # the hash accumulator has no mask
        monkeypatch.setattr(cg, "SMALL_ROW", small)
        monkeypatch.setattr(cg, "HASH_MIN_N", 0 if hashed else 10 ** 9)
        monkeypatch.setattr(cg, "HASH_RATIO", 1e-9)  # every row under n / ratio
        C = K.spgemm(A, B, sr, mask=M, complement=masking == "complement", out_dtype=np.float64)
        check_csr(C, V, P, np.float64, (np.dtype(np.int32),))
        got.append(C)
    for C in got[1:]:
        assert np.array_equal(C.indptr, got[0].indptr)
        assert np.array_equal(C.indices, got[0].indices)
        assert np.array_equal(C.data, got[0].data)  # bit for bit


def _one_per_row(rows, cols, seed):
    """A CSR with at most one entry per row, at a random column (every 4th row empty)."""
    rng = np.random.default_rng(seed)
    r = np.arange(rows)[np.arange(rows) % 4 != 1]
    A = sps.csr_matrix((rng.uniform(0.5, 2.0, r.size), (r, rng.integers(0, cols, r.size))),
                       shape=(rows, cols))
    A.sort_indices()
    A.indices, A.indptr = A.indices.astype(np.int32), A.indptr.astype(np.int32)
    return A


@pytest.mark.parametrize("sr", [S.plus_times, POR], ids=lambda s: s.name or "por")
def test_spgemm_exact_row_sizes(K, sr):
    """No symbolic pass when no two terms of a row can meet: A with at most one entry per
    row (a row selection), B with at most one per column (a diagonal, a permutation);
    and a B as short as its columns with one column twice (the symbolic pass runs)."""
    G = graph(31, 30, 30, density=0.3, values="prob")
    D = sps.diags(np.linspace(0.5, 2.0, 30)).tocsr()
    perm = sps.csr_matrix((np.linspace(1.0, 3.0, 30), np.random.default_rng(3).permutation(30),
                           np.arange(31)), shape=(30, 30))  # one entry per row and column
    twice = perm.copy()
    twice.indices[1] = twice.indices[0]  # column repeated: not column-distinct
    twice.sort_indices()
    for A, B in ((_one_per_row(25, 30, 33), G), (G, D), (D, G), (G, perm), (G, twice)):
        A, B = sps.csr_matrix(A), sps.csr_matrix(B)
        for M in (A, B):
            M.sort_indices()
            M.indices, M.indptr = M.indices.astype(np.int32), M.indptr.astype(np.int32)
        C = K.spgemm(A, B, sr, out_dtype=np.float64)
        V, P = brute_spgemm(A, B, sr)
        check_csr(C, V, P, np.float64, (np.dtype(np.int32),))


def test_spgemm_plus_times_matches_scipy_on_positive_values(K):
    """Positive values: SciPy's product drops nothing, so it is an independent reference."""
    rng = np.random.default_rng(13)
    A = sps.random(300, 200, 0.03, format="csr", random_state=rng, data_rvs=lambda k: 1 + rng.random(k))
    B = sps.random(200, 250, 0.03, format="csr", random_state=rng, data_rvs=lambda k: 1 + rng.random(k))
    A.sort_indices()
    B.sort_indices()
    C = K.spgemm(A, B, S.plus_times, out_dtype=np.float64)
    D = (A @ B).tocsr()
    D.sort_indices()
    np.testing.assert_array_equal(C.indptr, D.indptr)
    np.testing.assert_array_equal(C.indices, D.indices)
    np.testing.assert_allclose(C.data, D.data, rtol=1e-12)


def test_spgemm_empty_and_nonconforming(K):
    A = sps.csr_matrix((5, 4))
    B = graph(14, 4, 6)
    C = K.spgemm(A, B, S.plus_times, out_dtype=np.float64)
    assert C.shape == (5, 6) and C.nnz == 0
    with pytest.raises(gb.InputError):
        K.spgemm(B, B, S.plus_times, out_dtype=np.float64)


# -- SpMV (pull) and SpMSpV (push) ----------------------------------------------------

def brute_mv(A, x, present, sr, rowmask=None, push=False):
    V, P = dense(A)
    if push:
        V, P = V.T, P.T
    m = V.shape[0]
    y, yp = np.zeros(m), np.zeros(m, dtype=bool)
    for i in range(m):
        ks = np.flatnonzero(P[i] & present)
        if ks.size and (rowmask is None or rowmask[i]):
            terms = apply_binary(sr.mul, x[ks], V[i, ks]) if push else \
                apply_binary(sr.mul, V[i, ks], x[ks])
            y[i], yp[i] = fold(sr.add, terms), True
    return y, yp


def check_vec(y, yp, want, wantp, dtype):
    assert y.dtype == np.dtype(dtype) and yp.dtype == np.bool_
    np.testing.assert_array_equal(yp, wantp)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(y[yp], cast(want[wantp], dtype), rtol=1e-6)
    else:
        np.testing.assert_array_equal(y[yp], cast(want[wantp], dtype))


@pytest.mark.parametrize("scipy_path", [True, False])
def test_spmv_plus_times_scipy_path_and_kernel_agree(K, monkeypatch, scipy_path):
    """plus_times float64 without mask or presence: SciPy's A @ x or the compiled kernel,
    the same values and presence (stored zeros and empty rows included)."""
    monkeypatch.setattr(cg, "SCIPY_SPMV", 1 << 40 if scipy_path else 0)
    A = graph(19, 40, 30)
    x = np.random.default_rng(19).random(30)
    y, yp = K.spmv(A, x, None, S.plus_times, out_dtype=np.float64)
    check_vec(y, yp, *brute_mv(A, x, np.ones(30, bool), S.plus_times), np.float64)
    assert not yp.all() and np.all(y[~yp] == 0.0)


@pytest.mark.parametrize("dtype,itype", TYPED, ids=str)
def test_spmv_every_type(K, dtype, itype):
    A = graph(20, 30, 25, dtype=dtype, itype=itype)
    rng = np.random.default_rng(21)
    x = cast(rng.integers(0, 4, 25), dtype)
    present = rng.random(25) < 0.7
    out = np.int64 if np.dtype(dtype).kind in "bi" else dtype
    for sr in (S.plus_times, S.min_plus):
        y, yp = K.spmv(A, x, present, sr, out_dtype=out)
        check_vec(y, yp, *brute_mv(A, x.astype(np.float64), present, sr), out)


@pytest.mark.parametrize("sr", [S.plus_times, *SEMIRINGS], ids=lambda s: s.name or "por")
@pytest.mark.parametrize("masking", MASKS)
def test_spmv_semirings_and_masks(K, monkeypatch, sr, masking):
    monkeypatch.setattr(cg, "SERIAL_WORK", 0)
    monkeypatch.setattr(cg, "SPMV_SERIAL", 0)
    A = graph(22, 200, 150, density=0.05, values="prob" if sr is POR else "int")
    rng = np.random.default_rng(23)
    x = rng.random(150) if sr is POR else rng.integers(0, 3, 150).astype(np.float64)
    mask = rng.random(200) < 0.5 if masking else None
    allow = None if mask is None else (~mask if masking == "complement" else mask)
    out = np.bool_ if sr is S.lor_land else np.float64
    y, yp = K.spmv(A, x, None, sr, mask=mask, complement=masking == "complement",
                   out_dtype=out)
    check_vec(y, yp, *brute_mv(A, x, np.ones(150, bool), sr, allow), out)
    e = cg._identity(sr.add, out)
    assert np.all(y[~yp] == e)  # the identity where nothing is present


@pytest.mark.parametrize("sr", [S.plus_times, *SEMIRINGS], ids=lambda s: s.name or "por")
@pytest.mark.parametrize("masking", MASKS)
@pytest.mark.parametrize("parallel", [False, True])
def test_spmspv(K, monkeypatch, sr, masking, parallel):
    monkeypatch.setattr(cg, "SPMSPV_PARALLEL_WORK", 0 if parallel else 10 ** 12)
    A = graph(24, 120, 140, density=0.06, values="prob" if sr is POR else "int")
    rng = np.random.default_rng(25)
    u_idx = np.flatnonzero(rng.random(120) < 0.4)
    u_val = rng.random(u_idx.size) if sr is POR else \
        rng.integers(0, 3, u_idx.size).astype(np.float64)
    mask = rng.random(140) < 0.5 if masking else None
    allow = None if mask is None else (~mask if masking == "complement" else mask)
    out = np.bool_ if sr is S.lor_land else np.float64
    y, yp = K.spmspv(A, u_idx, u_val, sr, mask=mask, complement=masking == "complement",
                     out_dtype=out)
    x = np.zeros(120)
    x[u_idx] = u_val
    present = np.zeros(120, dtype=bool)
    present[u_idx] = True
    check_vec(y, yp, *brute_mv(A, x, present, sr, allow, push=True), out)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.float32])
def test_spmspv_types(K, dtype):
    A = graph(26, 50, 40, dtype=dtype, itype=np.int64)
    u_idx = np.arange(0, 50, 3, dtype=np.int64)
    u_val = cast(np.arange(u_idx.size) % 3, dtype)
    out = np.int64 if np.dtype(dtype).kind in "bi" else dtype
    y, yp = K.spmspv(A, u_idx, u_val, S.plus_times, out_dtype=out)
    x = np.zeros(50)
    x[u_idx] = u_val
    present = np.zeros(50, dtype=bool)
    present[u_idx] = True
    check_vec(y, yp, *brute_mv(A, x, present, S.plus_times, push=True), out)


# -- segmented reduction --------------------------------------------------------------

MONOIDS = [gb.ops.plus, gb.ops.times, gb.ops.min, gb.ops.max, gb.ops.lor, gb.ops.any, POR.add]


@pytest.mark.parametrize("monoid", MONOIDS, ids=lambda m: m.name)
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
def test_segment_reduce(K, monkeypatch, monoid, dtype):
    from gbdist.algebra.ops import as_monoid
    monkeypatch.setattr(cg, "SERIAL_WORK", 0)
    mon = as_monoid(monoid) if not hasattr(monoid, "identity") else monoid
    rng = np.random.default_rng(27)
    sizes = rng.integers(0, 5, 60)
    sizes[::4] = 0  # empty segments
    indptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int32)
    vals = rng.random(indptr[-1]) if mon is POR.add else rng.integers(-3, 4, indptr[-1])
    vals = vals.astype(dtype)
    out, pres = K.segment_reduce(indptr, vals, mon, out_dtype=dtype)
    np.testing.assert_array_equal(pres, sizes > 0)
    want = np.array([fold(mon, vals[a:b].astype(np.float64)) if b > a else 0.0
                     for a, b in zip(indptr[:-1], indptr[1:])])
    np.testing.assert_allclose(out[pres], cast(want[pres], dtype), rtol=1e-6)
    assert np.all(out[~pres] == cg._identity(mon, dtype))


def test_identity_where_absent_in_narrow_integer_types(K):
    """Accumulated in int64, written as int32: absent entries hold int32's identity."""
    A = sps.csr_matrix(np.array([[1, 0], [0, 0]], dtype=np.int32))
    y, yp = K.spmv(A, np.array([3, 4], dtype=np.int32), None, S.min_plus, out_dtype=np.int32)
    assert yp.tolist() == [True, False] and y.tolist() == [4, np.iinfo(np.int32).max]
    out, pres = K.segment_reduce(np.array([0, 0, 1]), np.array([5], dtype=np.int32),
                                 S.max_times.add, out_dtype=np.int32)
    assert pres.tolist() == [False, True] and out.tolist() == [np.iinfo(np.int32).min, 5]


def test_integer_accumulation_is_exact(K):
    """int64 values near 2^53: float64 accumulation would round, int64 does not."""
    big = 2 ** 53 + 1
    A = sps.csr_matrix(np.array([[1, 1, 1]], dtype=np.int64))
    B = sps.csr_matrix(np.array([[big], [1], [1]], dtype=np.int64))
    C = K.spgemm(A, B, S.plus_times, out_dtype=np.int64)
    assert C.data.tolist() == [big + 2]
    y, _ = K.spmv(A, np.array([big, 1, 1], dtype=np.int64), None, S.plus_times,
                  out_dtype=np.int64)
    assert y.tolist() == [big + 2]


# -- the NumPy reference (branch `graph`), when present ------------------------------

def _reference():
    try:
        from gbdist.backends.graph_reference_kernels import ReferenceGraphKernels
    except ImportError:
        return None
    return ReferenceGraphKernels()


@pytest.mark.parametrize("sr", [S.plus_times, S.min_plus, S.plus_pair, POR],
                         ids=lambda s: s.name or "por")
def test_against_reference(K, sr):
    R = _reference()
    if R is None:
        pytest.skip("gbdist.backends.graph_reference is not merged yet")
    A = graph(30, 25, 20, values="prob" if sr is POR else "int")
    B = graph(31, 20, 22, values="prob" if sr is POR else "int")
    M = graph(32, 25, 22, density=0.4)
    for mask, comp in ((None, False), (M, False), (M, True)):
        C = K.spgemm(A, B, sr, mask=mask, complement=comp, out_dtype=np.float64)
        D = R.spgemm(A, B, sr, mask=mask, complement=comp, out_dtype=np.float64)
        np.testing.assert_array_equal(dense(C)[1], dense(D)[1])
        np.testing.assert_allclose(dense(C)[0], dense(D)[0], rtol=1e-12)
    x = np.linspace(0, 1, 20)
    present = np.arange(20) % 3 != 0
    for got, want in zip(K.spmv(A, x, present, sr, out_dtype=np.float64),
                         R.spmv(A, x, present, sr, out_dtype=np.float64)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    u_idx = np.arange(0, 25, 2)
    u_val = np.linspace(0.1, 1, u_idx.size)
    y, yp = K.spmspv(A, u_idx, u_val, sr, out_dtype=np.float64)
    y2, yp2 = R.spmspv(A, u_idx, u_val, sr, out_dtype=np.float64)
    np.testing.assert_array_equal(yp, yp2)
    np.testing.assert_allclose(y[yp], y2[yp2], rtol=1e-12)
