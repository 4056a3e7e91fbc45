"""SciPy's w= on the boolean family, relative weights, weighted and mixed-type Gower (issue 26).

References: SciPy's cdist/pdist with w= (float64), and Gower's definition written out in
NumPy float64 (the ``gower`` package's: numeric terms |x − y| / range over the rows of both
operands, categorical terms [x ≠ y], Σ w·term / Σ w), on random, offset and real data.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist, pdist

import gbdist as gb
from gbdist.errors import AnalysisError, InputError

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.DataConversionWarning")
BOOLEAN = ("dice", "jaccard", "russellrao", "yule", "rogerstanimoto", "sokalsneath")


def _bool_data(seed=0, m=30, n=22, k=13):
    rng = np.random.default_rng(seed)
    X = (rng.random((m, k)) < 0.35).astype(float)
    Y = (rng.random((n, k)) < 0.35).astype(float)
    Y[3] = X[3]  # an identical row
    X[5] = 0.0  # empty rows
    Y[6] = 0.0
    w = rng.uniform(0.0, 2.0, k)
    w[2] = 0.0  # a column left out
    return X, Y, w


def _scipy(X, Y, metric, w):
    with np.errstate(all="ignore"):
        return cdist(X.astype(bool), Y.astype(bool), metric, w=w)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.DataConversionWarning")
@pytest.mark.parametrize("backend", ("cpu", "compiled"))
@pytest.mark.parametrize("metric", BOOLEAN)
def test_weighted_boolean_metrics_equal_scipy(metric, backend):
    X, Y, w = _bool_data()
    want = _scipy(X, Y, metric, w)
    for fmt in (np.asarray, sps.csr_matrix):
        D = gb.pairwise_distances(fmt(X), fmt(Y), metric=metric, w=w, dtype=np.float64,
                                  backend=backend)
        np.testing.assert_allclose(D, want, rtol=1e-12, atol=1e-14, equal_nan=True)
    # the same metric through SciPy's own shapes
    np.testing.assert_allclose(gb.cdist(X, Y, metric, w=w), want, rtol=1e-12, atol=1e-14,
                               equal_nan=True)
    with np.errstate(all="ignore"):
        want_p = pdist(X.astype(bool), metric, w=w)
    np.testing.assert_allclose(gb.pdist(X, metric, w=w), want_p, rtol=1e-12, atol=1e-14,
                               equal_nan=True)


def test_weighted_matching_is_scipys_weighted_hamming_on_boolean_rows():
    X, Y, w = _bool_data(1)
    D = gb.pairwise_distances(X, Y, metric="matching", w=w, dtype=np.float64)
    np.testing.assert_allclose(D, cdist(X, Y, "hamming", w=w), rtol=1e-12, atol=1e-14)


def test_relative_weights_scale_free_and_checked():
    """Relative weights are bound divided by their mean: scaling w changes nothing; all 0
    (SciPy: 0/0) is refused; a weight of 0 leaves a column out."""
    X, Y, w = _bool_data(2)
    a = gb.pairwise_distances(X, Y, metric="yule", w=w, dtype=np.float64)
    b = gb.pairwise_distances(X, Y, metric="yule", w=w * 1e3, dtype=np.float64)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    with pytest.raises(InputError, match="must not all be 0"):
        gb.pairwise_distances(X, Y, metric="russellrao", w=np.zeros_like(w))
    keep = w > 0
    D = gb.pairwise_distances(X, Y, metric="russellrao", w=w, dtype=np.float64)
    np.testing.assert_allclose(D, _scipy(X[:, keep], Y[:, keep], "russellrao", w[keep]),
                               rtol=1e-12, atol=1e-14)
    # w = 1 (a number) is the unweighted metric
    for metric in BOOLEAN:
        D = gb.pairwise_distances(X, Y, metric=f"weighted_{metric}", dtype=np.float64)
        np.testing.assert_allclose(D, gb.pairwise_distances(X, Y, metric=metric,
                                                            dtype=np.float64),
                                   rtol=1e-12, atol=1e-14, equal_nan=True)


def test_relative_weights_in_the_text_language():
    defs = gb.define("""
op my_w_sq(x, y; w) = w[col] * (x - y)^2
metric my_wmean_sq(A, B; w = 1) requires w >= 0 and mean(w) == 1 =
    mxm(A, B.T, semiring(my_w_sq(w), plus)) / ncols(A)
