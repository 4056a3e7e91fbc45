"""What a teacher reads in ``gb.explain`` (issue 27): the identical-rows line names its row
summaries and speaks about the user's input, counterexamples are plain numbers, a
simplified formula stands beside the literal one only when sympy proves them equal, and
metrics that add comparisons (correlation) are explained."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import scipy.sparse as sps
import sympy as sp

import gbdist as gb
from gbdist.algebra.proofs import X, Y, plain_number
from gbdist.compiler import exact
from gbdist.compiler.explain_math import text
from gbdist.errors import DomainError
from gbdist.runtime import invariance


def _rows_line(ex) -> str:
    return next(line for line in str(ex).splitlines() if "identical rows" in line)


def test_identical_rows_line_names_its_row_summaries():
    line = _rows_line(gb.explain("inner_product"))
    assert "d(a, a) is not a constant" in line
    assert "r1 = Σ_k a_k²" in line          # what r1 is, said beside it
    assert "S0" not in line and "→" not in line and "**" not in line


def test_identical_rows_line_of_a_zero_metric_is_not_a_tautology():
    line = _rows_line(gb.explain("hellinger"))
    assert "d(a, a) = 0 wherever it is finite" in line
    assert "0 → 0" not in line and "checked numerically" in line


def test_a_user_metric_with_a_domain_is_checked_on_data_of_its_domain():
    gb.define("""
    op sqrt_of_x(x) = sqrt(x)
    metric root_gap(A, B) = reduce(apply(sqrt_of_x, A), plus) - reduce(apply(sqrt_of_x, B), plus)
    """)
    line = _rows_line(gb.explain("root_gap"))
    assert "Error" not in line                      # no internal exception text
    assert "d(a, a) = 0 wherever it is finite" in line and "checked numerically" in line
    X_ = sps.random(6, 5, density=0.6, format="csr", random_state=3)
    D = gb.pairwise_distances(X_, X_, metric="root_gap", dtype=np.float64)
    s = np.sqrt(X_.toarray()).sum(axis=1)
    assert np.allclose(D, s[:, None] - s[None, :], atol=1e-12)   # NumPy reference
    assert np.all(np.diagonal(D) == 0)


def test_a_failed_numeric_check_is_worded_for_a_user(monkeypatch):
    def refuse(plan, inputs, condition=True):
        raise DomainError("op 'q' is defined for nonnegative inputs only", got="a negative value")
    monkeypatch.setattr(invariance, "_reference", refuse)
    A, B = gb.matrices("A B")
    plan = gb.explain(gb.mxm(A, B.T, gb.semiring(gb.ops.sqdiff, gb.ops.plus))).plan
    ok, how = invariance.check_self_value(plan, 0.0)
    assert not ok
    assert how.startswith("the check could not run the metric on random rows")
    assert "op 'q' is defined for nonnegative inputs only" in how
    assert "DomainError" not in how and "Got:" not in how


def test_counterexamples_are_plain_numbers(tmp_path):
    assert [plain_number(v) for v in (1.0, -2.0, 0.5, np.log(2), np.inf, -np.inf, np.nan, 1e-310)] \
        == ["1", "-2", "0.5", "0.693147", "∞", "-∞", "NaN", "1e-310"]
    # in a fresh process over an empty cache: what a first explain shows (an explanation
    # stored by an earlier analysis whose search was cut short by its time budget may show
    # fewer counterexamples)
    code = ("import gbdist as gb; print(gb.explain('hellinger')); print('@@'); "
            "print(gb.explain('kl_divergence'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600, env={**os.environ, "GBDIST_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr[-2000:]
    s, kl = r.stdout.split("@@")
    assert "(counterexample x = 1: 1 vs 0)" in s and "(counterexample y = 1: 1 vs 0)" in s
    assert "(counterexample x = 1: ∞ vs 0)" in kl
    for name in ("manhattan", "chebyshev", "jensenshannon", "canberra", "hamming"):
        s = str(gb.explain(name))
        assert "1e-310" not in s and "=1.0" not in s
        # only the variables the formula reads: f(x, 0) names x alone
        for line in s.splitlines():
            if "f(x, 0) = identity" in line and "counterexample" in line:
                assert "y =" not in line.split("counterexample", 1)[1]


def _values(e, xs):
    f = sp.lambdify([X], e, "numpy")
    with np.errstate(all="ignore"):
        return np.broadcast_to(np.asarray(f(xs), dtype=float), xs.shape)


def test_simplified_form_beside_the_literal_one_is_equal_to_it():
    ex = gb.explain("hellinger")
    q = next(q for q in ex.proofs if q.claim.startswith("f(x, 0)"))
    assert q.simple is not None and text(q.simple) == "x"
    assert "(√x - √0)² (= x) = 0" in str(ex)
    xs = np.linspace(0.0, 9.0, 37)
    assert np.allclose(_values(q.lhs, xs), _values(q.simple, xs))     # NumPy, as written
    js = gb.explain("jensenshannon")
    q = next(q for q in js.proofs if q.claim.startswith("f(x, 0)"))
    assert q.simple is not None
    assert np.allclose(_values(q.lhs, xs[1:]), xs[1:] * np.log(2.0))


def test_no_simplified_form_where_the_literal_one_differs_at_a_point():
    from gbdist.compiler.explain_proofs import simpler
    with sp.evaluate(False):
        e = X / X          # 1 except at x = 0 (NaN): not provably equal to 1
    assert simpler(e, "real") is None
    assert simpler(X, "real") is None  # nothing shorter


def test_correlation_is_explained_with_its_comparisons_as_brackets():
    ex = gb.explain("correlation")
    s = str(ex)
    assert "[S1 = S2] + [S3 = S4] > 0" in s
    assert "Relational" not in s and "ITE" not in s
    assert "\\left[S_{1} = S_{2}\\right]" in ex.to_markdown()


def test_the_where_unfolding_error_prints_mathematics():
    from gbdist.algebra.formulas import condition
    from gbdist.errors import DefinitionError
    c = sp.Implies(sp.Piecewise((X > 0, Y > 0), (X < 0, True)), Y > 1)
    try:
        condition(c)
    except DefinitionError as e:
        assert "cannot unfold" in e.message
        assert "Piecewise(" not in e.got and "**" not in e.got and "{x > 0 if y > 0" in e.got
    else:
        raise AssertionError("no error for a where() inside an implication")
