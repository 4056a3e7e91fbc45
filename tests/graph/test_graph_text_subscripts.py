"""The text language's subscripts ``A[i, :]``, ``A[:, j]``, ``A[i, c]``, ``A[r, :]``,
``A[r, c]`` (docs/language.md), run by ``gr.run`` and compared with python-graphblas's
``A[i, :].new()`` … on the same inputs: pattern, values and dtype."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb

graphblas = pytest.importorskip("graphblas")

pytestmark = pytest.mark.usefixtures("isolated_definitions")

from test_graph_text_vs_graphblas import rand_matrix, rand_vector, run, same  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
def test_rows_and_columns(dtype):
    rng = np.random.default_rng(3)
    A, GA = rand_matrix(rng, 7, 9, dtype=dtype)
    for i in (0, 3, 6, -1, -7):
        same(run("graph row(A, i) = A[i, :]", A, i), GA[i % 7, :].new())
        same(run(f"graph row_lit(A) = A[{i}, :]", A), GA[i % 7, :].new())
    for j in (0, 4, 8, -2):
        same(run("graph col(A; j = 0) = A[:, j]", A, j), GA[:, j % 9].new())
    same(run("graph col0(A; j = 0) = A[:, j]", A), GA[:, 0].new())
    same(run("graph colT(A, j) = A.T[j, :]", A, 5), GA[:, 5].new())
    same(run("graph every(A) = A[:, :]", A), GA[:, :].new())


def test_empty_row_and_scalar_indices_computed_by_the_graph():
    rng = np.random.default_rng(4)
    A, GA = rand_matrix(rng, 6, 5)
    r, c, v = A.to_coo()
    empty = int(np.setdiff1d(np.arange(6), r)[0]) if np.setdiff1d(np.arange(6), r).size else None
    if empty is not None:
        same(run("graph row(A, i) = A[i, :]", A, empty), GA[empty, :].new())
    # the index is a scalar the definition computes: the largest row count
    k = int(np.bincount(r, minlength=6).max()) % 6
    same(run("graph rk(A) = A[reduce_scalar(count(A), max, dtype=int64), :]", A),
         GA[k, :].new())


def test_index_lists_are_vectors():
    rng = np.random.default_rng(5)
    A, GA = rand_matrix(rng, 7, 9)
    rows, cols = [5, 1, 1, 6], [0, 8, 3, 3]
    vr = gb.Vector.from_coo(range(4), rows, 4, dtype=np.int64)
    vc = gb.Vector.from_coo(range(4), cols, 4, dtype=np.int64)
    # vectors the definition computes: their stored values are the indices
    same(run("graph rc(A, r, c) = let rr = apply(identity, r), cc = apply(identity, c) "
             "in A[rr, cc]", A, vr, vc), GA[rows, cols].new())
    same(run("graph r_(A, r) = let rr = apply(identity, r) in A[rr, :]", A, vr),
         GA[rows, :].new())
    same(run("graph _c(A, c) = let cc = apply(identity, c) in A[:, cc]", A, vc),
         GA[:, cols].new())
    same(run("graph ic(A, c) = let cc = apply(identity, c) in A[2, cc]", A, vc),
         GA[2, cols].new())
    same(run("graph rj(A, r) = let rr = apply(identity, r) in A[rr, 7]", A, vr),
         GA[rows, 7].new())
    # an operand used as an index array before (extract's rows=) stays one
    same(run("graph again(A, r) = let X = extract(A, rows=r) in ewise_add(X, A[r, :], plus)",
             A, rows), GA[rows, :].new().ewise_add(GA[rows, :].new(), graphblas.binary.plus).new())


def test_rows_inside_a_loop_against_graphblas():
    """A row per iteration, its index a carried scalar: rows 0, 1, 2, 3 summed."""
    rng = np.random.default_rng(6)
    A, GA = rand_matrix(rng, 8, 8, p=0.5)
    text = ("graph rows_sum(A) = loop s = A[0, :], i = reduce_scalar(ids(A), min, dtype=int64) "
            "do i = reduce_scalar(apply(plus, vector(A, 1, at=0, dtype=int64), right=i), "
            "plus, dtype=int64), s = ewise_add(s, A[i, :], plus) repeat 3 in s")
    got = run(text, A)
    want = GA[0, :].new()
    for i in (1, 2, 3):
        want = want.ewise_add(GA[i, :].new(), graphblas.binary.plus).new()
    same(got, want)


def test_errors_when_it_runs():
    rng = np.random.default_rng(7)
    A, _ = rand_matrix(rng, 4, 3)
    with pytest.raises(gb.InputError, match="out of range"):
        run("graph row(A, i) = A[i, :]", A, 4)
    with pytest.raises(gb.InputError, match="out of range"):
        run("graph col(A) = A[:, -4]", A)
    with pytest.raises(gb.InputError, match="whole number"):
        run("graph row2(A, i) = A[i, :]", A, 1.5)
    with pytest.raises(gb.InputError, match="out of range"):
        run("graph rv(A, r) = let rr = apply(identity, r) in A[rr, :]", A,
            gb.Vector.from_coo([0], [9], 1, dtype=np.int64))
    u, _ = rand_vector(rng, 5)
    with pytest.raises(gb.GbdistError):
        run("graph vrow(u, i) = u[i, :]", u, 0)
