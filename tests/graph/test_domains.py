"""Domains: the type a graph operation is evaluated in, casts, and monoid identities
(issue 24, items 7, 8, 9 and 12; docs/graph_api.md, "Types").

The rule: operands are cast to the op's domain D (``dtype=``, else bool for a ``lor`` /
``land`` monoid, else the operands' type when every op keeps it, else float64), the op is
evaluated in D (bool ops as GraphBLAS defines them, integers wrapping like C), and the
result is cast on write into ``out=``'s dtype; an accumulator is evaluated in ``out``'s
dtype; float → integer casts saturate (NaN → 0). Every case runs on each kernel set (the
``kernels`` fixture: reference, compiled, and cuda under the gpu marker) and is compared
with python-graphblas (SuiteSparse:GraphBLAS) where it is installed and with a brute force
written here in plain Python integers and floats, never with gbdist's own output. The
``nvcc`` tests compile the CUDA functors of every domain, and run their arithmetic on the
host to compare it with the reference's.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import zlib

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr
from graphcase import dev, host

DOMAINS = (np.bool_, np.int32, np.int64, np.float32, np.float64)
I32 = (-2**31, 2**31 - 1)
I64 = (-2**63, 2**63 - 1)


@pytest.fixture
def pgb():
    return pytest.importorskip("graphblas")


def _b(kernels):
    return kernels


# --- an independent model of the rule (plain Python numbers) ---------------------------


def to_domain(v, dt):
    """GraphBLAS's typecast of one Python/NumPy number into ``dt``."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return bool(v != 0)  # NaN != 0: true
    if dt.kind == "i":
        lo, hi = I32 if dt.itemsize == 4 else I64
        if isinstance(v, (float, np.floating)):
            v = float(v)
            if math.isnan(v):
                return 0
            if v >= hi + 1:  # hi + 1 = 2^(bits-1), exact as a float
                return hi
            if v <= lo:
                return lo
            return int(v)  # toward zero
        return wrap(int(v), dt)
    if dt == np.float32:
        return f32(v)
    return float(v)


def wrap(v: int, dt) -> int:
    bits = 8 * np.dtype(dt).itemsize
    return (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))


def f32(v):
    with np.errstate(over="ignore"):
        return float(np.float32(v))


def op_in(name, dt):
    """The binary op ``name`` in the domain ``dt``, on values already in ``dt``."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return {"plus": lambda a, b: a or b, "times": lambda a, b: a and b,
                "minus": lambda a, b: a != b, "min": lambda a, b: a and b,
                "max": lambda a, b: a or b, "first": lambda a, b: a}[name]
    if dt.kind == "i":
        return {"plus": lambda a, b: wrap(a + b, dt), "times": lambda a, b: wrap(a * b, dt),
                "minus": lambda a, b: wrap(a - b, dt), "min": min, "max": max,
                "first": lambda a, b: a}[name]
    r = f32 if dt == np.float32 else float
    return {"plus": lambda a, b: r(a + b), "times": lambda a, b: r(a * b),
            "minus": lambda a, b: r(a - b), "min": min, "max": max,
            "first": lambda a, b: a}[name]


def fold(terms, add):
    acc = None
    for t in terms:
        acc = t if acc is None else add(acc, t)
    return acc


def extreme_values(rng, dt, n):
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.random(n) < 0.5
    if dt.kind == "i":
        lo, hi = I32 if dt.itemsize == 4 else I64
        pool = np.array([lo, hi, lo + 1, hi - 1, -1, 0, 1, 2, 3, hi // 2 + 1, lo // 3], dtype=dt)
        vals = rng.integers(-50, 50, n).astype(dt)
        pick = rng.random(n) < 0.5
        vals[pick] = rng.choice(pool, int(pick.sum()))
        return vals
    return (rng.standard_normal(n) * 1e3).astype(dt)


def close(got, want, dt):
    dt = np.dtype(dt)
    if dt.kind == "f":
        tol = 1e-4 if dt == np.float32 else 1e-10
        return math.isclose(float(got), float(want), rel_tol=tol, abs_tol=tol)
    return got == want


def assert_vector(res, want: dict, dt):
    """A gbdist Vector equals ``want`` ({index: value}) in pattern, values and dtype."""
    res = host(res)
    assert res.dtype == np.dtype(dt), (res.dtype, dt)
    got = dict(zip(res.indices.tolist(), res.values.tolist()))
    assert sorted(got) == sorted(want), (got, want)
    bad = {i: (got[i], want[i]) for i in want if not close(got[i], want[i], dt)}
    assert not bad, bad


def assert_matrix(res, want: dict, dt):
    res = host(res)
    assert res.dtype == np.dtype(dt), (res.dtype, dt)
    r, c, v = res.to_coo()
    got = {(int(i), int(j)): x for i, j, x in zip(r, c, v.tolist())}
    assert sorted(got) == sorted(want), (got, want)
    bad = {k: (got[k], want[k]) for k in want if not close(got[k], want[k], dt)}
    assert not bad, bad


def pgb_vector(pgb, res):
    idx, vals = res.to_coo()
    return {int(i): v for i, v in zip(idx, vals.tolist())}


# --- item 7: products evaluated in the domain ------------------------------------------

SEMIRINGS = [("times", "plus"), ("plus", "min"), ("plus", "max"), ("minus", "plus"),
             ("times", "max"), ("first", "plus"), ("plus", "times")]


@pytest.mark.parametrize("dt", DOMAINS, ids=[np.dtype(d).name for d in DOMAINS])
@pytest.mark.parametrize("mul,add", SEMIRINGS, ids=[f"{a}_{m}" for m, a in SEMIRINGS])
def test_products_evaluate_in_the_domain(kernels, dt, mul, add):
    """mxv (pull and push), vxm, mxm (plain, masked, complemented mask) and the reductions
    with values at the integer limits: integers wrap like C, bool ops are or/and/xor."""
    rng = np.random.default_rng(zlib.crc32(f"{np.dtype(dt).name}-{mul}-{add}".encode()))
    m, n = 9, 7
    P = rng.random((m, n)) < 0.55
    P[0] = False
    rows, cols = np.nonzero(P)
    vals = extreme_values(rng, dt, rows.size)
    A = gb.Matrix.from_coo(rows, cols, vals, (m, n), dtype=dt)
    Ad = {(int(i), int(j)): to_domain(v.item(), dt) for i, j, v in zip(rows, cols, vals)}
    fmul, fadd = op_in(mul, dt), op_in(add, dt)
    sr = gb.semiring(getattr(gb.ops, mul), getattr(gb.ops, add))

    def mxv_want(u):
        out = {}
        for i in range(m):
            t = [fmul(Ad[i, k], u[k]) for k in range(n) if (i, k) in Ad and k in u]
            if t:
                out[i] = fold(t, fadd)
        return out

    for share in (1.0, 0.05):  # a full vector pulls, a sparse one pushes
        idx = np.flatnonzero(rng.random(n) < share) if share < 1 else np.arange(n)
        if idx.size == 0:
            idx = np.array([2])
        uv = extreme_values(rng, dt, idx.size)
        u = gb.Vector.from_coo(idx, uv, n, dtype=dt)
        ud = {int(k): to_domain(v.item(), dt) for k, v in zip(idx, uv)}
        res = gr.mxv(dev(kernels, A), dev(kernels, u), sr, backend=_b(kernels))
        assert_vector(res, mxv_want(ud), dt)

    # vxm: w(j) = ⊕_k mul(u(k), A(k, j))
    idx = np.arange(m)
    uv = extreme_values(rng, dt, m)
    u = gb.Vector.from_coo(idx, uv, m, dtype=dt)
    ud = {int(k): to_domain(v.item(), dt) for k, v in zip(idx, uv)}
    want = {}
    for j in range(n):
        t = [fmul(ud[k], Ad[k, j]) for k in range(m) if (k, j) in Ad]
        if t:
            want[j] = fold(t, fadd)
    assert_vector(gr.vxm(dev(kernels, u), dev(kernels, A), sr, backend=_b(kernels)), want, dt)

    # mxm: A · Aᵀ, unmasked and through a mask and its complement
    B = A.T.dup()
    want = {}
    for i in range(m):
        for j in range(m):
            t = [fmul(Ad[i, k], Ad[j, k]) for k in range(n) if (i, k) in Ad and (j, k) in Ad]
            if t:
                want[i, j] = fold(t, fadd)
    assert_matrix(gr.mxm(dev(kernels, A), dev(kernels, B), sr, backend=_b(kernels)), want, dt)
    M = dev(kernels, gb.Matrix.from_coo(*np.nonzero(rng.random((m, m)) < 0.5), True, (m, m)))
    inside = set(zip(*[x.tolist() for x in host(M).to_coo()[:2]]))
    for complement in (False, True):
        res = gr.mxm(dev(kernels, A), dev(kernels, B), sr, mask=~M.S if complement else M.S,
                     backend=_b(kernels))
        assert_matrix(res, {k: v for k, v in want.items() if (k in inside) != complement}, dt)

    # reductions with the ⊕ monoid
    rows_want = {i: fold([Ad[i, j] for j in range(n) if (i, j) in Ad], fadd) for i in range(m)
                 if any((i, j) in Ad for j in range(n))}
    assert_vector(gr.reduce_rows(dev(kernels, A), getattr(gb.ops, add), backend=_b(kernels)),
                  rows_want, dt)
    total = fold([Ad[k] for k in sorted(Ad)], fadd)
    got = gr.reduce_scalar(dev(kernels, A), getattr(gb.ops, add), backend=_b(kernels))
    assert np.asarray(got).dtype == np.dtype(dt)
    assert close(got.item(), total, dt), (got, total)


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("mul,add", [("times", "plus"), ("plus", "min"), ("plus", "max"),
                                     ("times", "max")])
def test_products_match_suitesparse(kernels, pgb, dt, mul, add):
    """The same products as python-graphblas's typed semirings (``min_plus[INT32]`` ...)."""
    from graphblas import Matrix, Vector, dtypes, semiring
    rng = np.random.default_rng(7)
    m, n = 8, 6
    P = rng.random((m, n)) < 0.6
    rows, cols = np.nonzero(P)
    vals = extreme_values(rng, dt, rows.size)
    uv = extreme_values(rng, dt, n)
    A = gb.Matrix.from_coo(rows, cols, vals, (m, n), dtype=dt)
    u = gb.Vector.from_coo(np.arange(n), uv, n, dtype=dt)
    T = dtypes.lookup_dtype(np.dtype(dt))
    GA = Matrix.from_coo(rows, cols, vals, nrows=m, ncols=n, dtype=T)
    gu = Vector.from_coo(np.arange(n), uv, size=n, dtype=T)
    gsr = getattr(semiring, f"{add}_{mul}")[T]
    want = pgb_vector(pgb, GA.mxv(gu, gsr).new())
    res = gr.mxv(dev(kernels, A), dev(kernels, u), gb.semiring(getattr(gb.ops, mul),
                 getattr(gb.ops, add)), backend=_b(kernels))
    assert_vector(res, want, dt)


