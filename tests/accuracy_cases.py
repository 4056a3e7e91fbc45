"""Shared cases of the accuracy tests (CPU: tests/test_accuracy.py; CUDA:
tests/gpu/test_accuracy_gpu.py) and of benchmarks/run.py distances --accuracy: float64
references for every named metric, and the row scale errors are measured against."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps
from scipy.spatial.distance import cdist

SCIPY_NAME = {"euclidean": "euclidean", "sqeuclidean": "sqeuclidean", "manhattan": "cityblock",
              "chebyshev": "chebyshev", "minkowski": "minkowski", "canberra": "canberra",
              "braycurtis": "braycurtis", "cosine": "cosine", "correlation": "correlation",
              "hamming": "hamming"}
PATTERN = ("jaccard", "dice", "russellrao", "yule", "rogerstanimoto",
           "sokalsneath")  # SciPy on X != 0
BOUND = 1e-6  # |got − ref| <= BOUND · row scale


# the column-aware metrics of metrics.gbd with their default w = 1: the unweighted metric
UNWEIGHTED = {"weighted_minkowski": "euclidean", "weighted_euclidean": "euclidean",
              "weighted_sqeuclidean": "sqeuclidean", "weighted_cityblock": "manhattan",
              "weighted_chebyshev": "chebyshev", "weighted_braycurtis": "braycurtis",
              "weighted_cosine": "cosine", "weighted_dice": "dice",
              "weighted_jaccard": "jaccard", "weighted_russellrao": "russellrao",
              "weighted_matching": "matching", "weighted_yule": "yule",
              "weighted_rogerstanimoto": "rogerstanimoto",
              "weighted_sokalsneath": "sokalsneath", "gower_mixed": "gower",
              "weighted_correlation": "correlation", "weighted_canberra": "canberra",
              "weighted_hamming": "hamming"}


def _column_defaults(X, Y):
    """The rows seuclidean's and gower's column defaults are taken over: X alone for a
    self-join (the same rows), else both (gbdist/runtime/columns.py)."""
    S = X if X.shape == Y.shape and np.array_equal(X, Y) else np.vstack([X, Y])
    V, r = np.var(S, axis=0, ddof=1), S.max(0) - S.min(0)
    return np.where(V > 0, V, 1.0), np.where(r > 0, r, 1.0)


def reference(metric: str, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The float64 answer (SciPy where it has the metric, else brute force)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    metric = UNWEIGHTED.get(metric, metric)
    if metric == "seuclidean":
        return cdist(X, Y, "seuclidean", V=_column_defaults(X, Y)[0])
    if metric == "gower":
        return (np.abs(X[:, None, :] - Y[None, :, :]) / _column_defaults(X, Y)[1]).mean(-1)
    if metric in ("mahalanobis", "haversine"):
        from metric_cases import METRICS
        S = X if X.shape == Y.shape and np.array_equal(X, Y) else None
        return METRICS[metric][2](X, X if S is not None else Y)
    if metric == "nan_euclidean":  # scikit-learn's definition, pair by pair
        d = (X[:, None, :] - Y[None, :, :]) ** 2
        n = (~np.isnan(d)).sum(axis=2)
        with np.errstate(all="ignore"):
            return np.where(n == 0, np.nan, np.sqrt(X.shape[1] / n * np.nansum(d, axis=2)))
    if metric in SCIPY_NAME:
        return cdist(X, Y, SCIPY_NAME[metric])
    if metric in PATTERN:
        with np.errstate(all="ignore"):
            return cdist(X != 0, Y != 0, metric)
    if metric == "matching":
        return cdist(X != 0, Y != 0, "hamming")
    if metric in ("kulczynski1", "sokalmichener"):  # SciPy <= 1.16's formulas
        P, Q = (X != 0)[:, None, :], (Y != 0)[None, :, :]
        tt, tf, ft = (P & Q).sum(2), (P & ~Q).sum(2), (~P & Q).sum(2)
        ff = X.shape[1] - tt - tf - ft
        with np.errstate(all="ignore"):
            if metric == "kulczynski1":
                return tt / (tf + ft)
            return 2.0 * (tf + ft) / (tt + ff + 2.0 * (tf + ft))
    if metric == "cosine_sklearn":  # scikit-learn's (1 against a zero row), on copies
        from sklearn.metrics.pairwise import cosine_distances
        return cosine_distances(X, Y.copy())
    if metric == "hellinger":
        return cdist(np.sqrt(X), np.sqrt(Y), "euclidean") / np.sqrt(2)
    if metric == "inner_product":
        return X @ Y.T
    a, b = X[:, None, :], Y[None, :, :]
    with np.errstate(all="ignore"):
        if metric == "kl_divergence":
            t = np.where((a > 0) & (b > 0), a * np.log(a / b), 0.0)
            return t.sum(axis=2)
        if metric in ("jensenshannon", "jensenshannon_unnormalized"):
            if metric == "jensenshannon":  # SciPy's: rows / their sums (an empty row stays 0)
                a = a / np.where(a.sum(axis=2, keepdims=True) > 0, a.sum(axis=2, keepdims=True), 1)
                b = b / np.where(b.sum(axis=2, keepdims=True) > 0, b.sum(axis=2, keepdims=True), 1)
            m = a + b
            t = np.where(a > 0, a * np.log(2 * a / m), 0.0) + np.where(b > 0, b * np.log(2 * b / m), 0.0)
            return np.sqrt(np.maximum(t.sum(axis=2) / 2, 0))
    raise KeyError(metric)


def row_scale(metric: str, X: np.ndarray, Y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The scale errors are relative to: the rows' norm in the metric's own units
    (|a|, |b|) for the unbounded metrics, 1 for those with a bounded range."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)

    def pair(fx, fy, comb=np.maximum):
        return comb(fx[:, None], fy[None, :])

    metric = UNWEIGHTED.get(metric, metric)
    if metric == "seuclidean":
        s = np.sqrt(_column_defaults(X, Y)[0])
        return pair(np.linalg.norm(X / s, axis=1), np.linalg.norm(Y / s, axis=1))

    if metric in ("euclidean", "minkowski", "nan_euclidean"):
        X, Y = np.nan_to_num(X), np.nan_to_num(Y)
        return pair(np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1))
    if metric == "mahalanobis":  # the norms of the whitened rows (gbdist maps (a − μ)·L)
        S = X if X.shape == Y.shape and np.array_equal(X, Y) else np.vstack([X, Y])
        ref_self = reference("mahalanobis", S, S)
        return np.maximum(np.max(ref_self), 1e-300) * np.ones_like(ref)
    if metric == "sqeuclidean":
        return pair((X ** 2).sum(1), (Y ** 2).sum(1), np.add)
    if metric == "manhattan":
        return pair(np.abs(X).sum(1), np.abs(Y).sum(1), np.add)
    if metric == "chebyshev":
        return pair(np.abs(X).max(1, initial=0), np.abs(Y).max(1, initial=0))
    if metric == "inner_product":
        return pair(np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1), np.multiply)
    if metric == "canberra":
        return pair((X != 0).sum(1), (Y != 0).sum(1), np.add).astype(np.float64)
    if metric == "jensenshannon":
        return np.ones_like(ref)
    if metric in ("hellinger", "jensenshannon_unnormalized", "kl_divergence"):
        return np.maximum(pair(np.abs(X).sum(1), np.abs(Y).sum(1)), np.abs(ref))
    return np.ones_like(ref)  # cosine, correlation, braycurtis, hamming, jaccard, dice, russellrao


def max_scaled_error(metric: str, got, X, Y) -> float:
    """max |got − ref| / scale over the entries where the reference is a number (NaN must
    match NaN: a mismatch is an infinite error)."""
    ref = reference(metric, X, Y)
    got = np.asarray(got, dtype=np.float64)
    nan_r, nan_g = np.isnan(ref), np.isnan(got)
    if (nan_r != nan_g).any():
        return float("inf")
    ok = ~nan_r
    if not ok.any():
        return 0.0
    scale = np.maximum(row_scale(metric, X, Y, ref), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(got[ok] - ref[ok]) / scale[ok]))


def sample_data(seed: int = 0, m: int = 40, n: int = 30, k: int = 50, density: float = 0.3,
                scale: float = 1.0):
    """Nonnegative float32 X, Y (every metric's domain) with duplicate rows inside X
    and between X and Y, an empty row, and rows of very different magnitudes."""
    rng = np.random.default_rng(seed)
    X = sps.random(m, k, density=density, random_state=rng, format="csr", dtype=np.float64).toarray()
    Y = sps.random(n, k, density=density, random_state=rng, format="csr", dtype=np.float64).toarray()
    X[:5] *= 1e3
    X[5] = 0.0
    X[6:9] = X[10:13]          # duplicates inside X
    Y[:4] = X[20:24]           # rows of Y equal to rows of X
    Y[4] = X[0]                # a large row repeated in Y
    X *= scale
    Y *= scale
    return X.astype(np.float32), Y.astype(np.float32)


def identical_pairs(X: np.ndarray, Y: np.ndarray) -> list[tuple[int, int]]:
    """Every (i, j) with row i of X equal to row j of Y (brute force)."""
    eq = (X[:, None, :] == Y[None, :, :]).all(axis=2)
    return [tuple(p) for p in np.argwhere(eq)]
