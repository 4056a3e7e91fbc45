"""The float32 rounding analysis (gbdist/algebra/rounding.py): what it accepts and
refuses, and that every bound it proves holds when the formula is evaluated in
float32 (NumPy's IEEE float32 arithmetic) against float64 on adversarial inputs."""
import numpy as np
import pytest
import sympy as sp

import gbdist as gb
from gbdist.algebra.formulas import X, Y
from gbdist.algebra.rounding import EXPONENT, float_bound
from gbdist.compiler.plan import relative_products
from gbdist.pairwise import metric_program

x, y = X, Y
CANBERRA = sp.Piecewise((0, sp.Eq(sp.Abs(x) + sp.Abs(y), 0)),
                        (sp.Abs(x - y) / (sp.Abs(x) + sp.Abs(y)), True))
ACCEPTED = {
    "absdiff": (sp.Abs(x - y), 1),
    "sqdiff": ((x - y) ** 2, 3),
    "abssum": (sp.Abs(x + y), 1),
    "canberra": (CANBERRA, 4),
    "scaled": (2 * x * y / 3, 3),  # 2/3 is not exact in float32: one more rounding
    "harmonic": (sp.Piecewise((0, sp.Eq(x + y, 0)), (x * y / (x + y), True)), 4),
}
INDICATORS = -sp.Piecewise((0, sp.Eq(x, 0)), (1, True)) - sp.Piecewise((0, sp.Eq(y, 0)), (1, True))


def _inputs(rng, n=200_000, e=EXPONENT):
    """Pairs in the covered range: zeros, equal and nearly equal values, both signs,
    the range's extreme exponents and random ones."""
    mag = np.exp2(rng.uniform(-e, e, n)).astype(np.float32)
    a = mag * rng.choice([-1, 1], n).astype(np.float32)
    b = np.exp2(rng.uniform(-e, e, n)).astype(np.float32) * rng.choice([-1, 1], n).astype(np.float32)
    near = a * (1 + rng.integers(-4, 5, n).astype(np.float32) * np.float32(2 ** -23))
    b = np.where(rng.random(n) < 0.3, near, b).astype(np.float32)
    b = np.where(rng.random(n) < 0.05, a, b).astype(np.float32)
    a = np.where(rng.random(n) < 0.05, 0, a).astype(np.float32)
    b = np.where(rng.random(n) < 0.05, 0, b).astype(np.float32)
    edge = np.float32([2.0 ** -e, 2.0 ** e, -(2.0 ** e), 2.0 ** -e * 1.5, 0])
    return np.concatenate([a, np.repeat(edge, 5)]), np.concatenate([b, np.tile(edge, 5)])


def _max_rel_error(expr, domain="real"):
    rng = np.random.default_rng(3)
    a, b = _inputs(rng)
    if domain == "nonnegative":
        a, b = np.abs(a), np.abs(b)
    fn = sp.lambdify((x, y), expr, "numpy")
    with np.errstate(all="ignore"):
        got = np.asarray(fn(a, b))
        ref = np.asarray(fn(a.astype(np.float64), b.astype(np.float64)))
    assert got.dtype == np.float32  # the evaluation really is float32
    ok = ref != 0
    assert np.all(got[~ok] == 0)  # zeros are exact
    return float(np.max(np.abs(got[ok].astype(np.float64) - ref[ok]) / np.abs(ref[ok])))


@pytest.mark.parametrize("name", [n for n, (_, k) in ACCEPTED.items() if k is not None])
def test_bound_holds_in_float32(name):
    expr, k = ACCEPTED[name]
    bound = float_bound(expr)
    assert bound is not None and bound.k == k
    err = _max_rel_error(expr)
    assert err <= bound.relative_error * (1 + 1e-6), (err, bound.describe())


def test_small_integer_sums_are_exact():
    assert float_bound(INDICATORS).k == 0  # canberra's h: −[x ≠ 0] − [y ≠ 0]
    big = float_bound(INDICATORS * 2 ** 23 + 2 ** 23)  # may reach 2^24: not exact
    assert big is None or big.k > 0


def test_signs_are_proven():
    assert float_bound(sp.Abs(x - y)).nonnegative
    assert float_bound((x - y) ** 2).nonnegative
    assert float_bound(CANBERRA).nonnegative
    assert not float_bound(x * y).nonnegative
    assert float_bound(x * y, "nonnegative").nonnegative


