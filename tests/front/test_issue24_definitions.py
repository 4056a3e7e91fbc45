"""Issue 24, definitions: every failure while building or analysing a definition is a
typed, positioned error or the definition is accepted (and then exact); long sums
build in linear work; nested and constant ``where`` conditions; line endings.

Results are compared with a brute-force float64 evaluation over the dense
matrices (every column, fills 0), written here with NumPy, never with gbdist.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
import sympy as sp

import gbdist as gb
from gbdist.algebra import formulas, ops as _ops
from gbdist.compiler import analysis, exact
from gbdist.front.check import check
from gbdist.front.syntax import MAX_BUILD_STEPS, MAX_FORMULA_NODES

pytestmark = pytest.mark.usefixtures("isolated_definitions")

_n = [0]


def fresh(prefix="i24_"):
    _n[0] += 1
    return f"{prefix}{_n[0]}"


def data(seed=0, m=5, n=4, k=7, values=(-1.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.5)):
    rng = np.random.default_rng(seed)
    return rng.choice(values, (m, k)), rng.choice(values, (n, k))


def brute(f, monoid, A, B):
    """⊕_k f(a_ik, b_jk) over all k columns, in float64 with IEEE semantics."""
    a, b = np.broadcast_arrays(A[:, None, :], B[None, :, :])
    with np.errstate(all="ignore"):
        v = f(a, b)
    return {"plus": np.sum, "min": np.min, "max": np.max}[monoid](v, axis=-1)


def same(got, ref):
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == ref.shape
    assert np.array_equal(np.isnan(got), np.isnan(ref)), (got, ref)
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-12, atol=1e-12)


def run_python(formula, monoid, A, B):
    op = gb.op(fresh(), formula)
    return gb.mxm(sps.csr_matrix(A), sps.csr_matrix(B).T, gb.semiring(op, getattr(gb.ops, monoid)),
                  backend="cpu")


def run_text(body, monoid, A, B):
    name = fresh()
    gb.define(f"op {name}(x, y) = {body}\n"
              f"metric {name}_m(A, B) = mxm(A, B.T, semiring({name}, {monoid}))")
    return gb.pairwise_distances(sps.csr_matrix(A), sps.csr_matrix(B), metric=f"{name}_m",
                                 backend="cpu")


def w(c, a, b):
    return np.where(c, a, b)


# --- item 2 and 6(a): where inside conditions, constant conditions --------------------

# (text, Python formula, NumPy reference): total formulas, all accepted and exact
NESTED = [
    ("where(where(x == 0, -1, y) == 0, 0, 1)",
     lambda x, y: gb.where(gb.where(x == 0, -1, y) == 0, 0, 1),
     lambda x, y: w(w(x == 0, -1.0, y) == 0, 0.0, 1.0)),
    ("where(where(4 < 1, x, 2) < y, x / y, 0)",
     lambda x, y: gb.where(gb.where(4 < 1, x, 2) < y, x / y, 0),
     lambda x, y: w(w(False, x, 2.0) < y, x / y, 0.0)),
    ("where(x > where(y > where(x > 1, 1, 2), 1, 2), 1, 2)",  # was "too complex to build"
     lambda x, y: gb.where(x > gb.where(y > gb.where(x > 1, 1, 2), 1, 2), 1, 2),
     lambda x, y: w(x > w(y > w(x > 1, 1.0, 2.0), 1.0, 2.0), 1.0, 2.0)),
    ("where(where(where(x > 0, x, y) > 0, x, y) > 0, x, y)",
     lambda x, y: gb.where(gb.where(gb.where(x > 0, x, y) > 0, x, y) > 0, x, y),
     lambda x, y: w(w(w(x > 0, x, y) > 0, x, y) > 0, x, y)),
    ("where(where(x > 0, 1, 0) + where(y > 0, 1, 0) > where(x > y, 1, 0), x, y)",
     lambda x, y: gb.where(gb.where(x > 0, 1, 0) + gb.where(y > 0, 1, 0) > gb.where(x > y, 1, 0), x, y),
     lambda x, y: w(w(x > 0, 1.0, 0.0) + w(y > 0, 1.0, 0.0) > w(x > y, 1.0, 0.0), x, y)),
    ("where(where(x == 0, y, x) == where(y == 0, x, y), 0, where(x < y, 1, 2))",
     lambda x, y: gb.where(gb.where(x == 0, y, x) == gb.where(y == 0, x, y), 0, gb.where(x < y, 1, 2)),
     lambda x, y: w(w(x == 0, y, x) == w(y == 0, x, y), 0.0, w(x < y, 1.0, 2.0))),
    ("where(where(where(x < 1, y, x) < 2, x, y) < where(y < x, 1, 2), x - y, y - x)",
     lambda x, y: gb.where(gb.where(gb.where(x < 1, y, x) < 2, x, y) < gb.where(y < x, 1, 2), x - y, y - x),
     lambda x, y: w(w(w(x < 1, y, x) < 2, x, y) < w(y < x, 1.0, 2.0), x - y, y - x)),
    ("where((where(x == 0, 1, x) > 1) and not (y == 3), x * y, 2 < 3)",
     lambda x, y: gb.where((gb.where(x == 0, 1, x) > 1) & ~(y == 3), x * y, 2 < 3),
     lambda x, y: w((w(x == 0, 1.0, x) > 1) & ~(y == 3), x * y, 1.0)),
]


@pytest.mark.parametrize("monoid", ["plus", "max"])
@pytest.mark.parametrize("text,py,ref", NESTED, ids=[t for t, _, _ in NESTED])
def test_where_inside_conditions_is_accepted_and_exact(text, py, ref, monoid):
    A, B = data(1)
    want = brute(ref, monoid, A, B)
    same(run_python(py, monoid, A, B), want)
    same(run_text(text, monoid, A, B), want)


def test_the_issue_ops_also_run_pairwise_and_through_gbdist_check():
    A, B = data(2)
    name = fresh()
    gb.define(f"op {name}(x, y) = where(where(x == 0, -1, y) == 0, 0, 1)\n"
              f"metric {name}_m(A, B) = mxm(A, B.T, semiring({name}, plus))")
    ref = brute(lambda x, y: w(w(x == 0, -1.0, y) == 0, 0.0, 1.0), "plus", A, B)
    same(gb.pairwise_distances(A, B, metric=f"{name}_m", backend="cpu"), ref)
    reports = check("op r(x, y) = where(where(4 < 1, x, 2) < y, x / y, 0)\n"
                    "semiring s = semiring(r, plus)\n"
                    "metric m(A, B) = mxm(A, B.T, s)\n")
    assert [r.ok for r in reports] == [True, True, True], "\n".join(map(str, reports))


def test_where_in_a_condition_through_op_composition():
    """An op whose where() condition receives another op's where() (substitution)."""
    A, B = data(3)
    inner, outer = fresh(), fresh()
    gb.define(f"op {inner}(x, y) = where(x > y, x, y)\n"
              f"op {outer}(x, y) = where({inner}(x, y) == 0, 5, {inner}(y, 1))\n"
              f"metric {outer}_m(A, B) = mxm(A, B.T, semiring({outer}, plus))")
    mx = lambda p, q: w(p > q, p, q)  # noqa: E731
    ref = brute(lambda x, y: w(mx(x, y) == 0, 5.0, mx(y, 1.0)), "plus", A, B)
    same(gb.pairwise_distances(A, B, metric=f"{outer}_m", backend="cpu"), ref)
    f = gb.op(fresh(), lambda x, y: gb.where(x > y, x, y))
    g = gb.op(fresh(), lambda x, y: gb.where(f(x, y) == 0, 5, f(y, 1)))
    same(gb.mxm(A, B.T, gb.semiring(g, gb.ops.plus), backend="cpu"), ref)


