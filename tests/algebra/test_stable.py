"""Stable kernels (gbdist/algebra/stable.py): a formula the compiler proves equal to a
kernel's is evaluated by it; look-alikes are not; the planner spends the kernel's
bound from the expression's budget, a square root halving it."""
import numpy as np
import sympy as sp

import gbdist as gb
from gbdist.algebra.formulas import X as x, Y as y
from gbdist.algebra.stable import kernels, stable_kernel
from gbdist.backends.cuda.codegen import generate
from gbdist.compiler.plan import relative_products
from gbdist.pairwise import metric_program


def _where0(v, e):
    return sp.Piecewise((sp.Integer(0), sp.Eq(v, 0)), (e, True))


def test_js_kernel_formula_is_the_builtin_op():
    js = metric_program("jensenshannon_unnormalized").plan.products[0].node.semiring.mul
    bound = stable_kernel(js.formula, js.domain)
    assert bound is not None and bound.kernel.name == "gb_js_term" and bound.proof.method == "sympy"
    assert bound.nonnegative and bound.exponent == 32 and bound.k == 13


def test_other_forms_of_the_same_function_are_proven():
    with sp.evaluate(False):
        m = (x + y) / 2
        halves = _where0(x, x * sp.log(x / m)) + _where0(y, y * sp.log(y / m))
        swapped = _where0(y, y * sp.log(2 * y / (y + x))) + _where0(x, x * sp.log(2 * x / (y + x)))
    for f in (halves, swapped):
        bound = stable_kernel(f, "nonnegative")
        assert bound is not None and bound.kernel.name == "gb_js_term"


def test_look_alikes_are_refused():
    with sp.evaluate(False):
        s = x + y
        no_zero_convention = x * sp.log(2 * x / s) + y * sp.log(2 * y / s)  # NaN at x = 0
        no_two = _where0(x, x * sp.log(x / s)) + _where0(y, y * sp.log(y / s))
        one_sided = _where0(x, x * sp.log(2 * x / s))
    for f in (no_zero_convention, no_two, one_sided):
        assert stable_kernel(f, "nonnegative") is None, f
    js = kernels()[0].formula
    assert stable_kernel(js, "real") is None  # the kernel's bound is for x, y >= 0 only


def test_kernel_formula_matches_its_series():
    """s·ψ(d), ψ(d) = Σ d^(2n)/(2n(2n − 1)): the identity kernels/gbdist.cuh evaluates,
    against the formula in 50-digit arithmetic (the formula in float64 cancels)."""
    import mpmath
    rng = np.random.default_rng(0)
    xs = rng.lognormal(0, 2, 300)
    ys = xs * np.exp(rng.uniform(-3, 3, 300))
    ys[:50] = xs[:50] * (1 + rng.normal(size=50) * 1e-6)  # nearly equal: d ~ 1e-6
    f = sp.lambdify((x, y), kernels()[0].formula, "mpmath")
    s, d = xs + ys, np.abs(xs - ys) / (xs + ys)
    n = np.arange(1, 2000)[:, None]
    series = s * (d ** (2 * n) / (2 * n * (2 * n - 1))).sum(0)
    with mpmath.workdps(50):
        exact = np.array([float(f(mpmath.mpf(a), mpmath.mpf(b))) for a, b in zip(xs, ys)])
    np.testing.assert_allclose(series, exact, rtol=1e-13)


def test_plan_spends_the_kernel_bound_and_a_square_root_halves_it():
    for name in ("jensenshannon", "jensenshannon_unnormalized"):
        splits = [s.node.float_split for s in metric_program(name).plan.steps
                  if getattr(s.node, "float_split", None)]
        assert len(splits) == 1 and splits[0][2].kernel.name == "gb_js_term", name
    term = "mxm(A, B.T, semiring(js_term, plus))"
    gb.define(f"metric t_stable_bare(A, B) = {term}")  # 13 units on the result: over budget
    plan = metric_program("t_stable_bare").plan
    assert not any(getattr(s.node, "float_split", None) for s in plan.steps)
    assert list(relative_products(plan.expr).values()) == [1.0]
    gb.define(f"metric t_stable_root(A, B) = sqrt({term} / 2)")
    plan = metric_program("t_stable_root").plan
    assert any(getattr(s.node, "float_split", None) for s in plan.steps)
    assert list(relative_products(plan.expr).values()) == [0.5]


