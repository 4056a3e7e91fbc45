"""The shortcuts of the NumPy reference are its definition, value for value (issue 25).

The reference (gbdist/backends/graph_reference.py) defines an op in a domain by walking
its formula. For speed, a built-in op runs as a NumPy ufunc, a fold whose result does not
depend on the grouping of its terms runs as one ``reduceat``, a fold of one segment runs
the pairwise tree on a compacted array, and the domain rule reads an op's term instead of
its sympy formula. Each is compared here with the definition on every domain, with the
values where they could differ: signed zeros, ±inf, NaN, the integer extremes (wrapping),
both bools.
"""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist.algebra import ops as o
from gbdist.backends import graph_reference as R
from gbdist.graph import types as T

DTYPES = [np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64)]


def _pool(dt):
    if dt.kind == "b":
        return np.array([False, True])
    if dt.kind == "f":
        return np.array([0.0, -0.0, 1.0, -1.5, 2.5, 3.0, np.inf, -np.inf, np.nan, 1e38,
                         -7e-39], dtype=dt)
    info = np.iinfo(dt)
    return np.array([0, 1, -1, 2, -7, 5, info.max, info.min, info.max - 1, info.min + 1], dt)


def _same(got, want, dt):
    assert got.dtype == want.dtype == dt
    np.testing.assert_array_equal(got, want)
    if dt.kind == "f":  # and the sign of every zero (not of NaN: it carries none)
        num = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[num]), np.signbit(want[num]))


FAST_BINARY = [op for op in o.BUILTIN_BINARY
               if any(R._fast_binary(op, dt) is not None for dt in DTYPES)]
FAST_UNARY = [op for op in o.BUILTIN_UNARY
              if any(R._fast_unary(op, dt) is not None for dt in DTYPES)]


def test_the_shortcuts_cover_the_common_ops():
    names = {op.name for op in FAST_BINARY} | {op.name for op in FAST_UNARY}
    assert {"plus", "minus", "times", "min", "max", "first", "second", "pair", "any", "lor",
            "land", "eq", "ne", "abs", "neg", "identity"} <= names
    assert R._fast_binary(o.div, np.dtype(np.int64)) is None  # C division: walked


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("op", FAST_BINARY, ids=lambda op: op.name)
def test_binary_ufuncs_are_the_formula(op, dt):
    pool = _pool(dt)
    a, b = (v.ravel() for v in np.meshgrid(pool, pool))
    want = R.binary_walk(op, a, b, dt)
    _same(R.binary(op, a, b, dt), want, dt)
    for s in (pool[0], pool[-1]):  # a bound scalar on either side (apply left= / right=)
        _same(R.binary(op, a, np.asarray(s), dt),
              R.binary_walk(op, *np.broadcast_arrays(a, np.asarray(s, dt)), dt), dt)
        _same(R.binary(op, np.asarray(s), b, dt),
              R.binary_walk(op, *np.broadcast_arrays(np.asarray(s, dt), b), dt), dt)
    out = R.binary(op, a, b, dt)
    assert out.flags.writeable and out.flags.c_contiguous
    assert not np.shares_memory(out, a) and not np.shares_memory(out, b)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("op", FAST_UNARY, ids=lambda op: op.name)
def test_unary_ufuncs_are_the_formula(op, dt):
    a = _pool(dt)
    out = R.unary(op, a, dt)
    _same(out, R.unary_walk(op, a, dt), dt)
    assert not np.shares_memory(out, a)


def test_a_user_op_with_a_builtin_formula_takes_the_shortcut():
    mine = gb.op("mymax", lambda x, y: gb.maximum(x, y))
    f64 = np.dtype(np.float64)
    assert R._fast_binary(mine, f64) is R._fast_binary(o.max, f64)
    other = gb.op("shifted", lambda x, y: x + y + 1)
    assert R._fast_binary(other, f64) is None
    a = np.array([1.0, np.nan, 3.0])
    np.testing.assert_array_equal(R.binary(other, a, a, f64), R.binary_walk(other, a, a, f64))


FOLDS = [o.min, o.max, o.any, o.first, o.plus, o.times, o.lor, o.land]


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("op", FOLDS, ids=lambda op: op.name)
def test_reduceat_folds_are_the_tree(op, dt):
    rng = np.random.default_rng(7)
    pool = _pool(dt)
    tried = 0
    for trial in range(40):
        n = int(rng.integers(1, 50))
        seg = np.sort(rng.integers(0, 12, n))
        v = pool[rng.integers(0, pool.size, n)]
        if R._fast_fold(op, dt) is None:
            continue
        tried += 1
        got, gp = R.fold_segments(op, seg, v, 12, dt)
        want, wp = R.fold_tree(op, seg, v, 12, dt)
        np.testing.assert_array_equal(gp, wp)
        _same(got[gp], want[wp], dt)
    fast_kinds = {"min": "ib", "max": "ib", "any": "fib", "first": "fib", "plus": "ib",
                  "times": "ib", "lor": "b", "land": "b"}[op.name]
    assert (tried > 0) == (R._kind(dt) in fast_kinds)


@pytest.mark.parametrize("dt", [np.dtype(np.float32), np.dtype(np.float64)], ids=str)
@pytest.mark.parametrize("op", [o.plus, o.times], ids=lambda op: op.name)
def test_one_segment_fold_groups_as_the_tree(op, dt):
    rng = np.random.default_rng(3)
    for n in list(range(1, 34)) + [100, 257, 1000]:
        v = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(dt)
        if op is o.times:
            v = (1 + v / 1e6).astype(dt)
        one, _ = R.fold_segments(op, np.zeros(n, np.int64), v, 1, dt)
        # the general tree (a second segment forces it): bit for bit the same sum
        many, _ = R.fold_tree(op, np.r_[np.zeros(n, np.int64), [1]], np.r_[v, v[:1]], 2, dt)
        assert one[0].tobytes() == many[0].tobytes(), n


def _ops_with_terms():
    user = [gb.op("u1", lambda x, y: x * x + 3 * y), gb.op("u2", lambda x, y: x / y),
            gb.op("u3", lambda x, y: gb.maximum(x, y - 1)), gb.op("u4", lambda x: x ** 0.5),
            gb.op("u5", lambda x, y: x ** 3 - y ** 2), gb.op("u6", lambda x, y: 0.5 * x)]
    return [op for op in o.BUILTIN_BINARY + o.BUILTIN_UNARY + tuple(user)
            if getattr(op, "term", None) is not None]


def test_the_domain_rule_reads_the_same_from_a_term():
    ops = _ops_with_terms()
    if not ops:
        pytest.skip("these ops carry no term (gbdist.algebra.terms) here")
    for op in ops:
        assert T._keeps_term(op.term) == T._keeps_formula(op.formula), op.name
    keeps = {op.name for op in ops if T._keeps_term(op.term)}
    assert {"plus", "times", "min", "max", "lor", "pair", "u1", "u3", "u5"} <= keeps
    assert not keeps & {"div", "sqrt", "exp", "log", "u2", "u4", "u6"}