def test_issue_cases_bool_minus_and_int32_wrap(kernels, pgb):
    """Issue 24, item 7: bool ⊗ = minus is xor (GraphBLAS's MINUS_BOOL), ⊕ = plus is or;
    int32 min_plus wraps."""
    from graphblas import Matrix, Vector, binary, dtypes, monoid
    from graphblas.core.operator import Semiring
    A = gb.Matrix.from_coo([0, 0], [0, 1], [True, False], (1, 2))
    u = gb.Vector.from_coo([0, 1], [False, True], 2)
    res = gr.mxv(dev(kernels, A), dev(kernels, u), gb.semiring(gb.ops.minus, gb.ops.plus),
                 backend=_b(kernels))
    GA = Matrix.from_coo([0, 0], [0, 1], [True, False], nrows=1, ncols=2)
    gu = Vector.from_coo([0, 1], [False, True], size=2)
    gsr = Semiring.register_anonymous(monoid.lor, binary.minus)[dtypes.BOOL]
    want = pgb_vector(pgb, GA.mxv(gu, gsr).new())
    assert want == {0: True}  # (True xor False) or (False xor True)
    assert_vector(res, want, np.bool_)

    A = gb.Matrix.from_coo([0, 0], [0, 1], np.array([2**31 - 1, 5], np.int32), (1, 2))
    u = gb.Vector.from_coo([0, 1], np.array([1, 1], np.int32), 2)
    res = gr.mxv(dev(kernels, A), dev(kernels, u), gb.semirings.min_plus, backend=_b(kernels))
    want = {0: min(wrap(2**31 - 1 + 1, np.int32), 6)}
    assert want == {0: -2**31}
    assert_vector(res, want, np.int32)


# --- item 7: out= casts on write; dtype= is the domain; the accumulator is C's type -----


def test_out_casts_on_write_and_dtype_is_the_domain(kernels, pgb):
    from graphblas import Matrix, Vector, dtypes, monoid, semiring
    A = gb.Matrix.from_coo([0, 0], [0, 1], [0.5, 0.5], (1, 2))
    u = gb.Vector.from_coo([0, 1], [3.0, 3.0], 2)
    GA = Matrix.from_coo([0, 0], [0, 1], [0.5, 0.5], nrows=1, ncols=2)
    gu = Vector.from_coo([0, 1], [3.0, 3.0], size=2)
    # float64 domain, cast into int64 on write: 3.0 -> 3
    gw = Vector(dtypes.INT64, 1)
    gw << GA.mxv(gu, semiring.plus_times)
    out = dev(kernels, gb.Vector.sparse(1, np.int64))
    res = gr.mxv(dev(kernels, A), dev(kernels, u), gb.semirings.plus_times, out=out,
                 backend=_b(kernels))
    assert res is out
    assert_vector(res, pgb_vector(pgb, gw), np.int64)
    assert pgb_vector(pgb, gw) == {0: int(0.5 * 3 + 0.5 * 3)}
    # dtype=np.int64: the domain; the operands are cast first (0.5 -> 0)
    gz = GA.mxv(gu, semiring.plus_times[dtypes.INT64]).new()
    res = gr.mxv(dev(kernels, A), dev(kernels, u), gb.semirings.plus_times, dtype=np.int64,
                 backend=_b(kernels))
    assert_vector(res, pgb_vector(pgb, gz), np.int64)
    assert pgb_vector(pgb, gz) == {0: 0 * 3 + 0 * 3}
    # reduce_cols of [-0.5, -2.5] in float64 (-3.0), cast into int64
    M = gb.Matrix.from_coo([0, 1], [0, 0], [-0.5, -2.5], (2, 1))
    GM = Matrix.from_coo([0, 1], [0, 0], [-0.5, -2.5], nrows=2, ncols=1)
    gw = Vector(dtypes.INT64, 1)
    gw << GM.reduce_columnwise(monoid.plus)
    out = dev(kernels, gb.Vector.sparse(1, np.int64))
    res = gr.reduce_cols(dev(kernels, M), gb.ops.plus, out=out, backend=_b(kernels))
    assert_vector(res, pgb_vector(pgb, gw), np.int64)
    assert pgb_vector(pgb, gw) == {0: int(-0.5 + -2.5)}


@pytest.mark.parametrize("cdt,cv,tdt,tv,op", [
    (np.int64, 3, np.float64, 0.5, "times"),     # T cast to int64 (0) first: 3 * 0
    (np.float64, 0.5, np.int64, 3, "times"),
    (np.int32, 2**31 - 1, np.int64, 1, "plus"),  # wraps in int32
    (np.int32, 7, np.float64, 1e300, "plus"),    # 1e300 saturates to INT32_MAX, then wraps
    (np.bool_, True, np.bool_, True, "minus"),   # xor
    (np.bool_, True, np.int64, 5, "plus"),       # or
    (np.int64, 1, np.bool_, True, "plus"),
])
def test_accumulator_is_evaluated_in_out_dtype(kernels, pgb, cdt, cv, tdt, tv, op):
    """``C(accum=op) << T``: python-graphblas types the accumulator by C (T cast to C's
    type, then op in it); T here comes from apply(identity) in T's own type."""
    from graphblas import Vector, binary, dtypes
    gC = Vector.from_coo([0, 1], [cv, cv], size=3, dtype=dtypes.lookup_dtype(np.dtype(cdt)))
    gT = Vector.from_coo([0, 2], [tv, tv], size=3, dtype=dtypes.lookup_dtype(np.dtype(tdt)))
    gC(accum=getattr(binary, op)) << gT
    want = pgb_vector(pgb, gC)
    # and the model: entry 0 both (op in C's type), 1 only C, 2 only T (cast to C's type)
    c, t = to_domain(cv, cdt), to_domain(tv, cdt)
    assert want == {0: op_in(op, cdt)(c, t), 1: c, 2: t}
    C = dev(kernels, gb.Vector.from_coo([0, 1], [cv, cv], 3, dtype=cdt))
    Tv = dev(kernels, gb.Vector.from_coo([0, 2], [tv, tv], 3, dtype=tdt))
    res = gr.apply(gb.ops.identity, Tv, accum=getattr(gb.ops, op), out=C, backend=_b(kernels))
    assert_vector(res, want, cdt)


