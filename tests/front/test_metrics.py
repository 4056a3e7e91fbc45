"""Every named metric against SciPy (or a brute-force float64 reference).

The matrix: metric × dtype (float32, float64) × input form (csr/csc/coo in the
spmatrix and sparray classes, dense, explicit stored zeros, unsorted indices,
duplicates, int64 indices), always with empty rows and, where the metric
allows them, negative values. The reference is
``scipy.spatial.distance.cdist`` on dense float64 copies of the same input.
"""
from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist

import gbdist as gb
from datagen import FORMS, make_input, random_dense


from metric_cases import METRICS


def assert_metric_close(D, R, power, dtype):
    """Compare a result with its reference, at the precision the plan can give.

    The union-by-correction and expansion rewrites compute the semiring sum
    Σ f as (row norms) + (intersection term); identical rows cancel to 0 with an
    absolute error of about ε·Σ|x|^p. A metric that takes the p-th root of that
    sum (euclidean: p = 2) turns it into (ε·Σ|x|^p)^(1/p) — the well-known
    limit of the norm + dot-product expansion. So the sum itself (D^p) is
    compared tightly, and D with the root of that bound.
    """
    R = np.asarray(R, dtype=np.float64)
    D64 = np.asarray(D, dtype=np.float64)
    assert D64.shape == R.shape
    assert_allclose(np.isnan(D64), np.isnan(R), err_msg="NaN positions differ")
    if dtype == np.float32:
        rtol, eps = 1e-5, 1e-6
    else:
        rtol, eps = 1e-9, 1e-12
    finite = np.isfinite(R)
    scale = 1.0 + (np.nanmax(np.abs(R[finite]) ** power) if finite.any() else 0.0)
    with np.errstate(invalid="ignore"):
        assert_allclose(D64 ** power, R ** power, rtol=rtol, atol=eps * scale, equal_nan=True)
    assert_allclose(D64, R, rtol=max(rtol, 1e-7), atol=(eps * scale) ** (1.0 / power),
                    equal_nan=True)


def _data(kind, rng, m=23, k=37):
    return random_dense(rng, m, k, kind), random_dense(rng, m - 6, k, kind)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("metric", list(METRICS))
def test_metric_matches_reference(metric, dtype, form):
    params, kind, ref, power = METRICS[metric]
    name = metric.split("-")[0]
    rng = np.random.default_rng(zlib.crc32(f"{metric}/{form}".encode()))
    Xd, Yd = _data(kind, rng)
    X, Xr = make_input(Xd, form, dtype, rng, zero_stored=kind != "prob")
    Y, Yr = make_input(Yd, form, dtype, rng, zero_stored=kind != "prob")
    # gbdist's own definitions (gb.cdist: no scikit-learn conventions), in either precision
    D = gb.cdist(X, Y, name, backend="cpu", dtype=dtype, **params)
    assert D.dtype == dtype
    assert D.shape == (Xd.shape[0], Yd.shape[0])
    assert_metric_close(D, ref(Xr, Yr), power, dtype)


@pytest.mark.parametrize("metric", list(METRICS))
def test_metric_self_distances(metric):
    """Y = X: distances among the rows of X, including the diagonal (the metric's own
    d(a, a), which scikit-learn's self-join shape sets to 0: tests/front/test_scipy_shapes.py)."""
    params, kind, ref, power = METRICS[metric]
    rng = np.random.default_rng(7)
    X = random_dense(rng, 30, 41, kind)
    X[5] = X[6]  # a duplicated row: its distance is 0 for every true metric
    Xs = sps.csr_array(X)
    D = gb.cdist(Xs, Xs, metric.split("-")[0], backend="cpu", **params)
    # SciPy's cdist(X, X): its default V / VI over the rows of X and X stacked
    assert_metric_close(D, ref(X, X.copy()), power, np.float64)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "chebyshev", "cosine", "canberra",
                                    "braycurtis", "hamming", "correlation"])
