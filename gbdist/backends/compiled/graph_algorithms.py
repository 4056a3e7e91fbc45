"""Whole-algorithm CPU kernels (issue 30), Numba: connected components by union-find, the
algorithm the CUDA set runs (``gbdist/backends/cuda/graph_algorithms.py``) on one thread.

Every vertex keeps a parent no larger than itself; each stored entry (v, u) joins the trees
of v and u, the larger root hooked under the smaller, finds halving the path. The root of
each tree is then the smallest vertex of its component: the label FastSV gives. One pass
over the entries (about one find each) where FastSV's rounds each cost several products,
merges and copies (docs/graph.md, "Whole-algorithm kernels").
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _find(parent, v):
    p = parent[v]
    while p != v:
        g = parent[p]
        parent[v] = g  # path halving
        v = g
        p = parent[v]
    return v


@njit(cache=True, nogil=True)
def _union_find(indptr, indices, n, half, label):
    parent = np.empty(n, dtype=np.int64)
    for v in range(n):
        parent[v] = v
        if indptr[v + 1] > indptr[v] and indices[indptr[v]] < v:
            parent[v] = indices[indptr[v]]  # the smallest neighbour, when smaller than v
    for v in range(n):
        r = _find(parent, v)
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if half and u >= v:
                break  # sorted rows: the rest lie above the diagonal
            ru = _find(parent, u)
            if ru < r:
                parent[r] = ru
                r = ru
            elif ru > r:
                parent[ru] = r
    for v in range(n):
        label[v] = _find(parent, v)


def components(A, *, half: bool) -> np.ndarray:
    """Component labels (int64, the smallest vertex of each component) of the graph of the
    canonical CSR ``A``'s stored entries, directions ignored; ``half``: A is symmetric."""
    n = int(A.shape[0])
    label = np.empty(n, dtype=np.int64)
    if n:
        _union_find(np.asarray(A.indptr), np.asarray(A.indices), n, bool(half), label)
    return label