def test_a_constant_condition_keeps_only_its_branch():
    op = gb.op(fresh(), lambda x, y: gb.where(4 < 1, gb.sqrt(x), y))
    assert op.formula == _ops.Y and op.domain == "real"  # sqrt(x) was never taken
    defs = gb.define("op c1(x, y) = where(4 < 1, sqrt(x), y)\nop c2(x, y) = where(1 <= 1, x, log(y))")
    assert defs["c1"].formula == _ops.Y and defs["c2"].formula == _ops.X


# --- item 2: the boundary -- nothing untyped reaches the user ---------------------------


def _boom(*args, **kwargs):
    raise ZeroDivisionError("integer division or modulo by zero (injected)")


def test_an_exception_inside_building_an_op_becomes_a_definition_error(monkeypatch):
    real = _ops._derive_domain
    monkeypatch.setattr(_ops, "_derive_domain",
                        lambda f: _boom() if isinstance(f, sp.Add) else real(f))
    with pytest.raises(gb.DefinitionError) as e:
        gb.op("boom_py", lambda x, y: x + y)
    assert "boom_py" in str(e.value) and "ZeroDivisionError" in str(e.value)
    with pytest.raises(gb.DefinitionError) as e:
        gb.define("op ok1(x, y) = x\n\nop boom_txt(x, y) = x + y\n")
    assert e.value.span is not None and e.value.span.line == 3
    assert "ZeroDivisionError" in str(e.value) and "^" in str(e.value)
    reports = check("op ok1(x, y) = x\nop boom_txt(x, y) = x + y\n")
    assert not reports[1].ok and reports[1].span.line == 2


