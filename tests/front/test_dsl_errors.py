"""Every error a metric text can cause: a gbdist exception with file, line,
column, the offending line with a caret, and what was expected."""
import builtins
import os

import numpy as np
import pytest
import scipy.sparse as sps
import sympy as sp

import gbdist as gb
from gbdist.errors import Span


def error_of(text, source="<text>"):
    with pytest.raises(gb.GbdistError) as info:
        gb.define(text, source=source)
    return info.value


def caret_line(err) -> tuple[str, str]:
    """The quoted source line and the caret line of a rendered error."""
    lines = str(err).splitlines()
    return lines[1], lines[2]


def assert_points_at(err, line, column, snippet):
    assert err.span is not None, str(err)
    assert (err.span.line, err.span.column) == (line, column), str(err)
    src, carets = caret_line(err)
    start = carets.index("^")
    assert src[start:start + len(snippet)] == snippet, str(err)
    assert str(err).startswith(f"{err.span.source}:{line}:{column}: ")


def test_errors_share_one_root_and_render_expected_got_hint():
    for cls in (gb.DSLSyntaxError, gb.UnknownNameError, gb.ArityError, gb.TypeCheckError,
                gb.RedefinitionError, gb.DefinitionError, gb.AnalysisError, gb.InputError):
        assert issubclass(cls, gb.GbdistError)


def test_syntax_error_exact_message():
    err = error_of("op ok(x) = x\nmetric m(A, B) = mxm(A B.T, plus_times)\n", source="mine.gbd")
    assert isinstance(err, gb.DSLSyntaxError)
    assert str(err) == (
        "mine.gbd:2:24: unexpected name 'B'\n"
        "    metric m(A, B) = mxm(A B.T, plus_times)\n"
        "                           ^\n"
        "Expected: one of '(', ')', ',', ';', '=', '[', an operator\n"
        "Hint: two expressions side by side need an operator or a comma between them")


def test_syntax_error_at_end_of_text():
    err = error_of("metric m(A, B) = mxm(A, B.T, plus_times")
    assert isinstance(err, gb.DSLSyntaxError)
    assert "ends in the middle of a definition" in str(err)
    assert (err.span.line, err.span.column) == (1, 40)
    assert "Expected: " in str(err) and "')'" in str(err)


def test_syntax_error_unknown_keyword_or_missing_equals():
    err = error_of("\n\nmetric m(A, B) mxm(A, B.T, plus_times)")
    assert isinstance(err, gb.DSLSyntaxError)
    assert_points_at(err, 3, 16, "mxm")
    assert "'='" in err.expected
    err = error_of("function f(x) = x")
    assert isinstance(err, gb.DSLSyntaxError)
    assert "a definition (op, semiring, monoid, def, metric, graph or alias)" in err.expected


def test_injection_attempt_is_a_syntax_error_and_runs_nothing(monkeypatch):
    called = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(("system", a)) or 0)
    for name in ("eval", "exec", "__import__", "compile"):
        original = getattr(builtins, name)

        def spy(*a, _name=name, _orig=original, **k):
            called.append((_name, a))
            return _orig(*a, **k)
        monkeypatch.setattr(builtins, name, spy)
    monkeypatch.setattr(sp, "sympify", lambda *a, **k: called.append(("sympify", a)))
    text = 'op x(a, b) = __import__("os").system("touch /tmp/gbdist_pwned")'
    with pytest.raises(gb.DSLSyntaxError) as info:
        gb.define(text)
    monkeypatch.undo()
    assert not [c for c in called if c[0] in ("system", "eval", "exec", "sympify")]
    assert not [c for c in called if c[0] == "__import__" and c[1] and c[1][0] == "os"]
    err = info.value
    assert_points_at(err, 1, 25, '"os"')
    assert "no strings" in err.hint
    assert not os.path.exists("/tmp/gbdist_pwned")