""")
    assert "my_wmean_sq" in defs.metrics
    rng = np.random.default_rng(3)
    X, Y, w = rng.normal(size=(9, 5)), rng.normal(size=(7, 5)), rng.uniform(0.1, 3, 5)
    D = gb.pairwise_distances(X, Y, metric="my_wmean_sq", w=w, dtype=np.float64)
    want = ((X[:, None] - Y[None]) ** 2 * w).sum(-1) / w.sum()
    np.testing.assert_allclose(D, want, rtol=1e-12)
    D = gb.pairwise_distances(X, Y, metric="my_wmean_sq", w=7.0, dtype=np.float64)
    np.testing.assert_allclose(D, ((X[:, None] - Y[None]) ** 2).mean(-1), rtol=1e-12)


def test_a_weight_that_is_neither_a_scaling_nor_a_factor_is_refused_in_the_algebra():
    # (weighted counts w·[x ≠ y] are column factors now: tests/front/test_column_factor.py)
    w = gb.column("w")
    op = gb.op("w_ne2", lambda x, y: gb.where(x != y, w, 1))
    A, B = gb.matrices("A B")
    with pytest.raises(AnalysisError, match="not a per-column scaling"):
        gb.compile(gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus)))


# --- Gower ------------------------------------------------------------------------


def _gower(X, Y, cat=None, w=None):
    """Gower's definition in float64: numeric |x − y| / (max − min over X and Y stacked;
    a constant column: 0), categorical [x ≠ y], Σ w·term / Σ w."""
    k = X.shape[1]
    cat = np.zeros(k, bool) if cat is None else np.asarray(cat) > 0
    w = np.ones(k) if w is None else np.asarray(w, float)
    S = np.vstack([X, Y])
    r = S.max(0) - S.min(0)
    d = np.abs(X[:, None, :] - Y[None, :, :])
    with np.errstate(all="ignore"):
        num = np.where(r > 0, d / np.where(r > 0, r, 1), 0.0)
    term = np.where(cat, (d > 0).astype(float), num)
    return (term * w).sum(-1) / w.sum()


def _mixed(seed=0, m=28, n=19, offset=0.0):
    rng = np.random.default_rng(seed)
    k = 7
    X = rng.normal(size=(m, k)) + offset
    Y = rng.normal(size=(n, k)) + offset
    cat = np.zeros(k)
    cat[[1, 4, 6]] = 1
    X[:, 1], Y[:, 1] = rng.integers(0, 4, m), rng.integers(0, 4, n)  # codes 0..3
    X[:, 4], Y[:, 4] = rng.choice([0.1, 0.2, 0.3], m), rng.choice([0.1, 0.2, 0.3], n)
    X[:, 6], Y[:, 6] = rng.integers(0, 3, m) * 1e6 + offset, rng.integers(0, 3, n) * 1e6 + offset
    X[:, 3] = Y[:, 3] = 2.5  # a constant numeric column
    Y[2] = X[2]  # an identical row
    return X, Y, cat


@pytest.mark.parametrize("backend", ("cpu", "compiled"))
@pytest.mark.parametrize("offset", (0.0, 1e4, 1e6))
def test_gower_mixed_types_equal_the_definition(backend, offset):
    X, Y, cat = _mixed(offset=offset)
    D = gb.pairwise_distances(X, Y, metric="gower", cat=cat, dtype=np.float64, backend=backend)
    np.testing.assert_allclose(D, _gower(X, Y, cat), rtol=1e-9, atol=1e-12)
    assert D[2, 2] == 0.0
    # a self-join: Gower's ranges over X alone
    D = gb.pairwise_distances(X, metric="gower", cat=cat, dtype=np.float64, backend=backend)
    np.testing.assert_allclose(D, _gower(X, X, cat), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("offset", (0.0, 1e4, 1e6))
def test_weighted_gower_numeric_equals_the_definition(offset):
    X, Y, _ = _mixed(1, offset=offset)
    w = np.random.default_rng(1).uniform(0.0, 3.0, X.shape[1])
    w[0] = 0.0
    D = gb.pairwise_distances(X, Y, metric="gower", w=w, dtype=np.float64)
    np.testing.assert_allclose(D, _gower(X, Y, w=w), rtol=1e-9, atol=1e-12)
    D = gb.pairwise_distances(X, Y, metric="gower", dtype=np.float64)
    np.testing.assert_allclose(D, _gower(X, Y), rtol=1e-9, atol=1e-12)


def test_gower_with_weights_and_categories_equals_the_definition():
    """Both w= and cat=: each clipped term weighted by w read at each column (a column
    factor; more in tests/front/test_gower_weights_and_categories.py)."""
    X, Y, cat = _mixed(2)
    w = np.random.default_rng(2).uniform(0.0, 3.0, X.shape[1])
    D = gb.pairwise_distances(X, Y, metric="gower", cat=cat, w=w, dtype=np.float64)
    np.testing.assert_allclose(D, _gower(X, Y, cat, w=w), rtol=1e-9, atol=1e-12)


def test_gower_mixed_on_sparse_input_and_float32():
    X, Y, cat = _mixed(3)
    X[X < 0] = 0.0
    Y[Y < 0] = 0.0
    want = _gower(X, Y, cat)
    D = gb.pairwise_distances(sps.csr_matrix(X), sps.csr_matrix(Y), metric="gower", cat=cat,
                              dtype=np.float64)
    np.testing.assert_allclose(D, want, rtol=1e-9, atol=1e-12)
    D32 = gb.pairwise_distances(X.astype(np.float32), Y.astype(np.float32), metric="gower",
                                cat=cat)
    want32 = _gower(X.astype(np.float32).astype(np.float64),
                    Y.astype(np.float32).astype(np.float64), cat)
    np.testing.assert_allclose(D32, want32, rtol=1e-5, atol=1e-6)


def movielens_movies(n: int, genre_code=lambda g: hash(g) % 997) -> np.ndarray:
    """n movies of ../shared/data's MovieLens as mixed-type rows: year and mean rating
    (numeric), the first genre's code and the number of genres (categorical)."""
    import csv
    rows = []
    with open(DATA / "ml-latest-small" / "movies.csv", newline="", encoding="utf-8") as f:
        for i, (mid, title, genres) in enumerate(csv.reader(f)):
            if i == 0:
                continue
            year = title.strip()[-5:-1]
            if not year.isdigit():
                continue
            g = genres.split("|")
            rows.append((int(mid), float(year), genre_code(g[0]), len(g)))
            if len(rows) == n:
                break
    raw = np.loadtxt(DATA / "ml-latest-small" / "ratings.csv", delimiter=",", skiprows=1,
                     usecols=(1, 2), max_rows=30000)
    return np.array([[y, np.mean(raw[raw[:, 0] == mid, 1]) if (raw[:, 0] == mid).any() else 0.0,
                      g0, ng] for mid, y, g0, ng in rows])