# --- item 8: monoid identities per dtype ------------------------------------------------

MONOIDS = ("plus", "times", "min", "max", "lor", "land", "any")


@pytest.mark.parametrize("dt", DOMAINS, ids=[np.dtype(d).name for d in DOMAINS])
@pytest.mark.parametrize("name", MONOIDS)
def test_monoid_identity_per_dtype(kernels, pgb, dt, name):
    """The identity (reduce_scalar of nothing) is SuiteSparse's in that type: max's is the
    type's minimum (false on bool), min's its maximum (true on bool)."""
    from graphblas import dtypes, monoid
    T = dtypes.lookup_dtype(np.dtype(dt))
    gname = {"plus": "lor", "times": "land"}.get(name, name) if dt == np.bool_ else name
    gm = getattr(monoid, gname)[T]
    want_dt = np.bool_ if name in ("lor", "land") else dt
    v = dev(kernels, gb.Vector.sparse(3, dt))
    got = gr.reduce_scalar(v, getattr(gb.ops, name), backend=_b(kernels))
    assert np.asarray(got).dtype == np.dtype(want_dt)
    ident = gm.identity
    assert got == ident, (got, ident)
    if dt == np.bool_ and name in ("max", "min"):
        assert bool(got) == (name == "min")


@pytest.mark.parametrize("name", ["max", "min", "plus", "times"])
def test_bool_fill0_reductions_fold_the_zeros(kernels, name):
    """Issue 24, item 8: reduce_rows of fill-0 bool data whose row is all zeros is the ⊕ of
    its zeros (false), not the identity leaking through (max's identity was true)."""
    D = np.array([[0, 0, 0], [1, 0, 1], [1, 1, 1]], dtype=bool)
    A = gb.Matrix(D, fill=0)
    f = op_in(name, np.bool_)
    want = {i: fold([bool(x) for x in D[i]], f) for i in range(3)}
    res = gr.reduce_rows(dev(kernels, A), getattr(gb.ops, name), backend=_b(kernels))
    assert_vector(res, want, np.bool_)
    assert want[0] is False


# --- item 9: float -> integer casts saturate --------------------------------------------

FLOATS = [np.inf, -np.inf, np.nan, 1e300, -1e300, 9.3e18, -9.3e18, 2.0**63, -2.0**63,
          2.0**31, -2.0**31 - 1, 2147483647.0, -2.7, 2.7, -0.5, 0.0, 3e9]


@pytest.mark.parametrize("src", [np.float64, np.float32])
@pytest.mark.parametrize("dst", [np.int32, np.int64])
def test_float_to_int_casts_saturate(kernels, pgb, src, dst):
    """Every cast on write: apply in the integer domain (operands cast on load), a float
    result written into an integer ``out=``, a lone ewise_add entry; SuiteSparse's rule
    (NaN → 0, saturation, truncation toward zero)."""
    from graphblas import Vector, dtypes
    with np.errstate(over="ignore"):
        x = np.array(FLOATS, dtype=src)
    n = x.size
    TD = dtypes.lookup_dtype(np.dtype(dst))
    gx = Vector.from_coo(np.arange(n), x, size=n, dtype=dtypes.lookup_dtype(np.dtype(src)))
    want = pgb_vector(pgb, gx.dup(dtype=TD))
    assert want == {i: to_domain(v.item(), dst) for i, v in enumerate(x)}
    v = dev(kernels, gb.Vector.from_coo(np.arange(n), x, n, dtype=src))
    # the domain is dst: x cast on load
    assert_vector(gr.apply(gb.ops.identity, v, dtype=dst, backend=_b(kernels)), want, dst)
    # the domain is src; the result cast on write into an integer out=
    out = dev(kernels, gb.Vector.sparse(n, dst))
    assert_vector(gr.apply(gb.ops.identity, v, out=out, backend=_b(kernels)), want, dst)
    # a product in the float domain written into an integer out=
    one = dev(kernels, gb.Vector.from_coo([0], [1.0], 1, dtype=src))
    D = gb.Matrix.from_coo(np.arange(n), np.zeros(n, int), x, (n, 1), dtype=src)
    out = dev(kernels, gb.Vector.sparse(n, dst))
    res = gr.mxv(dev(kernels, D), one, gb.semirings.plus_times, out=out, backend=_b(kernels))
    assert_vector(res, want, dst)
    # union with dtype=dst: the lone entries are cast too
    empty = dev(kernels, gb.Vector.sparse(n, src))
    assert_vector(gr.ewise_add(v, empty, gb.ops.plus, dtype=dst, backend=_b(kernels)), want, dst)


def _where_params():
    return [False, pytest.param(True, marks=pytest.mark.gpu)]


@pytest.mark.parametrize("on_device", _where_params(), ids=["host", "device"])
@pytest.mark.parametrize("src", [np.float64, np.float32])
@pytest.mark.parametrize("dst", [np.int32, np.int64, np.bool_])
def test_construction_casts_saturate(pgb, on_device, src, dst):
    """A ``dtype=`` at construction casts like every other cast (GraphBLAS's typecast:
    NaN → 0, saturation, truncation toward zero; bool: nonzero, NaN too), never
    ``astype`` (inf was INT64_MIN): ``gb.Matrix(x, dtype=)`` of SciPy and dense input,
    ``Matrix.from_coo(dtype=)`` (with and without ``dup_op``), ``A.dup(dtype=)``,
    ``gb.Vector(x, dtype=)``, ``Vector.from_coo(dtype=)``, ``v.dup(dtype=)``: as
    SuiteSparse casts (python-graphblas's ``Matrix.from_coo(float values).dup(dtype=INT64)``;
    its ``from_coo(..., dtype=INT64)`` converts with NumPy first: docs/graph_api.md,
    "Differences") and the plain-Python model."""
    import scipy.sparse as sps
    from graphblas import Matrix, Vector, dtypes
    if on_device:
        from gbdist.backends.cuda import available
        if not available():
            pytest.skip("needs CuPy and an NVIDIA GPU")
    with np.errstate(over="ignore"):
        x = np.array(FLOATS, dtype=src)
    n = x.size
    TD = dtypes.lookup_dtype(np.dtype(dst))
    model = {i: to_domain(v.item(), dst) for i, v in enumerate(x)}
    TS = dtypes.lookup_dtype(np.dtype(src))
    gv = Vector.from_coo(np.arange(n), x, size=n, dtype=TS).dup(dtype=TD)
    assert pgb_vector(pgb, gv) == model
    rows, cols = np.arange(n) // 4, np.arange(n) % 4
    m = int(rows.max()) + 1
    gm = Matrix.from_coo(rows, cols, x, nrows=m, ncols=4, dtype=TS).dup(dtype=TD)
    want_m = {(int(i), int(j)): v for i, j, v in zip(*gm.to_coo()[:2], gm.to_coo()[2].tolist())}
    assert want_m == {(int(rows[k]), int(cols[k])): model[k] for k in range(n)}
    nz = {k: v for k, v in want_m.items() if x[k[0] * 4 + k[1]] != 0}  # dense input: nonzeros

    def mat(res, want):
        assert res.on_device == on_device
        assert_matrix(res, want, dst)

    def vec(res, want):
        assert res.on_device == on_device
        assert_vector(res, want, dst)

    put = (lambda a: a.to_device()) if on_device else (lambda a: a)  # noqa: E731
    mat(gb.Matrix.from_coo(rows, cols, x, (m, 4), dtype=dst, on_device=on_device), want_m)
    # duplicates folded by dup_op: the fold is in the domain (operands cast first)
    mat(gb.Matrix.from_coo(np.r_[rows, rows], np.r_[cols, cols], np.r_[x, x], (m, 4), dtype=dst,
                           dup_op=gb.ops.first, on_device=on_device), want_m)
    F = put(gb.Matrix.from_coo(rows, cols, x, (m, 4), dtype=src))
    mat(F.dup(dtype=dst), want_m)
    mat(gb.Matrix(F, dtype=dst), want_m)
    dense = np.zeros((m, 4), src)
    dense[rows, cols] = x
    csr = sps.csr_matrix((x, (rows, cols)), shape=(m, 4))
    if on_device:
        import cupy as cp
        mat(gb.Matrix(cp.asarray(dense), dtype=dst), nz)
    else:
        mat(gb.Matrix(dense, dtype=dst), nz)
        mat(gb.Matrix(csr, dtype=dst), want_m)
    xs = put(gb.Vector.from_coo(np.arange(n), x, n, dtype=src))
    vec(gb.Vector.from_coo(np.arange(n), x, n, dtype=dst, on_device=on_device), model)
    vec(xs.dup(dtype=dst), model)
    vec(gb.Vector(xs, dtype=dst), model)
    if on_device:
        import cupy as cp
        vec(gb.Vector(cp.asarray(x), dtype=dst), model)
    else:
        vec(gb.Vector(x, dtype=dst), model)
    # the source is not changed, and a same-dtype from_coo copies the caller's values
    assert host(F).dtype == np.dtype(src)
    vals = np.array([1.5, 2.5])
    C = gb.Matrix.from_coo([0, 1], [0, 1], vals, (2, 2))
    vals[0] = 9.0
    assert host(C).to_coo()[2].tolist() == [1.5, 2.5]


