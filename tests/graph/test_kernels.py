"""The GraphKernels protocol itself, per kernel set, against brute force: what the
compiled and CUDA kernels must match (structural semantics, stored zeros, masks with
complement, user monoids, every dtype)."""
from __future__ import annotations

import numpy as np
import pytest

from gbdist.backends.base import GraphKernels
from gbdist.graph import dispatch
from graphcase import PY, brute_mxm, cast, random_graph, semiring


def _kernels(name):
    return dispatch._load(name)


def _to(name, x):
    if name != "cuda":
        return x
    import cupy as cp
    from gbdist.graph.sparse import to_device_csr  # cupyx CSR, DeviceCSR for integers
    return to_device_csr(x) if hasattr(x, "tocsr") else cp.asarray(x)


def _host(x):
    return x.get() if hasattr(x, "get") else x


def test_protocol(kernels):
    K = _kernels(kernels)
    assert isinstance(K, GraphKernels) and K.name == kernels


@pytest.mark.parametrize("name,dtype", [("plus_times", np.float64), ("min_plus", np.int32),
                                        ("lor_land", np.bool_), ("por_times", np.float64),
                                        ("plus_minus", np.int64), ("max_min", np.float32)])
@pytest.mark.parametrize("masked", [None, False, True])  # no mask, mask, complemented mask
def test_spgemm(kernels, name, dtype, masked):
    K = _kernels(kernels)
    rng = np.random.default_rng(1)
    A, WA, PA = random_graph(rng, 15, 12, dtype=dtype)
    B, WB, PB = random_graph(rng, 12, 10, dtype=dtype)
    M, _, PM = random_graph(rng, 15, 10, p=0.5, dtype=np.bool_)
    want, present = brute_mxm(WA, PA, WB, PB, name)
    if masked is not None:
        present &= ~PM if masked else PM
    C = K.spgemm(_to(kernels, A), _to(kernels, B), semiring(name),
                 mask=None if masked is None else _to(kernels, M), complement=bool(masked),
                 out_dtype=np.dtype(dtype))
    C = C.get() if hasattr(C, "get") else C
    assert C.dtype == np.dtype(dtype) and C.has_sorted_indices
    got_p = np.zeros(C.shape, bool)
    got_p[np.repeat(np.arange(C.shape[0]), np.diff(C.indptr)), C.indices] = True
    np.testing.assert_array_equal(got_p, present)
    np.testing.assert_allclose(C.toarray()[present].astype(float),
                               cast(want[present], dtype).astype(float), rtol=1e-6)


@pytest.mark.parametrize("name,dtype", [("plus_times", np.float64), ("min_plus", np.int64),
                                        ("plus_minus", np.int32), ("any_pair", np.bool_)])
@pytest.mark.parametrize("masked", [None, False, True])
def test_spmv_and_spmspv(kernels, name, dtype, masked):
    K = _kernels(kernels)
    rng = np.random.default_rng(4)
    A, W, P = random_graph(rng, 20, 16, dtype=dtype)
    x = rng.integers(0, 4, 16).astype(float)
    xp = rng.random(16) < 0.6
    mask = rng.random(20) < 0.5
    mul, add = PY[name]
    sr = semiring(name)
    # pull: y(i) = add_k mul(A(i,k), x(k))
    y, yp = K.spmv(_to(kernels, A), _to(kernels, x.astype(dtype)), _to(kernels, xp), sr,
                   mask=None if masked is None else _to(kernels, mask), complement=bool(masked),
                   out_dtype=np.dtype(dtype))
    y, yp = _host(y), _host(yp)
    for i in range(20):
        terms = [mul(W[i, k], x[k]) for k in range(16) if P[i, k] and xp[k]]
        allowed = True if masked is None else (mask[i] != masked)
        assert yp[i] == (bool(terms) and allowed), i
        if yp[i]:
            r = terms[0]
            for t in terms[1:]:
                r = add(r, t)
            assert y[i] == cast(r, dtype)
    # push: y(j) = add_{k in u} mul(u(k), A(k,j))
    u_idx = np.array([1, 4, 7, 8, 13])
    u_val = np.array([2, 0, 1, 3, 1]).astype(dtype)
    m2 = rng.random(16) < 0.5
    y, yp = K.spmspv(_to(kernels, A), _to(kernels, u_idx), _to(kernels, u_val), sr,
                     mask=None if masked is None else _to(kernels, m2), complement=bool(masked),
                     out_dtype=np.dtype(dtype))
    y, yp = _host(y), _host(yp)
    uv = u_val.astype(float)
    for j in range(16):
        terms = [mul(uv[t], W[k, j]) for t, k in enumerate(u_idx) if P[k, j]]
        allowed = True if masked is None else (m2[j] != masked)
        assert yp[j] == (bool(terms) and allowed), j
        if yp[j]:
            r = terms[0]
            for t in terms[1:]:
                r = add(r, t)
            assert y[j] == cast(r, dtype)


@pytest.mark.parametrize("monoid_name,dtype", [("plus", np.int64), ("min", np.float32),
                                               ("max", np.int32), ("lor", np.bool_),
                                               ("por", np.float64), ("times", np.float64)])
def test_segment_reduce(kernels, monoid_name, dtype):
    import gbdist as gb
    K = _kernels(kernels)
    rng = np.random.default_rng(0)
    lens = np.array([0, 3, 1, 0, 7, 2, 0])
    indptr = np.concatenate([[0], np.cumsum(lens)])
    vals = (rng.integers(0, 5, indptr[-1]) / (5 if monoid_name == "por" else 1)).astype(dtype)
    if monoid_name == "por":
        m = gb.monoid(gb.op("por", lambda x, y: x + y - x * y))
        py = lambda a, b: a + b - a * b  # noqa: E731
    else:
        op = getattr(gb.ops, monoid_name)
        m = gb.monoid(op)
        py = {"plus": lambda a, b: a + b, "min": min, "max": max, "times": lambda a, b: a * b,
              "lor": lambda a, b: bool(a) or bool(b)}[monoid_name]
    out, present = K.segment_reduce(_to(kernels, indptr), _to(kernels, vals), m,
                                    out_dtype=np.dtype(dtype))
    out, present = _host(out), _host(present)
    np.testing.assert_array_equal(present, lens > 0)
    for s in np.nonzero(lens)[0]:
        seg = vals[indptr[s]:indptr[s + 1]].tolist()
        r = seg[0]
        for v in seg[1:]:
            r = py(r, v)
        np.testing.assert_allclose(float(out[s]), float(r), rtol=1e-6)