def test_an_exception_inside_the_analysis_becomes_an_analysis_error(monkeypatch, fresh_caches):
    monkeypatch.setattr(analysis, "_analyze", _boom)
    op = gb.op(fresh(), lambda x, y: gb.abs(x - y) + 1)
    with pytest.raises(gb.AnalysisError) as e:
        gb.mxm(np.eye(2), np.eye(2), gb.semiring(op, gb.ops.plus))
    assert op.name in str(e.value) and "ZeroDivisionError" in str(e.value)
    reports = check("op b1(x, y) = abs(x - y) + 2\nsemiring b2 = semiring(b1, plus)\n")
    assert reports[0].ok and not reports[1].ok and reports[1].span.line == 2


def test_an_exception_in_the_users_formula_callable_is_typed():
    with pytest.raises(gb.DefinitionError) as e:
        gb.op("from_user", lambda x, y: 1 // 0)
    assert "from_user" in str(e.value)
    import math
    with pytest.raises(gb.DefinitionError) as e:
        gb.op("math_sqrt", lambda x, y: math.sqrt(x))
    assert "gb.sqrt" in str(e.value)
    with pytest.raises(gb.DefinitionError) as e:
        gb.define_metric("i24_raises", lambda A, B: 1 / 0)
    assert "i24_raises" in str(e.value) and "ZeroDivisionError" in str(e.value)


# --- item 4: long sums and products build in linear work --------------------------------


def _count_built_args(monkeypatch):
    """The total number of arguments handed to sympy constructors by formulas.build."""
    seen = [0]
    real = formulas.build

    def counting(fn, *args):
        seen[0] += len(args) if fn in (sp.Add, sp.Mul) else 1
        return real(fn, *args)

    monkeypatch.setattr(formulas, "build", counting)
    return seen


def _long_text_sum(n: int) -> str:
    return " + ".join(("x", "y", "x*y", "3")[i % 4] if i % 7 else "x" for i in range(n))


def test_a_long_sum_near_the_text_limit_is_accepted_and_exact(monkeypatch):
    # x and y alternate: the written-out formula has n leaves + the sum node. (Run on
    # the NumPy backend: the compiled CPU backend is a separate matter, see the report.)
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "numpy")
    n = MAX_FORMULA_NODES - 1
    body = " + ".join("xy"[i % 2] for i in range(n))
    seen = _count_built_args(monkeypatch)
    A, B = data(4, k=5)
    got = run_text(body, "plus", A, B)
    assert seen[0] <= 4 * n  # linear: a left fold of binary sums hands over ~n²/2
    nx, ny = (n + 1) // 2, n // 2
    same(got, brute(lambda x, y: nx * x + ny * y, "plus", A, B))


def test_a_longer_sum_is_refused_with_a_position_before_it_is_built(monkeypatch):
    n = MAX_FORMULA_NODES + 1
    text = "op ok(x, y) = x\nop too_long(x, y) =\n  " + " + ".join("xy"[i % 2] for i in range(n))
    seen = _count_built_args(monkeypatch)
    with pytest.raises(gb.DefinitionError) as e:
        gb.define(text)
    assert (e.value.span.line, e.value.span.column) == (3, 3)
    assert "too_long" in str(e.value) and str(MAX_FORMULA_NODES) in str(e.value)
    assert seen[0] <= 10  # refused from the chain's length, nothing of it built
    # far beyond the build budget: refused when parsed, at the definition
    huge = "op ok(x, y) = x\nop huge(x, y) = " + " + ".join("x" for _ in range(MAX_BUILD_STEPS))
    with pytest.raises(gb.DefinitionError) as e:
        gb.define(huge)
    assert (e.value.span.line, e.value.span.column) == (2, 4)
    assert "too large" in str(e.value)


