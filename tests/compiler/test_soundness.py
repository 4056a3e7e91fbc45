"""Regression tests for the soundness issues: each example of issue 9 (items 1-4,
7, 9) and issue 16 (items 2, 4, 6) gives the right answer, against a brute-force
float64 (or long double) evaluation, or a typed error, within 10 s."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist

import gbdist as gb
from work_bound import bounded

WORK_STEPS = 200  # symbolic steps of one call (each cut by the analysis's own budget); 43 measured at most
WORK_MIB = 256  # its peak allocation (35 MiB measured at most)

A1 = np.array([[1.0, 0.0, 2.0]])
B2 = np.array([[0.5, 3.0, 0.0], [0.0, 0.0, 1.0]])


def brute(f, monoid, A, B):
    """⊕ over every column of f(a_ik, b_jk), fills 0, in float64 (IEEE)."""
    a, b = np.broadcast_arrays(A[:, None, :], B[None, :, :])
    with np.errstate(all="ignore"):
        v = f(a, b)
    return {"plus": np.sum, "min": np.min, "max": np.max}[monoid](v, axis=-1)


def run_op(formula, monoid="plus", A=A1, B=B2):
    op = gb.op("t", formula)
    sr = gb.semiring(op, getattr(gb.ops, monoid))
    return gb.mxm(sps.csr_matrix(A), sps.csr_matrix(B).T, sr, backend="cpu")


def same(got, want):
    got, want = np.asarray(got, float), np.asarray(want, float)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


# --- issue 9, item 1: one-sided ops keep both dimensions ------------------------------

@pytest.mark.parametrize("formula,ref", [
    (lambda x, y: 2 * y, lambda x, y: 2 * y),
    (lambda x, y: -1.25, lambda x, y: np.full(np.broadcast(x, y).shape, -1.25)),
    (lambda x, y: 2 * (-x), lambda x, y: 2 * (-x)),
    (lambda x, y: gb.sqrt(3), lambda x, y: np.full(np.broadcast(x, y).shape, np.sqrt(3))),
    (lambda x, y: x, lambda x, y: x),
])
def test_ops_constant_in_one_side_keep_the_full_shape(formula, ref):
    got = run_op(formula)
    assert got.shape == (1, 2)
    same(got, brute(ref, "plus", A1, B2))


@pytest.mark.parametrize("name", ["first", "second"])
def test_graphblas_first_second_under_fill_semantics(name):
    sr = gb.semiring(getattr(gb.ops, name), gb.ops.plus)
    got = gb.mxm(sps.csr_matrix(A1), sps.csr_matrix(B2).T, sr, backend="cpu")
    ref = brute((lambda x, y: x + 0 * y) if name == "first" else (lambda x, y: y + 0 * x), "plus", A1, B2)
    same(got, ref)


# --- item 2: no simplification that changes IEEE values --------------------------------

def test_x_over_x_is_not_one_at_zero():
    """0/0 is NaN: every pair has a column where x = 0, so the answer is NaN, or a typed refusal."""
    try:
        got = run_op(lambda x, y: x / x + y)
    except gb.GbdistError:
        return
    assert np.all(np.isnan(got))


def test_the_formula_is_kept_as_written():
    op = gb.op("xx", lambda x, y: x / x)
    assert op.formula != 1
    assert np.isnan(gb.ops.apply_binary(op, np.array([0.0]), np.array([0.0])))[0]


def test_log_xy_under_min_sees_minus_infinity():
    A = np.array([[1.0, 2.0, 0.5]])
    B = np.array([[1.0, 2.0, 0.5], [1.0, 0.0, 1.0]])
    got = run_op(lambda x, y: gb.log(x * y), "min", A, B)
    same(got, brute(lambda x, y: np.log(x * y), "min", A, B))
    assert got[0, 1] == -np.inf
    ex = gb.explain(gb.mxm(*_AB(), gb.semiring(gb.op("lxy", lambda x, y: gb.log(x * y)), gb.ops.min)))
    assert ex.products[0].strategy == "two-pass-union"


@pytest.mark.parametrize("monoid", ["plus", "max"])
def test_kl_term_at_y_zero_is_plus_infinity_or_refused(monoid):
    A = np.array([[1.0, 0.0, 0.0]])
    B = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    f = lambda x, y: gb.where(x == 0, 0, x * gb.log(x / y))  # noqa: E731
    try:
        got = run_op(f, monoid, A, B)
    except gb.GbdistError:
        assert monoid == "plus"  # inf - inf: the correction cannot hold; max must work
        return
    ref = brute(lambda x, y: np.where(x == 0, 0, x * np.log(x / y)), monoid, A, B)
    assert np.all(ref == np.inf)
    same(got, ref)


def test_infinite_fill_values_are_handled_exactly():
    """f(0, 0) = -inf (log 0): a union correction would subtract it; refused or exact."""
    A = np.array([[1.0, 0.0]])
    B = np.array([[2.0, 0.0]])
    with pytest.raises(gb.AnalysisError, match="not finite"):
        run_op(lambda x, y: gb.log(x + y), "plus", A, B)
    same(run_op(lambda x, y: gb.log(x + y), "max", A, B), brute(lambda x, y: np.log(x + y), "max", A, B))


# --- item 3: point conditions ----------------------------------------------------------

@pytest.mark.parametrize("formula,ref,A", [
    (lambda x, y: gb.where(x == 0.3, -1.25, x * y), lambda x, y: np.where(x == 0.3, -1.25, x * y),
     np.array([[0.3, 0.0, 2.0]])),
    (lambda x, y: x * y + gb.where(x == 1.5, 1, 0), lambda x, y: x * y + (x == 1.5),
     np.array([[1.5, 0.0, 2.0]])),
    (lambda x, y: x * y + gb.where(y == 0.123, 1, 0), lambda x, y: x * y + (y == 0.123),
     np.array([[1.0, 0.0, 2.0]])),
])
def test_point_conditions_are_part_of_the_proofs(formula, ref, A):
    B = np.array([[0.5, 0.123, 0.0], [0.0, 0.0, 1.0]])
    got = run_op(formula, "plus", A, B)
    same(got, brute(ref, "plus", A, B))
    ex = gb.explain(gb.mxm(*_AB(), gb.semiring(gb.op("pc", formula), gb.ops.plus)))
    assert ex.products[0].strategy != "intersection"


def test_point_condition_counterexample_is_named():
    from gbdist.algebra import proofs
    from gbdist.algebra.proofs import X
    import sympy as sp
    p = proofs.check("", sp.Piecewise((-1, sp.Eq(X, sp.Rational(0.3))), (0, True)), 0)
    assert not p.holds and "0.3" in p.detail


# --- item 4: small constants are kept exactly ---------------------------------------------

@pytest.mark.parametrize("c", [5e-9, 1e-12, 1e-300])
def test_small_constants_do_not_vanish(c):
    A = np.array([[1e-3, 0.0, 2e-3]])
    B = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 1.0]])
    got = run_op(lambda x, y: x * y + c, "plus", A, B)
    same(got, brute(lambda x, y: x * y + c, "plus", A, B))
    assert got[0, 0] == pytest.approx(3 * c, rel=1e-12)


# --- item 7: bounded analysis --------------------------------------------------------------

def _AB():
    A, B = gb.matrices("A B")
    return A, B.T


def _timed(fn):
    """``fn``'s outcome, its work bounded by a step count and its peak memory, not the
    clock (tests/work_bound.py): each symbolic step is cut by the analysis's own budget."""
    with bounded(max_steps=WORK_STEPS, max_mib=WORK_MIB) as work:
        try:
            fn()
            outcome = "accepted"
        except gb.GbdistError:
            outcome = "refused"
    print(f"{work.steps} symbolic steps, peak {work.peak / 2**20:.1f} MiB")
    return outcome