def test_assign_casts_on_write(kernels, pgb):
    """``gr.assign`` of a float scalar or Vector into an integer C saturates like
    python-graphblas's ``C[i] << value``."""
    from graphblas import Vector, dtypes
    gC = Vector.from_coo([0], [1], size=5, dtype=dtypes.INT64)
    gC[1] << 1e300
    gC[2] << float("nan")
    gC[[3, 4]] << Vector.from_coo([0, 1], [-2.7, -np.inf], size=2)
    want = pgb_vector(pgb, gC)
    assert want == {0: 1, 1: to_domain(1e300, np.int64), 2: 0, 3: -2, 4: I64[0]}
    C = dev(kernels, gb.Vector.from_coo([0], [1], 5, dtype=np.int64))
    gr.assign(C, 1e300, [1])
    gr.assign(C, float("nan"), [2])
    gr.assign(C, dev(kernels, gb.Vector.from_coo([0, 1], [-2.7, -np.inf], 2)), [3, 4])
    assert_vector(C, want, np.int64)


def test_division_by_zero_in_integer_domains(kernels, pgb):
    """``div`` typed in an integer domain is C's division with SuiteSparse's x / 0:
    the type's max (min for x < 0, 0 for 0 / 0); issue 24, item 9's ``2 / 0``."""
    from graphblas import Vector, binary, dtypes
    for dt, T in ((np.int64, dtypes.INT64), (np.int32, dtypes.INT32)):
        lo, hi = I32 if dt == np.int32 else I64
        z = dev(kernels, gb.Vector.from_coo([0, 1, 2], [0, 0, 0], 3, dtype=dt))
        gz = Vector.from_coo([0, 1, 2], [0, 0, 0], size=3, dtype=T)
        for left, expect in ((2, hi), (-2, lo), (0, 0)):
            want = pgb_vector(pgb, gz.apply(binary.cdiv[T], left=left).new())
            assert want == {0: expect, 1: expect, 2: expect}
            res = gr.apply(gb.ops.div, z, left=left, dtype=dt, backend=_b(kernels))
            assert_vector(res, want, dt)
        a = dev(kernels, gb.Vector.from_coo([0, 1, 2, 3], [7, -7, 7, -7], 4, dtype=dt))
        b = dev(kernels, gb.Vector.from_coo([0, 1, 2, 3], [2, 2, -2, -2], 4, dtype=dt))
        res = gr.ewise_mult(a, b, gb.ops.div, dtype=dt, backend=_b(kernels))
        assert_vector(res, {0: 3, 1: -3, 2: -3, 3: 3}, dt)  # C: toward zero


# --- item 12: lor / land are monoids on bool only ---------------------------------------


@pytest.mark.parametrize("name", ["lor", "land"])
@pytest.mark.parametrize("dt", [np.int64, np.int32, np.float64])
def test_lor_land_monoids_take_the_bool_domain(kernels, pgb, name, dt):
    """A one-entry row and a longer row give bool, like python-graphblas (LOR_BOOL on any
    input type: values cast to bool first); dtype= of another type is refused."""
    from graphblas import Matrix, dtypes, monoid
    rows, cols, vals = [0, 0, 1, 2, 2], [0, 1, 0, 1, 2], [5, 7, 3, 0, 2]
    A = gb.Matrix.from_coo(rows, cols, vals, (4, 3), dtype=dt)
    GA = Matrix.from_coo(rows, cols, vals, nrows=4, ncols=3, dtype=dtypes.lookup_dtype(np.dtype(dt)))
    want = pgb_vector(pgb, GA.reduce_rowwise(getattr(monoid, name)).new())
    f = op_in("max" if name == "lor" else "min", np.bool_)
    assert want == {0: f(True, True), 1: True, 2: f(False, True)}
    res = gr.reduce_rows(dev(kernels, A), getattr(gb.ops, name), backend=_b(kernels))
    assert_vector(res, want, np.bool_)
    got = gr.reduce_scalar(dev(kernels, A), getattr(gb.ops, name), backend=_b(kernels))
    assert got.dtype == np.bool_
    assert bool(got) == fold([v != 0 for v in vals], f)
    with pytest.raises(gb.TypeCheckError, match="bool only"):
        gr.reduce_rows(dev(kernels, A), getattr(gb.ops, name), dtype=np.int64, backend=_b(kernels))
    # the bool result is cast on write into an out= of another type
    out = dev(kernels, gb.Vector.sparse(4, np.int64))
    res = gr.reduce_rows(dev(kernels, A), getattr(gb.ops, name), out=out, backend=_b(kernels))
    assert_vector(res, {k: int(v) for k, v in want.items()}, np.int64)


def test_lor_land_semiring_on_numbers_is_bool(kernels, pgb):
    from graphblas import Matrix, Vector, semiring
    rows, cols, vals = [0, 0, 1, 2], [0, 1, 1, 0], [0.5, 2.0, 0.0, -3.0]
    A = gb.Matrix.from_coo(rows, cols, vals, (3, 2))
    u = gb.Vector.from_coo([0, 1], [1.5, 0.0], 2)
    GA = Matrix.from_coo(rows, cols, vals, nrows=3, ncols=2)
    gu = Vector.from_coo([0, 1], [1.5, 0.0], size=2)
    want = pgb_vector(pgb, GA.mxv(gu, semiring.lor_land).new())
    assert want == {0: True, 1: False, 2: True}
    res = gr.mxv(dev(kernels, A), dev(kernels, u), gb.semirings.lor_land, backend=_b(kernels))
    assert_vector(res, want, np.bool_)


def test_lor_as_a_binary_op_keeps_the_type(kernels, pgb):
    """As a binary op (ewise_add), lor keeps the operands' type: 1 where both are stored
    (SuiteSparse's GxB_LOR_INT64), the lone value elsewhere."""
    from graphblas import Vector, binary
    a = gb.Vector.from_coo([0, 1], [5, 3], 3)
    b = gb.Vector.from_coo([1, 2], [0, 7], 3)
    ga = Vector.from_coo([0, 1], [5, 3], size=3)
    gbv = Vector.from_coo([1, 2], [0, 7], size=3)
    want = pgb_vector(pgb, ga.ewise_add(gbv, binary.lor).new())
    assert want == {0: 5, 1: 1, 2: 7}
    res = gr.ewise_add(dev(kernels, a), dev(kernels, b), gb.ops.lor, backend=_b(kernels))
    assert_vector(res, want, np.int64)


# --- the text language ------------------------------------------------------------------