@pytest.mark.parametrize("text", [
    "op x(a, b) = a.__class__",
    "op x(a, b) = a[0]",
    "metric m(A, B) = A.__dict__",
    "metric m(A, B) = exec(A)",
    "op x(a) = eval(a)",
    "op x(a) = lambda",
])
def test_other_escape_attempts_fail_cleanly(text):
    err = error_of(text)
    assert isinstance(err, (gb.DSLSyntaxError, gb.UnknownNameError, gb.TypeCheckError,
                            gb.DefinitionError)), err
    assert err.span is not None


def test_unknown_name_with_suggestion():
    err = error_of("metric m(A, B) =\n    mxm(A, B.T, plus_tims)")
    assert isinstance(err, gb.UnknownNameError)
    assert_points_at(err, 2, 17, "plus_tims")
    assert err.hint == "did you mean 'plus_times'?"
    err = error_of("metric m(A, B) = sqrrt(reduce(A, plus))")
    assert isinstance(err, gb.UnknownNameError) and err.hint == "did you mean 'sqrt'?"
    err = error_of("op f(x, y) = sqr(x)")
    assert isinstance(err, gb.UnknownNameError) and err.hint == "did you mean 'sqrt'?"
    assert_points_at(err, 1, 14, "sqr(x)")


def test_op_formula_using_a_name_that_is_not_a_parameter():
    err = error_of("op f(x, y) = x + z")
    assert isinstance(err, gb.DefinitionError)
    assert_points_at(err, 1, 18, "z")
    assert "op 'f' uses 'z', which is not one of its parameters" in err.message
    assert "(x, y)" in err.expected
    err = error_of("op f(x, y) = abs(x - yy)")
    assert err.hint == "did you mean 'y'?"


def test_wrong_arity():
    err = error_of("metric m(A, B) = reduce(A)")
    assert isinstance(err, gb.ArityError)
    assert_points_at(err, 1, 18, "reduce(A)")
    assert err.expected == "reduce(M, monoid)" and err.got == "1"
    err = error_of("op f(x, y) = absdiff(x)")
    assert isinstance(err, gb.ArityError) and "takes 2 argument(s)" in err.message
    err = error_of("op f(x, y, z) = x")
    assert isinstance(err, gb.ArityError)
    assert_points_at(err, 1, 6, "x, y, z")
    err = error_of("metric m(A) = reduce(A, plus)")
    assert isinstance(err, gb.ArityError) and "two matrices" in err.message
    err = error_of("op f(x) = where(x > 0, 1)")
    assert isinstance(err, gb.ArityError) and err.expected == "where(cond, a, b)"


def test_scalar_where_a_matrix_was_expected():
    err = error_of("metric m(A, B) = mxm(A, 2, plus_times)")
    assert isinstance(err, gb.TypeCheckError)
    assert_points_at(err, 1, 25, "2")
    assert err.message == "mxm needs a matrix operand, not a scalar" and err.got == "the number 2"
    err = error_of("metric m(A, B) = mxm(A, plus, plus_times)")
    assert isinstance(err, gb.TypeCheckError)
    assert_points_at(err, 1, 25, "plus")
    assert "needs a matrix" in err.message


def test_typing_errors_after_parsing_point_at_the_node():
    err = error_of("metric m(A, B) =\n  reduce(A, plus) + B")
    assert isinstance(err, gb.TypeCheckError)
    assert_points_at(err, 2, 21, "B")
    assert "needs a value" in err.message
    err = error_of("metric m(A, B) = mxm(A, B.T, plus_times) + apply(sqrt, mxm(A, B.T, plus_times))")
    assert isinstance(err, gb.TypeCheckError)
    assert_points_at(err, 1, 44, "apply(sqrt,")


def test_redefinition():
    err = error_of("op f(x) = x\n\nop f(x) = 2 * x")
    assert isinstance(err, gb.RedefinitionError)
    assert_points_at(err, 3, 4, "f")
    assert err.got == "first defined at <text>:1:4"
    err = error_of("op plus(x, y) = x + y")
    assert isinstance(err, gb.RedefinitionError) and "built-in op" in err.message
    err = error_of("metric manhattan(A, B) = mxm(A, B.T, plus_absdiff)", source="other.gbd")
    assert isinstance(err, gb.RedefinitionError)
    assert err.got.startswith("defined in ") and err.got.endswith("metrics.gbd")
    err = error_of("semiring mxm = plus_times")
    assert isinstance(err, gb.RedefinitionError) and "built-in function" in err.message
    err = error_of("op f(x, x) = x")
    assert isinstance(err, gb.RedefinitionError) and "appears twice" in err.message


