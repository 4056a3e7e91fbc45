"""Bounds on metric texts: deep nesting, size blow-up through helpers, ops and
let bindings, long or out-of-range numbers, non-ASCII digits, non-UTF-8 files
and long files. Each case ends in a positioned, typed error (or the right
answer) within seconds; never RecursionError, a hang or Python's own errors."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.spatial.distance as ssd

import gbdist as gb
from gbdist.front import syntax
from work_bound import bounded

WORK_STEPS = 200  # symbolic steps of one definition (each cut by the analysis's own budget)
WORK_MIB = 256  # its peak allocation

pytestmark = pytest.mark.usefixtures("isolated_definitions")


def error_of(text, source="<limits>"):
    """The error of defining ``text``, its work bounded by a step count and its peak memory
    (tests/work_bound.py), not by the clock."""
    with bounded(max_steps=WORK_STEPS, max_mib=WORK_MIB):
        with pytest.raises(gb.GbdistError) as info:
            gb.define(text, source=source)
    return info.value


def assert_positioned(err, line=None):
    assert err.span is not None, str(err)
    lines = str(err).splitlines()
    assert lines[0].startswith(f"{err.span.source}:{err.span.line}:{err.span.column}: ")
    assert "^" in lines[2]
    if line is not None:
        assert err.span.line == line


@pytest.mark.parametrize("label,text", [
    ("5000 nested abs", "op deep(x, y) = " + "abs(" * 5000 + "x" + ")" * 5000),
    ("2000 nested where", "op deepw(x, y) = " + "where(x > 0, " * 2000 + "x" + ", y)" * 2000),
    ("3000 nested abs over matrices", "metric deepm(A, B) = " + "abs(" * 3000 + "mxm(A, B.T, plus_times)"
     + ")" * 3000),
    ("5000 unary minus", "op negs(x, y) = " + "-" * 5000 + "x"),
    ("3000 powers", "op pows(x, y) = " + "x^" * 3000 + "x"),
    ("right-nested sums", "metric rn(A, B) = " + "A + (" * 3000 + "A" + ")" * 3000),
])
def test_deep_nesting_is_a_positioned_error(label, text):
    err = error_of("# a comment line\n" + text)
    assert isinstance(err, gb.DSLSyntaxError)
    assert f"more than {syntax.MAX_DEPTH} levels" in str(err)
    assert_positioned(err, line=2)


def test_redundant_brackets_do_not_nest():
    gb.define("metric br(A, B) = mxm(" + "(" * 20000 + "A" + ")" * 20000 + ", B.T, plus_times)")
    X = np.random.default_rng(0).random((3, 4))
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="br"), X @ X.T, rtol=1e-12)


def test_nesting_up_to_the_limit_works():
    n = 50
    gb.define("op d50(x, y) = " + "abs(" * n + "x - y" + ")" * n + "\n"
              "metric d50m(A, B) = mxm(A, B.T, semiring(d50, plus))\n"
              "metric e50m(A, B) = " + "abs(" * n + "mxm(A, B.T, semiring(absdiff, plus))" + ")" * n)
    X = np.random.default_rng(1).random((4, 5))
    want = ssd.cdist(X, X, "cityblock")
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="d50m"), want, atol=1e-12)
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="e50m"), want, atol=1e-12)


def test_a_long_flat_sum_is_built_in_a_loop():
    # 1,000 terms nest 1,000 deep in the parse tree (over the 128-level limit), but a chain
    # is folded iteratively into one n-ary sum (formulas are kept as written: 3,000 nodes)
    gb.define("op many(x, y) = " + " + ".join(["x * y"] * 1000) + "\n"
              "metric many_m(A, B) = mxm(A, B.T, semiring(many, plus))\n"
              "metric many_e(A, B) = " + " + ".join(["mxm(A, B.T, plus_times)"] * 60))
    X = np.random.default_rng(2).random((3, 4))
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="many_m"), 1000 * X @ X.T, rtol=1e-12)
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="many_e"), 60 * X @ X.T, rtol=1e-12)


def _doubling_helpers(n):
    return ("def h0(M) = M\n" + "".join(f"def h{i}(M) = h{i - 1}(M) + h{i - 1}(M)\n" for i in range(1, n + 1))
            + f"metric hm(A, B) = h{n}(mxm(A, B.T, plus_times))")


@pytest.mark.parametrize("label,text", [
    ("helpers doubling 20 times", _doubling_helpers(20)),
    ("ops squaring 20 times", "op o0(x, y) = x * y + 1\n" + "".join(
        f"op o{i}(x, y) = o{i - 1}(o{i - 1}(x, y), o{i - 1}(y, x))\n" for i in range(1, 21))),
    ("op let doubling", "op l0(x, y) = let a0 = x + y, " + ", ".join(
        f"a{i} = a{i - 1} * (a{i - 1} + {i})" for i in range(1, 40)) + " in a39"),
    ("expression let doubling", "metric lm(A, B) = let a0 = mxm(A, B.T, plus_times), " + ", ".join(
        f"a{i} = a{i - 1} + a{i - 1}" for i in range(1, 40)) + " in a39"),
    ("metrics doubling", "metric mm0(A, B) = mxm(A, B.T, plus_times)\n" + "".join(
        f"metric mm{i}(A, B) = mm{i - 1}(A, B) + mm{i - 1}(A, B)\n" for i in range(1, 25))),
])
def test_exponential_growth_is_bounded(label, text):
    err = error_of(text)
    assert isinstance(err, gb.DefinitionError)
    assert "too large" in str(err) or "too deeply" in str(err) or "steps" in str(err)
    assert_positioned(err)


def test_moderate_helper_doubling_is_exact():
    gb.define(_doubling_helpers(6).replace("metric hm", "metric hm6"))
    X = np.random.default_rng(3).random((3, 4))
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="hm6"), 64 * X @ X.T, rtol=1e-12)


@pytest.mark.parametrize("digits", ["\uff11\uff12", "\u0661", "\u096a", "1\uff10"])
def test_non_ascii_digits_are_not_numbers(digits):
    err = error_of(f"op fw(x, y) = x * {digits}")
    assert isinstance(err, gb.DSLSyntaxError)
    assert_positioned(err, line=1)


@pytest.mark.parametrize("literal", ["9" * 5000, "1" + "0" * 450, "0." + "1" * 500])
def test_overlong_literals_are_typed_errors(literal):
    for text in (f"op big(x, y) = x * {literal}", f"metric bigm(A, B) = mxm(A, B.T, plus_times) * {literal}"):
        err = error_of(text)
        assert isinstance(err, gb.DSLSyntaxError) and "too long" in str(err)
        assert_positioned(err, line=1)


@pytest.mark.parametrize("literal", ["1e400", "2" + "0" * 320])
def test_literals_beyond_float64_are_refused(literal):
    err = error_of(f"op huge(x, y) = x * {literal}")
    assert isinstance(err, gb.DSLSyntaxError) and "float64 range" in str(err)


def test_a_long_exact_literal_keeps_its_value():
    gb.define("op scaled(x, y) = x * y * 1" + "0" * 300 + " / 1e300\n"
              "metric scaled_m(A, B) = mxm(A, B.T, semiring(scaled, plus))")
    X = np.random.default_rng(4).random((3, 4))
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="scaled_m"), X @ X.T, rtol=1e-12)


def test_a_file_that_is_not_utf8_names_the_file_and_offset(tmp_path):
    f = tmp_path / "latin1.gbd"
    f.write_bytes("op ok(x, y) = x\n# caf\u00e9\n".encode("latin-1"))
    with pytest.raises(gb.InputError) as info:
        gb.load(f)
    msg = str(info.value)
    assert str(f) in msg and "not UTF-8" in msg and "offset 21" in msg and "line 2" in msg


@pytest.mark.parametrize("bad", [None, 42, b"metrics.gbd", ["a.gbd"]])
def test_load_needs_a_path(bad):
    with pytest.raises(gb.InputError, match="path"):
        gb.load(bad)


def test_load_refuses_directories_and_devices(tmp_path, monkeypatch):
    with pytest.raises(gb.InputError, match="directory"):
        gb.load(tmp_path)
    if os.path.exists("/dev/zero"):
        with pytest.raises(gb.InputError, match="not a regular file"):
            gb.load("/dev/zero")
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.gbd"
        os.mkfifo(fifo)
        # a FIFO with no writer blocks whoever opens it for reading: without a clock, the
        # bound is that it is refused without being opened for reading
        opened = []
        real_os_open, real_open = os.open, open

        def os_open(path, flags, *args, **kwargs):
            if not flags & os.O_NONBLOCK:
                opened.append(os.fspath(path))
            return real_os_open(path, flags, *args, **kwargs)

        def py_open(path, *args, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)):
                opened.append(os.fspath(path))
            return real_open(path, *args, **kwargs)
        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr("builtins.open", py_open)
        with pytest.raises(gb.InputError, match="not a regular file"):
            gb.load(fifo)
        monkeypatch.undo()
        assert str(fifo) not in opened, opened


def _many_definitions(n, tag):
    out = []
    for i in range(n):
        k = i % 4
        if k == 0:
            out.append(f"# op {i}\nop {tag}o{i}(x, y) = abs(x - y) * {i % 7 + 1}")
        elif k == 1:
            out.append(f"semiring {tag}s{i} = semiring({tag}o{i - 1}, plus)")
        elif k == 2:
            out.append(f"def {tag}h{i}(M) = sqrt(M) + 1")
        else:
            out.append(f"metric {tag}m{i}(A, B) = {tag}h{i - 1}(mxm(A, B.T, {tag}s{i - 2}))")
    return "\n".join(out) + "\n"


def test_define_scales_linearly_and_later_definitions_see_only_earlier_ones():
    # correctness of the O(1) scope snapshot: a name defined below is unknown above
    err = error_of("metric early(A, B) = mxm(A, B.T, semiring(late_op, plus))\nop late_op(x, y) = x")
    assert isinstance(err, gb.UnknownNameError)
    d = gb.define(_many_definitions(400, "lin_"), "<many>")
    assert len(d.metrics) == 100 and len(d.ops) == 100
    X = np.random.default_rng(5).random((3, 4))
    # lin_m399 = sqrt(Σ |x - y| * (396 % 7 + 1)) + 1
    want = np.sqrt(ssd.cdist(X, X, "cityblock") * (396 % 7 + 1)) + 1
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="lin_m399"), want, rtol=1e-12)


def test_doc_strings_still_come_from_the_comment_above():
    d = gb.define("# first\nop da(x, y) = x\n\n# second line\n# of doc\nop db(x, y) = y")
    assert d.ops["da"].doc == "first" and d.ops["db"].doc == "second line\nof doc"