def test_text_language_follows_the_rule(kernels):
    defs = gb.define("""
graph bool_max(v) = reduce_scalar(v, max)
graph any_row(A) = reduce_rows(A, lor)
graph wrap32(A, u) = mxv(A, u, min_plus)
graph cast_out(A, u, w) = mxv(A, u, plus_times, out=w)
""")
    got = gr.run(defs.graphs["bool_max"], dev(kernels, gb.Vector.sparse(3, bool)),
                 backend=_b(kernels))
    assert got.dtype == np.bool_ and not bool(got)
    A = gb.Matrix.from_coo([0, 0, 1], [0, 1, 0], [5, 7, 3], (2, 2), dtype=np.int64)
    assert_vector(gr.run(defs.graphs["any_row"], dev(kernels, A), backend=_b(kernels)),
                  {0: True, 1: True}, np.bool_)
    A = gb.Matrix.from_coo([0, 0], [0, 1], np.array([2**31 - 1, 5], np.int32), (1, 2))
    u = gb.Vector.from_coo([0, 1], np.array([1, 1], np.int32), 2)
    assert_vector(gr.run(defs.graphs["wrap32"], dev(kernels, A), dev(kernels, u),
                         backend=_b(kernels)), {0: wrap(2**31, np.int32)}, np.int32)
    A = gb.Matrix.from_coo([0, 0], [0, 1], [0.5, 0.5], (1, 2))
    u = gb.Vector.from_coo([0, 1], [3.0, 3.0], 2)
    w = gb.Vector.sparse(1, np.int64)
    assert_vector(gr.run(defs.graphs["cast_out"], dev(kernels, A), dev(kernels, u),
                         dev(kernels, w), backend=_b(kernels)), {0: 3}, np.int64)


# --- user ops in integer and bool domains: every kernel set agrees with the brute force --

USER = {
    "halfmax": (lambda x, y: gb.where(x > y, x / 2, y), None),
    "cube_absdiff": (lambda x, y: abs(x - y) ** 3, None),
    "por": (lambda x, y: x + y - x * y, None),
}


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("name", sorted(USER))
def test_user_ops_in_integer_domains(kernels, dt, name):
    """A user op with a division in an integer domain: the division in float64 on the
    wrapped integer parts, the result cast (truncated, saturated) back."""
    fn = USER[name][0]
    op = gb.op(name, fn)
    rng = np.random.default_rng(11)
    n = 40
    a, b = extreme_values(rng, dt, n), extreme_values(rng, dt, n)

    def model(x, y):
        x, y = to_domain(x, dt), to_domain(y, dt)
        if np.dtype(dt) == np.bool_:
            x, y = float(x), float(y)
            r = {"halfmax": lambda: x / 2 if x > y else y,
                 "cube_absdiff": lambda: abs(x - y) ** 3,
                 "por": lambda: x + y - x * y}[name]()
            return r != 0
        if name == "halfmax":  # a where with a float branch is float-valued (C's ?:)
            return to_domain(float(x) / 2 if x > y else float(y), dt)
        if name == "cube_absdiff":
            d = abs(wrap(x - y, dt))
            return wrap(wrap(d, dt) ** 3, dt)
        return wrap(x + y - x * y, dt)

    want = {i: model(a[i].item(), b[i].item()) for i in range(n)}
    va = dev(kernels, gb.Vector.from_coo(np.arange(n), a, n, dtype=dt))
    vb = dev(kernels, gb.Vector.from_coo(np.arange(n), b, n, dtype=dt))
    res = gr.ewise_mult(va, vb, op, dtype=dt, backend=_b(kernels))
    assert_vector(res, want, dt)
    # the same op as ⊗ of a product on the kernels: one term per row
    A = gb.Matrix.from_coo(np.arange(n), np.arange(n), a, (n, n), dtype=dt)
    res = gr.mxv(dev(kernels, A), vb, gb.semiring(op, gb.ops.any), dtype=dt, backend=_b(kernels))
    assert_vector(res, want, dt)


# --- NaN in min / max: ignored, as C's fmin / fmax (SuiteSparse) -----------------------
#
# Every min / max of a graph op (the monoids in reductions, ⊕ of min_plus / max_times ...,
# the binary ops of ewise / apply / accum, and a Max / Min inside any formula) ignores a NaN
# argument: fmax(1, NaN) = 1, NaN only when every argument is NaN. Each case is compared
# with python-graphblas (SuiteSparse's MAX / MIN are fmax / fmin on floats) and with a
# brute force in plain Python (``fmax``/``fmin`` below); on the CUDA set the float max /
# min ⊕ of push SpMV and SpGEMM is an atomic compare-and-swap, so the NaN terms land in
# every order.

FLOAT_DTS = [np.float32, np.float64]
NAN_SEMIRINGS = ["max_plus", "min_plus", "max_times", "min_times", "max_first", "min_second",
                 "plus_max", "min_max"]


def fmax(a, b):
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def fmin(a, b):
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


def _nan_values(rng, dt, n):
    """Values with many NaNs, infinities (inf + -inf: a NaN ⊗ term) and signed zeros."""
    pool = np.array([np.nan, np.nan, np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -2.5, 7.0])
    vals = np.where(rng.random(n) < 0.5, rng.choice(pool, n), np.round(rng.standard_normal(n) * 8))
    return vals.astype(dt)


def _nan_matrix(rng, dt, m, n, p=0.4):
    """(rows, cols, vals): rows 0-4 hold a NaN first, last, only NaNs, one NaN, ±inf with a
    NaN; the rest random; the last row empty."""
    fixed = {0: [(0, np.nan), (1, 1.0), (2, 2.0)], 1: [(1, 3.0), (3, np.nan)],
             2: [(0, np.nan), (n - 1, np.nan)], 3: [(2, np.nan)],
             4: [(0, np.inf), (1, -np.inf), (2, np.nan), (3, 5.0)]}
    P = rng.random((m, n)) < p
    P[:5] = False
    P[m - 1] = False
    r, c = np.nonzero(P)
    rows = [i for i in fixed for _ in fixed[i]] + r.tolist()
    cols = [j for i in fixed for j, _ in fixed[i]] + c.tolist()
    vals = np.concatenate([np.array([v for i in fixed for _, v in fixed[i]]),
                           _nan_values(rng, np.float64, r.size)]).astype(dt)
    order = np.lexsort((cols, rows))
    return np.array(rows)[order], np.array(cols)[order], vals[order]


def _same(got: dict, want: dict, dt):
    assert sorted(got) == sorted(want), (got, want)
    bad = {k: (got[k], want[k]) for k in want
           if not ((math.isnan(got[k]) and math.isnan(want[k]))
                   or (not math.isnan(got[k]) and not math.isnan(want[k])
                       and close(got[k], want[k], dt)))}
    assert not bad, bad


def _gb_dict(res, dt):
    res = host(res)
    assert res.dtype == np.dtype(dt), (res.dtype, dt)
    if isinstance(res, gb.Vector):
        return dict(zip(res.indices.tolist(), res.values.tolist()))
    r, c, v = res.to_coo()
    return {(int(i), int(j)): x for i, j, x in zip(r, c, v.tolist())}


def _pgb_dict(x):
    coo = x.to_coo()
    if len(coo) == 2:
        return {int(i): v for i, v in zip(coo[0], coo[1].tolist())}
    return {(int(i), int(j)): v for i, j, v in zip(coo[0], coo[1], coo[2].tolist())}


_PY_OPS = {"plus": lambda a, b: a + b, "times": lambda a, b: a * b, "first": lambda a, b: a,
           "second": lambda a, b: b, "max": fmax, "min": fmin}


def _py_semiring(name, dt):
    add, mul = name.split("_")
    r = f32 if np.dtype(dt) == np.float32 else float
    return (lambda a, b: r(_PY_OPS[mul](a, b))), (lambda a, b: r(_PY_OPS[add](a, b)))