def test_power_500_of_a_difference_is_decided_quickly():
    op = gb.op("p500", lambda x, y: (x - y) ** 500)
    assert _timed(lambda: gb.explain(gb.mxm(*_AB(), gb.semiring(op, gb.ops.plus)))) in ("accepted", "refused")


def test_exp_log_tower_of_depth_8_is_decided_quickly():
    def tower(x, y):
        e = x + y
        for i in range(8):
            e = gb.exp(e) if i % 2 == 0 else gb.log(e)
        return e
    op = gb.op("tower", tower)
    _timed(lambda: gb.explain(gb.mxm(*_AB(), gb.semiring(op, gb.ops.plus))))


def test_where_nested_4_deep_is_decided_quickly_and_right():
    def nest(x, y):
        e = x * y
        for i in range(4):
            e = gb.where(x > i * 0.5, e + i, y - e)
        return e

    def ref(x, y):
        e = x * y
        for i in range(4):
            e = np.where(x > i * 0.5, e + i, y - e)
        return e
    rng = np.random.default_rng(3)
    A = np.round(rng.random((3, 5)) * 3, 1)
    B = np.round(rng.random((2, 5)) * 3, 1)
    A[A < 1] = 0
    B[B < 1] = 0
    with bounded(max_steps=WORK_STEPS, max_mib=WORK_MIB):
        got = run_op(nest, "plus", A, B)
    np.testing.assert_allclose(got, brute(ref, "plus", A, B), rtol=1e-12, atol=1e-12)