@pytest.mark.skipif(not (DATA / "ml-latest-small" / "movies.csv").is_file(),
                    reason="../shared/data/ml-latest-small absent")
def test_gower_mixed_on_movielens_movies():
    """Real mixed data: per movie, its year and mean rating (numeric), its first genre and
    its number of genres (categorical)."""
    X = movielens_movies(150)
    cat = np.array([0, 0, 1, 1])
    D = gb.pairwise_distances(X[:90], X[90:], metric="gower", cat=cat, dtype=np.float64)
    np.testing.assert_allclose(D, _gower(X[:90], X[90:], cat), rtol=1e-9, atol=1e-12)
    w = np.array([1.0, 2.0, 0.0, 0.0])
    D = gb.pairwise_distances(X[:90], X[90:], metric="gower", w=w, dtype=np.float64)
    np.testing.assert_allclose(D, _gower(X[:90], X[90:], w=w), rtol=1e-9, atol=1e-12)


@pytest.mark.skipif(not (DATA / "uci-bow-kos" / "docword.kos.txt.gz").is_file(),
                    reason="../shared/data/uci-bow-kos absent")
def test_weighted_boolean_metrics_on_kos_documents():
    import gzip
    with gzip.open(DATA / "uci-bow-kos" / "docword.kos.txt.gz", "rt") as f:
        n_docs, n_words, _ = (int(next(f)) for _ in range(3))
        trip = np.loadtxt(f, dtype=np.int64, max_rows=20000)
    M = sps.csr_matrix((trip[:, 2].astype(float), (trip[:, 0] - 1, trip[:, 1] - 1)),
                       shape=(n_docs, n_words))
    docs = np.unique(trip[:, 0] - 1)[:60]
    M = M[docs]
    cols = np.flatnonzero(np.asarray((M != 0).sum(axis=0)).ravel() >= 3)
    M = M[:, cols].tocsr()
    B = M.toarray() != 0
    w = np.random.default_rng(5).uniform(0.0, 1.0, M.shape[1])
    for metric in BOOLEAN:
        D = gb.pairwise_distances(M[:30], M[30:], metric=metric, w=w, dtype=np.float64)
        np.testing.assert_allclose(D, _scipy(B[:30], B[30:], metric, w), rtol=1e-10,
                                   atol=1e-12, equal_nan=True)
