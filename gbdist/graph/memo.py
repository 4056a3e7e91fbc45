"""What an operation decides from the *kinds* of its arguments, decided once per kind.

A graph operation's call resolves, before any array work, the fill decision
(:mod:`gbdist.compiler.graph`: the rule, and the proofs behind a fill-0 decision) and the
domain (:func:`.types.domain`: the type its ops are evaluated in). Both depend only on
the operation's name, its op / semiring / monoid, the operands' dtypes and fills, a bound
scalar's Python type and ``dtype=``: never on the values. So a loop of the same operation
on operands of one kind resolves them once, and every later call finds them here by one
dictionary lookup (docs/graph_api.md, "Per-call cost").

Ops and semirings are keyed by ``id()`` (hashing a semiring hashes its formulas) and kept
alive in the entry, which compares them with the call's (a tuple comparison: identical
objects match at once; an id reused by another object matches only if it is equal, and
equal ops and semirings decide the same). Errors are not memoised: a refused call raises
every time.
"""
from __future__ import annotations

import numpy as np

from ..compiler import graph as rule
from . import types as T

_MEMO: dict = {}
_LIMIT = 4096  # entries; past it the memo starts again (kinds in use are few)

LOOKUPS = {"hit": 0, "miss": 0}
"""Counts of memo hits and misses (tests prove a loop resolves its kinds once)."""


def memoised(key, anchors: tuple, compute):
    """``compute()``, kept under ``key`` (which holds the ``id()`` of each of ``anchors``);
    an unhashable key (an odd ``dtype=``) computes every time."""
    try:
        hit = _MEMO.get(key)
    except TypeError:
        return compute()
    if hit is not None and hit[0] == anchors:  # identical objects: no __eq__ is called
        LOOKUPS["hit"] += 1
        return hit[1]
    LOOKUPS["miss"] += 1
    value = compute()
    if len(_MEMO) >= _LIMIT:
        _MEMO.clear()
    _MEMO[key] = (anchors, value)
    return value


def _dtype_key(dtype):
    return None if dtype is None else (type(dtype), dtype)


def scalar_key(s):
    """A bound scalar's kind for the domain rule (NumPy's ``result_type`` reads a Python
    scalar's type, not its value; a NumPy scalar by its dtype)."""
    if isinstance(s, np.generic):
        return ("np", s.dtype)
    if type(s) in (bool, int, float):
        return type(s)
    return ("value", s)  # anything else: by value (hashable or not memoised)


def product(name, sr, A, u, dtype):
    """(decision, domain) of mxm / mxv / vxm of ``A`` and ``u`` over ``sr``."""
    key = ("product", name, id(sr), A._kind, u._kind, _dtype_key(dtype))
    return memoised(key, (sr,), lambda: (
        rule.product(name, sr, (A.effective_fill, u.effective_fill), (A.fill, u.fill)),
        T.domain(dtype, [A.dtype, u.dtype], [sr.mul, sr.add.op], monoids=[sr.add])))


def ewise(name, op, union, A, B, dtype):
    """(decision, domain, result type) of ewise_add (``union``) / ewise_mult."""
    key = ("ewise", name, id(op), union, A._kind, B._kind, _dtype_key(dtype))
    return memoised(key, (op,), lambda: _ewise(name, op, union, A, B, dtype))


def _ewise(name, op, union, A, B, dtype):
    dt = T.domain(dtype, [A.dtype, B.dtype], [op])
    return (rule.ewise(name, op, union, (A.effective_fill, B.effective_fill), (A.fill, B.fill)),
            dt, T.ewise_result(op, dt, [A.dtype, B.dtype], dtype))


_NO_SCALAR = ("no scalar",)


def domain(op, operand_dtype, dtype, scalar=_NO_SCALAR, monoid=None):
    """:func:`.types.domain` of a one-operand operation (apply, select, reduce_scalar):
    ``op`` (None: no op), a bound ``scalar``, the ``monoid`` of a reduction; memoised."""
    skey = None if scalar is _NO_SCALAR else scalar_key(scalar)
    key = ("domain", id(op), id(monoid), operand_dtype, _dtype_key(dtype), skey)
    return memoised(key, (op, monoid), lambda: T.domain(
        dtype, [operand_dtype], [] if op is None else [op],
        scalars=[] if scalar is _NO_SCALAR else [scalar],
        monoids=[] if monoid is None else [monoid]))


def reduction(name, monoid, A, dtype):
    """(decision, domain) of reduce_rows / reduce_cols."""
    key = ("reduction", name, id(monoid), A.fill, A.dtype, _dtype_key(dtype))
    return memoised(key, (monoid,), lambda: (
        rule.reduction(name, monoid, A.fill),
        T.domain(dtype, [A.dtype], [monoid.op], monoids=[monoid])))