@pytest.mark.parametrize("dt", FLOAT_DTS, ids=["float32", "float64"])
@pytest.mark.parametrize("name", ["max", "min"])
def test_nan_in_min_max_reductions(kernels, pgb, dt, name):
    """reduce_rows / reduce_cols / reduce_scalar with the max / min monoid: a NaN is
    skipped; a row of NaNs only is NaN (python-graphblas: ``monoid.max[FP64]``)."""
    from graphblas import Matrix, dtypes, monoid
    rng = np.random.default_rng(zlib.crc32(f"nanred-{name}-{np.dtype(dt).name}".encode()))
    m, n = 9, 7
    rows, cols, vals = _nan_matrix(rng, dt, m, n)
    T = dtypes.lookup_dtype(np.dtype(dt))
    GA = Matrix.from_coo(rows, cols, vals, nrows=m, ncols=n, dtype=T)
    A = dev(kernels, gb.Matrix.from_coo(rows, cols, vals, (m, n), dtype=dt))
    mon, op = getattr(monoid, name)[T], getattr(gb.ops, name)
    f = fmax if name == "max" else fmin
    Ad = {(int(i), int(j)): float(v) for i, j, v in zip(rows, cols, vals)}
    want_rows = {i: fold([Ad[k] for k in sorted(Ad) if k[0] == i], f) for i in range(m)
                 if any(k[0] == i for k in Ad)}
    want_cols = {j: fold([Ad[k] for k in sorted(Ad) if k[1] == j], f) for j in range(n)
                 if any(k[1] == j for k in Ad)}
    assert want_rows[0] == (2.0 if name == "max" else 1.0) and math.isnan(want_rows[2])
    _same(_pgb_dict(GA.reduce_rowwise(mon).new()), want_rows, dt)
    _same(_pgb_dict(GA.reduce_columnwise(mon).new()), want_cols, dt)
    _same(_gb_dict(gr.reduce_rows(A, op, backend=_b(kernels)), dt), want_rows, dt)
    _same(_gb_dict(gr.reduce_cols(A, op, backend=_b(kernels)), dt), want_cols, dt)
    total = fold([Ad[k] for k in sorted(Ad)], f)
    assert not math.isnan(total)
    got = gr.reduce_scalar(A, op, backend=_b(kernels))
    assert np.asarray(got).dtype == np.dtype(dt)
    assert close(float(got), GA.reduce_scalar(mon).new().value, dt)
    assert close(float(got), total, dt)
    # every value NaN: NaN (not the identity)
    Z = dev(kernels, gb.Matrix.from_coo([0, 0, 1], [0, 1, 1], np.full(3, np.nan, dt), (2, 2)))
    assert math.isnan(float(gr.reduce_scalar(Z, op, backend=_b(kernels))))
    _same(_gb_dict(gr.reduce_rows(Z, op, backend=_b(kernels)), dt), {0: np.nan, 1: np.nan}, dt)


@pytest.mark.parametrize("dt", FLOAT_DTS, ids=["float32", "float64"])
@pytest.mark.parametrize("srname", NAN_SEMIRINGS)
def test_nan_in_min_max_semirings(kernels, pgb, dt, srname):
    """mxv pull (a full vector) and push (2 of 40 entries: under 1/16, every kernel set
    pushes), masked push, vxm, mxm plain and through a mask and its complement, with ⊕ or ⊗
    = min / max over NaN-rich operands: as python-graphblas's ``max_plus[FP64]`` ... and
    the brute force."""
    from graphblas import Matrix, Vector, dtypes, semiring
    rng = np.random.default_rng(zlib.crc32(f"nansr-{srname}-{np.dtype(dt).name}".encode()))
    m, n, p = 12, 40, 9
    rows, cols, vals = _nan_matrix(rng, dt, m, n, p=0.3)
    T = dtypes.lookup_dtype(np.dtype(dt))
    gsr = getattr(semiring, srname)[T]
    add, mul = srname.split("_")
    sr = gb.semiring(getattr(gb.ops, mul), getattr(gb.ops, add))
    fmul, fadd = _py_semiring(srname, dt)
    A = gb.Matrix.from_coo(rows, cols, vals, (m, n), dtype=dt)
    GA = Matrix.from_coo(rows, cols, vals, nrows=m, ncols=n, dtype=T)
    Ad = {(int(i), int(j)): float(v) for i, j, v in zip(rows, cols, vals)}
    B_rows, B_cols, B_vals = _nan_matrix(rng, dt, n, p, p=0.3)
    B = gb.Matrix.from_coo(B_rows, B_cols, B_vals, (n, p), dtype=dt)
    GB = Matrix.from_coo(B_rows, B_cols, B_vals, nrows=n, ncols=p, dtype=T)
    Bd = {(int(i), int(j)): float(v) for i, j, v in zip(B_rows, B_cols, B_vals)}

    def check(res, gres, want):
        got = _gb_dict(res, dt)
        _same(_pgb_dict(gres), want, dt)
        _same(got, want, dt)

    # mxv: pull with a full vector, push with two entries (the columns with most entries)
    deg = np.bincount(cols, minlength=n)
    cases = [(np.arange(n), _nan_values(rng, dt, n)),
             (np.sort(np.argsort(-deg, kind="stable")[:2]), np.array([np.nan, 2.0], dt))]
    M = gb.Vector.from_coo(np.arange(0, m, 2), True, m)
    for idx, uv in cases:
        u = gb.Vector.from_coo(idx, uv, n, dtype=dt)
        gu = Vector.from_coo(idx, uv, size=n, dtype=T)
        ud = {int(k): float(v) for k, v in zip(idx, uv)}
        want = {}
        for i in range(m):
            t = [fmul(Ad[i, k], ud[k]) for k in range(n) if (i, k) in Ad and k in ud]
            if t:
                want[i] = fold(t, fadd)
        check(gr.mxv(dev(kernels, A), dev(kernels, u), sr, backend=_b(kernels)),
              GA.mxv(gu, gsr).new(), want)
        gm = Vector(T, m)
        gm(Vector.from_coo(np.arange(0, m, 2), True, size=m).S) << GA.mxv(gu, gsr)
        check(gr.mxv(dev(kernels, A), dev(kernels, u), sr, mask=dev(kernels, M).S,
                     backend=_b(kernels)), gm, {i: v for i, v in want.items() if i % 2 == 0})
    # vxm: w(j) = ⊕_k mul(u(k), A(k, j)), a full and a 1-entry vector
    for idx in (np.arange(m), np.array([4])):
        uv = _nan_values(rng, dt, idx.size) if idx.size > 1 else np.array([3.0], dt)
        u = gb.Vector.from_coo(idx, uv, m, dtype=dt)
        gu = Vector.from_coo(idx, uv, size=m, dtype=T)
        ud = {int(k): float(v) for k, v in zip(idx, uv)}
        want = {}
        for j in range(n):
            t = [fmul(ud[k], Ad[k, j]) for k in range(m) if (k, j) in Ad and k in ud]
            if t:
                want[j] = fold(t, fadd)
        check(gr.vxm(dev(kernels, u), dev(kernels, A), sr, backend=_b(kernels)),
              gu.vxm(GA, gsr).new(), want)
    # mxm: plain, masked, complemented mask
    want = {}
    for i in range(m):
        for j in range(p):
            t = [fmul(Ad[i, k], Bd[k, j]) for k in range(n) if (i, k) in Ad and (k, j) in Bd]
            if t:
                want[i, j] = fold(t, fadd)
    check(gr.mxm(dev(kernels, A), dev(kernels, B), sr, backend=_b(kernels)),
          GA.mxm(GB, gsr).new(), want)
    mr, mc = np.nonzero(rng.random((m, p)) < 0.5)
    Mm = gb.Matrix.from_coo(mr, mc, True, (m, p))
    GM = Matrix.from_coo(mr, mc, True, nrows=m, ncols=p)
    inside = set(zip(mr.tolist(), mc.tolist()))
    for complement in (False, True):
        gC = Matrix(T, m, p)
        gC(~GM.S if complement else GM.S) << GA.mxm(GB, gsr)
        mask = dev(kernels, Mm)
        res = gr.mxm(dev(kernels, A), dev(kernels, B), sr, mask=~mask.S if complement else mask.S,
                     backend=_b(kernels))
        check(res, gC, {k: v for k, v in want.items() if (k in inside) != complement})


