"""The catalogue of named metrics against SciPy: SciPy's aliases, the boolean family on
random and degenerate rows and on real data, and what a name gbdist lacks is told."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
import scipy.spatial.distance as ssd

import gbdist as gb
from gbdist import names
from gbdist.front import get_metric

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO.parent / "shared" / "data"


def _pd(X, Y=None, metric="euclidean", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DataConversionWarning, 0/0
        return gb.pairwise_distances(X, Y, metric=metric, backend="cpu", dtype=np.float64, **kw)


# --- names ----------------------------------------------------------------------------


def _scipy_aliases():
    for info in ssd._METRIC_INFOS:
        for alias in sorted(info.aka):
            yield info.canonical_name, alias


@pytest.mark.parametrize("canonical,alias", list(_scipy_aliases()))
def test_every_scipy_alias_is_known_or_told(canonical, alias):
    """Each SciPy spelling is a gbdist metric computing SciPy's canonical metric, or a
    metric gbdist lacks, refused with what to use (never 'did you mean' another one)."""
    if names.not_here(alias) is not None and get_metric_or_none(alias) is None:
        with pytest.raises(gb.UnknownNameError) as e:
            _pd(np.ones((2, 3)), metric=alias)
        assert "does not define" in str(e.value) and "did you mean" not in str(e.value)
        return
    rng = np.random.default_rng(0)
    X, Y = rng.random((7, 6)), rng.random((5, 6))
    if canonical in ("dice", "jaccard", "russellrao", "rogerstanimoto", "sokalsneath", "yule"):
        X, Y = X > 0.5, Y > 0.5
    if alias == "matching":  # gbdist's matching reads the pattern (scikit-learn's); SciPy's
        X, Y = X > 0.5, Y > 0.5  # alias of hamming agrees on boolean rows
    assert np.allclose(_pd(X, Y, alias), ssd.cdist(X, Y, canonical), equal_nan=True)


def get_metric_or_none(name):
    try:
        return get_metric(name)
    except gb.UnknownNameError:
        return None


def test_mahalanobis_is_not_manhattan():
    with pytest.raises(gb.UnknownNameError) as e:
        gb.pairwise_distances(np.ones((2, 2)), metric="mahalanobs")
    assert "did you mean 'mahalanobis'" in str(e.value) and "manhattan" not in str(e.value)


def test_a_peer_metric_gbdist_lacks_says_why():
    with pytest.raises(gb.UnknownNameError) as e:
        gb.pairwise_distances(np.ones((2, 2)), metric="kulsinski")
    assert "removed it in 1.11" in str(e.value) and "did you mean" not in str(e.value)


@pytest.mark.parametrize("typo,meant", [("euclidian", "euclidean"), ("cosin", "cosine"),
                                        ("haversin", "haversine"),
                                        ("manhatan", "manhattan"), ("chebychev1", "chebychev")])
def test_suggestions_point_to_the_right_name(typo, meant):
    with pytest.raises(gb.UnknownNameError) as e:
        gb.pairwise_distances(np.ones((2, 2)), metric=typo)
    assert f"did you mean {meant!r}" in str(e.value)


def test_a_far_name_gets_no_suggestion():
    with pytest.raises(gb.UnknownNameError) as e:
        gb.pairwise_distances(np.ones((2, 2)), metric="zzzqqq")
    assert "did you mean" not in str(e.value)


def test_single_letter_aliases_do_not_take_operand_names():
    """SciPy's aliases c (cityblock), e (euclidean), ... are metric names, not the text
    language's operands C, E or vectors e, h."""
    expr = gb.front.parse_expression("mxm(C, E.T, plus_times)")
    assert {s.name for s in __import__("gbdist").compiler.ir.symbols(expr)} == {"C", "E"}
    v = gb.front.parse_expression("mxv(A, e, plus_times)")
    assert "e" in {s.name for s in __import__("gbdist").compiler.ir.symbols(v)}
    gb.explain("cos")  # and the alias explains its metric