def test_long_sums_with_subtractions_and_products_are_one_level_deep(monkeypatch):
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "numpy")
    n = 1200  # about 3,600 nodes: within the text front end's 5,000
    seen = _count_built_args(monkeypatch)

    def f(x, y):
        s = x
        for i in range(1, n):
            s = s - y if i % 3 == 0 else s + x * y
        return s

    op = gb.op(fresh(), f)
    assert seen[0] <= 6 * n
    assert formulas.formula_depth(op.formula) <= 4
    name = fresh()
    gb.define(f"op {name}(x, y) = x" + "".join(" - y" if i % 3 == 0 else " + x*y" for i in range(1, n)))
    assert gb.names.lookup(name).formula == op.formula  # both front ends build the same tree
    A, B = data(5, k=4)
    n_sub = len([i for i in range(1, n) if i % 3 == 0])
    n_xy = n - 1 - n_sub
    ref = brute(lambda x, y: x - n_sub * y + n_xy * x * y, "plus", A, B)
    got = gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus), backend="cpu")
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())
    big = 8000  # 24,000 nodes: over the Python API's 20,000
    with pytest.raises(gb.DefinitionError, match="too large"):
        gb.op(fresh(), lambda x, y: sum((x * y for _ in range(big)), x))


def test_a_long_product_is_one_node(monkeypatch):
    seen = _count_built_args(monkeypatch)
    n = 600
    name = fresh()
    gb.define(f"op {name}(x, y) = " + " * ".join("where(x == 0, 1, x)" if i % 2 else "1" for i in range(n)))
    assert seen[0] <= 20 * n
    formula = gb.names.lookup(name).formula
    assert isinstance(formula, sp.Mul) and len(formula.args) == n


# --- item 6(b), (c): positions ----------------------------------------------------------

POSITIONED = [
    ("op a(x, y) = x +", (1, 17)),
    ("op a(x, y) = z", (1, 14)),
    ("op a(x, y) = foo(x)", (1, 14)),
    ("op a(x, y) = sqrt(x, y)", (1, 14)),
    ("op a(x, y, z) = x", (1, 6)),
    ("op a(x, y) = where(x > 0, 1)", (1, 14)),
    ("op a(x, y) = 1\nop a(x, y) = y", (2, 4)),
    ("op a(x, y; p) = x ^ p\nsemiring s = semiring(a, plus)", (2, 23)),
    ("op a(x, y) = x - y\nsemiring s = semiring(a, a)", (2, 26)),
    ("semiring s = plus", (1, 14)),
    ("metric m(A, B) = mxm(A, B.T, semiring(absdiff, plus)) + C", (1, 57)),
    ("metric m(A) = A", (1, 10)),
    ("monoid mo = monoid(absdiff)", None),
    ("monoid mo = monoid(plus, identity=5)", None),
    ("alias q = nothing", (1, 11)),
    ("graph g(A) = bar(A)", None),
]


@pytest.mark.parametrize("text,where", POSITIONED, ids=[t for t, _ in POSITIONED])
def test_every_definition_error_has_a_position_and_a_caret(text, where):
    with pytest.raises(gb.GbdistError) as e:
        gb.define(text)
    err = e.value
    assert err.span is not None, str(err)
    if where is not None:
        assert (err.span.line, err.span.column) == where, str(err)
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"<text>:{err.span.line}:{err.span.column}: ")
    assert rendered[1].strip() == text.splitlines()[err.span.line - 1].strip()
    assert "^" in rendered[2]


def test_an_analysis_error_of_a_text_metric_points_at_its_product():
    gb.define("metric i24_times(A, B) =\n  mxm(A, B.T, semiring(absdiff, times))")
    with pytest.raises(gb.AnalysisError) as e:
        gb.pairwise_distances(np.eye(3), metric="i24_times", backend="cpu")
    assert (e.value.span.line, e.value.span.column) == (2, 3)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_the_caret_points_into_the_quoted_line_for_every_line_ending(newline):
    text = newline.join(["# a comment", "op i24_nl(x, y) = x + y", "op bad(x, y) = x +* y", ""])
    with pytest.raises(gb.DSLSyntaxError) as e:
        gb.define(text)
    err = e.value
    assert (err.span.line, err.span.column) == (3, 19)
    _, quoted, carets = str(err).splitlines()[:3]
    assert quoted == "    op bad(x, y) = x +* y"
    assert quoted[carets.index("^")] == "*"
    # the comment ends at the line break, whichever it is: the op after it is defined
    defs = gb.define(newline.join(["# doc of i24_after", "op i24_after(x, y) = x * y"]))
    assert defs["i24_after"].doc == "doc of i24_after"
    reports = check(newline.join(["op c_ok(x, y) = x", "op c_bad(x, y) = q"]))
    assert reports[1].span.line == 2 and not reports[1].ok


