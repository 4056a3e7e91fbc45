"""Self-join kNN (each point left out of its own list) against brute force, shared by the
CPU, CUDA and Dask tests (issue 24, item 1).

The reference is a dense float64 distance matrix from SciPy or the brute-force formulas
of metric_cases.py, with the diagonal removed BY INDEX (never by value) and ties ordered
by index, NaN last: the k nearest *other* points, as docs/neighbors.md states. Metrics
whose d(a, a) is not 0 (inner_product, russellrao), not a minimum (inner_product,
kl_divergence) or NaN (cosine of a zero row) are the ones the old value-based rule got
wrong.
"""
from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal

from metric_cases import METRICS

# The issue's example: under inner_product a point is not its own nearest, and the
# nearest other point of row 0 lies at 0 (a tie of rows 1 and 2).
ISSUE_X = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0], [1.0, 1.0]])
ISSUE_K1 = [1, 0, 0, 0]

# kl_divergence over the shared support: every distance here is exactly 0 (disjoint
# supports, or log(1)), so query 2's k + 1 = 2 candidates are rows 0 and 1 and the
# query itself is not among them: the k nearest others are [0].
KL_X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])

# Metrics whose distances are exact on small integers (0/1 for the set metrics): every
# tie is a tie in gbdist too, so indices must match the brute force exactly.
EXACT = ("inner_product", "sqeuclidean", "euclidean", "manhattan", "chebyshev",
         "minkowski-p1", "hamming", "braycurtis", "jaccard", "dice", "russellrao")
# The rest: values checked to rounding, indices where the reference is unambiguous.
INEXACT = ("cosine", "correlation", "canberra", "hellinger", "jensenshannon",
           "jensenshannon_unnormalized", "kl_divergence", "minkowski-p3")


def metric_args(key: str):
    """(gbdist metric name, params, data kind, reference function) of a METRICS key."""
    params, kind, ref, _ = METRICS[key]
    name = "minkowski" if key.startswith("minkowski") else key
    return name, params, kind, ref


def exact_data(seed: int, m: int = 24, k: int = 5, kind: str = "real") -> np.ndarray:
    """Small integers with duplicated rows, scaled copies (2·row: cosine-like ties at
    d(a, a)) and an empty row: many exact ties, the query among them."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-2, 3, size=(m, k)).astype(np.float64)
    if kind == "binary":
        X = (X > 0).astype(np.float64)
    elif kind != "real":
        X = np.abs(X)
    X[rng.random((m, k)) < 0.3] = 0.0
    X[m - 4:m - 1] = X[1]  # three later duplicates of row 1 (more than k = 1, 2)
    X[m - 6] = X[2] * (1 if kind == "binary" else 2)
    X[m - 5] = 0.0
    return X


def inexact_data(seed: int, m: int = 24, k: int = 6, kind: str = "real") -> np.ndarray:
    """Continuous values (distinct distances) with duplicates, scaled copies and, except
    for probability rows, a zero row."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(m, k))
    if kind != "real":
        X = np.abs(X) + 0.05
    X[rng.random((m, k)) < 0.35] = 0.0
    X[:, 0] = np.where((X != 0).any(axis=1), X[:, 0], 0.5)
    X[m - 3:] = X[1]  # duplicates of row 1, after it
    X[m - 5] = X[2] * 2.0
    if kind == "prob":
        X /= X.sum(axis=1, keepdims=True)
    else:
        X[m - 4] = 0.0
    return X


def reference(X: np.ndarray, ref) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(ref(X, X), dtype=np.float64)


def brute_self(R: np.ndarray, k: int):
    """The k nearest others of every row of a square reference matrix: the diagonal is
    removed by index, the rest ordered by (distance, index), NaN last."""
    n = R.shape[0]
    idx = np.empty((n, k), dtype=np.int64)
    for q in range(n):
        others = np.array([j for j in range(n) if j != q], dtype=np.int64)
        order = others[np.lexsort((others, R[q, others]))]  # NaN sorts last in lexsort
        idx[q] = order[:k]
    return np.take_along_axis(R, idx, axis=1), idx


def check_exact(R, got, k: int):
    """Indices equal to the brute force; distances to rounding."""
    d, i = (np.asarray(a) for a in got)
    rd, ri = brute_self(R, k)
    assert i.dtype == np.int64 and i.shape == ri.shape
    assert_array_equal(i, ri)
    assert_allclose(d, rd, rtol=1e-6 if d.dtype == np.float32 else 1e-12, atol=1e-9,
                    equal_nan=True)


def check_close(R, got, k: int, tol: float = 1e-9):
    """Where exact ties cannot be promised: the query is never listed; the distances are
    the k smallest of the others (to ``tol``) and the reference distances of the indices
    returned; an index is checked exactly where its reference distance is unambiguous
    (no other candidate within ``tol``)."""
    d, i = (np.asarray(a) for a in got)
    rd, ri = brute_self(R, k)
    n = R.shape[0]
    assert i.shape == ri.shape and i.dtype == np.int64
    scale = max(1.0, float(np.nanmax(np.abs(R))))
    t = tol * scale
    for q in range(n):
        assert q not in i[q], (q, i[q])
        assert len(set(i[q].tolist())) == k
        assert_allclose(d[q], rd[q], rtol=tol, atol=t, equal_nan=True)
        assert_allclose(R[q, i[q]], d[q], rtol=tol, atol=t, equal_nan=True)
        others = np.array([j for j in range(n) if j != q])
        for p in range(k):
            v = rd[q, p]
            if np.isnan(v):
                continue
            near = others[np.abs(R[q, others] - v) <= t]
            if near.size == 1:
                assert i[q, p] == ri[q, p], (q, p, i[q], ri[q])
