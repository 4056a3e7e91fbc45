"""The compiled masked product of a symmetric C⟨A⟩ = A ⊕.⊗ A as its upper half, mirrored
(:func:`gbdist.backends.compiled.graph_masked.half_product`), against brute force.

Brute force (``test_compiled_graph.brute_spgemm``): every output entry folded in float64
from its ⊗ terms in increasing k with the ops' own NumPy evaluation. The half is taken only
where the product is symmetric (B is A, the mask A's pattern, A symmetric in pattern, and
in values when ⊗ reads them, ⊗ commuting); each case says whether it was taken, and the
answer is brute force's either way. Blocks of 1, 7 and 2¹⁹ mask entries (a mirror in the
block's buffer or in the rows already compacted), one and several ranges a block, both
forms, self loops, stored zeros, empty rows.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

pytest.importorskip("numba")

import gbdist as gb  # noqa: E402
from gbdist.backends.compiled import graph as cg  # noqa: E402
from gbdist.backends.compiled import graph_masked as gm  # noqa: E402

from test_compiled_graph import brute_spgemm, check_csr  # noqa: E402  (tests/backends is on the path)

S = gb.semirings
PLUS_MINUS = gb.semiring(gb.ops.minus, gb.ops.plus)  # a ⊗ that does not commute


@pytest.fixture(scope="module")
def K():
    return cg.CompiledGraphKernels()


def symmetric_graph(seed: int, n: int, density: float, dtype=np.float64, itype=np.int32,
                    symmetric_values=True) -> sps.csr_matrix:
    """Undirected random graph with self loops, empty rows, stored zeros; integer values
    (exact in every type), symmetric unless ``symmetric_values`` is False."""
    rng = np.random.default_rng(seed)
    D = np.triu(rng.random((n, n)) < density)
    D[::5] = False
    D = D | D.T
    V = np.triu(rng.integers(-3, 4, (n, n)).astype(np.float64))
    V = V + np.triu(V, 1).T
    if not symmetric_values:
        V[np.tril_indices(n, -1)] += 1.0
    if np.dtype(dtype).kind in "bu":
        V = np.abs(V)
    r, c = np.nonzero(D)
    A = sps.csr_matrix((V[r, c].astype(dtype), (r, c)), shape=(n, n))
    A.sort_indices()
    A.indices, A.indptr = A.indices.astype(itype), A.indptr.astype(itype)
    assert A.nnz == r.size and (A.data == 0).any()
    return A


def run(K, monkeypatch, A, sr, out, *, mask=None, B=None):
    """The product and whether it was computed as a half."""
    taken = []
    real = gm.half_product

    def spy(*args, **kw):
        taken.append(real(*args, **kw))
        return taken[-1]

    monkeypatch.setattr(gm, "half_product", spy)
    monkeypatch.setattr(gm, "HALF_MIN_TERMS", 0)  # the small graphs here have few terms
    C = K.spgemm(A, A if B is None else B, sr, mask=A if mask is None else mask,
                 out_dtype=out)
    return C, taken == [True]


@pytest.mark.parametrize("block", [1, 7, 1 << 19])
@pytest.mark.parametrize("form", ["dot", "gustavson"])
@pytest.mark.parametrize("threads", [1, 0])
def test_half_product_blocks_forms_threads(K, monkeypatch, block, form, threads):
    monkeypatch.setattr(gm, "BLOCK", block)
    monkeypatch.setattr(cg, "MASKED_FORM", form)
    if threads == 0:
        monkeypatch.setattr(cg, "SERIAL_WORK", 0)  # several ranges a block on the pool
    A = symmetric_graph(1, 45, 0.2)
    for sr in (S.plus_pair, S.plus_times, S.min_plus):
        C, half = run(K, monkeypatch, A, sr, np.float64)
        assert half, sr.name
        V, P = brute_spgemm(A, A, sr, A)
        check_csr(C, V, P, np.float64, (np.dtype(np.int32),))


@pytest.mark.parametrize("dtype,itype", [(np.int64, np.int64), (np.float32, np.int32),
                                         (np.bool_, np.int64)], ids=str)
def test_half_product_types(K, monkeypatch, dtype, itype):
    monkeypatch.setattr(gm, "BLOCK", 16)
    A = symmetric_graph(2, 40, 0.25, dtype=dtype, itype=itype)
    sr = S.lor_land if dtype == np.bool_ else S.plus_times
    C, half = run(K, monkeypatch, A, sr, dtype)
    assert half
    V, P = brute_spgemm(A, A, sr, A)
    check_csr(C, V, P, dtype, (np.dtype(itype),))


def test_no_half_where_not_symmetric(K, monkeypatch):
    """Each condition broken once: the full product, still brute force's answer."""
    monkeypatch.setattr(gm, "BLOCK", 16)
    A = symmetric_graph(3, 40, 0.25)
    cases = [
        # values not symmetric, ⊗ reads them
        (symmetric_graph(3, 40, 0.25, symmetric_values=False), S.plus_times, None, None,
         np.float64),
        (A, PLUS_MINUS, None, None, np.float64),         # ⊗ does not commute
        (A, S.plus_times, None, A.copy(), np.float64),   # B is another matrix
        (A, S.plus_times, sps.triu(A).tocsr(), None, np.float64),  # mask not A's pattern
    ]
    for M, sr, mask, B, out in cases:
        C, half = run(K, monkeypatch, M, sr, out, mask=mask, B=B)
        assert not half, sr.name
        V, P = brute_spgemm(M, M if B is None else B, sr, M if mask is None else mask)
        check_csr(C, V, P, out, (np.dtype(np.int32),))
    # values not symmetric, but ⊗ reads none: only the pattern matters
    Av = symmetric_graph(3, 40, 0.25, symmetric_values=False)
    C, half = run(K, monkeypatch, Av, S.plus_pair, np.float64)
    assert half
    V, P = brute_spgemm(Av, Av, S.plus_pair, Av)
    check_csr(C, V, P, np.float64, (np.dtype(np.int32),))


def test_directed_pattern_is_not_halved(K, monkeypatch):
    A = symmetric_graph(4, 40, 0.25).tocoo()
    r, c = A.row, A.col
    i, j = next((a, b) for a, b in zip(r, c) if a < b)
    keep = ~((r == j) & (c == i))  # one edge (i, j) without its reverse
    A = sps.csr_matrix((A.data[keep], (r[keep], c[keep])), shape=A.shape)
    A.sort_indices()
    A.indices, A.indptr = A.indices.astype(np.int32), A.indptr.astype(np.int32)
    C, half = run(K, monkeypatch, A, S.plus_pair, np.float64)
    assert not half
    V, P = brute_spgemm(A, A, S.plus_pair, A)
    check_csr(C, V, P, np.float64, (np.dtype(np.int32),))
