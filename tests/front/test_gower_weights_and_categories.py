"""Gower's distance with both w= and cat= (issue 26): Gower (1971)'s weighted mean of the
per-column partial dissimilarities, |x − y| / r on a numeric column (r its range over the
rows of both operands) and [x ≠ y] on a categorical one, Σ w·term / Σ w, against a NumPy
float64 brute force on random, offset (+1e4, +1e6), sparse and real data. The weight is a
column factor read at each column by the kernels (compiler/colfactor.py) of a term that a
column scaling makes column-free (compiler/columns.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist.backends.cpu import CPUBackend
from gbdist.compiler import ir
from gbdist.errors import NonFiniteError
from gbdist.pairwise import metric_program

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
BACKENDS = ("cpu", "numpy")  # the compiled CPU kernels and the NumPy reference


def _backend(name):
    return CPUBackend() if name == "numpy" else name


def brute(X, Y, cat, w):
    """Gower (1971) in float64, written out: numeric columns |x − y| / range (a constant
    column: 0), categorical ones [x ≠ y]; the w-weighted mean over the columns."""
    X, Y = np.asarray(X, np.float64), np.asarray(Y, np.float64)
    S = np.vstack([X, Y])
    r = S.max(0) - S.min(0)
    out = np.zeros((X.shape[0], Y.shape[0]))
    for c in range(X.shape[1]):
        d = X[:, c][:, None] - Y[:, c][None, :]
        if cat[c]:
            term = (d != 0).astype(np.float64)
        else:
            term = np.abs(d) / r[c] if r[c] > 0 else np.zeros_like(d)
        out += w[c] * term
    return out / np.sum(w)


def _mixed(seed=0, m=31, n=23, offset=0.0):
    rng = np.random.default_rng(seed)
    k = 8
    X = rng.normal(size=(m, k))
    Y = rng.normal(size=(n, k))
    cat = np.zeros(k)
    cat[[1, 4, 6]] = 1
    X[:, 1], Y[:, 1] = rng.integers(0, 4, m), rng.integers(0, 4, n)  # codes 0..3
    X[:, 4], Y[:, 4] = rng.choice([0.1, 0.2, 0.3], m), rng.choice([0.1, 0.2, 0.3], n)
    X[:, 6], Y[:, 6] = rng.integers(0, 3, m) * 1e6, rng.integers(0, 3, n) * 1e6
    X[:, 3] = Y[:, 3] = 2.5  # a constant numeric column
    X[X[:, 0] < 0, 0] = 0.0  # zeros in a numeric column
    Y[2] = X[2]  # an identical row
    w = rng.uniform(0.0, 3.0, k)
    w[5] = 0.0  # a numeric column left out
    w[4] = 2.5  # a weighted categorical column
    return X + offset, Y + offset, cat, w


def test_the_weight_is_a_column_factor_of_a_scaled_term():
    _, _, cat, w = _mixed()
    plan = metric_program("gower_mixed", cat=cat, w=w).plan
    unions = [s.node for s in plan.steps if isinstance(s.node, ir.TwoPassUnion)]
    assert len(unions) == 1 and unions[0].weight is not None
    assert isinstance(unions[0].left, ir.ColScaled)  # r, g, cat: a scaling of the values
    text = str(gb.explain("gower", cat=cat, w=w))
    assert "column factor κ(w) = w[col]" in text and "column scaling" in text
    # without w= it keeps the union correction (no weight for the kernels to read)
    plain = metric_program("gower_mixed", cat=cat).plan
    assert not any(isinstance(s.node, ir.TwoPassUnion) for s in plain.steps)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("offset", (0.0, 1e4, 1e6))
def test_weights_and_categories_equal_gower(offset, backend):
    X, Y, cat, w = _mixed(offset=offset)
    D = gb.pairwise_distances(X, Y, metric="gower", cat=cat, w=w, dtype=np.float64,
                              backend=_backend(backend))
    np.testing.assert_allclose(D, brute(X, Y, cat, w), rtol=1e-9, atol=1e-12)
    assert D[2, 2] == 0.0
    # a self-join (ranges over X alone) and SciPy's shape
    D = np.asarray(gb.cdist(X, X, "gower", cat=cat, w=w, backend=_backend(backend)))
    np.testing.assert_allclose(D, brute(X, X, cat, w), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(np.diag(D), 0.0)


def test_weights_scale_free_and_reduce_to_the_unweighted_forms():
    X, Y, cat, w = _mixed(1)
    D = gb.pairwise_distances(X, Y, metric="gower", cat=cat, w=w, dtype=np.float64)
    # relative weights: 7·w gives the same distances
    np.testing.assert_allclose(gb.pairwise_distances(X, Y, metric="gower", cat=cat, w=7 * w,
                                                     dtype=np.float64), D, rtol=1e-12)
    # w = 1: gower with cat= alone; cat = 0: gower with w= alone (numeric columns)
    np.testing.assert_allclose(
        gb.pairwise_distances(X, Y, metric="gower", cat=cat, w=np.ones(X.shape[1]),
                              dtype=np.float64),
        gb.pairwise_distances(X, Y, metric="gower", cat=cat, dtype=np.float64), rtol=1e-12,
        atol=1e-15)
    zero = np.zeros(X.shape[1])
    np.testing.assert_allclose(
        gb.pairwise_distances(X, Y, metric="gower", cat=zero, w=w, dtype=np.float64),
        gb.pairwise_distances(X, Y, metric="gower", w=w, dtype=np.float64), rtol=1e-12,
        atol=1e-15)


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_sparse_input(dtype):
    X, Y, cat, w = _mixed(2)
    X[X < 0] = 0.0
    Y[Y < 0] = 0.0
    Xc, Yc = X.astype(dtype), Y.astype(dtype)
    D = gb.pairwise_distances(sps.csr_matrix(Xc), sps.csr_matrix(Yc), metric="gower", cat=cat,
                              w=w)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(D, brute(Xc, Yc, cat, w), **tol)


def test_bad_weights_and_missing_values_are_refused():
    X, Y, cat, w = _mixed(3)
    with pytest.raises(gb.InputError):
        gb.pairwise_distances(X, Y, metric="gower", cat=cat, w=-w)
    with pytest.raises(gb.InputError):
        gb.pairwise_distances(X, Y, metric="gower", cat=cat, w=np.zeros_like(w))
    X[0, 0] = np.nan  # as gower without weights: NaN is not a missing value here
    with pytest.raises(NonFiniteError):
        gb.pairwise_distances(X, Y, metric="gower", cat=cat, w=w)


@pytest.mark.skipif(not (DATA / "ml-latest-small" / "movies.csv").is_file(),
                    reason="../shared/data/ml-latest-small absent")
def test_movielens_movies_with_weights_and_categories():
    """Real mixed data: per movie, its year and mean rating (numeric), its first genre and
    its number of genres (categorical), weighted."""
    from tests.front.test_weighted_catalogue import movielens_movies
    X = movielens_movies(160, lambda g: sum(map(ord, g)))
    cat = np.array([0, 0, 1, 1])
    w = np.array([1.0, 2.0, 1.5, 0.5])
    for backend in BACKENDS:
        D = gb.pairwise_distances(X[:100], X[100:], metric="gower", cat=cat, w=w,
                                  dtype=np.float64, backend=_backend(backend))
        np.testing.assert_allclose(D, brute(X[:100], X[100:], cat, w), rtol=1e-9, atol=1e-12)


def test_a_weighted_term_that_no_scaling_frees_is_refused():
    """κ(w) = w factors out, but min(|x − y|, t) reads t in a way no column scaling
    removes: the op is refused as written (AnalysisError), not run with t ignored."""
    w, t = gb.column("w"), gb.column("t", positive=True)
    op = gb.op("w_min_t_test", lambda x, y: w * gb.minimum(abs(x - y), t))
    from gbdist.compiler import colfactor
    assert colfactor.factor(op) is not None  # the factor alone is found
    A, B = gb.matrices("A B")
    with pytest.raises(gb.AnalysisError, match="not a per-column scaling"):
        gb.compile(gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus)))
