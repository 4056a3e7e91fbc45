"""Full and bitmap vectors as masks (gbdist/graph/masks.py, issue 28): the pattern is read
from the vector's values and presence flags, no key array is made. Every masked operation
(the product's dense mask, the element-wise and apply paths' ``allows``, the write-back
onto ``out=``) is compared with python-graphblas (SuiteSparse) on the same operands:
structural and value masks, complemented or not, with and without ``replace``."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from gbdist.graph.construct import ABSENT
from graphcase import dev, host

graphblas = pytest.importorskip("graphblas")
from graphblas import Matrix as GMatrix, Vector as GVector, binary as gbin  # noqa: E402
from graphblas import semiring as gsr, unary as gun  # noqa: E402

N = 40


def _same(ours, theirs):
    ours = host(ours)
    idx, vals = theirs.to_coo()
    np.testing.assert_array_equal(np.asarray(ours.indices), idx)
    np.testing.assert_allclose(np.asarray(ours.values, dtype=float), np.asarray(vals, float),
                               rtol=1e-12)


def _mask_vector(form, rng, kernels):
    """(gbdist vector in ``form``, its python-graphblas twin): values with stored zeros
    (a value mask differs from the structure), a bitmap with ~1/4 of positions absent."""
    y = rng.integers(0, 3, N).astype(np.float64)  # ~1/3 stored zeros
    if form == "full":
        v, g = gb.Vector(y), GVector.from_dense(y)
    else:
        present = rng.random(N) < 0.75
        v = gb.Vector._from_dense(y.copy(), present, ABSENT)
        keep = np.flatnonzero(present)
        g = GVector.from_coo(keep, y[keep], size=N)
    assert v.format == form and v._sparse_idx is None
    return dev(kernels, v), g


@pytest.mark.parametrize("form", ["full", "bitmap"])
@pytest.mark.parametrize("kind", ["S", "V"])
@pytest.mark.parametrize("comp", [False, True])
def test_full_and_bitmap_masks_make_no_keys(kernels, form, kind, comp):
    rng = np.random.default_rng(["full", "bitmap"].index(form) * 4 + 2 * comp + (kind == "V"))
    M, Mg = _mask_vector(form, rng, kernels)
    mk, mkg = getattr(M, kind), getattr(Mg, kind)
    if comp:
        mk, mkg = ~mk, ~mkg
    A = sps.random(N, N, density=0.2, format="csr", random_state=rng, dtype=np.float64)
    c = A.tocoo()
    G, P = dev(kernels, gb.Matrix(A)), GMatrix.from_coo(c.row, c.col, c.data, nrows=N, ncols=N)
    x = rng.random(N) + 0.5
    u, ug = dev(kernels, gb.Vector(x)), GVector.from_dense(x)
    oi = np.flatnonzero(rng.random(N) < 0.6)
    ov = rng.random(oi.size) + 0.1
    o, og = dev(kernels, gb.Vector.from_coo(oi, ov, N)), GVector.from_coo(oi, ov, size=N)
    # the product (its kernel reads the mask's dense pattern)
    _same(gr.mxv(G, u, gb.semirings.plus_times, mask=mk, backend=kernels),
          P.mxv(ug, gsr.plus_times).new(mask=mkg))
    # element-wise and apply (the mask read at the operands' keys)
    _same(gr.ewise_add(o, u, gb.ops.plus, mask=mk), og.ewise_add(ug, gbin.plus).new(mask=mkg))
    _same(gr.apply(gb.ops.neg, o, mask=mk), og.apply(gun.ainv).new(mask=mkg))
    # the write-back onto out= (the mask read at C's keys too), kept or replaced outside
    for replace in (False, True):
        C, Cg = o.dup(), og.dup()
        gr.ewise_mult(u, u, gb.ops.times, out=C, accum=gb.ops.plus, mask=mk, replace=replace)
        Cg(mask=mkg, accum=gbin.plus, replace=replace) << ug.ewise_mult(ug, gbin.times)
        _same(C, Cg)
    assert M._sparse_idx is None  # no key array was made for the mask
    _same(M, Mg)  # (keys made here, by the comparison)


def test_a_bitmap_structure_mask_is_its_presence(kernels):
    """A bitmap's structural pattern is its own presence flags (no new array); its value
    pattern drops the stored zeros."""
    rng = np.random.default_rng(11)
    M, Mg = _mask_vector("bitmap", rng, kernels)
    assert M.S.dense() is M._present
    want = np.zeros(N, bool)
    idx, vals = Mg.to_coo()
    want[idx[vals != 0]] = True
    got = M.V.dense()
    np.testing.assert_array_equal(got.get() if hasattr(got, "get") else got, want)