def test_codegen_calls_the_kernel_on_the_stored_floats():
    """With float32 data and float64 accumulation the product runs gb_js_term on the
    stored float values (normalised rows are stored values: the rows are scaled when
    the operand is bound), within the checked input range, plus h = −(x + y) log 2 in
    double; float64 data and float32 accumulation do not."""
    plan = metric_program("jensenshannon").plan
    gen = generate(plan, np.float32, np.float64)
    assert gen.float_split and gen.split_exponent == 32
    assert gen.source.count("(gb_js_term(d, s) + (") == 1  # gather step
    assert gen.source.count("(gb_js_term(xs, ys) + (") == 1  # scatter step
    for dt, acc in ((np.float64, None), (np.float32, None)):
        g = generate(plan, dt, acc)
        assert not g.float_split and "(gb_js_term(" not in g.source
    assert "(gb_js_term(" not in generate(plan, np.float32, np.float64, split=False).source


def test_a_chain_that_maps_values_keeps_the_double_path():
    gb.define("metric t_stable_sqrt(A, B) = sqrt(mxm(apply(sqrt, A), apply(sqrt, B).T, "
              "semiring(js_term, plus)) / 2)")
    plan = metric_program("t_stable_sqrt").plan
    assert not any(getattr(s.node, "float_split", None) for s in plan.steps)


def _horner_error(coeffs, v, v_err, exact_first=False):
    """First-order error bound (units of u, absolute) of Horner's c0 + v(c1 + v(…)) in
    float with each coefficient rounded (c0 too unless ``exact_first``), each fma
    rounded once, and v carrying a relative error of ``v_err`` u; and the value."""
    q, err = coeffs[-1], abs(coeffs[-1])
    for k in range(len(coeffs) - 2, -1, -1):
        qn = coeffs[k] + v * q
        err = (0 if (k == 0 and exact_first) else abs(coeffs[k])) + v * err + v * abs(q) * v_err + abs(qn)
        q = qn
    return err, q


def test_js_kernel_bound_derivation():
    """The 13u of gb_js_term (docs/cuda.md, Stable kernels), as a sum of first-order
    rounding terms over a grid of d on each side of the 0.8 threshold: the series,
    10.8u; the polynomial plus e·log e, 10.7u; then s·ψ in float, 2u."""
    import math
    u = 2.0 ** -24
    series = [1 / ((2 * n) * (2 * n - 1)) for n in range(1, 29)]
    worst_series = 0.0
    for d in np.linspace(1e-6, 0.8, 2001):
        t = d * d
        t_err = 2 * 3 + 1  # d = fl(fl(|x − y|)/fl(x + y)): 3u; t = fl(d·d)
        err, q = _horner_error(series, t, t_err, exact_first=True)  # c1 = 1/2 is exact
        trunc = 2 / ((2 * 29) * (2 * 29 - 1)) * t ** 28 / (1 - t) / u  # Σ_{n>28}, over ψ ≥ t/2
        worst_series = max(worst_series, t_err + err / q + 1 + trunc)  # psi2 = fl(2t·q)
    poly = [2 * math.log(2), -(1 + math.log(2))] + [1 / (2 ** (k - 1) * k * (k - 1)) for k in range(2, 9)]
    worst_logs = 0.0
    for d in np.linspace(0.8, 1 - 1e-7, 2001):
        e = 1 - d
        e_err = 2  # e = fl(2·min/fl(x + y))
        err_p, p = _horner_error(poly, e, e_err)
        err_p += e ** 9 / (2 ** 8 * 9 * 8) / u  # truncation after degree 8
        L = math.log(e)
        err_l = e_err + (2 * 2 + 1 + 1) * abs(L)  # log of ê; __log2f 2 ulp; ln 2 rounded; ×
        err_q = e * err_l + e_err * e * abs(L) + e * abs(L)  # ê as a factor; the product
        s = p + e * L
        worst_logs = max(worst_logs, (err_p + err_q + abs(s)) / s)  # + the sum's rounding
    assert worst_series <= 11 and worst_logs <= 11, (worst_series, worst_logs)
    assert max(worst_series, worst_logs) + 2 <= kernels()[0].k  # s·ψ: fl(x + y), ×