def test_semiring_whose_add_is_not_a_monoid():
    err = error_of("semiring s =\n    semiring(absdiff, minus)")
    assert isinstance(err, gb.DefinitionError)
    assert_points_at(err, 2, 23, "minus")
    assert "'minus' is not a monoid" in err.message
    err = error_of("op halfsum(x, y) = (x + y) / 2\nmetric m(A, B) = reduce(A, halfsum)")
    assert isinstance(err, gb.DefinitionError) and "not a monoid" in err.message
    assert_points_at(err, 2, 28, "halfsum")


def test_wrong_kind_of_operator():
    err = error_of("metric m(A, B) = reduce(apply(plus, A), plus)")
    assert isinstance(err, gb.TypeCheckError) and "unary op" in err.message
    assert_points_at(err, 1, 31, "plus")
    err = error_of("metric m(A, B) = mxm(A, B.T, plus)")
    assert isinstance(err, gb.TypeCheckError) and err.message == "expected a semiring"
    err = error_of("metric m(A, B) = mxm(A, B.T, semiring(absdiff_pow, plus))")
    assert isinstance(err, gb.ArityError) and err.expected == "absdiff_pow(p)"
    err = error_of("metric m(A, B) = square(A)")
    assert isinstance(err, gb.TypeCheckError) and "apply(square, A)" in err.hint
    err = error_of("metric m(A, B) = A.X")
    assert isinstance(err, gb.UnknownNameError) and err.expected == ".T (the transpose)"


def test_analysis_error_points_at_the_product():
    gb.define("metric err_times(A, B) =\n  1 + mxm(A, B.T, semiring(absdiff, times))", source="err.gbd")
    X = sps.random(4, 5, density=0.5, random_state=0, format="csr")
    with pytest.raises(gb.AnalysisError) as info:
        gb.pairwise_distances(X, metric="err_times")
    assert_points_at(info.value, 2, 7, "mxm(A, B.T,")
    assert str(info.value).startswith("err.gbd:2:7: ")


def test_requires_and_parameter_errors():
    with pytest.raises(gb.InputError) as info:
        gb.pairwise_distances(np.eye(3), metric="minkowski", p=-1)
    assert str(info.value) == "metric 'minkowski' requires p > 0\nGot: p = -1"
    err = error_of("metric m(A, B; p = A) = manhattan(A, B)")
    assert isinstance(err, gb.UnknownNameError)  # A is not known where defaults are evaluated
    err = error_of("metric m(A, B) = minkowski(A, B; pp = 3)")
    assert isinstance(err, gb.UnknownNameError) and err.hint == "did you mean 'p'?"


def test_load_names_the_file(tmp_path):
    f = tmp_path / "broken.gbd"
    f.write_text("# my metrics\nop good(x) = x\nop bad(x) = x +\n")
    with pytest.raises(gb.DSLSyntaxError) as info:
        gb.load(f)
    assert str(info.value).startswith(f"{f}:3:")
    with pytest.raises(gb.InputError, match="cannot read the metric file"):
        gb.load(tmp_path / "missing.gbd")


def test_a_failed_text_registers_nothing():
    err = error_of("op fine_op(x) = x\nmetric fine_metric(A, B) = manhattan(A, B)\nmetric broken(A, B) = nope")
    assert isinstance(err, gb.UnknownNameError)
    with pytest.raises(gb.UnknownNameError):
        gb.pairwise_distances(np.eye(2), metric="fine_metric")
    with pytest.raises(gb.UnknownNameError):
        gb.define("metric uses_fine(A, B) = mxm(A, B.T, semiring(fine_op, plus))")


def test_span_excerpt_shape():
    s = Span("f.gbd", "a\nbcd efg\n", 2, 5, 8)
    assert str(s) == "f.gbd:2:5"
    assert s.excerpt() == "    bcd efg\n        ^^^"