# --- the boolean family ---------------------------------------------------------------


def _bool_rows(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((24, 9)) < 0.4
    X[0] = False  # an empty row
    X[1] = True  # a full row
    X[2] = X[3]  # equal rows
    X[4] = False  # a second empty row
    return X


def _counts(X, Y):
    X, Y = X.astype(bool)[:, None, :], Y.astype(bool)[None, :, :]
    tt = (X & Y).sum(-1).astype(float)
    tf = (X & ~Y).sum(-1).astype(float)
    ft = (~X & Y).sum(-1).astype(float)
    ff = (~X & ~Y).sum(-1).astype(float)
    return tt, tf, ft, ff


def _reference(metric, X, Y):
    """SciPy's cdist; kulczynski1 and sokalmichener (removed from SciPy 1.17) by SciPy's
    own formulas in float64."""
    tt, tf, ft, ff = _counts(X, Y)
    with np.errstate(all="ignore"):
        if metric == "kulczynski1":
            return tt / (tf + ft)
        if metric == "sokalmichener":
            return 2 * (tf + ft) / (tt + ff + 2 * (tf + ft))
        if metric == "matching":
            return ssd.cdist(X, Y, "hamming")
        return ssd.cdist(X, Y, metric)


BOOLEAN = ("yule", "rogerstanimoto", "sokalsneath", "sokalmichener", "kulczynski1", "matching")


@pytest.mark.parametrize("metric", BOOLEAN)
def test_boolean_family_matches_scipy_on_degenerate_rows(metric):
    X, Y = _bool_rows(0), _bool_rows(1)[:17]
    want = _reference(metric, X, Y)
    got = _pd(sps.csr_matrix(X), sps.csr_matrix(Y), metric)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)
    # the self-join (Y omitted) is scikit-learn's where scikit-learn knows the metric: SciPy's
    # pdist in square form, a zero diagonal (sokalsneath of two empty rows: NaN off it);
    # kulczynski1 (gbdist's own here) keeps d(a, a): inf, or NaN for an empty row
    got = _pd(X, metric=metric)
    if metric in ("kulczynski1", "sokalmichener"):
        want = _reference(metric, X, X)
    else:
        from sklearn.metrics import pairwise_distances
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = pairwise_distances(X, metric=metric)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.parametrize("metric", ("yule", "rogerstanimoto", "sokalsneath", "matching"))
def test_boolean_family_against_pdist(metric):
    X = _bool_rows(2)
    X = X[X.any(axis=1)]  # pdist's sokalsneath is 0/0 for two empty rows
    want = ssd.pdist(X, "hamming" if metric == "matching" else metric)
    np.testing.assert_allclose(gb.pdist(X, metric, backend="cpu"), want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("metric", BOOLEAN)
def test_boolean_family_reads_the_nonzero_pattern(metric):
    """Values other than 0/1 count as true (scikit-learn's conversion, with its warning)."""
    from sklearn.exceptions import DataConversionWarning
    rng = np.random.default_rng(3)
    X = np.where(rng.random((10, 8)) < 0.5, rng.normal(size=(10, 8)), 0.0)
    with pytest.warns(DataConversionWarning):
        got = gb.pairwise_distances(X, metric=metric, backend="cpu", dtype=np.float64)
    np.testing.assert_allclose(got, _reference(metric, X != 0, X != 0), rtol=1e-12,
                               equal_nan=True)


@pytest.mark.skipif(not (DATA_DIR / "ml-latest-small").is_dir(),
                    reason=f"{DATA_DIR} not present")
@pytest.mark.parametrize("metric", BOOLEAN)
def test_boolean_family_on_movielens(metric):
    """Who rated what (MovieLens), 150 users: SciPy on the dense boolean pattern."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from benchmarks import datasets
    M, _ = datasets.movielens(DATA_DIR)
    M = M[:150]
    B = M.toarray() != 0
    got = _pd(M, metric=metric)
    np.testing.assert_allclose(got, _reference(metric, B, B), rtol=1e-10, equal_nan=True)