@pytest.mark.parametrize("dt", FLOAT_DTS, ids=["float32", "float64"])
@pytest.mark.parametrize("name", ["max", "min"])
def test_nan_in_min_max_elementwise_apply_accum(kernels, pgb, dt, name):
    """ewise_add / ewise_mult, apply with a bound scalar (NaN or a number, left or right)
    and the accumulator (into an ``out`` holding NaNs) with max / min, as
    python-graphblas's ``binary.max[FP64]``."""
    from graphblas import Vector, binary, dtypes
    T = dtypes.lookup_dtype(np.dtype(dt))
    bop, op = getattr(binary, name)[T], getattr(gb.ops, name)
    f = fmax if name == "max" else fmin
    n = 12
    ia, va = np.arange(0, 10), np.array([np.nan, 1, np.nan, -np.inf, np.inf, np.nan, 0,
                                         np.nan, 4, -3], dt)
    ib, vb = np.arange(2, 12), np.array([np.nan, np.nan, 2, 5, np.nan, np.inf, np.nan,
                                         -1, 6, np.nan], dt)
    a, b = gb.Vector.from_coo(ia, va, n, dtype=dt), gb.Vector.from_coo(ib, vb, n, dtype=dt)
    ga, gbv = Vector.from_coo(ia, va, size=n, dtype=T), Vector.from_coo(ib, vb, size=n, dtype=T)
    ad = {int(i): float(v) for i, v in zip(ia, va)}
    bd = {int(i): float(v) for i, v in zip(ib, vb)}
    r = f32 if np.dtype(dt) == np.float32 else float
    union = {k: r(f(ad[k], bd[k])) if k in ad and k in bd else ad.get(k, bd.get(k))
             for k in sorted(set(ad) | set(bd))}
    inter = {k: v for k, v in union.items() if k in ad and k in bd}
    A, Bv = dev(kernels, a), dev(kernels, b)
    _same(_pgb_dict(ga.ewise_add(gbv, bop).new()), union, dt)
    _same(_gb_dict(gr.ewise_add(A, Bv, op, backend=_b(kernels)), dt), union, dt)
    _same(_pgb_dict(ga.ewise_mult(gbv, bop).new()), inter, dt)
    _same(_gb_dict(gr.ewise_mult(A, Bv, op, backend=_b(kernels)), dt), inter, dt)
    for s in (np.nan, 2.0):
        want = {k: r(f(v, s)) for k, v in ad.items()}
        _same(_pgb_dict(ga.apply(bop, right=s).new()), want, dt)
        _same(_pgb_dict(ga.apply(bop, left=s).new()), want, dt)
        _same(_gb_dict(gr.apply(op, A, right=s, backend=_b(kernels)), dt), want, dt)
        _same(_gb_dict(gr.apply(op, A, left=s, backend=_b(kernels)), dt), want, dt)
    # the accumulator: out = a (NaNs included), T = b
    gC = ga.dup()
    gC(accum=bop) << gbv
    _same(_pgb_dict(gC), union, dt)
    out = dev(kernels, a.dup())
    res = gr.apply(gb.ops.identity, Bv, accum=op, out=out, backend=_b(kernels))
    _same(_gb_dict(res, dt), union, dt)


@pytest.mark.parametrize("dt", FLOAT_DTS, ids=["float32", "float64"])
def test_nan_in_user_formulas_with_min_max(kernels, dt):
    """A Max / Min anywhere in a user op's formula (Python ``gb.maximum``, the text
    language's ``max``) is fmax / fmin like ``gb.ops.max``: as ⊗ of a product (the printed
    formula of each kernel set), as a user monoid's ⊕, and element-wise."""
    r = f32 if np.dtype(dt) == np.float32 else float
    cap = gb.op("nan_cap", lambda x, y: gb.minimum(gb.maximum(x, y - 1.0), 100.0))
    umax = gb.monoid(gb.op("nan_umax", lambda x, y: gb.maximum(x, y)))
    defs = gb.define("op nan_tcap(x, y) = min(max(x, y - 1), 100)")
    tcap = defs.ops["nan_tcap"]

    def model(x, y):
        return r(fmin(fmax(x, r(y - 1.0)), 100.0))

    n = 10
    xs = np.array([np.nan, 1, np.nan, 500, -np.inf, np.nan, 3, np.inf, 0, np.nan], dt)
    ys = np.array([np.nan, np.nan, 4, np.nan, np.nan, np.inf, 2, -np.inf, np.nan, 1e3], dt)
    want = {i: model(float(xs[i]), float(ys[i])) for i in range(n)}
    va = dev(kernels, gb.Vector.from_coo(np.arange(n), xs, n, dtype=dt))
    vb = dev(kernels, gb.Vector.from_coo(np.arange(n), ys, n, dtype=dt))
    for o in (cap, tcap):
        _same(_gb_dict(gr.ewise_mult(va, vb, o, backend=_b(kernels)), dt), want, dt)
        # as ⊗ of a product: one term per row
        D = gb.Matrix.from_coo(np.arange(n), np.arange(n), xs, (n, n), dtype=dt)
        res = gr.mxv(dev(kernels, D), vb, gb.semiring(o, gb.ops.any), backend=_b(kernels))
        _same(_gb_dict(res, dt), want, dt)
    # a user max monoid as ⊕: rows with a NaN first, last, only NaN
    rows = np.array([0, 0, 0, 1, 1, 2, 2])
    cols = np.array([0, 1, 2, 0, 1, 0, 2])
    v = np.array([np.nan, 1, 2, 3, np.nan, np.nan, np.nan], dt)
    A = dev(kernels, gb.Matrix.from_coo(rows, cols, v, (3, 3), dtype=dt))
    _same(_gb_dict(gr.reduce_rows(A, umax, backend=_b(kernels)), dt),
          {0: 2.0, 1: 3.0, 2: np.nan}, dt)
    one = dev(kernels, gb.Vector.from_coo(np.arange(3), np.ones(3, dt), 3, dtype=dt))
    res = gr.mxv(A, one, gb.semiring(gb.ops.times, umax), backend=_b(kernels))
    _same(_gb_dict(res, dt), {0: 2.0, 1: 3.0, 2: np.nan}, dt)


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_nan_of_a_float_part_in_an_integer_domain(kernels, dt):
    """In an integer domain a float part (``x / y``: 0/0 is NaN) inside max / min is
    ignored by it too, before the cast back: ``max(x / y, -1)`` of 0, 0 is -1 (not the
    cast of NaN, 0)."""
    op = gb.op("nan_divmax", lambda x, y: gb.maximum(x / y, -1.0))
    xs = np.array([0, 7, -9, 0], dt)
    ys = np.array([0, 2, 2, 5], dt)
    want = {0: -1, 1: 3, 2: -1, 3: 0}
    va = dev(kernels, gb.Vector.from_coo(np.arange(4), xs, 4, dtype=dt))
    vb = dev(kernels, gb.Vector.from_coo(np.arange(4), ys, 4, dtype=dt))
    assert _gb_dict(gr.ewise_mult(va, vb, op, dtype=dt, backend=_b(kernels)), dt) == want
    D = gb.Matrix.from_coo(np.arange(4), np.arange(4), xs, (4, 4), dtype=dt)
    res = gr.mxv(dev(kernels, D), vb, gb.semiring(op, gb.ops.any), dtype=dt, backend=_b(kernels))
    assert _gb_dict(res, dt) == want


# --- CUDA functors: compiled for every domain, and their arithmetic run on the host ------

NVCC = shutil.which("nvcc")


def _functor_cases():
    sr = gb.semirings
    out = []
    for dt in DOMAINS:
        out.append((dt, sr.min_plus.mul, sr.min_plus.add))
        out.append((dt, gb.ops.minus, gb.monoid(gb.ops.plus)))
        out.append((dt, gb.ops.div, gb.monoid(gb.ops.max)))
        out.append((dt, gb.op("halfmax", USER["halfmax"][0]),
                    gb.monoid(gb.op("por", USER["por"][0]))))
        out.append((dt, gb.op("cube_absdiff", USER["cube_absdiff"][0]), gb.monoid(gb.ops.times)))
        out.append((dt, gb.ops.lor, gb.monoid(gb.ops.lor)))
    return out


def _nvcc(src: str, mode: str, exe: bool = False):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cu")
        with open(path, "w") as f:
            f.write(src)
        outp = os.path.join(d, "k.out")
        args = [NVCC, "-std=c++17", "-o", outp, path] + ([] if exe else [mode, "-arch=sm_90"])
        r = subprocess.run(args, capture_output=True, text=True)
        if not exe or r.returncode != 0:
            return r, None
        run = subprocess.run([outp], capture_output=True, text=True, timeout=60)
        return r, run


