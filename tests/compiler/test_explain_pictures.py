"""The explain pictures (issue 27): a row names the ⊕ it combines with, and every text,
the panel titles included, lies inside the picture."""
from __future__ import annotations

import re

import pytest

import gbdist as gb

pytest.importorskip("matplotlib")


def _texts(svg: str):
    """(x, y, font size, text) of every <text> of a matplotlib SVG (svg.fonttype none)."""
    out = []
    for m in re.finditer(r'<text style="font-size: ([\d.]+)px;[^"]*" x="([-\d.]+)" '
                         r'y="([-\d.]+)"[^>]*>([^<]*)</text>', svg):
        out.append((float(m.group(2)), float(m.group(3)), float(m.group(1)), m.group(4)))
    return out


@pytest.mark.parametrize("add, label", [("max", "max over A∩B"), ("min", "min over A∩B"),
                                        ("plus", "Σ over A∩B")])
def test_an_intersection_row_names_its_monoid(add, label):
    from gbdist.compiler.explain_figures import figure_bytes, passes
    A, B = gb.matrices("A B")
    ex = gb.explain(gb.mxm(A, B.T, gb.semiring(gb.ops.times, getattr(gb.ops, add),
                                               annihilator=0)))
    p = ex.products[0]
    assert p.strategy == "intersection"
    assert passes(p)[0][1].startswith(label)
    texts = [t for *_, t in _texts(figure_bytes(ex, "svg", which="decision").decode())]
    assert any(t.startswith(label) for t in texts)
    if add != "plus":
        assert not any("Σ" in t for t in texts)


@pytest.mark.parametrize("metric, which", [("cosine", "decision"), ("chebyshev", "decision"),
                                           ("manhattan", "all"), ("manhattan", "plan")])
def test_every_text_lies_inside_the_picture(metric, which):
    from gbdist.compiler.explain_figures import figure_bytes
    svg = figure_bytes(gb.explain(metric), "svg", which=which).decode()
    w, h = map(float, re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
    texts = _texts(svg)
    assert texts
    title = [t for t in texts if t[3].startswith(("intersection", "two-pass", "union", "plan"))]
    assert title, [t[3] for t in texts]
    for x, y, size, text in texts:  # y is the baseline: the glyphs reach about one size above
        assert y - size >= 0 and y <= h and 0 <= x <= w, (text, x, y, w, h)


def test_the_html_page_typesets_its_mathematics_and_keeps_the_counterexamples():
    """Issue 27: --format html showed raw LaTeX in a browser, and dropped the counterexamples
    the text shows."""
    from gbdist.compiler.explain_figures import render
    ex = gb.explain("manhattan")
    page = render(ex, "html").decode()
    assert "mathjax" in page.lower() and "inlineMath" in page
    details = [q.detail for p in ex.products for q in p.proofs if q.detail]
    assert any("counterexample" in d for d in details)
    notebook = ex._repr_html_()  # the typeset part itself, not only the <pre> text below it
    import html
    for d in details:
        assert html.escape(d) in notebook