def _kernel_constants():
    """gb_js_term's threshold and coefficient tables, read from kernels/gbdist.cuh."""
    import re
    from gbdist.resources import read
    src = read("kernels", "gbdist.cuh")
    body = src[src.index("double gb_js_term(float x, float y)"):]
    body = body[:body.index("\n}\n")]
    tables = [[np.float32(float(v.rstrip("f"))) for v in re.findall(r"-?\d\.\d+e[+-]\d+f", t)]
              for t in re.findall(r"const float c\[\d+\] = \{(.*?)\};", body, re.S)]
    threshold = np.float32(float(re.search(r"if \(d < ([\d.]+)f\)", body).group(1)))
    ln2 = np.float32(float(re.search(r"__log2f\(e\) \* ([\d.]+)f", body).group(1)))
    return threshold, tables[0], tables[1], ln2


def _emulate_js_term(x, y, log2_ulps):
    """gb_js_term in numpy float32 (fma as one rounding of the exact result), __log2f as
    the correctly rounded log2 moved by ``log2_ulps`` units in the last place."""
    f32 = np.float32
    threshold, series, poly, ln2 = _kernel_constants()

    def fma(a, b, c):
        return (a.astype(np.longdouble) * b + c).astype(f32)

    with np.errstate(all="ignore"):
        s = (x + y).astype(f32)
        d = (np.abs((x - y).astype(f32)) / s).astype(f32)
        t = (d * d).astype(f32)
        p = np.full_like(t, series[-1])
        for c in reversed(series[:-1]):
            p = fma(p, t, c)
        low = ((f32(2) * t).astype(f32) * p).astype(f32)
        e = ((f32(2) * np.minimum(x, y)).astype(f32) / s).astype(f32)
        q = np.full_like(e, poly[-1])
        for c in reversed(poly[:-1]):
            q = fma(q, e, c)
        lg2 = np.log2(np.where(e > 0, e, f32(1)).astype(np.float64)).astype(f32)
        lg2 = (lg2 + f32(log2_ulps) * np.spacing(np.abs(lg2))).astype(f32)
        high = (q + np.where(e > 0, (e * (lg2 * ln2).astype(f32)).astype(f32), f32(0))).astype(f32)
        psi2 = np.where(d < threshold, low, high)
        out = ((f32(0.5) * s).astype(f32) * psi2).astype(f32).astype(np.float64)
        return np.where((x == 0) | (y == 0), s.astype(np.float64) * np.log(2), out)


def test_js_kernel_emulated_stays_within_its_bound():
    """The kernel's own constants, emulated in float32 with __log2f at its documented
    worst (±2 ulp), against long double on the cases the GPU test uses: within k."""
    from stable_cases import js_cases, js_reference
    x, y = js_cases(np.random.default_rng(5), n=1 << 15)
    ref = js_reference(x, y)
    k = kernels()[0].k
    for ulps in (-2, 0, 2):
        got = _emulate_js_term(x, y, ulps).astype(np.longdouble)
        rel = np.abs(got - ref) / np.where(ref > 0, ref, 1)
        assert float(rel.max()) * 2.0 ** 24 <= k, (ulps, float(rel.max()) * 2.0 ** 24)
