"""mxm, mxv, vxm against brute force: semirings × dtypes × kernel sets, explicit zeros
as edges, empty rows and columns, masks (structural/value, complement, replace), accum,
out=, transposed operands, a user monoid, push and pull paths."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb
from gbdist import graph as gr
from graphcase import assert_matches, brute_mxm, dev, random_graph, random_vector, semiring

CASES = [
    ("plus_times", np.float64), ("plus_times", np.float32), ("plus_times", np.int32),
    ("plus_times", np.int64), ("plus_times", np.bool_), ("min_plus", np.float64),
    ("min_plus", np.int64), ("max_plus", np.int32), ("max_min", np.float64),
    ("min_times", np.float64), ("lor_land", np.bool_), ("plus_pair", np.int64),
    ("any_pair", np.bool_), ("por_times", np.float64), ("plus_first", np.float64),
    ("plus_minus", np.int64),
]


@pytest.mark.parametrize("name,dtype", CASES)
def test_mxm_matches_brute_force(kernels, name, dtype):
    rng = np.random.default_rng(len(name) + np.dtype(dtype).itemsize)
    A, WA, PA = random_graph(rng, 13, 11, dtype=dtype)
    B, WB, PB = random_graph(rng, 11, 9, dtype=dtype)
    if name == "por_times":  # probabilities
        A.data, B.data = (A.data / 5).astype(dtype), (B.data / 5).astype(dtype)
        WA, WB = WA / 5, WB / 5
    C = gr.mxm(dev(kernels, gb.Matrix(A)), dev(kernels, gb.Matrix(B)), semiring(name),
               backend="auto" if kernels == "cuda" else kernels)
    want, present = brute_mxm(WA, PA, WB, PB, name)
    assert present.any() and (~present).any()
    assert_matches(C, want, present, dtype, rtol=1e-6 if np.dtype(dtype) == np.float32 else 1e-12
                   if np.dtype(dtype).kind == "f" else 0)


def _backend(kernels):
    return "auto" if kernels == "cuda" else kernels


def test_explicit_zero_edge_and_empty_rows(kernels):
    # 0 -> 1 (weight 0) -> 2 (weight 5): the 0-weight edge is an edge; row 3 is empty
    G = gb.Matrix(sps.csr_matrix(([0.0, 5.0, 1.0], ([0, 1, 2], [1, 2, 0])), shape=(4, 4)))
    assert G.nvals == 3
    C = gr.mxm(dev(kernels, G), dev(kernels, G), gb.semirings.min_plus, backend=_backend(kernels))
    C = C.to_host()
    r, c, v = C.to_coo()
    assert list(zip(r.tolist(), c.tolist(), v.tolist())) == [(0, 2, 5.0), (1, 0, 6.0), (2, 1, 1.0)]
    P = gr.mxm(dev(kernels, G), dev(kernels, G), gb.semirings.plus_times, backend=_backend(kernels))
    # (0, 2) = 0 * 5 is stored: a term exists, even though its value is 0
    assert P.to_host().to_dense(fill=-1)[0, 2] == 0.0


@pytest.mark.parametrize("structural", [True, False])
@pytest.mark.parametrize("complement", [False, True])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("with_accum", [False, True])
def test_mxm_mask_accum_replace(kernels, structural, complement, replace, with_accum):
    rng = np.random.default_rng(7)
    A, WA, PA = random_graph(rng, 12)
    B, WB, PB = random_graph(rng, 12)
    M, WM, PM = random_graph(rng, 12, p=0.5, zeros=6)  # value mask: stored zeros are false
    Cin, WC, PC = random_graph(rng, 12, p=0.4)
    T, PT = brute_mxm(WA, PA, WB, PB, "plus_times")
    allowed = PM if structural else (PM & (WM != 0))
    if complement:
        allowed = ~allowed
    # Z = accum(C, T) or T
    if with_accum:
        Z = np.where(PC & PT, WC + T, np.where(PC, WC, T))
        PZ = PC | PT
    else:
        Z, PZ = T, PT
    PR = (PZ & allowed) | (PC & ~allowed & (not replace))
    R = np.where(allowed, Z, WC)
    mobj = gb.Matrix(M)
    mask = mobj.S if structural else mobj.V
    if complement:
        mask = ~mask
    out = dev(kernels, gb.Matrix(Cin))
    res = gr.mxm(dev(kernels, gb.Matrix(A)), dev(kernels, gb.Matrix(B)), gb.semirings.plus_times,
                 mask=dev(kernels, mask.source) if False else _dev_mask(kernels, mask),
                 accum=gb.ops.plus if with_accum else None, out=out, replace=replace,
                 backend=_backend(kernels))
    assert res is out
    assert_matches(res, R, PR, np.float64)


def _dev_mask(kernels, mask):
    if kernels != "cuda":
        return mask
    from gbdist.graph import Mask
    return Mask(mask.source.to_device(), mask.structural, mask.complement)


def test_bare_matrix_mask_is_a_value_mask(kernels):
    rng = np.random.default_rng(3)
    A, WA, PA = random_graph(rng, 10, p=0.5)
    M = sps.csr_matrix(([1.0, 0.0, 2.0], ([0, 2, 4], [3, 3, 5])), shape=(10, 10))
    T, PT = brute_mxm(WA, PA, WA, PA, "plus_times")
    allowed = np.zeros((10, 10), bool)
    allowed[0, 3] = allowed[4, 5] = True
    res = gr.mxm(dev(kernels, gb.Matrix(A)), dev(kernels, gb.Matrix(A)), gb.semirings.plus_times,
                 mask=dev(kernels, gb.Matrix(M)), backend=_backend(kernels))
    assert_matches(res, T, PT & allowed, np.float64)


def test_transposed_operands(kernels):
    rng = np.random.default_rng(5)
    A, WA, PA = random_graph(rng, 9, 7)
    Am = dev(kernels, gb.Matrix(A))
    C = gr.mxm(Am.T, Am, gb.semirings.max_plus, backend=_backend(kernels))
    want, present = brute_mxm(WA.T, PA.T, WA, PA, "max_plus")
    assert_matches(C, want, present, np.float64)
    assert Am.T is Am.T and Am.T.T is Am  # cached, and the transpose of the transpose


def test_transpose_cache_follows_changes():
    A = gb.Matrix(sps.csr_matrix(np.array([[0, 1.0], [0, 0]])))
    T1 = A.T
    gr.assign(A, 2.0, [1], [0])
    assert A.T is not T1
    np.testing.assert_array_equal(A.T.to_dense(), np.array([[0, 2.0], [1.0, 0]]))


def brute_mxv(W, P, x, xp, name, transpose=False):
    mul, add = __import__("graphcase").PY[name]
    if transpose:  # vxm: w(j) = add_k mul(u(k), A(k, j))
        W, P = W.T, P.T
    m = W.shape[0]
    out, present = np.zeros(m), np.zeros(m, bool)
    for i in range(m):
        terms = [(mul(x[k], W[i, k]) if transpose else mul(W[i, k], x[k]))
                 for k in range(W.shape[1]) if P[i, k] and xp[k]]
        if terms:
            out[i] = __import__("functools").reduce(add, terms)
            present[i] = True
    return out, present


@pytest.mark.parametrize("name,dtype", [("plus_times", np.float64), ("min_plus", np.int64),
                                        ("plus_minus", np.int32), ("lor_land", np.bool_),
                                        ("por_times", np.float64), ("max_min", np.float32)])
@pytest.mark.parametrize("density", [0.03, 0.5, 1.0])  # push and pull paths
@pytest.mark.parametrize("op", ["mxv", "vxm"])
def test_mxv_vxm_match_brute_force(kernels, name, dtype, density, op):
    rng = np.random.default_rng(11)
    A, W, P = random_graph(rng, 40, 40, p=0.2, dtype=dtype)
    if name == "por_times":
        A.data, W = A.data / 5, W / 5
    u, x, xp = random_vector(rng, 40, p=density, dtype=dtype)
    if density == 0.03:
        u = gb.Vector.from_coo([2, 5], np.array([3, 2]).astype(dtype), 40)
        x, xp = np.zeros(40), np.zeros(40, bool)
        x[[2, 5]], xp[[2, 5]] = [3, 2], True
        if np.dtype(dtype) == np.bool_:
            x = (x != 0) * 1.0
    Am, um = dev(kernels, gb.Matrix(A)), dev(kernels, u)
    if op == "mxv":
        w = gr.mxv(Am, um, semiring(name), backend=_backend(kernels))
    else:
        w = gr.vxm(um, Am, semiring(name), backend=_backend(kernels))
    want, present = brute_mxv(W, P, x, xp, name, transpose=op == "vxm")
    assert_matches(w, want, present, dtype, rtol=1e-6 if np.dtype(dtype).kind == "f" else 0)


@pytest.mark.parametrize("op", ["mxv", "vxm"])
def test_vector_mask_complement_replace_accum(kernels, op):
    rng = np.random.default_rng(2)
    A, W, P = random_graph(rng, 20, p=0.3)
    u, x, xp = random_vector(rng, 20, p=0.6)
    visited, _, vp = random_vector(rng, 20, p=0.4)
    out, wo, po = random_vector(rng, 20, p=0.5)
    T, PT = brute_mxv(W, P, x, xp, "plus_times", transpose=op == "vxm")
    allowed = ~vp
    Z = np.where(po & PT, np.minimum(wo, T), np.where(po, wo, T))
    PZ = po | PT
    for replace in (False, True):
        o = dev(kernels, out.dup())
        fn = gr.mxv if op == "mxv" else gr.vxm
        args = (dev(kernels, gb.Matrix(A)), dev(kernels, u)) if op == "mxv" else (
            dev(kernels, u), dev(kernels, gb.Matrix(A)))
        r = fn(*args, gb.semirings.plus_times, mask=~dev(kernels, visited).S, accum=gb.ops.min,
               out=o, replace=replace, backend=_backend(kernels))
        PR = (PZ & allowed) | (po & ~allowed & (not replace))
        assert_matches(r, np.where(allowed, Z, wo), PR, np.float64)


def test_fill0_plus_times_is_structural_with_fill0_result():
    rng = np.random.default_rng(0)
    A, WA, PA = random_graph(rng, 10)
    X = gb.Matrix(A, fill=0)
    C = gr.mxm(X, X, gb.semirings.plus_times)
    assert C.fill == 0 and C.decision.result_fill == 0
    np.testing.assert_allclose(C.to_dense(), WA @ WA)
    assert "identity of plus" in gr.explain(C)


def test_matches_python_graphblas():
    graphblas = pytest.importorskip("graphblas")
    from graphblas import io as gio, semiring as gsr
    rng = np.random.default_rng(9)
    A, WA, PA = random_graph(rng, 30, p=0.2)
    M, _, _ = random_graph(rng, 30, p=0.4)
    GA, GM = gio.from_scipy_sparse(A), gio.from_scipy_sparse(M)
    for ours, theirs in ((gb.semirings.plus_times, gsr.plus_times),
                         (gb.semirings.min_plus, gsr.min_plus)):
        want = GA.mxm(GA, theirs).new(mask=~GM.S)
        got = gr.mxm(gb.Matrix(A), gb.Matrix(A), ours, mask=~gb.Matrix(M).S)
        w = gio.to_scipy_sparse(want, format="csr")
        w.sort_indices()
        g = got.to_scipy()
        np.testing.assert_array_equal(g.indptr, w.indptr)
        np.testing.assert_array_equal(g.indices, w.indices)
        np.testing.assert_allclose(g.data, w.data)
    del graphblas