def test_helpers_doubling_20_times_are_refused_quickly(isolated_definitions):
    text = "op h0(x, y) = x + y\n" + "".join(
        f"op h{i}(x, y) = h{i - 1}(x, y) + h{i - 1}(y, x)\n" for i in range(1, 21))
    text += "metric hm(A, B) = mxm(A, B.T, semiring(h20, plus))\n"
    assert _timed(lambda: gb.pairwise_distances(A1, B2, metric=(gb.define(text), "hm")[1],
                                                backend="cpu")) == "refused"


def test_5000_nested_abs_in_the_python_api_is_a_typed_error():
    A, Bt = _AB()
    e = gb.mxm(A, Bt, gb.semirings.plus_times)
    with pytest.raises(gb.GbdistError, match="nested too deeply"):
        for _ in range(5000):
            e = gb.abs(e)
    x = gb.ops.Sym(gb.ops.X)
    with pytest.raises(gb.GbdistError, match="nested too deeply"):
        for _ in range(5000):
            x = gb.abs(x - 1)


# --- item 9: pairwise_distances keeps its promised shape ------------------------------------

def test_metric_written_as_mxm_B_At_is_shaped_nx_ny():
    rng = np.random.default_rng(0)
    X, Y = rng.random((5, 7)), rng.random((4, 7))
    got = gb.pairwise_distances(X, Y, metric=lambda A, B: gb.mxm(B, A.T, gb.semirings.plus_times),
                                backend="cpu")
    assert got.shape == (5, 4)
    np.testing.assert_allclose(got, X @ Y.T, rtol=1e-13)


@pytest.mark.parametrize("metric,ref", [
    (lambda A, B: gb.ncols(A) * 1.0, lambda X, Y: np.full((5, 4), 7.0)),
    (lambda A, B: gb.reduce(A, gb.ops.plus), lambda X, Y: np.repeat(X.sum(1)[:, None], 4, 1)),
    (lambda A, B: gb.reduce(B, gb.ops.plus), lambda X, Y: np.repeat(Y.sum(1)[None, :], 5, 0)),
])
def test_metrics_that_do_not_depend_on_both_rows_are_broadcast(metric, ref):
    rng = np.random.default_rng(1)
    X, Y = rng.random((5, 7)), rng.random((4, 7))
    got = gb.pairwise_distances(X, Y, metric=metric, backend="cpu")
    assert got.shape == (5, 4)
    np.testing.assert_allclose(got, ref(X, Y), rtol=1e-13)


def test_metric_mixing_orientations_is_a_typed_error():
    rng = np.random.default_rng(2)
    X, Y = rng.random((3, 4)), rng.random((3, 4))
    with pytest.raises(gb.GbdistError):
        gb.pairwise_distances(X, Y, backend="cpu", metric=lambda A, B: (
            gb.mxm(A, B.T, gb.semirings.plus_times) + gb.mxm(B, A.T, gb.semirings.plus_times)))


# --- issue 16, item 2: subnormals are divided as written -------------------------------------

def test_subnormal_entries_divide_as_written():
    X = np.array([[1e-310, 0.2, 0.3]])
    Y = np.array([[1e-310, 0.2, 0.3], [0.1, 0.5, 0.0]])
    same(gb.pairwise_distances(X, Y, metric="canberra", backend="cpu"), cdist(X, Y, "canberra"))
    for m in ("jensenshannon", "kl_divergence"):
        got = gb.pairwise_distances(X, Y, metric=m, backend="cpu")
        assert np.all(np.isfinite(got)) and got[0, 0] == 0.0, m
    op = gb.op("ratio", lambda x, y: x / y)
    assert gb.ops.apply_binary(op, np.array([1e-310]), np.array([1e-310]))[0] == 1.0


def test_cuda_printer_divides_as_written():
    from gbdist.backends.cuda.codegen import CudaPrinter, scalar
    pr = CudaPrinter("float64")
    assert scalar(gb.op("d", lambda x, y: x / y).formula, pr) == "x/y"
    assert "pow" not in scalar(gb.op("d2", lambda x, y: x / y ** 2).formula, pr)
    text = scalar(gb.op("xx", lambda x, y: x / x).formula, pr)
    assert text == "x/x"  # not 1


# --- issue 16, item 4: Minkowski with large p -----------------------------------------------

