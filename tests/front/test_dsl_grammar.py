"""The text DSL's grammar: every construct, precedence, comments, and text → IR
equal to the Python API's IR for the same metric."""
import math

import pytest
import sympy as sp

import gbdist as gb
from gbdist.compiler import ir
from gbdist.algebra import ops
from gbdist.algebra.formulas import X, Y, off_domain
from gbdist.front import get_metric, parse_expression, parser
from gbdist.front.formula import instantiate
from gbdist.front.scope import ParamOp

A, B = ir.Matrix("A"), ir.Matrix("B")


pytestmark = pytest.mark.usefixtures("isolated_definitions")


def formula(text: str) -> sp.Expr:
    """The sympy formula of a one-op text (op names are unique per test via a counter)."""
    formula.n += 1
    name = f"g_op{formula.n}"
    d = gb.define(f"op {name}{text}", source=f"<grammar test {formula.n}>")
    return d.ops[name].formula


formula.n = 0


def metric_ir(body: str, params: str = "") -> ir.Node:
    metric_ir.n += 1
    name = f"g_metric{metric_ir.n}"
    d = gb.define(f"metric {name}(A, B{params}) = {body}", source=f"<grammar metric {metric_ir.n}>")
    return d.metrics[name].expression()


metric_ir.n = 0


def test_parser_is_built_once():
    assert parser() is parser()


@pytest.mark.parametrize("text, expected", [
    ("(x, y) = x + y * 2", X + 2 * Y),
    ("(x, y) = x - y - x", -Y),                       # left-associative
    ("(x, y) = x / y / 2", X / (2 * Y)),
    ("(x, y) = x ^ y ^ 2", X ** (Y ** 2)),            # right-associative
    ("(x, y) = x ** y ** 2", X ** (Y ** 2)),          # ** is ^
    ("(x) = -x^2", -(X ** 2)),                        # power binds tighter than unary minus
    ("(x) = x ^ -1", 1 / X),
    ("(x) = (x + 1) * 2", 2 * X + 2),
    ("(x) = +x", X),
    ("(x) = 2.5e1 * x + .5", sp.Float(25.0) * X + sp.Float(0.5)),
    ("(x) = min(x, inf)", X),
    ("(x, y) = max(x, y)", sp.Max(X, Y)),
    ("(x) = abs(x) + exp(x)", sp.Abs(X) + sp.exp(X)),
    ("(x) = sqrt(x) + log(x)", sp.sqrt(sp.Symbol("x", nonnegative=True)) + sp.log(sp.Symbol("x", nonnegative=True))),
])
def test_scalar_formulas_and_precedence(text, expected):
    got = formula(text)
    got = off_domain(got)
    expected = off_domain(sp.sympify(expected))
    assert sp.simplify(got - expected) == 0, (got, expected)


def test_comparisons_and_logic_build_piecewise():
    f = formula("(x, y) = where(x + y == 0 and not x > 1 or y <= -2, 1, x != y)")
    cond = sp.Or(sp.And(sp.Eq(X + Y, 0), sp.Not(X > 1)), Y <= -2)
    # a condition as a branch is its value 1 or 0, as a condition that is a whole op is
    ne = sp.Piecewise((1, cond), (sp.Piecewise((1, sp.Ne(X, Y)), (0, True)), True))
    assert ops.evaluated(f) == ne  # built as written; the same formula once sympy evaluates it
    g = formula("(x, y) = x < y")  # a condition as an op is 1 where it holds, else 0
    assert g == sp.Piecewise((1, X < Y), (0, True))
    for text, rel in (("x >= y", X >= Y), ("x <= y", X <= Y), ("x == y", sp.Eq(X, Y))):
        assert formula(f"(x, y) = {text}") == sp.Piecewise((1, rel), (0, True))


def test_op_parameter_names_map_to_x_and_y():
    f = formula("(a, b) = a - 2 * b")
    assert ops.evaluated(f) == X - 2 * Y
    d = gb.define("op g_unary_v(v) = v / 2\nop g_binary_first(u, w) = u", source="<names>")
    assert d.ops["g_unary_v"].arity == 1 and ops.evaluated(d.ops["g_unary_v"].formula) == X / 2
    assert d.ops["g_binary_first"].arity == 2  # declared binary, even if y is unused


def test_ops_compose_by_substitution_and_let():
    d = gb.define("""
        op g_half(x) = x / 2
        op g_sq(x, y) = (x - y)^2
        op g_comp(x, y) = g_half(g_sq(x, y)) + plus(x, 1)
        op g_let(x, y) = let d = x - y, s = x + y in d * d / s
    """, source="<compose>")
    assert ops.evaluated(d.ops["g_comp"].formula) == (X - Y) ** 2 / 2 + X + 1
    assert sp.simplify(d.ops["g_let"].formula - (X - Y) ** 2 / (X + Y)) == 0


