"""Explanations as mathematics and pictures (issue 13): formulas against known forms,
proof labels, renderings, figures and the CLI's --format/-o."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import sympy as sp

import gbdist as gb
from gbdist.algebra.proofs import X, Y
from gbdist.cli.main import main
from gbdist.compiler import analysis
from gbdist.compiler.explain_math import exact_constant, latex, text, tidy

A, B = gb.matrices("A B")


def _same(a, b) -> bool:
    return sp.simplify(a - b) == 0


# --- the formulas, against forms known independently ---------------------------


def test_manhattan_correction_is_abs_difference_minus_both_abs():
    p = gb.explain("manhattan").products[0]
    assert _same(p.g, sp.Abs(X - Y) - sp.Abs(X) - sp.Abs(Y))
    assert p.L == sp.Abs(X) and p.R == sp.Abs(Y) and p.C == 0
    assert "|x - y|" in text(p.g) and "-|x|" in text(p.g) and "|y|" in text(p.g)
    assert r"\left|{x - y}\right|" in latex(p.g)
    assert "Abs(" not in str(gb.explain("manhattan"))


def test_euclidean_expansion_is_minus_two_x_y():
    p = gb.explain("euclidean").products[0]
    assert p.expansion_rank == 1
    assert sp.expand(sum(a * b for a, b in p.expansion)) == -2 * X * Y
    assert "g(x, y) = f − L − R + C = -2·x·y" in str(p)


def test_hellinger_constant_is_exact_sqrt2():
    ex = gb.explain("hellinger")
    assert ex.formula.has(sp.sqrt(2))
    assert "√2" in str(ex) and "1.41421" not in str(ex).split("as math", 1)[1].split("\n")[0]
    assert r"\sqrt{2}" in ex.to_markdown()
    p = ex.products[0]
    assert _same(p.g, -2 * sp.sqrt(X) * sp.sqrt(Y))


@pytest.mark.parametrize("value,expected", [
    (math.sqrt(2), sp.sqrt(2)), (math.log(2), sp.log(2)), (math.pi, sp.pi), (0.5, sp.Rational(1, 2)),
    (3.0, sp.Integer(3)),
])
def test_exact_constants_only_when_the_value_is_exactly_equal(value, expected):
    c = exact_constant(value)
    assert c == expected and float(c) == value


def test_a_float_without_a_short_closed_form_stays_a_float():
    c = exact_constant(0.1234567)
    assert isinstance(c, sp.Float)


def test_max_minus_min_is_shown_as_abs_where_it_holds():
    assert tidy(sp.Max(0, X) - sp.Min(0, X)) == sp.Abs(X)
    assert tidy(sp.Max(0, X - Y) - sp.Min(0, X - Y)) == sp.Abs(X - Y)
    other = sp.Max(0, X) - sp.Min(0, Y)  # not |x|: left as it is
    assert tidy(other) == other
    op = gb.op("mm_abs", lambda x, y: gb.maximum(x - y, 0) - gb.minimum(x - y, 0))
    p = gb.explain(gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus))).products[0]
    assert p.f == sp.Abs(X - Y) and p.L == sp.Abs(X)
    assert "|x - y|" in str(p)


def test_conventions_are_cases():
    p = gb.explain("canberra").products[0]
    assert text(p.L) == "{0 if x = 0; 1 otherwise}"
    assert r"\begin{cases}" in latex(p.L)
    assert "Piecewise" not in str(gb.explain("canberra"))


def test_kl_fill_value_is_infinity_not_zoo():
    ex = gb.explain("kl_divergence")
    p = ex.products[0]
    assert p.L.has(sp.oo) and not p.L.has(sp.zoo)
    assert text(p.L) == "{0 if x = 0; ∞ otherwise}"
    assert "zoo" not in str(ex) and "annihilator 0 (structural semantics)" in str(ex)
    refuted = [q for q in p.proofs if not q.holds]
    assert refuted and all("annihilator overrides" in q.label for q in refuted)


# --- proofs labelled by what they establish ------------------------------------


def test_expected_refutations_are_not_failures():
    ex = gb.explain("manhattan")
    refuted = [q for q in ex.proofs if not q.holds]
    assert len(refuted) == 2
    assert all(q.kind == "refuted-as-expected" and "refuted, as expected" in str(q) for q in refuted)
    assert all(q.kind == "proved" for q in ex.proofs if q.holds)
    assert "FAILS" not in str(ex)


def test_a_real_failure_is_labelled_as_one(monkeypatch, fresh_caches):
    monkeypatch.setattr(analysis, "separable", lambda g, dom: ((X, -3 * Y),))
    ex = gb.explain(gb.mxm(A, B.T, gb.semirings.plus_sqdiff))
    failed = [q for q in ex.proofs if q.kind == "failed"]
    assert len(failed) == 1 and "expansion" in failed[0].claim
    assert "FAILS: a real failure" in str(ex)


def test_numeric_checks_are_told_apart_from_proofs():
    op = gb.op("maxmin2", lambda x, y: gb.maximum(x, y) * gb.minimum(x, y))
    ex = gb.explain(gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus)))
    numeric = [q for q in ex.proofs if q.kind == "numeric"]
    assert numeric and all(q.method.startswith("numeric") for q in numeric)
    assert "checked numerically, not proved" in str(ex) and "proved symbolically" not in str(ex)


# --- the user's let names ----------------------------------------------------------


def test_jaccard_keeps_its_let_names():
    from gbdist.front.describe import describe
    definition, lets = describe("jaccard")
    assert [n for n, _ in lets] == ["both", "union"]
    assert "let both = shared(A, B)" in definition
    ex = gb.explain("jaccard").with_definition(definition, lets)
    both, union = sp.Symbol("both"), sp.Symbol("union")
    assert ex.formula.free_symbols == {both, union}
    legend = dict(ex.legend)
    assert text(legend[union]) == "S1 + S2 - both"
    # the named form and the inlined form agree at a point: d = (union - both)/union
    vals = {"S1": 3.0, "S2": 4.0, "P1": 2.0}
    u = vals["S1"] + vals["S2"] - vals["P1"]
    assert float(ex.formula.subs({union: u, both: vals["P1"]}).doit()) == pytest.approx((u - 2) / u)
    assert "{0 if union = 0; " in str(ex)


def test_a_metric_defined_in_python_has_no_text_definition():
    from gbdist.front.describe import describe
    gb.define_metric("py_dist_explain", lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_times))
    assert describe("py_dist_explain") == ("", ())


# --- renderings ----------------------------------------------------------------------


def test_notebook_and_markdown_renderings():
    ex = gb.explain("euclidean")
    tex = ex._repr_latex_()
    assert tex.startswith("$$") and tex.endswith("$$") and r"\sqrt{P_{1}}" in tex
    html = ex._repr_html_()
    assert "<table>" in html and r"\(d = \sqrt{P_{1}}\)" in html and "refuted, as expected" in html
    md = ex.to_markdown()
    assert md.startswith("## euclidean") and "$$d = \\sqrt{P_{1}}$$" in md and "- 2 x y" in md


# --- pictures --------------------------------------------------------------------------


def _brute(f, add, a, b):
    vals = [f(x, y) for x, y in zip(a, b)]
    return {"plus": sum, "max": max, "min": min}[add](vals)


@pytest.mark.parametrize("metric,visits,f,add", [
    ("manhattan", 2 + 4 + 4, lambda x, y: abs(x - y), "plus"),      # A∩B, A, B
    ("sqeuclidean", 2 + 4 + 4, lambda x, y: (x - y) ** 2, "plus"),
    ("chebyshev", 4 + 4, lambda x, y: abs(x - y), "max"),         # B's columns, then A's
    ("inner_product", 2, lambda x, y: x * y, "plus"),                 # A∩B only
])
def test_each_decision_kind_has_a_picture_whose_passes_add_up(metric, visits, f, add):
    pytest.importorskip("matplotlib")
    from gbdist.compiler.explain_figures import EXAMPLE_A, EXAMPLE_B, figure_bytes, passes
    ex = gb.explain(metric)
    p = ex.products[0]
    rows = passes(p)
    assert sum(len(cols) for _, _, cols, _ in rows) == visits
    total = [float(np.sum(v)) if add == "plus" or p.strategy == "union-correction"
             else float(np.max(v)) for _, _, _, v in rows]
    got = sum(total) if add == "plus" else max(total)
    assert got == pytest.approx(_brute(f, add, EXAMPLE_A, EXAMPLE_B))
    svg = figure_bytes(ex, "svg").decode()
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    assert svg.count('id="visit-') == visits
    assert svg.count('id="step-') == len(ex.plan.steps)


def test_missing_matplotlib_is_a_clear_error(monkeypatch):
    from gbdist.compiler.explain_figures import MissingDependency
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependency) as e:
        gb.explain("manhattan").figure()
    assert isinstance(e.value, ImportError) and isinstance(e.value, gb.GbdistError)
    assert "pip install matplotlib" in str(e.value)


# --- the command ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt,check", [
    ("svg", lambda b: b.lstrip().startswith(b"<?xml") and b.count(b'id="visit-') == 10),
    ("png", lambda b: b.startswith(b"\x89PNG")),
    ("html", lambda b: b"<table>" in b and b"<svg" in b),
    ("md", lambda b: b.startswith(b"## manhattan") and b"\\left|{x - y}\\right|" in b),
    ("text", lambda b: b.startswith(b"== manhattan") and "|x - y|".encode() in b),
])
def test_cli_writes_each_format(tmp_path, fmt, check):
    if fmt in ("svg", "png", "html"):
        pytest.importorskip("matplotlib")
    out = tmp_path / f"m.{fmt}"
    assert main(["explain", "manhattan", "--format", fmt, "-o", str(out)]) == 0
    assert check(out.read_bytes())


def test_cli_format_follows_the_suffix_and_a_picture_needs_a_file(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "c.svg"
    assert main(["explain", "chebyshev", "-o", str(out)]) == 0
    assert out.read_bytes().count(b'id="visit-') == 8
    assert main(["explain", "chebyshev", "--format", "svg"]) == 2
    assert "needs a file" in capsys.readouterr().err


def test_the_worked_example_applies_the_operands_transforms():
    """Jaccard's product is over apply(nonzero, ·): its picture counts shared columns."""
    pytest.importorskip("matplotlib")
    from gbdist.compiler.explain_figures import EXAMPLE_A, EXAMPLE_B, passes
    (pid, _, cols, values), = passes(gb.explain("jaccard").products[0])
    shared = [c for c in range(len(EXAMPLE_A)) if EXAMPLE_A[c] != 0 and EXAMPLE_B[c] != 0]
    assert pid == "inter" and cols == shared and list(values) == [1.0] * len(shared)


def test_the_written_expression_keeps_exact_constants():
    ex = gb.explain("hellinger")
    assert ex.expression.endswith("/ sqrt(2))") and "1.41421" not in str(ex)
    assert "^ (1/3))" in gb.explain("minkowski", p=3).expression


def test_save_picks_the_format_from_the_suffix(tmp_path):
    ex = gb.explain("euclidean")
    ex.save(tmp_path / "e.md")
    ex.save(tmp_path / "e.txt")
    assert (tmp_path / "e.md").read_text(encoding="utf-8") == ex.to_markdown()
    assert (tmp_path / "e.txt").read_text(encoding="utf-8") == str(ex) + "\n"
    with pytest.raises(gb.GbdistError):
        ex.save(tmp_path / "e.docx")
