"""``ewise_union`` of vectors (and of any operands under a mask or ``out=``) merges two
sorted key arrays: the kernel sets' ``union_keys`` (compiled: one Numba pass, branch-free,
split into key ranges on the pool; reference: the NumPy search or presence-array form;
CUDA: the same on CuPy; compiled: the op applied in the merge's pass). The kernel of
every set against a one-key-at-a-time Python union (every value dtype, NaN, -0.0 and
-inf among the values, int extremes wrapping, empty, disjoint, identical and nested key
sets, one and several key ranges, operands cast into the domain); ``gr.ewise_union`` of vectors against
python-graphblas on sparse and dense vectors."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr
from tests.graph.test_union_rows import related

graphblas = pytest.importorskip("graphblas")
from graphblas import binary  # noqa: E402

HOST_SETS = ("reference", "compiled")
KINDS = ("random", "disjoint", "identical", "nested", "empty_a", "empty_b", "both_empty")
DTYPES = (np.bool_, np.int32, np.int64, np.float32, np.float64)


def _keys(seed, space, kind, share=0.4):
    rng = np.random.default_rng(seed)
    P, Q = related(rng.random(space) < share, rng.random(space) < share, kind)
    return np.flatnonzero(P).astype(np.int64), np.flatnonzero(Q).astype(np.int64)


def _values(rng, size, dtype):
    if np.dtype(dtype) == np.bool_:
        return rng.random(size) < 0.5
    if np.dtype(dtype).kind == "f":  # special bit patterns must come through unchanged
        v = rng.normal(size=size).astype(dtype)
        v[::7] = np.nan
        v[1::11] = -0.0
        v[2::13] = -np.inf
        return v
    return rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, size, dtype=dtype)


OPS = ("minus", "max", "times", "first", "second")


def _brute(ka, kb, va, vb, op, ld, rd, dtype):
    """Keys and values of the union computed one key at a time (NumPy scalars of
    ``dtype``; max is fmax, GraphBLAS's: a NaN argument ignored)."""
    f = {"minus": lambda x, y: x - y, "max": np.fmax, "times": lambda x, y: x * y,
         "first": lambda x, y: x, "second": lambda x, y: y}[op]
    if np.dtype(dtype) == np.bool_:
        f = {"minus": lambda x, y: x != y, "max": np.fmax, "times": lambda x, y: x and y,
             "first": lambda x, y: x, "second": lambda x, y: y}[op]
    a, b = dict(zip(ka.tolist(), va.tolist())), dict(zip(kb.tolist(), vb.tolist()))
    keys = sorted(set(a) | set(b))
    cast = np.dtype(dtype).type
    vals = [f(cast(a.get(k, ld)), cast(b.get(k, rd))) for k in keys]
    return np.array(keys, dtype=np.int64), np.array(vals, dtype=dtype)


def _check(got, want):
    keys, vals = got
    wk, wv = want
    assert keys.dtype == np.int64 and np.array_equal(keys, wk)
    assert vals.dtype == wv.dtype
    np.testing.assert_array_equal(vals, wv)


def _case(seed, space, kind, dtype):
    rng = np.random.default_rng(seed + 100)
    ka, kb = _keys(seed, space, kind)
    return ka, kb, _values(rng, ka.size, dtype), _values(rng, kb.size, dtype)


def _defaults(dtype):
    return (True, False) if np.dtype(dtype) == np.bool_ else (3, -1)


@pytest.mark.parametrize("backend", HOST_SETS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_union_keys_kernel(backend, kind, dtype):
    ka, kb, va, vb = _case(3, 300, kind, dtype)
    K = gr.get_kernels(backend)
    ld, rd = _defaults(dtype)
    for op in OPS:
        args = (ka, kb, va, vb, getattr(gb.ops, op), ld, rd)
        with np.errstate(all="ignore"):  # int overflow wraps, inf - inf is NaN
            want = _brute(ka, kb, va, vb, op, ld, rd, dtype)
            _check(K.union_keys(*args, out_dtype=np.dtype(dtype)), want)
            _check(K.union_keys(*args, out_dtype=np.dtype(dtype), space=300), want)


@pytest.mark.parametrize("backend", HOST_SETS)
def test_union_keys_kernel_casts_into_the_domain(backend):
    """int32 and bool operands with a float64 result: values and defaults cast first."""
    ka, kb = _keys(4, 200, "random")
    rng = np.random.default_rng(0)
    va = rng.integers(-5, 5, ka.size).astype(np.int32)
    vb = rng.random(kb.size) < 0.5
    got = gr.get_kernels(backend).union_keys(ka, kb, va, vb, gb.ops.minus, 2, 0.5,
                                             out_dtype=np.dtype(np.float64))
    _check(got, _brute(ka, kb, va.astype(float), vb.astype(float), "minus", 2.0, 0.5,
                       np.float64))


@pytest.mark.parametrize("threads", [2, 3, 16])
@pytest.mark.parametrize("kind", ["random", "disjoint", "identical", "empty_a", "both_empty"])
def test_union_keys_compiled_chunks(threads, kind):
    """Key ranges on the pool (a counting pass, each range written at its place) give the
    brute-force answer; with more ranges than keys some are empty."""
    from gbdist.backends.compiled import graph as G
    from gbdist.backends.compiled import graph_union
    for dtype in (np.float64, np.bool_):
        ka, kb, va, vb = _case(7, 3000, kind, dtype)
        ld, rd = _defaults(dtype)
        got = graph_union.merge_keys(ka, kb, va, vb, gb.ops.max, (ld, rd), np.dtype(dtype),
                                     threads, G._run)  # 4 key ranges a thread
        _check(got, _brute(ka, kb, va, vb, "max", ld, rd, dtype))


def test_union_keys_compiled_pool(monkeypatch):
    """The kernel set's own split (several threads, keys above PARALLEL_KEYS)."""
    from gbdist.backends.compiled import graph as G
    from gbdist.backends.compiled import graph_union
    monkeypatch.setattr(graph_union, "PARALLEL_KEYS", 1)
    monkeypatch.setattr(G, "threads", lambda: 3)
    ka, kb, va, vb = _case(11, 5000, "random", np.float32)
    got = gr.get_kernels("compiled").union_keys(ka, kb, va, vb, gb.ops.minus, 3, -1,
                                                out_dtype=np.dtype(np.float32))
    _check(got, _brute(ka, kb, va, vb, "minus", 3, -1, np.float32))


@pytest.mark.parametrize("backend", HOST_SETS)
@pytest.mark.parametrize("share", [0.01, 0.5])  # the sparse and the dense vector forms
def test_ewise_union_vectors_against_graphblas(backend, share):
    n = 4000
    ka, kb = _keys(5, n, "random", share)
    rng = np.random.default_rng(1)
    va, vb = rng.normal(size=ka.size), rng.normal(size=kb.size)
    u, w = gb.Vector.from_coo(ka, va, size=n), gb.Vector.from_coo(kb, vb, size=n)
    gu = graphblas.Vector.from_coo(ka, va, size=n)
    gw = graphblas.Vector.from_coo(kb, vb, size=n)
    for op, gop in (("minus", "minus"), ("times", "times"), ("max", "max"), ("div", "truediv")):
        got = gr.ewise_union(u, w, getattr(gb.ops, op), 1.5, -2.0, backend=backend)
        want = gu.ewise_union(gw, getattr(binary, gop), 1.5, -2.0).new()
        wi, wv = want.to_coo()
        assert np.array_equal(np.asarray(got.indices), wi)
        np.testing.assert_array_equal(np.asarray(got.values), wv)


@pytest.mark.gpu
def test_union_keys_cuda_equals_brute():
    pytest.importorskip("cupy")
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    K = gr.get_kernels("cuda", on_device=True)
    for kind in KINDS:
        for dtype in (np.float64, np.int64, np.bool_):
            ka, kb, va, vb = _case(13, 700, kind, dtype)
            ld, rd = _defaults(dtype)
            want = _brute(ka, kb, va, vb, "max", ld, rd, dtype)
            for space in (None, 700):
                got = K.union_keys(ka, kb, va, vb, gb.ops.max, ld, rd,
                                   out_dtype=np.dtype(dtype), space=space)
                _check(tuple(g.get() for g in got), want)
