"""The dense fast paths (sparse.DENSE_SHARE): full vectors, vectors with a few absent
entries and sparse ones, through ewise_add / ewise_mult / apply / select / extract, masks
(structural, value, complement, replace) and accumulation, each against brute force on
dense float64 arrays with a presence mask; every case run with the dense path forced off,
automatic, and forced on, so both the sorted-key merge and the scatter agree with the
reference. Also the composite-key sort of ``from_coo`` (duplicates combined in the order
given)."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr
from gbdist.graph import sparse as S
from graphcase import assert_matches, dev

DTYPES = [np.float64, np.int32, np.int64, np.bool_]
SHARES = {"sorted": 1e9, "auto": S.DENSE_SHARE, "dense": 0.0}
F = {"plus": np.add, "min": np.minimum, "minus": np.subtract,
     "first": lambda a, b: a, "second": lambda a, b: b}


@pytest.fixture(params=list(SHARES))
def share(request, monkeypatch):
    monkeypatch.setattr(S, "DENSE_SHARE", SHARES[request.param])
    return request.param


def _vec(rng, n, absent, dtype):
    """A vector of size n with ``absent`` entries not stored (0: full); values 0..3 (so
    explicit zeros are stored), as (Vector, W float64, P)."""
    P = np.ones(n, bool)
    if absent:
        P[rng.choice(n, size=absent, replace=False)] = False
    W = np.where(P, rng.integers(0, 4, n), 0).astype(np.float64)
    if np.dtype(dtype) == np.bool_:
        W = (W != 0).astype(float)
    idx = np.flatnonzero(P)
    return gb.Vector.from_coo(idx, W[idx].astype(dtype), n), W, P


def _b(kernels):
    return "auto" if kernels == "cuda" else kernels


def _ref(op, wa, wb, dtype):
    """op on values already in ``dtype`` (as the operation sees them), in float64."""
    c = lambda w: w.astype(dtype).astype(np.float64)  # noqa: E731
    return F[op](c(wa), c(wb))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("absent_a,absent_b", [(0, 0), (0, 3), (3, 0), (2, 5), (30, 35)])
@pytest.mark.parametrize("op", list(F))
def test_ewise_full_and_dense_vectors(kernels, share, dtype, absent_a, absent_b, op):
    rng = np.random.default_rng(absent_a * 7 + absent_b)
    n = 40
    u, wu, pu = _vec(rng, n, absent_a, dtype)
    v, wv, pv = _vec(rng, n, absent_b, dtype)
    if np.dtype(dtype) == np.bool_ and op == "minus":
        pytest.skip("minus is not defined on bool")
    gop = getattr(gb.ops, op)
    both = _ref(op, wu, wv, dtype)
    add = gr.ewise_add(dev(kernels, u), dev(kernels, v), gop, backend=_b(kernels))
    want = np.where(pu & pv, both, np.where(pu, wu, wv))
    assert_matches(add, want, pu | pv, add.dtype)
    mult = gr.ewise_mult(dev(kernels, u), dev(kernels, v), gop, backend=_b(kernels))
    assert_matches(mult, both, pu & pv, mult.dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("structural", [True, False])
@pytest.mark.parametrize("complement", [False, True])
@pytest.mark.parametrize("replace", [False, True])
def test_full_vectors_masks_accum_replace(kernels, share, dtype, structural, complement,
                                           replace):
    rng = np.random.default_rng(11)
    n = 48
    u, wu, pu = _vec(rng, n, 0, dtype)          # full
    v, wv, pv = _vec(rng, n, 4, dtype)          # a few absent
    m, wm, pm = _vec(rng, n, 20, np.int64)      # the mask: stored zeros and absent entries
    c, wc, pc = _vec(rng, n, 10, dtype)         # the output's old content
    mask = dev(kernels, m).S if structural else dev(kernels, m).V
    if complement:
        mask = ~mask
    out = dev(kernels, c.dup())
    r = gr.ewise_add(dev(kernels, u), dev(kernels, v), gb.ops.max, mask=mask,
                     accum=gb.ops.plus, out=out, replace=replace, backend=_b(kernels))
    cast = lambda w: w.astype(dtype).astype(np.float64)  # noqa: E731
    T = np.maximum(cast(wu), cast(wv))  # u is full: the union is every position
    Z = np.where(pc, cast(wc) + T, T)
    allowed = pm if structural else (pm & (wm != 0))
    if complement:
        allowed = ~allowed
    keep_old = ~allowed & pc & (not replace)
    assert_matches(r, np.where(allowed, Z, cast(wc)), allowed | keep_old, dtype)
    assert allowed.any() and (~allowed).any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("absent", [0, 3, 30])
def test_apply_select_with_complemented_masks(kernels, share, dtype, absent):
    rng = np.random.default_rng(absent + 1)
    n = 40
    u, wu, pu = _vec(rng, n, absent, dtype)
    m, wm, pm = _vec(rng, n, 25, np.bool_)
    cu = wu.astype(dtype).astype(np.float64)
    a = gr.apply(gb.ops.plus, dev(kernels, u), right=1, mask=~dev(kernels, m).S,
                 backend=_b(kernels))
    want_p = pu & ~pm
    assert_matches(a, cu + 1, want_p, a.dtype)  # in the result type (bool + 1: an integer)
    s = gr.select(dev(kernels, u), "nonzero", mask=dev(kernels, m).V, backend=_b(kernels))
    assert_matches(s, cu, pu & (cu != 0) & pm & (wm != 0), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("absent", [0, 2, 35])
def test_extract_from_full_dense_and_sparse_vectors(kernels, dtype, absent):
    rng = np.random.default_rng(absent)
    n = 40
    u, wu, pu = _vec(rng, n, absent, dtype)
    idx = rng.integers(0, n, 60)  # repeats and any order
    r = gr.extract(dev(kernels, u), idx, backend=_b(kernels))
    assert_matches(r, wu[idx], pu[idx], dtype)


def test_full_union_with_sparse_update_keeps_every_entry():
    """connected_components's pattern: a full vector min-combined with a sparse one; the
    result is full, and the dense path returns the full keys without a merge."""
    n = 1000
    f = gb.Vector(np.arange(n, dtype=np.int64))
    h = gb.Vector.from_coo([5, 17, 999], [1, 40, 3], n, dtype=np.int64)
    r = gr.ewise_add(f, h, gb.ops.min)
    want = np.arange(n)
    want[[5, 17, 999]] = np.minimum(want[[5, 17, 999]], [1, 40, 3])
    assert r.nvals == n
    np.testing.assert_array_equal(r.indices, np.arange(n))
    np.testing.assert_array_equal(r.values, want)


@pytest.mark.parametrize("seed", range(5))
def test_merges_dense_and_sorted_agree(seed):
    """sparse.merge_union / merge_intersection / member: the dense path and the sorted
    path give the same keys and values on random key sets (full, dense, sparse)."""
    rng = np.random.default_rng(seed)
    space = 300
    for pa, pb in [(1.0, 0.05), (0.6, 0.7), (1.0, 1.0), (0.02, 0.9)]:
        ka = np.flatnonzero(rng.random(space) < pa).astype(np.int64)
        kb = np.flatnonzero(rng.random(space) < pb).astype(np.int64)
        va, vb = rng.integers(-5, 5, ka.size), rng.random(kb.size)
        both = lambda a, b: a * 10 + b  # noqa: E731 - not symmetric: operand order shows
        dk, dv = S._union_dense(ka, va, kb, vb, both, np.dtype(np.float64), np, space)
        sk, sv = S.merge_union(ka, va, kb, vb, both, np.dtype(np.float64), np)
        np.testing.assert_array_equal(dk, sk)
        np.testing.assert_array_equal(dv, sv)
        ik, iv = S.merge_intersection(ka, va, kb, vb, both, np, space=space)
        jk, jv = S.merge_intersection(ka, va, kb, vb, both, np)
        np.testing.assert_array_equal(ik, jk)
        np.testing.assert_array_equal(iv, jv)
        q = rng.integers(0, space, 200)
        np.testing.assert_array_equal(S.member(q, kb, np, space=space), np.isin(q, kb))


@pytest.mark.parametrize("dup", ["first", "second", "plus"])
def test_from_coo_duplicates_combined_in_the_order_given(dup):
    rng = np.random.default_rng(4)
    n = 50
    idx = rng.integers(0, n, 400)
    vals = rng.integers(0, 100, 400)
    v = gb.Vector.from_coo(idx, vals, n, dtype=np.int64, dup_op=getattr(gb.ops, dup))
    want = {}
    for i, x in zip(idx.tolist(), vals.tolist()):  # the order given, in plain Python
        if i not in want:
            want[i] = x
        else:
            want[i] = {"first": want[i], "second": x, "plus": want[i] + x}[dup]
    np.testing.assert_array_equal(v.indices, sorted(want))
    np.testing.assert_array_equal(v.values, [want[i] for i in sorted(want)])
    rows, cols = idx // 10, idx % 10
    M = gb.Matrix.from_coo(rows, cols, vals, (5, 10), dtype=np.int64, dup_op=getattr(gb.ops, dup))
    r, c, x = M.to_coo()
    np.testing.assert_array_equal(r * 10 + c, sorted(want))
    np.testing.assert_array_equal(x, [want[i] for i in sorted(want)])


@pytest.mark.parametrize("edge_share", [0.0, 2.0])  # always pull / push when not full
@pytest.mark.parametrize("op", ["mxv", "vxm"])
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
def test_unmasked_push_by_edge_share_matches_brute_force(kernels, monkeypatch, edge_share,
                                                         op, dtype):
    """operations.PUSH_EDGE_SHARE: a half-full vector pushes or pulls by the edges its rows
    hold; both give the brute-force min_plus (lor_land for bool) product."""
    from gbdist.graph import operations as O
    from graphcase import random_graph
    monkeypatch.setattr(O, "PUSH_EDGE_SHARE", edge_share)
    rng = np.random.default_rng(8)
    A, W, P = random_graph(rng, 30, 30, p=0.2, dtype=dtype)
    u, wu, pu = _vec(rng, 30, 14, dtype)
    G = dev(kernels, gb.Matrix(A))
    G.T  # mxv pushes only when Aᵀ is at hand
    sr = gb.semirings.lor_land if np.dtype(dtype) == np.bool_ else gb.semirings.min_plus
    if op == "mxv":
        w = gr.mxv(G, dev(kernels, u), sr, backend=_b(kernels))
    else:
        w = gr.vxm(dev(kernels, u), G, sr, backend=_b(kernels))
    Wc, uc = W.astype(dtype).astype(float), wu.astype(dtype).astype(float)
    M, MP = (Wc, P) if op == "mxv" else (Wc.T, P.T)
    want, present = np.zeros(30), np.zeros(30, bool)
    for i in range(30):
        terms = [(float(M[i, k] != 0 and uc[k] != 0) if np.dtype(dtype) == np.bool_
                  else M[i, k] + uc[k]) for k in range(30) if MP[i, k] and pu[k]]
        if terms:
            want[i] = max(terms) if np.dtype(dtype) == np.bool_ else min(terms)
            present[i] = True
    assert present.any() and (~present).any()
    assert_matches(w, want, present, w.dtype)
