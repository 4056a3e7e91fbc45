"""Issue 27's messages: each names what the user passed, in the user's terms, and the
way out; where a message proposes a fix, the fix is run against NumPy / SciPy."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

import gbdist as gb
from gbdist.errors import BackendError

ROOT = Path(__file__).resolve().parents[2]


def test_eager_mxm_names_the_arguments_as_passed():
    rng = np.random.default_rng(0)
    X, Y = rng.random((50, 20)), rng.random((30, 20))
    sr = gb.semirings.plus_times
    with pytest.raises(gb.InputError) as info:
        gb.mxm(X, Y, sr)
    err = info.value
    assert err.message == "gb.mxm(left, right, sr): left's columns must match right's rows"
    assert err.got == "left 50 × 20, right 30 × 20" and "B.T:" not in str(err)
    assert "gb.mxm(left, right.T, sr)" in err.hint
    assert_allclose(gb.mxm(X, Y.T, sr), X @ Y.T, rtol=1e-12)  # the fix it names
    with pytest.raises(gb.InputError) as info:
        gb.mxm(X, rng.random((30, 25)), sr)
    assert info.value.hint == "pass a right with 20 rows"
    with pytest.raises(gb.InputError) as info:
        gb.mxv(X, np.ones(30), sr)
    assert info.value.got == "matrix 50 × 20, vector of length 30"
    assert info.value.hint == "pass a vector of length 20"
    assert_allclose(gb.mxv(X, np.ones(20), sr), X.sum(axis=1), rtol=1e-12)


def test_explain_of_a_scalar_formula_says_what_it_got():
    A, B = gb.matrices("A B")
    P = gb.mxm(A, B.T, gb.semirings.plus_times)
    with pytest.raises(gb.ParameterError) as info:
        gb.explain(gb.where(P == 0, 0, 1))  # `P == 0` is a Python bool: gb.where made 1
    err = info.value
    assert err.message.startswith("gb.explain takes a metric or graph definition name")
    assert err.got.startswith("the constant 1 (a formula of the kind gb.op's")
    assert "Sym" not in str(err) and "gb.eq(a, b)" in err.hint
    ok = gb.explain(gb.where(gb.eq(P, 0), 0, 1))  # the form the hint names
    assert "P1" in str(ok)
    for value, got in ((3, "3"), (None, "None"), (np.zeros(2), "a numpy.ndarray object")):
        with pytest.raises(gb.ParameterError) as info:
            gb.explain(value)
        assert info.value.got == got


def test_define_metric_refuses_operands_it_cannot_be_given(isolated_definitions):
    sr = gb.semirings.plus_times
    C, D = gb.matrices("C D")
    with pytest.raises(gb.DefinitionError) as info:  # at definition, not at the first run
        gb.define_metric("four", lambda A, B: gb.mxm(A, B.T, sr) + gb.mxm(C, D.T, sr))
    err = info.value
    assert "reads C, D, which are not among its operands" in err.message
    assert "same k columns" in err.message and err.got == "4 operands: A, B, C, D"
    assert "four" not in gb.metric_names()
    with pytest.raises(gb.ArityError) as info:
        gb.define_metric("four2", lambda A, B, C, D: gb.mxm(A, B.T, sr))
    assert "takes 4 arguments, but its expression never reads C, D" in info.value.message
    assert info.value.got == "fn(A, B, C, D)"
    gb.define_metric("two_p", lambda A, B, p: gb.mxm(A, B.T, sr) * p)  # a number: accepted
    X = np.random.default_rng(1).random((4, 3))
    assert_allclose(gb.pairwise_distances(X, metric="two_p", p=2.0), 2 * X @ X.T, rtol=1e-12)


def test_backend_error_has_a_headline_and_a_way_out():
    err = BackendError("the compiled CPU printer has no rule for foo()")
    lines = str(err).splitlines()
    assert lines[0] == "the compiled CPU printer has no rule for foo()"
    assert lines[-1].startswith("Hint: the NumPy reference backend runs every plan")
    G = gb.Matrix(np.eye(3))
    with pytest.raises(BackendError) as info:
        gb.mxm(G, G, gb.semirings.plus_times, backend="cuda")
    assert str(info.value).splitlines() == [
        "backend='cuda' needs device operands", "Got: operands in host memory",
        "Hint: move them with .to_device() (CuPy), or backend='auto'"]


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "gbdist", *argv], capture_output=True, text=True,
                          timeout=300)


def test_cli_hints_name_the_cli(tmp_path):
    mtx = tmp_path / "x.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0\n")
    r = _cli("knn", str(mtx), "-k", "1", "--metric", "zzzqqq", "-o", str(tmp_path / "o.npz"))
    assert r.returncode == 2
    assert "Hint: `gbdist metrics` lists the known metrics" in r.stderr
    assert "gb.metric_names()" not in r.stderr
    listed = _cli("metrics")  # the command the hint names exists and lists them
    assert listed.returncode == 0 and "euclidean" in listed.stdout
    from gbdist.cli.base import in_cli_terms
    assert in_cli_terms("pip install 'gbdist[cuda]', or backend='cpu'") == \
        "pip install 'gbdist[cuda]', or --backend cpu"


SYMPY_LEAKS = ("Abs(", "**", " oo", "(oo", "sqrt(", "Max(", "Min(", "Piecewise")


def test_user_facing_formulas_are_mathematics(tmp_path):
    gbd = tmp_path / "h.gbd"
    gbd.write_text("op hd(x, y) = (sqrt(x) - sqrt(y))^2\n"
                   "metric hell(A, B) = sqrt(mxm(A, B.T, semiring(hd, plus)))\n")
    r = _cli("check", str(gbd))
    assert r.returncode == 0, r.stderr
    assert "op hd(x, y) = (√x - √y)²" in r.stdout
    assert not any(s in r.stdout for s in SYMPY_LEAKS), r.stdout
    assert repr(gb.ops.absdiff) == "op absdiff(x, y) = |x - y|"
    assert "identity ∞" in repr(gb.semirings.min_plus.add)
    sr = gb.semiring(gb.ops.absdiff, gb.ops.times)
    A, B = gb.matrices("A B")
    with pytest.raises(gb.AnalysisError) as info:
        gb.explain(gb.mxm(A, B.T, sr))
    assert "f(x, 0) = |x| is not the identity 1 of times" in info.value.got
    tour = subprocess.run([sys.executable, str(ROOT / "examples" / "decision_tour.py")],
                          capture_output=True, text=True, timeout=300)
    assert tour.returncode == 0 and "|x|" in tour.stdout
    assert not any(s in tour.stdout for s in SYMPY_LEAKS), tour.stdout


def test_every_data_suffix_gbdist_reads_is_refused_as_a_metric_file():
    from gbdist.front.syntax import _DATA_SUFFIXES
    from gbdist.io.text import DENSE_SUFFIXES, TRIPLET_SUFFIXES
    # .txt is left out: a metric file may be named so (it is read, and a syntax error names it)
    assert (set(DENSE_SUFFIXES) | set(TRIPLET_SUFFIXES)) - {".txt"} <= set(_DATA_SUFFIXES)


def test_plan_steps_say_what_they_hold_by_index():
    text = str(gb.explain("manhattan"))
    assert "reduce(apply(absdiff_L, A), plus)    [one per row i of A]" in text
    assert "reduce(apply(absdiff_R, B), plus)    [one per row j of B]" in text
    assert "[col]" not in text and "[row]" not in text
    # the reduction over A really is one value per row of A: against NumPy
    X = np.array([[1.0, -2.0, 0.0], [0.0, 3.0, 4.0]])
    assert_allclose(gb.reduce(X, gb.ops.plus), X.sum(axis=1))