# --- item 6(d): annihilator ±inf with a where-guarded op --------------------------------


def structural_brute(f, monoid, A, B, identity):
    """⊕ over the columns stored (nonzero) in both rows only; the identity when none."""
    out = np.full((A.shape[0], B.shape[0]), identity)
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            both = (a != 0) & (b != 0)
            if both.any():
                out[i, j] = {"min": np.min, "max": np.max}[monoid](f(a[both], b[both]))
    return out


@pytest.mark.parametrize("front", ["python", "text"])
def test_an_inf_guarded_op_with_annihilator_inf_is_accepted_and_proven(front):
    A, B = data(6, values=(0.0, 0.0, 1.0, 2.5, 4.0, 7.0))
    if front == "python":
        op = gb.op(fresh(), lambda x, y: gb.where((x == np.inf) | (y == np.inf), np.inf, x + y))
        sr = gb.semiring(op, gb.ops.min, annihilator=np.inf)
    else:
        name = fresh()
        defs = gb.define(f"op {name}(x, y) = where(x == inf or y == inf, inf, x + y)\n"
                         f"semiring {name}_sr = semiring({name}, min, annihilator=inf)")
        sr = defs[f"{name}_sr"]
    a = gb.compile(gb.mxm(*gb.matrices("A B"), sr)).plan.products[0].analysis
    assert a.strategy == "intersection" and a.override == ""  # proven, not only declared
    got = gb.mxm(sps.csr_matrix(A), sps.csr_matrix(B).T, sr, backend="cpu")
    same(got, structural_brute(lambda x, y: x + y, "min", A, B, np.inf))


def test_max_with_annihilator_minus_inf_and_a_guarded_op():
    A, B = data(7, values=(0.0, 0.0, -1.0, 2.5, 4.0))
    op = gb.op(fresh(), lambda x, y: gb.where((x == -np.inf) | (y == -np.inf), -np.inf, x * y))
    sr = gb.semiring(op, gb.ops.max, annihilator=-np.inf)
    a = gb.compile(gb.mxm(*gb.matrices("A B"), sr)).plan.products[0].analysis
    assert a.override == ""
    got = gb.mxm(sps.csr_matrix(A), sps.csr_matrix(B).T, sr, backend="cpu")
    same(got, structural_brute(lambda x, y: x * y, "max", A, B, -np.inf))


# --- item 6(e): c·(x − y)² with a huge c --------------------------------------------------


@pytest.mark.parametrize("c", [1e200, 1e300])
def test_a_huge_coefficient_is_summed_directly_and_exact(c):
    """The union correction overflows (c·x² − c·x² is NaN at x = 1e200): the union is
    walked directly instead, which is the definition itself."""
    A, B = data(8, values=(0.0, 0.0, 1.0, -2.0, 0.5, 3.0))
    ref = brute(lambda x, y: c * (x - y) ** 2, "plus", A, B)
    same(run_python(lambda x, y: c * (x - y) ** 2, "plus", A, B), ref)
    same(run_text(f"{c!r} * (x - y)^2", "plus", A, B), ref)
    op = gb.op(fresh(), lambda x, y: c * (x - y) ** 2)
    a = gb.compile(gb.mxm(*gb.matrices("A B"), gb.semiring(op, gb.ops.plus))).plan.products[0].analysis
    assert a.strategy == "two-pass-union"
    assert len(a.reason) < 1000 and "does not hold" in a.reason
    assert "e+" in formulas.show(op.formula)  # 1e+200, not its 201 digits


# --- item 6(f): gbdist check does no needless work ---------------------------------------


def test_check_proves_nothing_for_an_op_without_identity_and_analyses_a_semiring_once(monkeypatch):
    from gbdist.algebra import proofs
    calls = {"proofs": 0, "analyses": 0}
    real_check, real_analyze = proofs.check, analysis._analyze

    def counting_check(*a, **k):
        calls["proofs"] += 1
        return real_check(*a, **k)

    def counting_analyze(*a, **k):
        calls["analyses"] += 1
        return real_analyze(*a, **k)

    monkeypatch.setattr(proofs, "check", counting_check)
    text = "\n".join(f"op f{i}(x, y) = x + y * {i + 2}" for i in range(40))
    reports = check(text)
    assert all(r.ok for r in reports) and calls["proofs"] == 0  # no identity among 0, 1, ±inf
    monkeypatch.setenv("GBDIST_CACHE_DIR", "off")
    gb.clear_caches()
    monkeypatch.setattr(analysis, "_analyze", counting_analyze)
    text = "\n".join(f"op g{i}(x, y) = abs(x - y) + {i + 2}\nsemiring s{i} = semiring(g{i}, plus)\n"
                     f"metric m{i}(A, B) = mxm(A, B.T, s{i})" for i in range(3))
    reports = check(text)
    assert all(r.ok for r in reports), "\n".join(map(str, reports))
    assert calls["analyses"] == 3  # the semiring's analysis serves its metric too
    gb.clear_caches()


