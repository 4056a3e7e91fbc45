"""``A[i, :]``, ``A[:, j]``, ``A[r, c]`` in graph definitions: checked when defined (one
index is a whole number or a scalar, an index list a vector, two single indices refused,
a matrix needed), explained as written, and equal to the Python API's ``A[i, :]`` and
``gr.extract`` (tests/graph/test_graph_text_subscripts.py compares with python-graphblas)."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr

pytestmark = pytest.mark.usefixtures("isolated_definitions")

D = np.array([[1.0, 0, 2, 0], [0, 3, 0, 4], [5, 0, 0, 6]])


def graph(text):
    return next(iter(gb.define(text).graphs.values()))


@pytest.mark.parametrize("text, message, caret", [
    ("graph b(A) = A[1.5, :]", "a row index is a whole number", "1.5"),
    ("graph b(A) = A[:, 0.5]", "a column index is a whole number", "0.5"),
    ("graph b(A, i, j) = A[i, j]", "one element", "A[i, j]"),
    ("graph b(A) = A[2, 3]", "one element", "A[2, 3]"),
    ("graph b(A) = A[A, :]", "a whole number, a scalar, ':' or a vector of indices", "A"),
    ("graph b(A) = A[plus_times, :]", "a whole number, a scalar, ':' or a vector", "plus_times"),
    ("graph b(A, u) = vxm(u, A, plus_times)[:, 1]", "needs a matrix", "vxm(u, A, plus_times)"),
    ("graph b(A; k = 1) = A[:, mxm(A, A, plus_times)]", "a matrix", "mxm(A, A, plus_times)"),
    ("op f(x, y) = x[1, :]", "graph definitions only", "x[1, :]"),
    ("metric m(A, B) = A[1, :]", "graph definitions only", "A[1, :]"),
])
def test_errors_point_at_the_subscript(text, message, caret):
    with pytest.raises(gb.GbdistError, match=message.replace("[", r"\[").replace("(", r"\(")) as e:
        gb.define(text)
    span = e.value.span
    assert span is not None and text[span.column - 1:span.end_column - 1] == caret


def test_kinds_of_a_first_use():
    g = graph("graph row(A, i) = A[i, :]")
    assert g.kinds == {"A": "matrix", "i": "scalar"}
    assert g.steps[-1].kind == "vector" and g.steps[-1].selector == "row"
    g = graph("graph sub(A, r) = let X = extract(A, rows=r) in A[r, :]")
    assert g.kinds["r"] == "index" and g.steps[-1].kind == "matrix"
    g = graph("graph col(A; j = 2) = A[:, j]")
    assert g.steps[-1].selector == "col" and g.steps[-1].cols.source == "j"
    with pytest.raises(gb.TypeCheckError, match="scalar"):
        gb.define("graph twice(A, i) = let X = A[i, :] in mxv(A, i, plus_times)")


def test_explain_writes_the_subscript():
    gb.define("graph rc(A, i, c) = let cc = apply(identity, c) in A[i, cc]")
    text = str(gb.explain("rc"))
    assert "A[i, cc]" in text and "-> vector" in text
    assert "indexing moves stored entries" in text


def test_equal_to_the_python_api():
    A = gb.Matrix(D)
    for i in range(-3, 3):
        assert gr.run(graph("graph r(A, i) = A[i, :]"), A, i).isequal(A[i, :])
    for j in range(4):
        assert gr.run(graph("graph c(A, j) = A[:, j]"), A, j).isequal(A[:, j])
    f = gb.Vector.from_coo([0, 1], [2, 0], 2, dtype=np.int64)
    got = gr.run(graph("graph s(A, f) = let r = apply(identity, f) in A[r, r]"), A, f)
    assert got.isequal(gr.extract(A, [2, 0], [2, 0]))
    assert got.to_dense(fill=0).tolist() == [[0, 5], [2, 1]]
