"""The decision: strategies, expansion ranks, declared overrides, the clamp, errors.

Each decision is checked twice: what the analysis reports (``explain``), and
that the plan it leads to computes the right numbers (against a dense
brute-force float64 reference over *all* k columns).
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
import sympy as sp
from numpy.testing import assert_allclose

import gbdist as gb
from gbdist.compiler import ir
from gbdist.algebra import ops
from gbdist.algebra.proofs import X, Y
from datagen import random_dense

A, B = gb.matrices("A B")


def brute(f, reduce_, a, b):
    """⊕ over every column of f(a_ik, b_jk), dense (unstored entries are 0)."""
    return np.array([[reduce_(f(x, y)) for y in b] for x in a])


def product(expr):
    ex = gb.explain(expr)
    assert len(ex.products) == 1
    return ex.products[0]


# --- named metrics: found by the analysis -------------------------------------


@pytest.mark.parametrize("name,params,strategy,rank", [
    ("manhattan", {}, "union-correction", None),
    ("chebyshev", {}, "two-pass-union", None),
    ("euclidean", {}, "union-correction", 1),
    ("sqeuclidean", {}, "union-correction", 1),
    ("minkowski", {"p": 4}, "union-correction", 3),
    ("minkowski", {"p": 4.0}, "union-correction", 3),
    ("minkowski", {"p": 6}, "union-correction", 5),
    ("minkowski", {"p": 2}, "union-correction", 1),
    ("minkowski", {"p": 3}, "union-correction", None),
    ("minkowski", {"p": 1.5}, "union-correction", None),
    ("hellinger", {}, "union-correction", 1),
    ("cosine", {}, "intersection", 1),
    ("inner_product", {}, "intersection", 1),
    ("canberra", {}, "union-correction", None),
    ("hamming", {}, "union-correction", None),
    ("kl_divergence", {}, "intersection", None),
])
def test_metric_decisions(name, params, strategy, rank):
    ex = gb.explain(name, **params)
    p = ex.products[0]
    assert p.strategy == strategy
    assert p.expansion_rank == rank
    # every proof a rewrite relies on holds (the "vanish" checks are the decision's inputs)
    assert all(q.holds for q in p.proofs if "vanish" not in q.claim)
    assert strategy in str(ex)


@pytest.mark.parametrize("formula,strategy,rank", [
    (lambda x, y: (x - y) ** 2, "union-correction", 1),
    (lambda x, y: (x - y) ** 4, "union-correction", 3),
    (lambda x, y: (x + y) ** 2, "union-correction", 1),
    (lambda x, y: (x - y) ** 2 + x * y, "union-correction", 1),
    (lambda x, y: (gb.sqrt(x) - gb.sqrt(y)) ** 2, "union-correction", 1),
    (lambda x, y: x * y * (x + y), "intersection", 2),
    (lambda x, y: x * y, "intersection", 1),
    (lambda x, y: abs(x - y), "union-correction", None),
    (lambda x, y: abs(x - y) ** 3, "union-correction", None),
])
def test_user_formulas_get_the_same_analysis(formula, strategy, rank):
    """Nothing is written per metric: a user op with the formula gets the decision."""
    op = gb.op("user_f", formula)
    p = product(gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus)))
    assert (p.strategy, p.expansion_rank) == (strategy, rank)
    if rank:
        # The expansion really reproduces g (checked independently of its proof).
        g = sp.sympify(p.g)
        terms = [sp.sympify(a) * sp.sympify(b) for a, b in p.expansion]
        xs = X, Y  # the explanation holds sympy formulas over the real symbols
        pts = np.random.default_rng(0).uniform(0.1, 3.0, (20, 2))
        for a_, b_ in pts:
            sub = {xs[0]: a_, xs[1]: b_}
            assert abs(float(g.subs(sub)) - float(sum(t.subs(sub) for t in terms))) < 1e-9


@pytest.mark.parametrize("formula,add,np_f,np_add", [
    (lambda x, y: (x - y) ** 4, gb.ops.plus, lambda a, b: (a - b) ** 4, np.sum),
    (lambda x, y: x * y * (x + y), gb.ops.plus, lambda a, b: a * b * (a + b), np.sum),
    (lambda x, y: (x + y) ** 2, gb.ops.plus, lambda a, b: (a + b) ** 2, np.sum),
    (lambda x, y: abs(x - y) ** 3, gb.ops.plus, lambda a, b: np.abs(a - b) ** 3, np.sum),
    (lambda x, y: x - y, gb.ops.max, lambda a, b: a - b, np.max),
    (lambda x, y: abs(x - y), gb.ops.min, lambda a, b: np.abs(a - b), np.min),
    (lambda x, y: x + y, gb.ops.max, lambda a, b: a + b, np.max),
    (lambda x, y: x * y, gb.ops.min, lambda a, b: a * b, np.min),
])
def test_every_strategy_computes_the_union_semantics(formula, add, np_f, np_add):
    rng = np.random.default_rng(1)
    Xd, Yd = random_dense(rng, 20, 30), random_dense(rng, 14, 30)
    sr = gb.semiring(gb.op("uf", formula), add)
    D = gb.compile(gb.mxm(A, B.T, sr))(A=sps.csr_matrix(Xd), B=sps.csc_matrix(Yd), backend="cpu")
    assert_allclose(D, brute(np_f, np_add, Xd, Yd), rtol=1e-9, atol=1e-8)


# --- built-in semirings ----------------------------------------------------------


@pytest.mark.parametrize("name,strategy,structural", [
    ("plus_times", "intersection", False),
    ("plus_pair", "intersection", True),
    ("min_plus", "intersection", True),
    ("max_plus", "intersection", True),
    ("max_times", "intersection", True),
    ("min_times", "intersection", True),
    ("max_min", "intersection", True),
    ("lor_land", "intersection", True),
    ("any_pair", "intersection", True),
    ("plus_absdiff", "union-correction", False),
    ("plus_sqdiff", "union-correction", False),
    ("max_absdiff", "two-pass-union", False),
    ("plus_ne", "union-correction", False),
])
def test_builtin_semiring_decisions(name, strategy, structural):
    p = product(gb.mxm(A, B.T, gb.semirings[name]))
    assert p.strategy == strategy
    assert p.structural == structural
    if structural:
        assert "structural" in p.reason


def test_semiring_that_cannot_be_evaluated_sparsely():
    sr = gb.semiring(gb.ops.absdiff, gb.ops.times)
    with pytest.raises(gb.AnalysisError) as e:
        gb.compile(gb.mxm(A, B.T, sr))
    msg = str(e.value)
    assert "cannot be evaluated sparsely" in msg and "absdiff" in msg
    assert "Got:" in msg and "Hint:" in msg and "invertible" in msg
    assert isinstance(e.value, gb.GbdistError)
    with pytest.raises(gb.AnalysisError):
        gb.explain(gb.mxm(A, B.T, sr))
    with pytest.raises(gb.AnalysisError):  # eager evaluation says the same
        gb.mxm(np.eye(3), np.eye(3), sr)


# --- declared annihilators ----------------------------------------------------------


def test_annihilator_none_forbids_the_intersection_shortcut():
    rng = np.random.default_rng(2)
    Xd, Yd = random_dense(rng, 15, 20), random_dense(rng, 12, 20)
    forced = gb.semiring(gb.ops.times, gb.ops.plus, annihilator=None)
    p = product(gb.mxm(A, B.T, forced))
    assert p.strategy == "union-correction"
    assert "annihilator=None" in p.reason and "not the identity" not in p.reason
    assert product(gb.mxm(A, B.T, gb.semirings.plus_times)).strategy == "intersection"
    assert_allclose(gb.mxm(Xd, Yd.T, forced), Xd @ Yd.T, atol=1e-12)


def test_reason_names_the_side_that_does_not_vanish():
    one_sided = gb.op("one_sided", lambda x, y: x * y + y)  # f(x, 0) = 0 but f(0, y) = y
    p = product(gb.mxm(A, B.T, gb.semiring(one_sided, gb.ops.plus)))
    assert p.strategy == "union-correction"
    assert "f(0, y) = y is not the identity 0" in p.reason and "f(x, 0)" not in p.reason
    both = product(gb.mxm(A, B.T, gb.semirings.plus_absdiff))
    assert "f(x, 0) = |x| and f(0, y) = |y| are not the identity 0" in both.reason


def test_declared_annihilator_that_does_not_hold_is_an_override():
    """semiring(absdiff, plus, annihilator=0): structural semantics as declared."""
    rng = np.random.default_rng(3)
    Xd, Yd = random_dense(rng, 15, 20), random_dense(rng, 12, 20)
    sr = gb.semiring(gb.ops.absdiff, gb.ops.plus, annihilator=0)
    p = product(gb.mxm(A, B.T, sr))
    assert p.strategy == "intersection" and p.structural
    assert p.override and "annihilator=0" in p.override
    assert "OVERRIDE" in str(gb.explain(gb.mxm(A, B.T, sr)))
    D = gb.mxm(sps.csr_matrix(Xd), sps.csr_matrix(Yd).T, sr)
    both = [[(x != 0) & (y != 0) for y in Yd] for x in Xd]
    R = np.array([[np.abs(x - y)[both[i][j]].sum() for j, y in enumerate(Yd)]
                  for i, x in enumerate(Xd)])
    assert_allclose(D, R, atol=1e-12)
    # without the declaration, the union semantics
    assert_allclose(gb.mxm(Xd, Yd.T, gb.semirings.plus_absdiff),
                    brute(lambda a, b: np.abs(a - b), np.sum, Xd, Yd), atol=1e-12)


def test_declared_annihilator_that_holds_has_no_override():
    p = product(gb.mxm(A, B.T, gb.semiring(gb.ops.times, gb.ops.plus, annihilator=0)))
    assert p.strategy == "intersection" and not p.override


# --- fills from apply() --------------------------------------------------------------


def test_fill_changes_the_decision():
    """exp(A) has fill exp(0) = 1, so x·y no longer annihilates: union correction."""
    rng = np.random.default_rng(4)
    Xd, Yd = random_dense(rng, 10, 15), random_dense(rng, 8, 15)
    expr = gb.mxm(gb.apply(ops.exp, A), B.T, gb.semirings.plus_times)
    p = product(expr)
    assert p.strategy == "union-correction" and p.expansion_rank == 1
    D = gb.compile(expr)(A=Xd, B=Yd, backend="cpu")
    assert_allclose(D, np.exp(Xd) @ Yd.T, rtol=1e-10)
    expr2 = gb.mxm(gb.apply(ops.exp, A), gb.apply(ops.exp, B).T, gb.semirings.max_absdiff)
    assert product(expr2).strategy == "two-pass-union"
    assert_allclose(gb.compile(expr2)(A=Xd, B=Yd), brute(lambda a, b: np.abs(a - b), np.max,
                                                         np.exp(Xd), np.exp(Yd)), rtol=1e-10)


# --- the clamp -------------------------------------------------------------------------


def test_clamp_only_when_f_is_proven_nonnegative():
    clamped = product(gb.mxm(A, B.T, gb.semirings.plus_absdiff))
    assert clamped.clamped and "clamp" in str(clamped)
    plan = gb.compile(gb.mxm(A, B.T, gb.semirings.plus_absdiff)).plan
    assert isinstance(plan.epilogue, ir.Pointwise) and plan.epilogue.fn == "maximum"
    assert plan.epilogue.args[1].same(ir.Const(0.0))
    minus = gb.semiring(gb.ops.minus, gb.ops.plus)
    p = product(gb.mxm(A, B.T, minus))
    assert p.strategy == "union-correction" and not p.clamped
    rng = np.random.default_rng(5)
    Xd = random_dense(rng, 10, 12)
    D = gb.mxm(Xd, Xd.T, minus)
    assert (D < 0).any()  # a signed sum is not clamped
    assert_allclose(D, brute(lambda a, b: a - b, np.sum, Xd, Xd), atol=1e-12)


# --- mxv, reductions, the plan --------------------------------------------------------


@pytest.mark.parametrize("sr,np_f,np_add", [
    (gb.semirings.plus_times, lambda a, b: a * b, np.sum),
    (gb.semirings.plus_absdiff, lambda a, b: np.abs(a - b), np.sum),
    (gb.semirings.max_absdiff, lambda a, b: np.abs(a - b), np.max),
    (gb.semiring(gb.ops.minus, gb.ops.min), lambda a, b: a - b, np.min),
])
def test_mxv_strategies(sr, np_f, np_add):
    rng = np.random.default_rng(6)
    Xd = random_dense(rng, 25, 30)
    v = rng.normal(size=30)
    v[::4] = 0.0  # zeros in a dense vector are values
    y = gb.mxv(sps.csr_matrix(Xd), v, sr, backend="cpu")
    assert y.shape == (25,)
    assert_allclose(y, brute(np_f, np_add, Xd, v[None, :])[:, 0], atol=1e-12)


def test_plan_steps_for_manhattan():
    plan = gb.compile(gb.mxm(A, B.T, gb.semirings.plus_absdiff)).plan
    kinds = sorted(s.kind for s in plan.steps)
    assert kinds == ["col", "matrix", "row"]  # intersection + two row norms
    assert any(isinstance(s.node, ir.Intersect) for s in plan.steps)
    assert sum(isinstance(s.node, ir.RowReduce) for s in plan.steps) == 2


def test_plans_are_cached_by_structure():
    e1 = gb.mxm(A, B.T, gb.semiring(gb.ops.absdiff, gb.ops.plus))
    e2 = gb.mxm(*gb.matrices("A B")[:1], gb.matrices("B").T, gb.semirings.plus_absdiff)
    assert e1.key == e2.key
    assert gb.compile(e1).plan is gb.compile(e2).plan


def test_reduce_uses_the_fill_for_unstored_entries():
    rng = np.random.default_rng(7)
    Xd = random_dense(rng, 12, 9)
    S = sps.csr_matrix(Xd)
    assert_allclose(gb.reduce(S, gb.ops.plus), Xd.sum(1))
    assert_allclose(gb.reduce(S, gb.ops.max), Xd.max(1))
    assert_allclose(gb.reduce(S, gb.ops.min), Xd.min(1))
    assert_allclose(gb.reduce(S, gb.ops.times), Xd.prod(1))
    expr = gb.reduce(gb.apply(ops.exp, A), gb.ops.plus)
    assert_allclose(gb.compile(expr)(A=S), np.exp(Xd).sum(1))


def test_typing_errors():
    with pytest.raises(gb.TypeCheckError) as e:
        gb.compile(gb.mxm(A, A.T, gb.semirings.plus_times) / gb.reduce(A, gb.ops.plus))
    assert "ambiguous" in str(e.value) and "Hint:" in str(e.value)
    with pytest.raises(gb.TypeCheckError):
        gb.compile(gb.sqrt(A))
    with pytest.raises(gb.TypeCheckError):
        gb.compile("mxm(A, B.T)")