def test_dense_integer_and_bool_inputs(metric):
    params, kind, ref, power = METRICS[metric]
    rng = np.random.default_rng(3)
    X = rng.integers(-3, 4, (12, 9)) * (rng.random((12, 9)) < 0.4)
    D = gb.cdist(X, X, metric, backend="cpu")
    assert D.dtype == np.float64
    assert_metric_close(D, ref(X.astype(float), X.astype(float)), power, np.float64)
    B = X != 0
    assert_metric_close(gb.cdist(B, B, metric, backend="cpu"),
                        ref(B.astype(float), B.astype(float)), power, np.float64)


@pytest.mark.parametrize("metric", ["jaccard", "dice", "russellrao"])
def test_set_metrics_use_the_nonzero_pattern(metric):
    """On non-binary data jaccard/dice/russellrao compare patterns: SciPy on (X != 0)."""
    params, kind, ref, power = METRICS[metric]
    rng = np.random.default_rng(11)
    X, Y = random_dense(rng, 20, 30, "real"), random_dense(rng, 15, 30, "real")
    D = gb.pairwise_distances(sps.csr_matrix(X), sps.csr_matrix(Y), metric=metric, backend="cpu")
    assert_metric_close(D, ref((X != 0).astype(float), (Y != 0).astype(float)), 1, np.float64)


@pytest.mark.parametrize("alias,name,params", [
    ("cityblock", "manhattan", {}), ("l1", "manhattan", {}), ("l2", "euclidean", {}),
    ("linf", "chebyshev", {}), ("infinity", "chebyshev", {}), ("kldivergence", "kl_divergence", {}),
    ("dot", "inner_product", {}), ("EUCLIDEAN", "euclidean", {}),
])
def test_aliases(alias, name, params):
    rng = np.random.default_rng(2)
    X = np.abs(random_dense(rng, 10, 12))
    assert_allclose(gb.pairwise_distances(X, metric=alias, backend="cpu"),
                    gb.pairwise_distances(X, metric=name, backend="cpu"))


def test_minkowski_infinity_is_chebyshev_and_p2_is_euclidean():
    rng = np.random.default_rng(4)
    X = random_dense(rng, 15, 20)
    assert_allclose(gb.pairwise_distances(X, metric="minkowski", p=np.inf),
                    cdist(X, X, "chebyshev"))
    assert_metric_close(gb.pairwise_distances(X, metric="minkowski"), cdist(X, X), 2, np.float64)


# --- deliberate differences and NaN conventions ------------------------------


def test_nan_where_scipy_gives_nan():
    X = np.zeros((3, 5))
    X[0, 1] = 1.0  # rows 1 and 2 are empty
    for metric in ("cosine", "correlation", "braycurtis", "dice"):
        D = gb.cdist(sps.csr_matrix(X), sps.csr_matrix(X), metric, backend="cpu")
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            R = cdist(X, X, metric)
        assert np.isnan(D[1, 2]) and np.isnan(R[1, 2]), metric
        assert_allclose(np.isnan(D), np.isnan(R))
    # cosine/correlation: NaN whenever a zero row is involved (gbdist's and SciPy's
    # definition; scikit-learn's cosine, in pairwise_distances, is 1 there)
    D = gb.cdist(X, X, "cosine")
    assert np.isnan(D[0, 1]) and D[0, 0] == 0
    assert gb.pairwise_distances(X, metric="cosine")[0, 1] == 1.0
    # braycurtis/dice: NaN only for two empty rows; jaccard gives 0 like SciPy
    assert gb.cdist(X, X, "braycurtis")[0, 1] == 1.0
    assert gb.cdist(X, X, "dice")[0, 1] == 1.0
    assert gb.cdist(X, X, "jaccard")[1, 2] == 0.0


