"""Graph semirings with structural (GraphBLAS) semantics, against brute force.

Only stored entries take part; an explicitly stored 0 is an edge of weight 0
(or, for lor/land, a stored *false*); a pair with no stored column in common
holds the ⊕ identity (+inf for min-plus, -inf for max-times).
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_array_equal

import gbdist as gb


def random_graph(rng, n=30, p=0.12, zero_weights=6):
    """Adjacency (CSR) with integer weights 1..4 and some explicit 0-weight edges."""
    mask = rng.random((n, n)) < p
    W = np.where(mask, rng.integers(1, 5, (n, n)).astype(float), 0.0)
    r, c = np.nonzero(mask)
    zero = rng.choice(len(r), size=zero_weights, replace=False)
    W[r[zero], c[zero]] = 0.0
    G = sps.csr_matrix((W[r, c], (r, c)), shape=(n, n))
    assert (G.data == 0).sum() == zero_weights and G.nnz == mask.sum()
    return G, W, mask


def brute_two_hop(W, mask, mul, add, identity):
    n = W.shape[0]
    out = np.full((n, n), identity)
    for i in range(n):
        for j in range(n):
            for k in range(n):
                if mask[i, k] and mask[k, j]:
                    out[i, j] = add(out[i, j], mul(W[i, k], W[k, j]))
    return out


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_min_plus_two_hop(fmt):
    rng = np.random.default_rng(0)
    G, W, mask = random_graph(rng)
    D = gb.mxm(G.asformat(fmt), G.asformat(fmt), gb.semirings.min_plus, backend="cpu")
    R = brute_two_hop(W, mask, np.add, min, np.inf)
    assert np.isinf(R).any() and (R == 0).any()  # both absent pairs and zero-weight paths
    assert_array_equal(D, R)


def test_explicit_zero_weight_edge_is_an_edge():
    # 0 -> 1 (weight 0) -> 2 (weight 5); 0 -> 3 (weight 1) -> 2 (weight 7)
    rows, cols, w = [0, 1, 0, 3], [1, 2, 3, 2], [0.0, 5.0, 1.0, 7.0]
    G = sps.csr_matrix((w, (rows, cols)), shape=(4, 4))
    assert G.nnz == 4
    D = gb.mxm(G, G, gb.semirings.min_plus)
    assert D[0, 2] == 5.0  # through the 0-weight edge
    assert D[1, 0] == np.inf  # no two-hop path
    G2 = G.copy()
    G2.eliminate_zeros()  # without the stored 0 the path is gone
    assert gb.mxm(G2, G2, gb.semirings.min_plus)[0, 2] == 8.0


def test_min_plus_shortest_paths_by_repeated_squaring():
    rng = np.random.default_rng(1)
    G, W, mask = random_graph(rng, n=25, p=0.1)
    n = W.shape[0]
    # D_1: the edges plus a stored 0 on the diagonal (sparse `+` would drop stored zeros)
    r, c = np.nonzero(mask & ~np.eye(n, dtype=bool))
    d = np.arange(n)
    current = sps.coo_matrix((np.concatenate([W[r, c], np.zeros(n)]),
                              (np.concatenate([r, d]), np.concatenate([c, d]))),
                             shape=(n, n)).tocsr()
    assert current.nnz == len(r) + n
    for _ in range(5):  # paths of up to 32 edges
        dense = gb.mxm(current, current, gb.semirings.min_plus)
        r, c = np.nonzero(np.isfinite(dense))
        current = sps.csr_matrix((dense[r, c], (r, c)), shape=(n, n))
    # Floyd–Warshall over the stored edges
    F = np.where(mask, W, np.inf)
    np.fill_diagonal(F, 0.0)
    assert (F[np.isfinite(F) & ~np.eye(n, dtype=bool)] == 0).any()
    for k in range(n):
        F = np.minimum(F, F[:, k:k + 1] + F[k:k + 1, :])
    assert_array_equal(dense, F)


def test_min_plus_mxv_relaxation():
    rng = np.random.default_rng(2)
    G, W, mask = random_graph(rng, n=20)
    x = rng.integers(0, 6, 20).astype(float)
    x[3] = np.inf  # unreached: allowed explicitly (non-finite input is refused by default)
    with pytest.raises(gb.InputError, match="contains infinity"):
        gb.mxv(G, x, gb.semirings.min_plus)
    y = gb.mxv(G, x, gb.semirings.min_plus, ensure_all_finite=False)
    R = np.array([min([W[i, k] + x[k] for k in range(20) if mask[i, k]], default=np.inf)
                  for i in range(20)])
    assert_array_equal(y, R)


def test_max_times_two_hop():
    rng = np.random.default_rng(3)
    G, W, mask = random_graph(rng)
    D = gb.mxm(G, G, gb.semirings.max_times)
    R = brute_two_hop(W, mask, np.multiply, max, -np.inf)
    assert np.isneginf(R).any() and (R == 0).any()
    assert_array_equal(D, R)


def test_lor_land_reachability():
    rng = np.random.default_rng(4)
    G, W, mask = random_graph(rng)
    D = gb.mxm(G, G, gb.semirings.lor_land)
    # a stored 0 is a stored *false*: it takes part, and land(0, ·) = 0
    true = W != 0
    R = brute_two_hop(true.astype(float), mask, lambda a, b: float(a and b),
                      lambda a, b: float(a or b), 0.0)
    assert_array_equal(D, R)
    assert_array_equal(D, ((true.astype(int) @ true.astype(int)) > 0).astype(float))


def test_pair_semirings_count_and_detect_common_neighbours():
    rng = np.random.default_rng(5)
    G, W, mask = random_graph(rng)
    M = mask.astype(int)
    assert_array_equal(gb.mxm(G, G.T, gb.semirings.plus_pair), M @ M.T)
    assert_array_equal(gb.mxm(G, G.T, gb.semirings.any_pair), ((M @ M.T) > 0).astype(float))


def test_dense_adjacency_zeros_are_absent():
    """A dense array has no 'stored' zeros: 0 means no edge."""
    W = np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [1.0, 0.0, 0.0]])
    D = gb.mxm(W, W, gb.semirings.min_plus)
    assert D[0, 2] == 5.0 and D[0, 0] == np.inf and D[2, 1] == 3.0
