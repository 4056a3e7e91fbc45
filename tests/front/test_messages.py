"""Issue 13's graded messages: each says what is wrong, where, and how to fix it.

Every test asserts the new text and, where the message proposes a fix, runs the
fix against an independent reference (SciPy / NumPy).
"""
from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist

import gbdist as gb


@pytest.fixture
def square():
    rng = np.random.default_rng(13)
    X = rng.random((6, 6))
    X[X < 0.4] = 0
    return X


# --- `==` on an expression ----------------------------------------------------------


def test_eq_between_expressions_in_a_metric_names_gb_eq(isolated_definitions):
    with pytest.raises(gb.DefinitionError) as info:
        gb.define_metric("eq_bad", lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_times) == 0)
    msg = str(info.value)
    assert "metric 'eq_bad' returned the Python value False" in msg
    assert "does not compare their values" in msg and "gb.eq(a, b)" in msg


def test_eq_as_the_condition_of_where(square, isolated_definitions):
    A, B = gb.matrices("A B")
    P = gb.mxm(A, B.T, gb.semirings.plus_times)
    with pytest.raises(gb.TypeCheckError) as info:
        gb.where(P == 0, 1, P)
    msg = str(info.value)
    assert "the condition of gb.where(...) is the Python value False" in msg
    assert "gb.eq(a, b)" in msg
    # where(False, 1, 0): nothing of A or B is left, a scalar formula comes back
    with pytest.raises(gb.DefinitionError) as info:
        gb.define_metric("eq_bad2", lambda A, B: gb.where(gb.mxm(A, B.T, gb.semirings.plus_times)
                                                          == 0, 1, 0))
    msg = str(info.value)
    assert "returned a scalar formula" in msg and "gb.eq(a, b)" in msg
    # the fix the messages propose computes what was meant
    fixed = gb.where(gb.eq(P, 0), 1, 0)
    got = np.asarray(gb.pairwise_distances(square, square[:4], metric=fixed, backend="cpu"))
    assert_allclose(got, (square @ square[:4].T == 0).astype(float))


# --- gb.semirings["min_pluss"] ---------------------------------------------------------


def test_unknown_semiring_is_typed_and_suggests():
    with pytest.raises(gb.UnknownNameError) as info:
        gb.semirings["min_pluss"]
    assert isinstance(info.value, KeyError)
    msg = str(info.value)
    assert "unknown semiring 'min_pluss' in gb.semirings" in msg
    assert "did you mean 'min_plus'?" in msg and "gb.semiring(mul, add)" in msg
    with pytest.raises(AttributeError) as info:
        gb.semirings.min_pluss
    assert isinstance(info.value, gb.UnknownNameError) and "did you mean 'min_plus'?" in str(info.value)
    assert getattr(gb.semirings, "min_pluss", None) is None and hasattr(gb.semirings, "min_plus")
    assert gb.semirings["min_plus"] is gb.semirings.min_plus


# --- python-graphblas's argument order ------------------------------------------------


@pytest.mark.parametrize("monoid", ["plus", "max"])
def test_graphblas_argument_order_is_named(monoid, square):
    add = getattr(gb.ops, monoid)
    with pytest.raises(gb.DefinitionError) as info:
        gb.semiring(add, gb.ops.absdiff)
    msg = str(info.value)
    assert f"semiring({monoid}, absdiff): 'absdiff' is not a monoid, so it cannot be the add" in msg
    assert "python-graphblas's order (the monoid first)" in msg
    assert "multiply op (⊗) first, then the add monoid (⊕)" in msg
    assert f"Hint: write semiring(absdiff, {monoid})" in msg
    A, B = gb.matrices("A B")
    fixed = gb.mxm(A, B.T, gb.semiring(gb.ops.absdiff, add))  # the hint, applied
    got = np.asarray(gb.pairwise_distances(square, square, metric=fixed, backend="cpu"))
    assert_allclose(got, cdist(square, square, "cityblock" if monoid == "plus" else "chebyshev"),
                    atol=1e-12)


def test_a_true_non_monoid_keeps_its_own_message():
    with pytest.raises(gb.DefinitionError) as info:
        gb.semiring(gb.ops.absdiff, gb.ops.absdiff)
    assert "is not a monoid" in str(info.value) and "graphblas" not in str(info.value)


# --- a missing .T ----------------------------------------------------------------------


