"""The result type (and values) of ``ewise_add``, ``ewise_mult`` and ``ewise_union`` for
every pair of operand types, against python-graphblas's untyped op (``A.ewise_add(B,
binary.plus)``: python-graphblas types the op by unifying the operands' types, and
eWiseUnion's defaults as ``Scalar.from_value`` types them: a Python int INT64, a float
FP64, a bool BOOL, a NumPy scalar its own type). Every op gbdist shares with
python-graphblas, including ``pair`` (INT64 whatever the operands), ``eq`` / ``ne`` (BOOL)
and ``power`` (the operands' type: POW_INT32 is int32). gbdist stores five types;
narrower integer and unsigned inputs are stored as int64 (float16 as float32), so their
results are compared with python-graphblas on those stored types (docs/graph.md,
"Result types of element-wise operations")."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr

graphblas = pytest.importorskip("graphblas")
from graphblas import binary  # noqa: E402

STORED = ("bool", "int32", "int64", "float32", "float64")
WIDENED = {"int8": "int64", "int16": "int64", "uint8": "int64", "uint16": "int64",
           "uint32": "int64", "uint64": "int64", "float16": "float32"}
OPS = {"plus": "plus", "minus": "minus", "times": "times", "div": "truediv", "min": "min",
       "max": "max", "first": "first", "second": "second", "pair": "pair", "any": "any",
       "eq": "eq", "ne": "ne", "lor": "lor", "land": "land", "power": "pow"}
DEFAULTS = ((1, 2), (1.5, -2.0), (True, False), (np.float32(0.5), np.int32(3)))
N = 7
IA, IB = np.array([0, 1, 3, 4, 6]), np.array([1, 2, 3, 5, 6])


def _values(dt, k, seed):
    rng = np.random.default_rng(seed)
    if dt == "bool":
        return rng.random(k) < 0.5
    if np.dtype(dt).kind == "u":
        return rng.integers(0, 4, k).astype(dt)
    if np.dtype(dt).kind == "i":
        return rng.integers(-3, 4, k).astype(dt)
    return (rng.integers(-6, 7, k) / 2).astype(dt)


def _pair(da, db, sa=None, sb=None):
    """gbdist vectors of types da, db and python-graphblas ones of the stored types."""
    a, b = _values(da, IA.size, 1), _values(db, IB.size, 2)
    u, w = gb.Vector.from_coo(IA, a, size=N), gb.Vector.from_coo(IB, b, size=N)
    ga = graphblas.Vector.from_coo(IA, a.astype(sa or da), size=N, dtype=sa or da)
    gw = graphblas.Vector.from_coo(IB, b.astype(sb or db), size=N, dtype=sb or db)
    return u, w, ga, gw


def _same(got, want, what):
    """dtype, pattern and values (``any`` takes either side where both are stored, in
    SuiteSparse whichever it meets: its values are not compared)."""
    wi, wv = want.to_coo()
    assert np.dtype(got.dtype) == want.dtype.np_type, \
        f"{what}: gbdist {np.dtype(got.dtype)}, python-graphblas {want.dtype.np_type}"
    assert np.array_equal(np.asarray(got.indices), wi), what
    if " any" in what:
        return
    gv = np.asarray(got.values)
    if gv.dtype.kind == "f":
        np.testing.assert_allclose(gv, wv, rtol=1e-6, err_msg=what)  # NaN equals NaN
    else:
        assert np.array_equal(gv, wv), f"{what}: {gv} != {wv}"


def _calls(u, w, ga, gw):
    for op, gop in OPS.items():
        f, g = getattr(gb.ops, op), getattr(binary, gop)
        yield f"ewise_add {op}", lambda: gr.ewise_add(u, w, f), lambda: ga.ewise_add(gw, g)
        yield f"ewise_mult {op}", lambda: gr.ewise_mult(u, w, f), lambda: ga.ewise_mult(gw, g)
        for ld, rd in DEFAULTS:
            yield (f"ewise_union {op} {ld!r} {rd!r}",
                   lambda ld=ld, rd=rd: gr.ewise_union(u, w, f, ld, rd),
                   lambda ld=ld, rd=rd: ga.ewise_union(gw, g, ld, rd))


@pytest.mark.parametrize("da,db", list(itertools.product(STORED, STORED)))
def test_result_type_and_values_follow_graphblas(da, db):
    u, w, ga, gw = _pair(da, db)
    with np.errstate(all="ignore"):
        for what, ours, peer in _calls(u, w, ga, gw):
            _same(ours(), peer().new(), f"{da} {db} {what}")


@pytest.mark.parametrize("narrow", sorted(WIDENED))
def test_narrow_inputs_are_stored_widened(narrow):
    """int8 ... uint64 and float16 operands are stored as int64 / float32: the result is
    python-graphblas's on the stored types (mixed with float32 and bool)."""
    for other in ("bool", "float32"):
        u, w, ga, gw = _pair(narrow, other, sa=WIDENED[narrow])
        assert np.dtype(u.dtype) == WIDENED[narrow]
        with np.errstate(all="ignore"):
            for what, ours, peer in _calls(u, w, ga, gw):
                _same(ours(), peer().new(), f"{narrow} {other} {what}")


def test_bool_and_float32_examples():
    """The issue's case, written out: bool ∪ float32 is float32 in both with ``plus``, and
    float64 once a Python float default joins (python-graphblas reads it as FP64)."""
    u = gb.Vector.from_coo([0, 2], [True, False], size=3)
    w = gb.Vector.from_coo([1, 2], np.array([0.5, 1.5], dtype=np.float32), size=3)
    assert gr.ewise_add(u, w, gb.ops.plus).dtype == np.float32
    assert gr.ewise_union(u, w, gb.ops.plus, np.float32(0), np.float32(0)).dtype == np.float32
    assert gr.ewise_union(u, w, gb.ops.plus, 0.0, 0.0).dtype == np.float64
    assert gr.ewise_union(u, w, gb.ops.plus, 0, 0).dtype == np.float64  # INT64 + FP32
    assert gr.ewise_add(u, w, gb.ops.eq).dtype == np.bool_
    assert gr.ewise_add(u, w, gb.ops.pair).dtype == np.int64


def test_lone_entries_are_cast_to_the_result_type_directly():
    """ewise_add with ``power`` on int64 evaluates the power in float64 (as SuiteSparse's
    POW_INT64 does), but an entry one side alone stores is copied into the int64 result
    unrounded; ``eq`` / ``pair`` cast lone entries straight to bool / int64."""
    big = np.array([2**62 + 1, 3], dtype=np.int64)
    u = gb.Vector.from_coo([0, 1], big, size=3)
    w = gb.Vector.from_coo([1, 2], np.array([2, 2**53 + 1], dtype=np.int64), size=3)
    gu = graphblas.Vector.from_coo([0, 1], big, size=3)
    gw = graphblas.Vector.from_coo([1, 2], np.array([2, 2**53 + 1], dtype=np.int64), size=3)
    got = gr.ewise_add(u, w, gb.ops.power)
    assert got.values.tolist() == [2**62 + 1, 9, 2**53 + 1]
    _same(got, gu.ewise_add(gw, binary.pow).new(), "power")
    f = gb.Vector.from_coo([0, 1], [2.5, np.nan], size=3)
    gf = graphblas.Vector.from_coo([0, 1], [2.5, np.nan], size=3)
    _same(gr.ewise_add(f, w, gb.ops.pair), gf.ewise_add(gw, binary.pair).new(), "pair")
    _same(gr.ewise_add(f, w, gb.ops.eq), gf.ewise_add(gw, binary.eq).new(), "eq")