def _minkowski_ld(X, Y, p):
    d = np.abs(X.astype(np.longdouble)[:, None, :] - Y.astype(np.longdouble)[None, :, :])
    mx = d.max(-1, keepdims=True)
    return (mx[..., 0] * ((d / np.where(mx == 0, 1, mx)) ** p).sum(-1) ** (1 / np.longdouble(p))).astype(float)


@pytest.mark.parametrize("p", [32, 64, 1000])
def test_minkowski_large_even_p_is_accurate(p):
    rng = np.random.default_rng(5)
    X, Y = rng.random((5, 10)), rng.random((4, 10))
    X[X < 0.3] = 0
    Y[Y < 0.3] = 0
    with bounded(max_steps=WORK_STEPS, max_mib=WORK_MIB):
        got = gb.pairwise_distances(X, Y, metric="minkowski", p=p, backend="cpu")
    np.testing.assert_allclose(got, _minkowski_ld(X, Y, p), rtol=1e-13, atol=1e-300)
    if p <= 64:
        np.testing.assert_allclose(got, cdist(X, Y, "minkowski", p=p), rtol=1e-12)
    ex = gb.explain("minkowski", p=p)
    assert ex.products[0].expansion_rank is None


def test_minkowski_p_1e308_does_not_hang():
    X = np.array([[1.0, 0.0, 0.5]])
    with bounded(max_steps=WORK_STEPS, max_mib=WORK_MIB):
        got = gb.pairwise_distances(X, X * 0.5, metric="minkowski", p=1e308, backend="cpu")
    assert got.shape == (1, 1) and np.isfinite(got).all()


def test_minkowski_expansion_only_where_accurate():
    assert gb.explain("minkowski", p=4).products[0].expansion_rank == 3
    for p in (10, 16, 32):
        assert gb.explain("minkowski", p=p).products[0].expansion_rank is None


@pytest.mark.parametrize("p", [True, False])
def test_minkowski_bool_p_is_refused(p):
    gb.pairwise_distances(np.ones((2, 3)), metric="minkowski", p=1.0, backend="cpu")
    with pytest.raises(gb.InputError):
        gb.pairwise_distances(np.ones((2, 3)), metric="minkowski", p=p, backend="cpu")


# --- issue 16, item 6: every node the analysis accepts is evaluable --------------------------

def test_nested_where_with_conditions_on_ops_runs(isolated_definitions):
    gb.define("""
op mx(x, y) = where(x > y, x, y)
op mx2(x, y) = where(mx(x, y) > mx(y, x), mx(x, y), mx(y, x))
metric mm(A, B) = mxm(A, B.T, semiring(mx2, max))
""")
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(4, 6)), rng.normal(size=(3, 6))
    X[X < 0] = 0
    Y[Y < 0.5] = 0
    assert "mm" in str(gb.explain("mm"))
    got = gb.pairwise_distances(X, Y, metric="mm", backend="cpu")
    same(got, brute(lambda x, y: np.maximum(x, y), "max", X, Y))
    from gbdist.algebra.evaluate import evaluable
    from gbdist.backends.cuda.codegen import CudaPrinter, scalar
    mx2 = gb.explain("mm").plan.products[0].analysis.semiring.mul
    assert evaluable(mx2.formula)
    assert "x" in scalar(mx2.formula, CudaPrinter("float64"))


def test_metric_helpers_doubling_20_times_are_refused_quickly(isolated_definitions):
    """20 doublings write out 2^20 copies: refused by the size limit with a positioned
    DefinitionError in well under 10 s (8 doublings, 256 copies, compile and run)."""
    def text(n, name):
        return ("def d0(A, B) = mxm(A, B.T, plus_times)\n" + "".join(
            f"def d{i}(A, B) = d{i - 1}(A, B) + d{i - 1}(A, B)\n" for i in range(1, n + 1))
            + f"metric {name}(A, B) = d{n}(A, B)\n")
    with bounded(max_steps=0, max_mib=WORK_MIB):  # refused before any symbolic step
        with pytest.raises(gb.DefinitionError, match="grows too large"):
            gb.define(text(20, "dm"))
    X = np.random.default_rng(8).random((3, 4))
    with bounded(max_steps=WORK_STEPS, max_mib=WORK_MIB):
        gb.define(text(8, "dm8"))
        got = gb.pairwise_distances(X, X, metric="dm8", backend="cpu")
    np.testing.assert_allclose(got, (X @ X.T) * 2**8, rtol=1e-13)


def test_negative_zero_literal_keeps_its_sign():
    op = gb.op("nz", lambda x, y: x / -0.0)
    assert gb.ops.apply_binary(op, np.array([1.0]), np.array([1.0]))[0] == -np.inf