def test_correlation_of_a_constant_row_is_nan():
    """A constant row has no deviation from its mean: the correlation is undefined.

    gbdist decides constancy exactly (row max == row min over all k columns), so
    every constant row gives NaN. SciPy agrees where its float mean is exact
    (all ones, all zeros); for [0.1] * 7 its mean rounds, the "deviations" are
    rounding noise and it returns 1.0 — a difference documented in metrics.md.
    """
    X = np.array([[0.1] * 7, [1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0], [1.0] * 7, [0.0] * 7,
                  [3.0, 1.0, 0.0, 0.0, 2.0, 0.0, 1.0]])
    D = gb.cdist(X, X, "correlation", backend="cpu")
    constant = [0, 2, 3]
    assert np.isnan(D[constant, :]).all() and np.isnan(D[:, constant]).all()
    with np.errstate(all="ignore"):
        ref = cdist(X, X, "correlation")
    exact = [1, 2, 3, 4]  # rows whose float mean SciPy computes exactly
    assert_allclose(D[np.ix_(exact, exact)], ref[np.ix_(exact, exact)], rtol=1e-12, atol=1e-12,
                    equal_nan=True)
    # the same through sparse input with the constant rows stored explicitly
    Ds = gb.cdist(sps.csr_matrix(X), sps.csr_matrix(X), "correlation", backend="cpu")
    assert_allclose(Ds, D, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_jensenshannon_unnormalized_is_the_formula_on_the_values():
    """jensenshannon_unnormalized applies the formula to the values as given;
    jensenshannon normalises each row first, as SciPy does (issue 8 item 8)."""
    rng = np.random.default_rng(5)
    X, Y = random_dense(rng, 8, 10, "nonneg"), random_dense(rng, 6, 10, "nonneg")
    D = gb.pairwise_distances(X, Y, metric="jensenshannon_unnormalized", backend="cpu")

    def term(a, b):
        with np.errstate(all="ignore"):
            return np.where(a == 0, 0.0, a * np.log(2 * a / (a + b)))
    R = np.array([[np.sqrt(max(0.0, np.sum(term(x, y) + term(y, x)) / 2)) for y in Y] for x in X])
    assert_allclose(D, R, rtol=1e-9, atol=1e-7)
    # scaling a row changes gbdist's value but not SciPy's
    P = X[~(X == 0).all(1)]
    P = P / P.sum(1, keepdims=True)
    d1 = gb.pairwise_distances(P[:2], metric="jensenshannon_unnormalized")[0, 1]
    d2 = gb.pairwise_distances(P[:2] * [[3.0], [3.0]], metric="jensenshannon_unnormalized")[0, 1]
    assert_allclose(d1, cdist(P[:2], P[:2], "jensenshannon")[0, 1], rtol=1e-9)
    assert not np.isclose(d1, d2)
    # jensenshannon is SciPy's: scaling a row changes nothing
    Q = X[~(X == 0).all(1)]
    R2 = Y[~(Y == 0).all(1)]
    assert_allclose(gb.pairwise_distances(Q, R2, metric="jensenshannon", backend="cpu"),
                    cdist(Q, R2, "jensenshannon"), rtol=1e-9, atol=1e-12)
    assert_allclose(gb.pairwise_distances(np.array([[1.0, 2, 3]]), np.array([[3.0, 2, 1]]),
                                          metric="jensenshannon"), [[0.2953100471720493]], rtol=1e-12)


def test_kl_divergence_sums_over_the_shared_support():
    x = np.array([[0.5, 0.5, 0.0]])
    y = np.array([[0.25, 0.0, 0.75]])
    # only column 0 is stored in both: 0.5 * log(0.5 / 0.25)
    assert_allclose(gb.pairwise_distances(x, y, metric="kl_divergence"), [[0.5 * np.log(2.0)]])


def test_explicit_zeros_are_data_in_pairwise_distances():
    """A stored 0 is the value 0: identical to not storing it, for every metric."""
    rng = np.random.default_rng(9)
    X = random_dense(rng, 10, 12, "nonneg")
    S, _ = make_input(X, "explicit_zeros", np.float64, rng)
    for metric in ("jaccard", "dice", "russellrao", "hamming", "kl_divergence", "canberra",
                   "chebyshev"):
        assert_allclose(gb.pairwise_distances(S, metric=metric, backend="cpu"),
                        gb.pairwise_distances(sps.csr_matrix(S.toarray()), metric=metric,
                                              backend="cpu"), equal_nan=True, err_msg=metric)


def test_union_correction_is_clamped_at_zero():
    """Near-identical rows with large values: the expansion cancels to tiny negatives.

    Computed naively (‖a‖² + ‖b‖² − 2⟨a, b⟩) some entries go below 0 and their
    square root would be NaN; gbdist proves (x − y)² ≥ 0 and clamps.
    """
    rng = np.random.default_rng(6)
    base = rng.uniform(1e3, 1e4, (1, 40))
    X = np.repeat(base, 12, axis=0) * (1 + 1e-13 * rng.standard_normal((12, 40)))
    naive = (X * X).sum(1)[:, None] + (X * X).sum(1)[None, :] - 2 * X @ X.T
    assert (naive < 0).any()  # the hazard is real on this data
    D = gb.pairwise_distances(X, metric="sqeuclidean", backend="cpu")
    assert (D >= 0).all()
    E = gb.pairwise_distances(X, metric="euclidean", backend="cpu")
    assert not np.isnan(E).any()
    M = gb.pairwise_distances(X, metric="manhattan", backend="cpu")
    assert (M >= 0).all()


# --- domains and input errors -------------------------------------------------


@pytest.mark.parametrize("metric", ["hellinger", "jensenshannon", "kl_divergence"])
def test_negative_values_raise_domain_error(metric):
    X = np.array([[1.0, 2.0], [0.5, 0.0]])
    Y = np.array([[1.0, -2.0]])
    with pytest.raises(gb.DomainError) as e:
        gb.pairwise_distances(X, Y, metric=metric, backend="cpu")
    assert "negative" in str(e.value) and "Hint:" in str(e.value)
    with pytest.raises(gb.DomainError):
        gb.pairwise_distances(Y, metric=metric, backend="cpu")
    assert isinstance(e.value, gb.InputError) and isinstance(e.value, gb.GbdistError)


@pytest.mark.parametrize("bad,err", [
    (np.array([[1 + 1j, 0.0]]), gb.InputError),
    (np.array([["a", "b"]]), gb.InputError),
    (np.ones(4), gb.InputError),
    (np.ones((2, 2, 2)), gb.InputError),
    (sps.csr_matrix(np.array([[1 + 2j, 0]])), gb.InputError),
])
def test_unusable_inputs_raise_typed_errors(bad, err):
    with pytest.raises(err) as e:
        gb.pairwise_distances(bad, backend="cpu")
    assert "Got:" in str(e.value)


def test_column_mismatch():
    with pytest.raises(gb.InputError) as e:
        gb.pairwise_distances(np.ones((2, 3)), np.ones((2, 4)), metric="manhattan")
    assert "columns" in str(e.value)


@pytest.mark.parametrize("metric", ["euclidean", "chebyshev", "cosine", "jaccard", "canberra"])
def test_empty_shapes(metric):
    """pairwise_distances refuses empty inputs as scikit-learn does (docs/inputs.md);
    a compiled program runs on them and returns an empty result."""
    X = sps.random(4, 6, density=0.5, random_state=1, format="csr")
    for args in ((sps.csr_matrix((0, 6)), X), (X, sps.csr_matrix((0, 6))),
                 (sps.csr_matrix((3, 0)), None)):
        with pytest.raises(ValueError, match=r"Found array with 0 (sample|feature)\(s\)"):
            gb.pairwise_distances(*args, metric=metric, backend="cpu")
    program = gb.pairwise.metric_program(metric)
    assert program(A=sps.csr_matrix((0, 6)), B=X, backend="cpu").shape == (0, 4)
    assert program(A=X, B=sps.csr_matrix((0, 6)), backend="cpu").shape == (4, 0)


def test_int64_indices_are_kept():
    from gbdist.runtime import to_csr
    M = sps.csr_matrix(np.eye(4))
    M.indices = M.indices.astype(np.int64)
    M.indptr = M.indptr.astype(np.int64)
    assert to_csr(M, "A").indices.dtype == np.int64
    assert to_csr(M.astype(np.float32), "A").indptr.dtype in (np.int32, np.int64)