# --- found by the extended fuzzer ---------------------------------------------------------


def test_the_self_value_proof_gives_no_large_formula_to_sympy(monkeypatch):
    """An op that is a long sum with ⊕ = min spent minutes in sympy's simplify while the
    runtime proved d(a, a); sympy now sees only formulas within a size (and no log of a
    1,000-bit number), so none of this one reaches simplify."""
    from gbdist.algebra import proofs
    calls = [0]
    real = sp.simplify

    def counting(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(exact.sp, "simplify", counting)
    body = " + ".join(("x", "y", "log(abs(1e-310) + 1.0)", "where(x != 1e-12, y, x)")[i % 4]
                      for i in range(120))
    op = gb.define(f"op big_min(x, y) = where(x != 1.0, abs(x), {body})")["big_min"]
    element = op.formula.xreplace({formulas.Y: formulas.X})
    assert exact._bounded_simplify(element) is element and calls[0] == 0
    small = gb.define("op small_log(x, y) = x + log(abs(1e-310) + 1.0)")["small_log"].formula
    assert not proofs.small_enough(small)
    A, B = data(9, values=(0.0, 1.0, 2.0, 1e-12))
    ref = brute(lambda x, y: w(x != 1.0, np.abs(x), _sum_ref(x, y)), "min", A, B)
    got = gb.pairwise_distances(A, B, metric=_metric_of("big_min", "min"), backend="cpu")
    same(got, ref)


def _sum_ref(x, y):
    terms = (lambda: x, lambda: y, lambda: np.log(np.abs(1e-310) + 1.0), lambda: w(x != 1e-12, y, x))
    out = None
    for i in range(120):
        t = terms[i % 4]()
        out = t if out is None else out + t
    return out


def _metric_of(op_name: str, monoid: str) -> str:
    name = fresh("i24m_")
    gb.define(f"metric {name}(A, B) = mxm(A, B.T, semiring({op_name}, {monoid}))")
    return name


def test_a_corner_constant_is_kept_only_if_float64_evaluates_it_as_well():
    """sympy simplifies sqrt(|3e-310 + 0.123 - 0.3|) (exact binary fractions) to
    19·sqrt(p)/q with p beyond 1e308: the same number for sympy, inf in float64."""
    from gbdist.algebra.evaluate import constant_value
    r = sp.Rational(1e-310) * 3 + sp.Rational(0.123) - sp.Rational(0.3)
    written = formulas.build(lambda: sp.sqrt(sp.Abs(r)))
    want = float(np.sqrt(abs(3e-310 + 0.123 - 0.3)))
    assert constant_value(analysis._exact_constant(written)) == pytest.approx(want, rel=1e-15)
    A, B = data(10, values=(0.0, 0.0, 1.0, 2.0))
    c = "sqrt(abs(1e-310 + 1e-310 + 1e-310 + 0.123 - 0.3 + x - x))"
    same(run_text(c, "max", A, B), brute(lambda x, y: np.sqrt(np.abs(3e-310 + 0.123 - 0.3 + x - x)),
                                          "max", A, B))


def test_an_error_in_a_very_long_line_quotes_a_window_around_its_column():
    """A 100 KB one-line definition: the message quotes a window of the line with the
    caret under the offending character, not the whole line."""
    from gbdist.errors import EXCERPT_WIDTH, Span
    line = "a" * 50_000 + "@" + "b" * 50_000
    ex = Span("<text>", line, 1, 50_001, 50_002).excerpt()
    quoted, caret = ex.split("\n")
    assert len(quoted) <= 4 + EXCERPT_WIDTH + 2
    assert quoted[caret.index("^")] == "@"
    short = Span("<text>", "op f(x, y) = x @ y", 1, 16, 17).excerpt().split("\n")
    assert short[0][short[1].index("^")] == "@"
    with pytest.raises(gb.GbdistError) as e:
        gb.define("op f(x, y) = " + " + ".join(["x"] * 20_000) + " @ y\n")
    assert len(str(e.value)) < 2_000
