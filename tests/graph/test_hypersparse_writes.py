"""out= / accum= / replace= (with masks) on the hypersparse operations, against
python-graphblas's ``C(mask, accum, replace) << A.mxm(B)`` at 2⁶⁰ vertex ids: GraphBLAS's
write-back, ``out<mask, replace> = accum(out, T)``, with out changed in place."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr

graphblas = pytest.importorskip("graphblas")
from test_hypersparse import N, _ids, _pair, _vec, same  # noqa: E402


def _pgb_mask(GM, structural, complement):
    m = GM.S if structural else GM.V
    return ~m if complement else m


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("accum", [None, "plus", "min"])
@pytest.mark.parametrize("mask", [None, (True, False), (False, False), (True, True)])
@pytest.mark.parametrize("replace", [False, True])
def test_matrix_writes_equal_graphblas(seed, accum, mask, replace):
    if replace and mask is None:
        pytest.skip("replace needs a mask")
    rng = np.random.default_rng(seed)
    ids = _ids(rng, 30)
    A, GA = _pair(rng, ids, ids, 60)
    B, GB = _pair(rng, ids, ids, 60)
    C, GC = _pair(rng, ids, ids, 70)
    M, GM = _pair(rng, ids, ids, 200)
    kw, gkw = {}, {}
    if accum:
        kw["accum"] = getattr(gb.ops, accum)
        gkw["accum"] = getattr(graphblas.binary, accum)
    if mask:
        kw["mask"] = M.S if mask[0] else M.V
        kw["mask"] = ~kw["mask"] if mask[1] else kw["mask"]
        gkw["mask"] = _pgb_mask(GM, *mask)
    if replace:
        kw["replace"] = gkw["replace"] = True
    got = gr.hyper.mxm(A, B, gb.semirings.plus_times, out=C, **kw)
    GC(**gkw) << GA.mxm(GB, graphblas.semiring.plus_times)
    assert got is C
    same(C, GC)
    # ewise_add and apply through the same write-back
    C2, GC2 = _pair(rng, ids, ids, 40)
    gr.hyper.ewise_add(A, B, gb.ops.max, out=C2, **kw)
    GC2(**gkw) << GA.ewise_add(GB, graphblas.binary.max)
    same(C2, GC2)


@pytest.mark.parametrize("seed", range(3))
def test_vector_writes_equal_graphblas(seed):
    rng = np.random.default_rng(seed)
    ids = _ids(rng, 30)
    A, GA = _pair(rng, ids, ids, 70)
    u, gu = _vec(rng, ids, 10)
    d, gd = _vec(rng, ids, 12)
    m, gm = _vec(rng, ids, 15)
    gr.hyper.vxm(u, A, gb.semirings.min_plus, out=d, accum=gb.ops.min, mask=~m.S)
    gd(~gm.S, accum=graphblas.binary.min) << gu.vxm(GA, graphblas.semiring.min_plus)
    same(d, gd)
    r, gr_ = _vec(rng, ids, 5)
    gr.hyper.reduce_rows(A, gb.ops.plus, out=r, accum=gb.ops.plus)
    gr_(accum=graphblas.binary.plus) << GA.reduce_rowwise(graphblas.monoid.plus)
    same(r, gr_)


def test_write_errors():
    rng = np.random.default_rng(7)
    ids = _ids(rng, 10)
    A, _ = _pair(rng, ids, ids, 20)
    u, _ = _vec(rng, ids, 4)
    with pytest.raises(gb.InputError, match="needs out="):
        gr.hyper.mxm(A, A, gb.semirings.plus_times, accum=gb.ops.plus)
    with pytest.raises(gb.InputError, match="HyperMatrix of the result's shape"):
        gr.hyper.mxm(A, A, gb.semirings.plus_times, out=u)
    small, _ = _pair(rng, ids % 100, ids % 100, 5, 100, 100)
    with pytest.raises(gb.InputError, match="shape"):
        gr.hyper.mxm(A, A, gb.semirings.plus_times, out=small)
    assert N == 2 ** 60