@pytest.mark.nvcc
def test_cuda_functors_of_every_domain_compile():
    from gbdist.backends.cuda import graph_codegen as gc
    from gbdist.backends.cuda import graph_functor as gf
    parts = []
    for k, (dt, mul, mon) in enumerate(_functor_cases()):
        f = gf.functor(mul, mon, dt).replace("struct GbF", f"struct GbF{k}")
        t = gc.CTYPES[np.dtype(dt)]
        parts.append(f + f"__global__ void k{k}(const double* a, const {t}* b, int* o) {{\n"
                     f"  GbF{k}::W w = GbF{k}::mul(GbF{k}::load(a[0]), GbF{k}::load(b[0]));\n"
                     f"  w = GbF{k}::add(w, GbF{k}::identity());\n  o[0] = (int)w;\n}}\n")
    from gbdist.resources import read
    src = "\n".join([read("kernels", "gbdist.cuh"), read("kernels", "graph_types.cuh")] + parts)
    r, _ = _nvcc(src, "--ptx")
    assert r.returncode == 0, r.stderr[-3000:]


_HOST_SHIM = r"""
#include <cmath>
#include <cstdio>
#define GB_INF INFINITY
#define GB_NAN NAN
template <typename T> T gb_max(T a, T b) { return (a != a || a > b) ? a : ((b != b) ? b : (a > b ? a : b)); }
template <typename T> T gb_min(T a, T b) { return (a != a || a < b) ? a : ((b != b) ? b : (a < b ? a : b)); }
template <typename T> T gb_sign(T a) { return (T)((a > (T)0) - (a < (T)0)); }
static void pr(int v) { std::printf("%d\n", v); }
static void pr(long long v) { std::printf("%lld\n", v); }
static void pr(float v) { std::printf("%.9g\n", (double)v); }
static void pr(double v) { std::printf("%.17g\n", v); }
"""


def _c_literal(v, dt) -> str:
    dt = np.dtype(dt)
    if dt == np.bool_:
        return "true" if v else "false"
    if dt.kind == "f":
        v = float(v)
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "-INFINITY"
        return repr(v)
    return "(-9223372036854775807LL - 1LL)" if int(v) == -2**63 else f"{int(v)}LL"


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a host C++ compiler for nvcc")
@pytest.mark.parametrize("dt", [np.int32, np.int64, np.bool_, np.float32])
def test_cuda_functor_arithmetic_matches_the_reference_on_the_host(dt):
    """The CUDA functors' ⊗ and ⊕ (the printed C and ``kernels/graph_types.cuh``), compiled
    for the host by nvcc and run on values at the limits, equal the reference's ``binary``
    in the domain: wrapping, saturating casts of float parts and of float operands."""
    if NVCC is None:
        pytest.skip("needs nvcc")
    from gbdist.backends.cuda import graph_codegen as gc
    from gbdist.backends.cuda import graph_functor as gf
    from gbdist.backends.graph_reference import binary
    from gbdist.resources import read
    rng = np.random.default_rng(5)
    n = 48
    a = extreme_values(rng, dt, n)
    b = extreme_values(rng, dt, n)
    af = np.concatenate([np.array([np.inf, -np.inf, np.nan, 1e300, -2.7, 2.0**63]),
                         rng.standard_normal(6) * 1e10])  # float operands, cast on load
    t = gc.CTYPES[np.dtype(dt)]
    structs, body, want = [], [], []
    for k, (_, mul, mon) in enumerate(c for c in _functor_cases() if c[0] == dt):
        f = gf.functor(mul, mon, dt).replace("struct GbF", f"struct GbF{k}")
        structs.append(f.replace("__device__ static", "__host__ __device__ static"))
        F = f"GbF{k}"
        ab_mul, ab_add = binary(mul, a, b, dt), binary(mon.op, a, b, dt)
        for i in range(n):
            la, lb = f"{F}::load(({t}){_c_literal(a[i], dt)})", f"{F}::load(({t}){_c_literal(b[i], dt)})"
            body.append(f"  pr({F}::mul({la}, {lb}));")
            body.append(f"  pr({F}::add({F}::cast({la}), {F}::cast({lb})));")
            want += [ab_mul[i], ab_add[i]]
        f_mul = binary(mul, af, np.full(af.size, b[0]), dt)
        for i, v in enumerate(af):
            body.append(f"  pr({F}::mul({F}::load((double){_c_literal(v, np.float64)}), "
                        f"{F}::load(({t}){_c_literal(b[0], dt)})));")
            want.append(f_mul[i])
    src = "\n".join([_HOST_SHIM, read("kernels", "graph_types.cuh")] + structs
                    + ["int main() {"] + body + ["  return 0;", "}"])
    r, run = _nvcc(src, "", exe=True)
    assert r.returncode == 0, r.stderr[-3000:]
    got = run.stdout.split()
    assert len(got) == len(want)
    bad = []
    for i, (g, w) in enumerate(zip(got, want)):
        if np.dtype(dt).kind == "f":
            g, w = float(g), float(w)
            ok = (g == w or (math.isnan(g) and math.isnan(w))
                  or math.isclose(g, w, rel_tol=1e-6))
        else:
            ok = int(g) == int(w)
        if not ok:
            bad.append((i, body[i].strip(), g, w))
    assert not bad, bad[:10]


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a host C++ compiler for nvcc")
@pytest.mark.parametrize("dt", FLOAT_DTS, ids=["float32", "float64"])
def test_cuda_functor_min_max_ignore_nan_on_the_host(dt):
    """The CUDA functors' float max / min (the ⊕ of min_plus / max_times, the one their
    atomic compare-and-swap loop applies, and a Max / Min printed inside a user formula)
    are fmax / fmin: run on the host by nvcc, equal to the reference's ``binary``, and
    ⊕-folding a NaN-led run of terms in every rotation gives the largest / smallest number
    (a NaN accumulator is replaced; a NaN candidate replaces nothing)."""
    if NVCC is None:
        pytest.skip("needs nvcc")
    from gbdist.backends.cuda import graph_codegen as gc
    from gbdist.backends.cuda import graph_functor as gf
    from gbdist.backends.graph_reference import binary
    from gbdist.resources import read
    cap = gb.op("nan_cap_c", lambda x, y: gb.minimum(gb.maximum(x, y - 1.0), 100.0))
    cases = [(gb.ops.plus, gb.monoid(gb.ops.min)), (gb.ops.times, gb.monoid(gb.ops.max)),
             (cap, gb.monoid(gb.op("nan_umax_c", lambda x, y: gb.maximum(x, y))))]
    vals = np.array([np.nan, 1.0, -np.inf, np.inf, -0.5, 3.0], dt)
    a, b = np.meshgrid(vals, vals)
    a, b = a.ravel(), b.ravel()
    t = gc.CTYPES[np.dtype(dt)]
    lit = lambda v: f"({t}){_c_literal(v, np.float64)}"  # noqa: E731
    structs, body, want = [], [], []
    run = [np.nan, 2.0, np.nan, -1.0, 5.0, np.nan]
    for k, (mul, mon) in enumerate(cases):
        f = gf.functor(mul, mon, dt).replace("struct GbF", f"struct GbF{k}")
        structs.append(f.replace("__device__ static", "__host__ __device__ static"))
        F = f"GbF{k}"
        ab_mul, ab_add = binary(mul, a, b, dt), binary(mon.op, a, b, dt)
        for i in range(a.size):
            la, lb = f"{F}::load({lit(a[i])})", f"{F}::load({lit(b[i])})"
            body.append(f"  pr({F}::mul({la}, {lb}));")
            body.append(f"  pr({F}::add({F}::cast({la}), {F}::cast({lb})));")
            want += [ab_mul[i], ab_add[i]]
        for s in range(len(run)):  # the CAS loop's sequence of ⊕ steps, every rotation
            seq = run[s:] + run[:s]
            body.append(f"  {{ {F}::W acc = {F}::identity();")
            for v in seq:
                body.append(f"    acc = {F}::add(acc, {F}::cast({F}::load({lit(v)})));")
            body.append("    pr(acc); }")
            want.append(5.0 if mon.op.formula == gb.ops.max.formula else -1.0)
    src = "\n".join([_HOST_SHIM, read("kernels", "graph_types.cuh")] + structs
                    + ["int main() {"] + body + ["  return 0;", "}"])
    r, out = _nvcc(src, "", exe=True)
    assert r.returncode == 0, r.stderr[-3000:]
    got = [float(g) for g in out.stdout.split()]
    assert len(got) == len(want)
    bad = [(i, g, float(w)) for i, (g, w) in enumerate(zip(got, want))
           if not (g == w or (math.isnan(g) and math.isnan(w)) or math.isclose(g, w, rel_tol=1e-6))]
    assert not bad, bad[:10]