@pytest.mark.parametrize("expr", [
    sp.log(x / y),                           # a function with no relative bound
    sp.sqrt(x) - sp.sqrt(y),                 # a difference of rounded values cancels
    x * y - x,                               # likewise
    x / (x - y),                             # may divide by 0
    sp.Piecewise((0, sp.Eq(x, 0)), (x * y / (x + y), True)),  # the zero test is not x + y's
    sp.Piecewise((x, x * y > x), (y, True)), # a comparison of rounded values may flip
    x ** 7,                                  # overflows for inputs near 2^32
    # found by review (2026-11-24): a partial product under- or overflows, though the
    # whole product is in range
    x ** 2 * y * sp.Piecewise((2 ** 20, x > 0), (2 ** 21, True)) / 2 ** 50,
    2 ** 32 * x ** 2 * y / sp.Piecewise((2 ** 10, x > 0), (2 ** 11, True)),
    # constants whose double rounding is a float32 value, but not they themselves
    sp.Piecewise((1, sp.Eq(x, 1 + sp.Rational(1, 2 ** 60))), (2, True)),
    sp.Piecewise((x, x >= 1 + sp.Rational(1, 2 ** 60)), (2 * x, True)),
    (1 + sp.Rational(1, 2 ** 60)) - sp.Piecewise((0, sp.Eq(x, 0)), (1, True)),
    x / (2 ** 60 + 1),
    # a rational printed as p.0F/q.0F with p >= 2^128 (inf)
    sp.Rational(2 ** 130, 3 ** 80) * x,
])
def test_refused(expr):
    assert float_bound(expr) is None


def test_guarded_division_is_accepted_only_after_its_zero_test():
    unguarded = sp.Abs(x - y) / (sp.Abs(x) + sp.Abs(y))
    assert float_bound(unguarded) is None
    assert float_bound(CANBERRA) is not None


def test_plan_splits_only_where_the_bound_reaches_the_result():
    canberra = metric_program("canberra").plan
    splits = [s.node.float_split for s in canberra.steps if getattr(s.node, "float_split", None)]
    assert len(splits) == 1
    f, h, bound = splits[0]
    rng = np.random.default_rng(0)
    xs, ys = rng.normal(size=50), rng.normal(size=50)
    xs[:5], ys[5:10] = 0, 0
    g = sp.lambdify((x, y), canberra.products[0].analysis.g, "numpy")
    fh = sp.lambdify((x, y), f.formula + h.formula, "numpy")
    with np.errstate(all="ignore"):
        both = (xs != 0) & (ys != 0)
        np.testing.assert_allclose(fh(xs, ys)[both], g(xs, ys)[both], rtol=1e-12)
    # (jensenshannon splits too, through a stable kernel: tests/algebra/test_stable.py)
    for name in ("hellinger", "cosine", "euclidean", "manhattan", "chebyshev"):
        plan = metric_program(name).plan
        assert not any(getattr(s.node, "float_split", None) for s in plan.steps), name


def _split(text):
    gb.define(text)
    plan = metric_program(text.split("(")[0].split()[-1]).plan
    return any(getattr(s.node, "float_split", None) for s in plan.steps), plan


def test_a_product_consumed_by_a_subtraction_is_not_split():
    assert not _split("metric t_round_sub(A, B) = 1 - mxm(A, B.T, semiring(canberra_term, plus))")[0]
    assert _split("metric t_round_rel(A, B) = sqrt(mxm(A, B.T, semiring(canberra_term, plus)) / 2)")[0]


def test_relative_products_sees_every_use():
    used_twice, plan = _split("metric t_round_twice(A, B) = mxm(A, B.T, semiring(canberra_term, plus)) "
                              "/ (1 + mxm(A, B.T, semiring(canberra_term, plus)))")
    assert not used_twice and relative_products(plan.expr) == {}


def test_uses_of_split_products_share_one_budget():
    """Relative errors add over uses (review, 2026-11-24): P·P may split (2·4 ≤ 8 units),
    P·P·P may not."""
    term = "mxm(A, B.T, semiring(canberra_term, plus))"
    assert _split(f"metric t_round_p2(A, B) = {term} * {term}")[0]
    assert not _split(f"metric t_round_p3(A, B) = {term} * {term} * {term}")[0]


def test_plans_that_may_run_in_float32_whole():
    """Plan.float32 (compiler/plan.float32_plan): max/min products of terms with a float32
    bound, under an epilogue that rounds nothing. Chebyshev's max |x − y| has one
    rounding; sums, reductions and rounding epilogues keep float64."""
    cheb = metric_program("chebyshev").plan.float32
    assert cheb is not None and cheb.k == 1 and cheb.exponent == 32
    assert metric_program("minkowski", p=float("inf")).plan.float32 is not None
    for name in ("manhattan", "euclidean", "cosine", "canberra", "jensenshannon", "hamming"):
        assert metric_program(name).plan.float32 is None, name
    term = "mxm(A, B.T, max_absdiff)"
    gb.define(f"metric t_f32_scaled(A, B) = {term} / 3")  # the division rounds in float32
    assert metric_program("t_f32_scaled").plan.float32 is None
    gb.define(f"metric t_f32_max(A, B) = max({term}, 0)")
    assert metric_program("t_f32_max").plan.float32 is not None
    gb.define(f"metric t_f32_chain(A, B) = mxm(apply(sqrt, A), apply(sqrt, B).T, max_absdiff)")
    assert metric_program("t_f32_chain").plan.float32 is None  # √ rounds the inputs first