def test_parameterised_ops():
    d = gb.define("""
        op g_apow(x, y; p) = abs(x - y)^p
        op g_use(x, y; q) = g_apow(x, y; q) + 1
        metric g_pm(A, B) = mxm(A, B.T, semiring(g_apow(3), plus)) + mxm(A, B.T, semiring(g_use(q = 2), plus))
    """, source="<param ops>")
    assert isinstance(d.ops["g_apow"], ParamOp)
    op3 = instantiate(d.ops["g_apow"], {"p": 3.0})
    assert op3 == ops.absdiff_pow(3)
    expr = d.metrics["g_pm"].expression()
    want = (gb.mxm(A, B.T, gb.semiring(ops.absdiff_pow(3), ops.plus))
            + gb.mxm(A, B.T, gb.semiring(ops.make_op("u", lambda x, y: abs(x - y) ** 2 + 1), ops.plus)))
    assert expr == want


def test_comments_and_doc_comments():
    d = gb.define("""
# a comment line
   # an indented comment

# Σ |x − y|, as a doc string
# on two lines
metric g_doc(A, B) = mxm(A, B.T, plus_absdiff)   # trailing comment
    # a comment, then a blank line: not a doc string

op g_nodoc(x) = x  # no doc above
""", source="<comments>")
    assert d.metrics["g_doc"].doc == "Σ |x − y|, as a doc string\non two lines"
    assert d.ops["g_nodoc"].doc == ""
    assert d.metrics["g_doc"].expression() == gb.mxm(A, B.T, gb.semirings.plus_absdiff)


def test_issue_examples_build_the_python_api_ir():
    d = gb.define("""
        # a comment
        op absdiff2(x, y) = abs(x - y)
        op chi2(x, y) = where(x + y == 0, 0, (x - y)^2 / (x + y))
        op half(x) = x / 2
        semiring l1 = semiring(absdiff2, plus, annihilator=None)
        metric bc_user(A, B) = mxm(A, B.T, l1) / (reduce(A, plus) + reduce(B, plus))
        metric cos_user(A, B) = 1 - mxm(A, B.T, plus_times) / (sqrt(reduce(apply(square, A), plus)) * sqrt(reduce(apply(square, B), plus)))
    """, source="<issue example>")
    absdiff2 = gb.op("absdiff2", lambda x, y: gb.abs(x - y))
    chi2 = gb.op("chi2", lambda x, y: gb.where(x + y == 0, 0, (x - y) ** 2 / (x + y)))
    assert d.ops["absdiff2"] == absdiff2 and d.ops["chi2"] == chi2
    assert d.ops["half"] == gb.op("half", lambda x: x / 2)
    l1 = gb.semiring(absdiff2, ops.plus, annihilator=None)
    assert d.semirings["l1"] == l1 and d.semirings["l1"].name == "l1"
    bc = gb.mxm(A, B.T, l1) / (gb.reduce(A, ops.plus) + gb.reduce(B, ops.plus))
    assert d.metrics["bc_user"].expression() == bc
    norm = lambda M: gb.sqrt(gb.reduce(gb.apply(ops.square, M), ops.plus))  # noqa: E731
    cos = 1 - gb.mxm(A, B.T, gb.semirings.plus_times) / (norm(A) * norm(B))
    assert d.metrics["cos_user"].expression() == cos
    # a different expression is a different key
    assert d.metrics["cos_user"].expression() != bc


def test_metric_level_constructs():
    e = metric_ir("max(reduce(A, max), reduce(B, min)) + min(ncols(A), 3) * exp(log(abs(-reduce(A, plus))))")
    want = (gb.maximum(gb.reduce(A, ops.max), gb.reduce(B, ops.min))
            + gb.minimum(gb.ncols(A), 3) * gb.exp(gb.log(gb.abs(-gb.reduce(A, ops.plus)))))
    assert e == want
    e = metric_ir("where(reduce(A, plus) != 0, reduce(A, plus) ^ 2, 0) - reduce(B, plus) ** 0.5")
    sa = gb.reduce(A, ops.plus)
    assert e == gb.where(ir.Pointwise("ne", (sa, ir.Const(0.0))), sa ** 2, 0) - gb.reduce(B, ops.plus) ** 0.5
    for text, fn in (("<", "lt"), ("<=", "le"), (">", "gt"), (">=", "ge"), ("==", "eq")):
        e = metric_ir(f"reduce(A, plus) {text} reduce(B, plus)")
        assert e == ir.Pointwise(fn, (sa, gb.reduce(B, ops.plus)))


def test_metric_precedence_and_constant_folding():
    e = metric_ir("1 - reduce(A, plus) / reduce(B, plus) * 2 ^ 2")
    sa, sb = gb.reduce(A, ops.plus), gb.reduce(B, ops.plus)
    assert e == 1 - sa / sb * 4.0
    e = metric_ir("reduce(A, plus) / sqrt(2) + -(1 + 1)")
    assert e == sa / math.sqrt(2.0) + (-2.0)
    e = metric_ir("reduce(A, plus) * where(2 > 1, 3, reduce(B, plus))")  # decided while parsing
    assert e == sa * 3.0


