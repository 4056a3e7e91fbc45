"""The named metrics' SciPy (or brute-force float64) references, shared by the metric,
neighbour and estimator tests: name -> (params, data kind, reference, power)."""
from __future__ import annotations

import warnings

import numpy as np
from scipy.spatial.distance import cdist


def _cdist(name, **kw):
    def ref(a, b):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return cdist(a, b, name, **kw)
    return ref


def _hellinger(a, b):
    return cdist(np.sqrt(a), np.sqrt(b)) / np.sqrt(2.0)


def _kl_shared_support(a, b):
    out = np.zeros((len(a), len(b)))
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            s = (x != 0) & (y != 0)
            out[i, j] = np.sum(x[s] * np.log(x[s] / y[s]))
    return out


def _inner(a, b):
    return a @ b.T


def _stacked(a, b):
    """The rows the column defaults of seuclidean and gower are taken over: both operands,
    or one when they are the same (gbdist/runtime/columns.py)."""
    return a if a is b else np.vstack([a, b])


def _seuclidean(a, b):
    V = np.var(_stacked(a, b), axis=0, ddof=1)
    return cdist(a, b, "seuclidean", V=np.where(V > 0, V, 1.0))


def _gower(a, b):
    S = _stacked(a, b)
    r = S.max(0) - S.min(0)
    return (np.abs(a[:, None, :] - b[None, :, :]) / np.where(r > 0, r, 1.0)).mean(-1)

def _mahalanobis(a, b):
    """SciPy's mahalanobis with its default VI over the stacked rows (gbdist's rule where
    the covariance is singular: its pseudo-inverse)."""
    S = _stacked(a, b)
    cov = np.atleast_2d(np.cov(S.T))
    sd = np.sqrt(np.diag(cov))
    full = (sd > 0).all() and np.linalg.matrix_rank(cov / np.outer(sd, sd)) == cov.shape[0]
    VI = np.linalg.inv(cov).T if full else np.linalg.pinv(cov, hermitian=True)
    with np.errstate(all="ignore"):
        return np.sqrt(np.maximum(cdist(a, b, "mahalanobis", VI=VI) ** 2, 0))


def _haversine(a, b):
    from sklearn.metrics.pairwise import haversine_distances
    return haversine_distances(a[:, :2], b[:, :2])


# metrics that read a fixed number of columns: generic tests give them the first ones;
# mahalanobis reads every column, but its default VI needs more rows (X and Y together, or
# X alone in a self-join) than columns, as SciPy's does: the generic tests' blocks of 33-41
# rows keep 12 (more than FEW_COLUMNS, so the accuracy rule decides as for wide data)
COLUMNS = {"haversine": 2, "mahalanobis": 12}


def fit_columns(metric, *arrays):
    """The arrays cut to the columns :data:`COLUMNS` gives ``metric``, else as they are."""
    n = COLUMNS.get(metric)
    return arrays if n is None else tuple(None if a is None else a[:, :n] for a in arrays)


def _bool_counts(a, b):
    a, b = (a != 0)[:, None, :], (b != 0)[None, :, :]
    return [np.sum(u & v, axis=-1).astype(float) for u, v in
            ((a, b), (a, ~b), (~a, b), (~a, ~b))]


def _kulczynski1(a, b):
    """SciPy's kulczynski1 (removed from SciPy 1.17): n_tt / (n_tf + n_ft)."""
    tt, tf, ft, _ = _bool_counts(a, b)
    with np.errstate(all="ignore"):
        return tt / (tf + ft)


def _sokalmichener(a, b):
    """SciPy's sokalmichener (removed from SciPy 1.17): 2 R / (n_tt + n_ff + 2 R)."""
    tt, tf, ft, ff = _bool_counts(a, b)
    return 2 * (tf + ft) / (tt + ff + 2 * (tf + ft))


def _cosine_sklearn(a, b):
    """scikit-learn's cosine_distances (1 against a zero row), on copies: it zeroes the
    diagonal only when its two arguments are the same object."""
    from sklearn.metrics.pairwise import cosine_distances
    return cosine_distances(np.array(a, dtype=float), np.array(b, dtype=float))


