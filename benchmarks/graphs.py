"""Random graphs for the graph benchmarks (importable by every graph benchmark): power law
(``power_law_graph``), road-like grid (``road_grid``) and R-MAT (``rmat_graph``).

``power_law_graph(n, avg_degree=17, exponent=2.1, seed=0)`` is a Chung-Lu graph: each
vertex gets a weight w_i ∝ (i + i0)^(-1/(exponent-1)), edge endpoints are drawn with
probability ∝ w, self-loops are dropped, the graph is symmetrised and duplicates merged,
so the result is an undirected simple graph (symmetric CSR, sorted indices, no
diagonal) whose degrees follow a power law, with about ``avg_degree`` stored entries
per row. Values are float64 weights in [1, 2) (``weighted=False``: all 1.0).
"""
from __future__ import annotations

import gc
import os
import threading
import time

import numpy as np
import scipy.sparse as sps


def _weights(A, rng, weighted: bool):
    """A symmetric pattern with symmetric random weights in [1, 2) (or all ones)."""
    n = A.shape[0]
    if not weighted:
        A.data[:] = 1.0
        return A
    U = sps.triu(A, k=1).tocoo()
    vals = 1.0 + rng.random(U.nnz)
    return sps.coo_matrix((np.r_[vals, vals], (np.r_[U.row, U.col], np.r_[U.col, U.row])),
                          shape=(n, n)).tocsr()


def power_law_graph(n: int, avg_degree: float = 17.0, exponent: float = 2.1, seed: int = 0,
                    weighted: bool = True, index_dtype=np.int32) -> sps.csr_matrix:
    rng = np.random.default_rng(seed)
    i0 = max(1.0, n / 1000.0)  # caps the largest expected degree (about n / 20)
    w = (np.arange(n) + i0) ** (-1.0 / (exponent - 1.0))
    p = w / w.sum()
    target = int(n * avg_degree)
    rows_all, cols_all = [], []
    have = 0
    draw = int(target * 0.55)
    A = None
    for _ in range(6):
        r = rng.choice(n, size=draw, p=p)
        c = rng.choice(n, size=draw, p=p)
        keep = r != c
        rows_all.append(r[keep])
        cols_all.append(c[keep])
        r = np.concatenate(rows_all)
        c = np.concatenate(cols_all)
        A = sps.coo_matrix((np.ones(2 * r.size), (np.r_[r, c], np.r_[c, r])), shape=(n, n)).tocsr()
        have = A.nnz
        if have >= target:
            break
        draw = max(1, int((target - have) * 0.6))
    A.sum_duplicates()
    A.sort_indices()
    perm = rng.permutation(n)  # hubs spread over the ids, as in real graphs
    A = A[perm][:, perm].tocsr()
    A.sort_indices()
    A = _weights(A, rng, weighted)
    A.eliminate_zeros()
    A.sort_indices()
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    return A


def road_grid(side: int = 1000, remove: float = 0.1, seed: int = 0, weighted: bool = True,
              index_dtype=np.int32) -> sps.csr_matrix:
    """A road-like graph: the side × side grid (4-neighbour lattice) with a share
    ``remove`` of its edges removed at random, undirected (symmetric CSR, sorted, no
    diagonal). High diameter: a BFS from a corner takes ~2·side levels. Values: weights in
    [1, 2) (``weighted=False``: 1.0)."""
    rng = np.random.default_rng(seed)
    idx = np.arange(side * side, dtype=np.int64).reshape(side, side)
    r = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    c = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    keep = rng.random(r.size) >= remove
    r, c = r[keep], c[keep]
    w = 1.0 + rng.random(r.size) if weighted else np.ones(r.size)
    n = side * side
    A = sps.coo_matrix((np.r_[w, w], (np.r_[r, c], np.r_[c, r])), shape=(n, n)).tocsr()
    A.sort_indices()
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    return A


def rmat_graph(scale: int = 20, edge_factor: int = 16, a=0.57, b=0.19, c=0.19, seed: int = 0,
               weighted: bool = True, index_dtype=np.int32) -> sps.csr_matrix:
    """An R-MAT (Graph500 parameters a, b, c = 0.57, 0.19, 0.19) graph of 2^scale
    vertices and edge_factor · 2^scale drawn edges, symmetrised, duplicates and self loops
    removed, vertices permuted (undirected, symmetric CSR, sorted)."""
    rng = np.random.default_rng(seed)
    n = 1 << scale
    m = edge_factor * n
    r = np.zeros(m, dtype=np.int64)
    col = np.zeros(m, dtype=np.int64)
    for bit in range(scale):
        u = rng.random(m)
        down = u >= a + b          # quadrants c, d: the row bit is 1
        right = ((u >= a) & (u < a + b)) | (u >= a + b + c)  # quadrants b, d
        r |= down.astype(np.int64) << bit
        col |= right.astype(np.int64) << bit
    perm = rng.permutation(n)
    r, col = perm[r], perm[col]
    keep = r != col
    r, col = r[keep], col[keep]
    A = sps.coo_matrix((np.ones(2 * r.size), (np.r_[r, col], np.r_[col, r])), shape=(n, n)).tocsr()
    A.sum_duplicates()
    A = _weights(A, rng, weighted)
    A.sort_indices()
    A.indices = A.indices.astype(index_dtype)
    A.indptr = A.indptr.astype(index_dtype)
    return A


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_growth(fn) -> int:
    """Bytes: the largest resident-set growth during one call of ``fn``. Garbage left by
    what ran before (cycles holding the graph's build arrays) is collected first: freed by
    the collector during the call, it would lower the resident set and hide the call's
    own growth (an mxv of the power law read 1.0 MiB so, ~24 MiB after a collection)."""
    gc.collect()
    base = _rss()
    peak, done = [base], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.001)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        fn()
    finally:
        done.set()
        t.join()
    return max(peak[0], _rss()) - base