def test_missing_transpose_is_refused_in_a_metric(square):
    A, B = gb.matrices("A B")
    wrong = gb.mxm(A, B, gb.semiring(gb.ops.absdiff, gb.ops.plus))
    with pytest.raises(gb.TypeCheckError) as info:
        gb.pairwise_distances(square, square, metric=wrong, backend="cpu")
    msg = str(info.value)
    assert "mxm(A, B, semiring(absdiff, plus)) is missing a .T on B" in msg
    assert "B's rows would be summed over" in msg
    assert "Hint: write mxm(A, B.T, semiring(absdiff, plus))" in msg
    with pytest.raises(gb.TypeCheckError, match="has a .T too many on A"):
        gb.pairwise_distances(square, square, metric=gb.mxm(A.T, B.T, gb.semirings.plus_times))
    right = gb.mxm(A, B.T, gb.semiring(gb.ops.absdiff, gb.ops.plus))
    got = np.asarray(gb.pairwise_distances(square, square, metric=right, backend="cpu"))
    assert_allclose(got, cdist(square, square, "cityblock"), atol=1e-12)


def test_missing_transpose_in_a_metric_file_points_at_it(isolated_definitions):
    with pytest.raises(gb.TypeCheckError) as info:
        gb.define("metric no_t(A, B) = mxm(A, B, plus_absdiff)\n", "m.gbd")
    msg = str(info.value)
    assert msg.startswith("m.gbd:1:21: mxm(A, B, plus_absdiff) is missing a .T on B")
    assert "^^^" in msg and "Hint: write mxm(A, B.T, plus_absdiff)" in msg


def test_a_graph_product_without_roles_keeps_mxm_a_b():
    """Outside a metric (no roles), mxm(A, B) is the ordinary product A @ B."""
    A, B = gb.matrices("A B")
    ex = gb.explain(gb.mxm(A, B, gb.semirings.plus_times))
    assert ex.products[0].strategy == "intersection"


def test_a_row_function_metric_is_named_as_such():
    """scikit-learn's metric=callable(u, v) is refused with what to write instead."""
    X = np.eye(3)
    with pytest.raises(gb.MetricTypeError, match="looks like a row function") as e:
        gb.pairwise_distances(X, metric=lambda u, v: abs(u - v).sum())
    assert "lambda A, B: gb.mxm(A, B.T" in str(e.value)
    assert "sklearn.metrics.pairwise_distances" in str(e.value)


def test_the_cpu_fall_back_is_announced_once_with_its_reason(caplog, monkeypatch):
    import logging

    from gbdist.backends import cuda
    from gbdist.runtime import core
    monkeypatch.setattr(core, "_ANNOUNCED", [])
    monkeypatch.setattr(cuda, "unavailable_reason", lambda: "CuPy is not installed (test)")
    X = np.eye(3)
    with caplog.at_level(logging.INFO, logger="gbdist"):
        first = gb.pairwise_distances(X, metric="euclidean")
        gb.pairwise_distances(X, metric="euclidean")
    said = [r for r in caplog.records if r.name == "gbdist"]
    assert len(said) == 1 and "runs on the CPU: CuPy is not installed (test)" in said[0].getMessage()
    assert said[0].levelno == logging.INFO  # not printed on every run (issue 27)
    assert np.allclose(first, np.sqrt(2) * (1 - np.eye(3)))


def test_newcomer_slips_get_messages_that_name_the_fix():
    """Issue 27: a misspelt op, gb.mxm without its semiring, a misspelt keyword and
    scikit-learn's n_neighbors= each say what to write instead."""
    with pytest.raises(AttributeError, match=r"gb.ops has no op 'absdif'; did you mean gb.ops.absdiff\?"):
        gb.ops.absdif
    assert hasattr(gb.ops, "absdiff") and not hasattr(gb.ops, "absdif")
    A, B = gb.matrices("A B")
    with pytest.raises(gb.TypeCheckError, match="needs a semiring as its third argument"):
        gb.mxm(A, B.T)
    X = np.eye(3)
    with pytest.raises(gb.InputError) as e:
        gb.pairwise_distances(X, X, metrc="cosine")
    assert "pairwise_distances() has no keyword 'metrc'" in str(e.value)
    assert "did you mean metric=?" in str(e.value)
    with pytest.raises(gb.InputError) as e:
        gb.knn(X, n_neighbors=2)
    assert "knn() has no keyword 'n_neighbors'" in str(e.value) and "did you mean k=?" in str(e.value)
    with pytest.raises(gb.InputError, match="metric 'minkowski' has no parameter 'q'"):
        gb.pairwise_distances(X, metric="minkowski", q=3)  # not close to a keyword: the metric's
