"""Proofs: sympy verdicts, the seeded numeric fallback, refutations, and that a
rewrite whose check fails is never applied."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from numpy.testing import assert_allclose

import gbdist as gb
from gbdist.algebra import proofs
from gbdist.compiler import analysis
from gbdist.algebra.proofs import X, Y
from datagen import random_dense

A, B = gb.matrices("A B")


def test_sympy_proves_an_identity():
    p = proofs.check("square of a difference", (X - Y) ** 2, X**2 - 2 * X * Y + Y**2)
    assert p.holds and p.method == "sympy" and p.detail == ""
    assert "holds" in str(p) and "sympy" in str(p)


def test_domain_assumptions_matter():
    assert proofs.check("", sp.sqrt(X**2), X, "nonnegative").holds
    p = proofs.check("", sp.sqrt(X**2), X, "real")
    assert not p.holds and "counterexample" in p.detail


def test_boolean_identities_are_checked_exhaustively():
    lor = gb.ops.lor.formula
    p = proofs.check("lor is idempotent", lor.xreplace({Y: X}), sp.Piecewise((1, sp.Ne(X, 0)), (0, True)),
                     "boolean")
    assert p.holds and p.method.startswith("exhaustive")


@pytest.mark.parametrize("lhs,rhs", [
    (sp.Max(X, Y) + sp.Min(X, Y), X + Y),
    (sp.Abs(X - Y), sp.Max(X, Y) - sp.Min(X, Y)),
    (sp.Piecewise((X - Y, X > Y), (Y - X, True)), sp.Abs(X - Y)),
])
def test_numeric_fallback_is_recorded_as_such(lhs, rhs):
    p = proofs.check("", lhs, rhs)
    assert p.holds
    assert p.method.startswith("numeric (seeded") and str(proofs.NUMERIC_POINTS) in p.method
    assert "numeric" in str(p)


def test_numeric_fallback_inside_an_analysis():
    """max(x, y)·min(x, y) is x·y, but sympy cannot decide that f(x, 0) = 0."""
    op = gb.op("maxmin", lambda x, y: gb.maximum(x, y) * gb.minimum(x, y))
    ex = gb.explain(gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus)))
    assert ex.products[0].strategy == "intersection"
    methods = {p.method for p in ex.proofs}
    assert any(m.startswith("numeric (seeded") for m in methods)
    # told apart from a proof in the text: a numeric check is labelled as such
    assert "checked numerically, not proved (seeded" in str(ex)
    assert any(p.kind == "numeric" for p in ex.proofs)
    rng = np.random.default_rng(0)
    Xd, Yd = random_dense(rng, 10, 12), random_dense(rng, 8, 12)
    assert_allclose(gb.mxm(Xd, Yd.T, gb.semiring(op, gb.ops.plus)), Xd @ Yd.T, atol=1e-12)


@pytest.mark.parametrize("lhs,rhs", [
    ((X + Y) ** 2, X**2 + Y**2),
    (sp.Abs(X + Y), sp.Abs(X) + sp.Abs(Y)),
    (sp.Max(X, Y), X),
])
def test_false_identity_is_refuted(lhs, rhs):
    p = proofs.check("a false claim", lhs, rhs)
    assert not p.holds
    assert "counterexample" in p.method and "x = " in p.detail and "y = " in p.detail
    assert "FAILS" in str(p)
    # the counterexample really is one
    xs = float(p.detail.split("x = ")[1].split(",")[0])
    ys = float(p.detail.split("y = ")[1].split(":")[0])
    sub = {X: xs, Y: ys}
    assert abs(float(lhs.subs(sub)) - float(rhs.subs(sub))) > 1e-9 * (1 + abs(float(lhs.subs(sub))))


def test_numeric_check_is_reproducible():
    lhs, rhs = sp.Max(X, Y) + sp.Min(X, Y), X + Y
    assert proofs._numeric(lhs, rhs, "real") == proofs._numeric(lhs, rhs, "real")


def test_is_nonnegative_only_when_proven():
    assert proofs.is_nonnegative(sp.Abs(X - Y))
    assert proofs.is_nonnegative((X - Y) ** 2)
    assert proofs.is_nonnegative((sp.sqrt(X) - sp.sqrt(Y)) ** 2, "nonnegative")
    assert not proofs.is_nonnegative(X - Y)
    assert not proofs.is_nonnegative(X * Y)


@pytest.mark.parametrize("name,params", [
    ("manhattan", {}), ("euclidean", {}), ("minkowski", {"p": 4}), ("hellinger", {}),
    ("canberra", {}), ("jensenshannon", {}), ("cosine", {}), ("chebyshev", {}),
])
def test_builtin_rewrites_are_proven_by_sympy(name, params):
    ex = gb.explain(name, **params)
    rewrites = [p for p in ex.proofs if "vanish" not in p.claim]
    assert rewrites or ex.products[0].strategy == "two-pass-union"
    for p in rewrites:
        assert p.holds and p.method == "sympy", str(p)
    # the decision's inputs: f(x, 0) = 0 is refuted for a union metric
    if ex.products[0].strategy != "intersection":
        assert any(not p.holds and "vanish" in p.claim for p in ex.proofs)
    assert all(str(p) in str(ex) for p in ex.proofs)
    # the refutations are the decision's inputs: labelled as expected, never as a failure
    assert "FAILS" not in str(ex)
    assert all(p.kind == "refuted-as-expected" for p in ex.proofs if not p.holds)


def test_expansion_whose_proof_fails_is_not_applied(monkeypatch, fresh_caches):
    """A (deliberately) wrong decomposition is refuted and the plan runs without it."""
    monkeypatch.setattr(analysis, "separable", lambda g, dom: ((X, -3 * Y),))
    ex = gb.explain(gb.mxm(A, B.T, gb.semirings.plus_sqdiff))
    p = ex.products[0]
    assert p.strategy == "union-correction" and p.expansion_rank is None
    failed = [q for q in ex.proofs if "expansion" in q.claim]
    assert len(failed) == 1 and not failed[0].holds
    rng = np.random.default_rng(1)
    Xd, Yd = random_dense(rng, 12, 15), random_dense(rng, 9, 15)
    D = gb.mxm(Xd, Yd.T, gb.semirings.plus_sqdiff)
    R = ((Xd[:, None, :] - Yd[None, :, :]) ** 2).sum(-1)
    assert_allclose(D, R, rtol=1e-10, atol=1e-10)


def test_union_correction_whose_proof_fails_is_not_applied(monkeypatch, fresh_caches):
    real_check = analysis.check

    def broken(claim, lhs, rhs, domain="real"):
        p = real_check(claim, lhs, rhs, domain)
        if "union-by-correction identity" in claim:
            return proofs.Proof(p.claim, p.lhs, p.rhs, p.domain, "numeric counterexample",
                                False, "injected by the test")
        return p

    monkeypatch.setattr(analysis, "check", broken)
    prog = gb.compile(gb.mxm(A, B.T, gb.semirings.plus_absdiff))
    a = prog.plan.products[0].analysis
    # not applied: the union is summed directly (the definition itself), and why is recorded
    assert a.strategy == "two-pass-union" and a.expansion is None
    assert "does not hold" in a.reason and "injected by the test" in a.reason
    assert any(not p.holds and "union-by-correction identity" in p.claim for p in a.proofs)
    rng = np.random.default_rng(2)
    Xd, Yd = random_dense(rng, 7, 11), random_dense(rng, 5, 11)
    got = prog(A=Xd, B=Yd, backend="cpu")
    assert_allclose(got, np.abs(Xd[:, None, :] - Yd[None, :, :]).sum(-1), rtol=1e-12, atol=1e-12)


def test_proofs_are_cached(monkeypatch):
    proofs._check.cache_clear()
    calls = []
    decide = proofs._decide
    monkeypatch.setattr(proofs, "_decide", lambda *a: calls.append(a) or decide(*a))
    proofs.check("", (X - Y) ** 2, X**2 - 2 * X * Y + Y**2)
    proofs.check("other words", (X - Y) ** 2, X**2 - 2 * X * Y + Y**2)
    assert len(calls) == 1


def test_a_check_cut_short_by_its_budget_stays_marked(monkeypatch):
    """Under load sympy may run out of time and the numeric check decide: that method
    depends on the machine, so every use of the remembered answer counts as cut short
    (nothing derived from it is stored on disk)."""
    from gbdist.algebra import records
    proofs._check.cache_clear()
    before = records.cut_short()
    with proofs.analysis_budget(0.0):  # every symbolic step is out of time at once
        p = proofs.check("", (X - Y) ** 2, X**2 - 2 * X * Y + Y**2)
    assert p.holds and p.method.startswith("numeric")
    after = records.cut_short()
    assert after > before
    again = proofs.check("", (X - Y) ** 2, X**2 - 2 * X * Y + Y**2)  # remembered, as cut
    assert again.method == p.method and records.cut_short() > after


def test_symbolic_budget_interrupts_and_restores_an_outer_timer():
    import signal
    import time

    with pytest.raises(proofs.BudgetExceeded):
        with proofs.budget(0.1):
            time.sleep(2)
    fired = []
    old = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with proofs.budget(5):  # an enclosing timer caps the inner budget and is re-armed
            pass
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0
        time.sleep(0.8)
        assert fired == [1]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_special_points_include_constants_and_condition_roots():
    v = proofs.special_values("real", sp.Piecewise((1, sp.Eq(2 * X, sp.Rational(3, 7))), (X * 0.125, True)))
    assert 3 / 14 in v and 0.125 in v and -0.125 in v
    assert np.nextafter(0.125, 1) in v and 1e-310 in v


def test_tiny_constant_is_not_close_to_zero():
    p = proofs.check("", X * Y + sp.Rational(5e-9), X * Y)
    assert not p.holds
    assert proofs.check("", (X - Y) ** 4, X**4 - 4 * X**3 * Y + 6 * X**2 * Y**2 - 4 * X * Y**3 + Y**4).holds


def test_a_log_beside_wide_or_huge_numbers_is_left_to_the_numeric_checks(monkeypatch):
    """sympy's logcombine turns c·log(a) into log(a^c): with c = 1/5e-9 that is minutes of
    big-integer arithmetic inside one C call (no time budget can stop it). Such formulas
    skip sympy; the special points and the seeded numeric check decide."""
    calls = [0]
    real = sp.simplify

    def counting(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    slow = [X / sp.Rational(5e-9) + sp.log(sp.Rational(5, 2)) * Y,   # a huge coefficient
            X + sp.log(1 + sp.Rational(1e-310))]                       # a 1,030-bit number
    monkeypatch.setattr(proofs.sp, "simplify", counting)
    for e in slow:
        assert not proofs.small_enough(e)
        assert proofs.simplify(e) == e and calls[0] == 0
    assert proofs.small_enough(X * sp.log(X / Y) + sp.Rational(1, 2))  # KL, Jensen-Shannon stay


@pytest.mark.parametrize("lhs, rhs, shown, hidden", [
    (sp.sqrt(X) ** 2, 0, "x = 1", "y ="),          # f(x, 0) = x: y plays no part
    (sp.Abs(Y), 0, "y = 1", "x ="),
    (X * Y + 1, 1, "x = 1, y = 1", "e-3"),
])
def test_a_counterexample_is_plain_and_names_only_the_variables_used(lhs, rhs, shown, hidden):
    """Issue 27: counterexamples at x = 1e-310, or with a y the formula does not read."""
    p = proofs.check("a false claim", lhs, rhs, "nonnegative")
    assert not p.holds and f"counterexample {shown}:" in p.detail, p.detail
    assert hidden not in p.detail.split(":")[0]