# name -> (params, data kind, reference, power): ``power`` is the root the metric
# takes of its semiring sum (2 for euclidean); see assert_metric_close.
METRICS = {
    "euclidean": ({}, "real", _cdist("euclidean"), 2),
    "sqeuclidean": ({}, "real", _cdist("sqeuclidean"), 1),
    "manhattan": ({}, "real", _cdist("cityblock"), 1),
    "chebyshev": ({}, "real", _cdist("chebyshev"), 1),
    "minkowski-p1": ({"p": 1}, "real", _cdist("minkowski", p=1), 1),
    "minkowski-p1.5": ({"p": 1.5}, "real", _cdist("minkowski", p=1.5), 1.5),
    "minkowski-p3": ({"p": 3}, "real", _cdist("minkowski", p=3), 3),
    "minkowski-p4": ({"p": 4}, "real", _cdist("minkowski", p=4), 4),
    "canberra": ({}, "real", _cdist("canberra"), 1),
    "braycurtis": ({}, "real", _cdist("braycurtis"), 1),
    "cosine": ({}, "real", _cdist("cosine"), 1),
    "correlation": ({}, "real", _cdist("correlation"), 1),
    "hamming": ({}, "real", _cdist("hamming"), 1),
    "jaccard": ({}, "binary", _cdist("jaccard"), 1),
    "dice": ({}, "binary", _cdist("dice"), 1),
    "russellrao": ({}, "binary", _cdist("russellrao"), 1),
    "hellinger": ({}, "nonneg", _hellinger, 2),
    "jensenshannon": ({}, "prob", _cdist("jensenshannon"), 2),
    "jensenshannon_unnormalized": ({}, "prob", _cdist("jensenshannon"), 2),
    "kl_divergence": ({}, "nonneg", _kl_shared_support, 1),
    "inner_product": ({}, "real", _inner, 1),
    # column-aware metrics (metrics.gbd): w = 1 by default is the unweighted metric
    # (tests/front/test_column_operands.py runs them with vectors)
    "weighted_minkowski": ({}, "real", _cdist("euclidean"), 2),
    "weighted_euclidean": ({}, "real", _cdist("euclidean"), 2),
    "weighted_sqeuclidean": ({}, "real", _cdist("sqeuclidean"), 1),
    "weighted_cityblock": ({}, "real", _cdist("cityblock"), 1),
    "weighted_chebyshev": ({}, "real", _cdist("chebyshev"), 1),
    "weighted_braycurtis": ({}, "real", _cdist("braycurtis"), 1),
    "weighted_cosine": ({}, "real", _cdist("cosine"), 1),
    "weighted_canberra": ({}, "real", _cdist("canberra"), 1),
    "weighted_hamming": ({}, "real", _cdist("hamming"), 1),
    "seuclidean": ({}, "real", _seuclidean, 2),
    "gower": ({}, "real", _gower, 1),
    "gower_mixed": ({}, "real", _gower, 1),  # cat = 0: every column numeric
    "weighted_dice": ({}, "binary", _cdist("dice"), 1),
    "weighted_jaccard": ({}, "binary", _cdist("jaccard"), 1),
    "weighted_russellrao": ({}, "binary", _cdist("russellrao"), 1),
    "weighted_matching": ({}, "binary", _cdist("hamming"), 1),
    "weighted_yule": ({}, "binary", _cdist("yule"), 1),
    "weighted_rogerstanimoto": ({}, "binary", _cdist("rogerstanimoto"), 1),
    "weighted_sokalsneath": ({}, "binary", _cdist("sokalsneath"), 1),
    "weighted_correlation": ({}, "real", _cdist("correlation"), 1),
    "mahalanobis": ({}, "real", _mahalanobis, 2),
    "haversine": ({}, "latlon", _haversine, 1),

    "cosine_sklearn": ({}, "real", _cosine_sklearn, 1),
    "matching": ({}, "binary", _cdist("hamming"), 1),
    "yule": ({}, "binary", _cdist("yule"), 1),
    "rogerstanimoto": ({}, "binary", _cdist("rogerstanimoto"), 1),
    "sokalmichener": ({}, "binary", _sokalmichener, 1),
    "sokalsneath": ({}, "binary", _cdist("sokalsneath"), 1),
    "kulczynski1": ({}, "binary", _kulczynski1, 1),
    # without NaN in the data, scikit-learn's nan_euclidean is euclidean
    # (tests/front/test_missing_values.py runs it with missing values)
    "nan_euclidean": ({}, "real", _cdist("euclidean"), 2),
}


def device_plan(metric, ncols: int):
    """The plan the CUDA backend runs for ``metric`` on data of ``ncols`` columns: the
    analysed plan, or the accuracy rule's direct plan where the rule runs on device
    operands and sums every rewrite as written on few columns (``FEW_COLUMNS``); only the
    gather strategy runs a direct plan's plus over the union."""
    from gbdist.compiler import accuracy as rule
    from gbdist.pairwise import metric_program
    from gbdist.runtime import accuracy
    from gbdist.runtime.bind import _device_direct_union
    plan = metric_program(metric).plan
    if accuracy.DEVICE_RULE and ncols <= rule.FEW_COLUMNS and _device_direct_union(plan):
        return rule.direct_plan(plan)
    return plan