def test_transpose_and_apply_chains():
    e = metric_ir("mxm(apply(abs, A), apply(square, B).T, plus_times)")
    assert e == gb.mxm(gb.apply(ops.abs, A), gb.apply(ops.square, B).T, gb.semirings.plus_times)
    e = metric_ir("mxm(A, B.T.T.T, plus_times)")
    assert e == gb.mxm(A, B.T.T.T, gb.semirings.plus_times)


def test_helpers_let_and_metric_calls_inline():
    d = gb.define("""
        def g_norm(M) = sqrt(reduce(apply(square, M), plus))
        metric g_cos2(A, B) = let dot = mxm(A, B.T, plus_times), n = g_norm(A) * g_norm(B)
                              in max(min(1 - dot / n, 2), 0)
        metric g_twice(X, Y) = 2 * manhattan(X, Y) + minkowski(X, Y; p = 3) + minkowski(X, Y, p=1)
    """, source="<helpers>")
    assert d.metrics["g_cos2"].expression() == metrics_expr("cosine")
    want = (2 * metrics_expr("manhattan") + metrics_expr("minkowski", p=3)
            + metrics_expr("minkowski", p=1))
    assert d.metrics["g_twice"].expression() == want


def metrics_expr(name, **params):
    return get_metric(name).expression(**params)


def test_metric_parameters_and_requires():
    d = gb.define("""
        metric g_scaled(A, B; s = 2, t) requires s > 0 and t >= 0 = s * manhattan(A, B) + t
    """, source="<params>")
    m = d.metrics["g_scaled"]
    assert m.params == {"s": 2.0, "t": None}
    assert m.expression(t=1) == 2.0 * metrics_expr("manhattan") + 1.0
    assert m.expression(s=3, t=0) == 3.0 * metrics_expr("manhattan") + 0.0
    with pytest.raises(gb.InputError, match="requires s > 0 and t >= 0"):
        m.expression(s=-1, t=0)
    with pytest.raises(gb.InputError, match="needs the parameter 't'"):
        m.expression()


def test_alias_statement():
    gb.define("metric g_aliased(A, B) = mxm(A, B.T, plus_absdiff)\nalias g_al1, g_al2 = g_aliased",
              source="<alias>")
    assert get_metric("g_al1") is get_metric("g_aliased") is get_metric("G_AL2")


def test_parse_expression_free_operands():
    e = parse_expression("mxm(A, B.T, semiring(absdiff, plus))")
    assert e == gb.mxm(A, B.T, gb.semiring(ops.absdiff, ops.plus))
    x = gb.vectors("x")
    assert parse_expression("mxv(A, x, min_plus)") == gb.mxv(A, x, gb.semirings.min_plus)


def test_semiring_definition_forms():
    d = gb.define("""
        semiring g_sr1 = plus_times
        semiring g_sr2 = semiring(plus, min, annihilator=inf)
        semiring g_sr3 = semiring(times, plus, annihilator=0)
    """, source="<semirings>")
    assert d.semirings["g_sr1"] == gb.semirings.plus_times
    assert d.semirings["g_sr2"] == gb.semirings.min_plus
    assert d.semirings["g_sr3"] == gb.semiring(ops.times, ops.plus, annihilator=0)
    assert d.semirings["g_sr3"] != gb.semirings.plus_times  # the annihilator is part of the key


def test_redefining_from_the_same_source_replaces():
    gb.define("metric g_redo(A, B) = mxm(A, B.T, plus_absdiff)", source="<cell 1>")
    gb.define("metric g_redo(A, B) = mxm(A, B.T, plus_sqdiff)", source="<cell 1>")
    assert metrics_expr("g_redo") == gb.mxm(A, B.T, gb.semirings.plus_sqdiff)


def test_definitions_result_object(tmp_path):
    f = tmp_path / "mine.gbd"
    f.write_text("op g_file_op(x, y) = (x - y)^2\nsemiring g_file_sr = semiring(g_file_op, plus)\n"
                 "def g_file_h(M) = reduce(M, plus)\nmetric g_file_m(A, B) = mxm(A, B.T, g_file_sr)\n")
    d = gb.load(f)
    assert set(d.ops) == {"g_file_op"} and set(d.semirings) == {"g_file_sr"}
    assert set(d.metrics) == {"g_file_m"} and set(d.helpers) == {"g_file_h"}
    assert d["g_file_m"].source == str(f)
    assert d["g_file_sr"] == gb.semirings.plus_sqdiff
    # a later text sees the file's ops and semirings
    d2 = gb.define("metric g_file_m2(A, B) = sqrt(mxm(A, B.T, g_file_sr))", source="<later>")
    assert d2.metrics["g_file_m2"].expression() == metrics_expr("euclidean")
