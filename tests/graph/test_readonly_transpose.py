"""``A.T`` is a read-only view of A (issue 24, item 10): the transpose is cached on A and
served to every later ``A.T`` (pull BFS, PageRank, ``mxv`` pushes, ``reduce_cols``), so a
write into it would leave A unchanged and every later use of ``A.T`` stale. Every writing
operation refuses it with an InputError naming ``A.T`` and the way out (``A.T.dup()``),
and changes nothing."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr
from graphcase import dev, host

SR = gb.semirings.plus_times


def _graph(kernels):
    A = gb.Matrix.from_coo([0, 0, 1, 2, 3], [1, 2, 2, 3, 0], [1.0, 4.0, 2.0, 5.0, 1.0], (4, 4))
    return dev(kernels, A)


# every operation that can write into a Matrix: out= of each, and assign
WRITES = {
    "mxm": lambda A, C, kw: gr.mxm(A, A, SR, out=C, **kw),
    "mxm-masked-accum": lambda A, C, kw: gr.mxm(A, A, SR, mask=A.S, accum=gb.ops.plus, out=C, **kw),
    "ewise_add": lambda A, C, kw: gr.ewise_add(A, A, gb.ops.plus, out=C, **kw),
    "ewise_mult": lambda A, C, kw: gr.ewise_mult(A, A, gb.ops.times, out=C, **kw),
    "apply": lambda A, C, kw: gr.apply(gb.ops.abs, A, out=C, **kw),
    "apply-bound": lambda A, C, kw: gr.apply(gb.ops.plus, A, right=1.0, out=C, **kw),
    "select": lambda A, C, kw: gr.select(A, "triu", out=C, replace=True, mask=A.S, **kw),
    "extract": lambda A, C, kw: gr.extract(A, None, None, out=C, **kw),
    "assign-scalar": lambda A, C, kw: gr.assign(C, 7.0, [0], [0], **kw),
    "assign-matrix": lambda A, C, kw: gr.assign(C, A, None, None, accum=gb.ops.plus, **kw),
    "gb.mxm": lambda A, C, kw: gb.mxm(A, A, SR, out=C, **kw),
    "gb.apply": lambda A, C, kw: gb.apply(gb.ops.abs, A, out=C, **kw),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_writing_into_a_cached_transpose_is_refused(write, kernels):
    A = _graph(kernels)
    AT = A.T
    before_A, before_T = host(A).to_dense().copy(), host(AT).to_dense().copy()
    with pytest.raises(gb.InputError, match=r"A\.T is a read-only view of A") as err:
        WRITES[write](A, AT, {"backend": kernels})
    assert "A.T.dup()" in str(err.value)
    # nothing changed: A, its cached transpose, and the transpose served next
    assert A.T is AT and AT.T is A
    np.testing.assert_array_equal(host(A).to_dense(), before_A)
    np.testing.assert_array_equal(host(A.T).to_dense(), before_T)
    np.testing.assert_array_equal(before_T, before_A.T)


def test_a_copy_of_the_transpose_is_writable(kernels):
    A = _graph(kernels)
    AT = A.T.dup()
    gr.assign(AT, 7.0, [0], [0])
    gr.mxm(A, A, SR, out=AT, accum=gb.ops.plus, backend=kernels)
    assert host(AT).to_dense()[0, 0] != 0
    np.testing.assert_array_equal(host(A.T).to_dense(), host(A).to_dense().T)  # A.T intact
    W = gb.Matrix(A.T)  # a new Matrix sharing the transpose's data is writable too: a write
    gr.assign(W, 9.0, [1], [1])  # replaces its own storage, never the shared arrays
    np.testing.assert_array_equal(host(A.T).to_dense(), host(A).to_dense().T)


def test_writing_into_A_refreshes_its_transpose(kernels):
    A = _graph(kernels)
    old = A.T
    gr.assign(A, 7.0, [0], [3])
    assert A.T is not old
    np.testing.assert_array_equal(host(A.T).to_dense(), host(A).to_dense().T)
    assert host(A.T).to_dense()[3, 0] == 7.0
    assert A.T.T is A
    with pytest.raises(gb.InputError, match="read-only"):  # the new transpose is read-only too
        gr.assign(A.T, 1.0, [0], [0])


def test_algorithms_after_a_refused_write():
    """The issue's scenario: a refused write leaves PageRank and BFS (which use the cached
    transpose) as they were."""
    rows, cols = [0, 1, 2, 2, 3], [1, 2, 0, 3, 0]
    A = gb.Matrix.from_coo(rows, cols, 1.0, (4, 4))
    pr, lv = alg.pagerank(A), alg.bfs_levels(A, 0)
    with pytest.raises(gb.InputError):
        gr.assign(A.T, 7.0, [0], [0])
    with pytest.raises(gb.InputError):
        gr.mxm(A, A, SR, out=A.T)
    np.testing.assert_allclose(alg.pagerank(A), pr)
    np.testing.assert_array_equal(alg.bfs_levels(A, 0), lv)
    v = gr.mxv(A.T, gb.Vector(np.ones(4)), SR)
    np.testing.assert_array_equal(v.to_dense(), np.asarray(A.to_dense()).sum(axis=0))


def test_vectors_expose_no_setters():
    """Neither object has a public setter for its values or pattern: out= and assign are the
    only writes (and both check)."""
    v = gb.Vector(np.arange(3.0))
    with pytest.raises(AttributeError):
        v.values = np.zeros(3)
    with pytest.raises(AttributeError):
        v.indices = np.zeros(3, np.int64)
    A = gb.Matrix(np.eye(2))
    with pytest.raises(AttributeError):
        A.T.csr = A.csr
