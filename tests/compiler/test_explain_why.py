"""The printed "why" of a product names only what is true (issue 27: for
semiring(times, plus, annihilator=None) it said 0 was not the identity of ⊕)."""
from __future__ import annotations

import pytest

import gbdist as gb


def _product(mul, add, **kw):
    A, B = gb.matrices("A B")
    ex = gb.explain(gb.mxm(A, B.T, gb.semiring(mul, add, **kw)))
    return ex, ex.products[0]


def test_both_sides_vanish_and_the_declaration_forbids_the_shortcut():
    ex, p = _product(gb.ops.times, gb.ops.plus, annihilator=None)
    why = p.why()
    assert "are the identity 0 of ⊕, but annihilator=None forbids" in why
    assert "not the identity" not in why
    assert why in str(ex)


@pytest.mark.parametrize("mul, vanishing, failing", [
    # f(x, 0) = 0 (vanishes), f(0, y) = y (does not)
    (gb.op("left_only_why", lambda x, y: x * y + y), None, "f(0, y) = y"),
    (gb.ops.absdiff, None, "f(x, 0) = |x| and f(0, y) = |y|"),
])
def test_only_the_sides_that_do_not_vanish_are_named(mul, vanishing, failing):
    _, p = _product(mul, gb.ops.plus)
    why = p.why()
    assert why.startswith(failing + (" is" if " and " not in failing else " are")
                          + " not the identity 0 of ⊕"), why
    if "f(0, y)" in failing and "f(x, 0)" not in failing:
        assert "f(x, 0)" not in why.split(";")[0]


def test_messages_print_mathematics_not_sympy():
    """Issue 27: AnalysisError said f(x, 0) = Abs(x); a graph error 'the identity oo'."""
    import scipy.sparse as sps

    from gbdist import graph as gr
    A, B = gb.matrices("A B")
    with pytest.raises(gb.AnalysisError) as e:
        gb.explain(gb.mxm(A, B.T, gb.semiring(gb.ops.absdiff, gb.ops.times)))
    assert "|x|" in str(e.value) and "Abs(" not in str(e.value)
    G = gb.Matrix(sps.random(5, 5, density=0.5, format="csr", random_state=0), fill=0)
    with pytest.raises(gb.GbdistError) as e:
        gr.mxm(G, G, gb.semirings.min_plus)
    assert "identity ∞" in str(e.value) and " oo" not in str(e.value)
    text = str(gb.explain("triangle_count"))
    for raw in ("**", "Abs(", " oo"):
        assert raw not in text
