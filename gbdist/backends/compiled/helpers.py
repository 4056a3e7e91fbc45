"""Scalar helpers and generic kernels shared by every generated module (Numba, cached).

Generated modules import these instead of defining their own copies, so they are
compiled once per machine (``cache=True``) and not once per plan.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

INF = np.inf
NAN = np.nan
OPT = dict(cache=True, error_model="numpy", nogil=True)

# How a row reduction combines (the monoid's NumPy ufunc in backends/cpu.py).
PLUS, TIMES, MAX, MIN = 0, 1, 2, 3


@njit(**OPT)
def gb_max(a, b):
    """np.maximum on scalars: NaN propagates."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@njit(**OPT)
def gb_min(a, b):
    """np.minimum on scalars: NaN propagates."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


@njit(**OPT)
def gb_sign(a):
    """np.sign: -1, 0 or 1, NaN for NaN."""
    if a > 0.0:
        return 1.0
    if a < 0.0:
        return -1.0
    return a


@njit(**OPT)
def gb_log(a):
    """np.log: -inf at 0, NaN below."""
    if a > 0.0:
        return math.log(a)
    if a == 0.0:
        return -INF
    return NAN


@njit(**OPT)
def gb_order(keys):
    """A stable argsort of a row's keys."""
    return np.argsort(keys, kind="mergesort")


@njit(**OPT)
def reduce_rows(ptr, val, K, fill, identity, how, fill_counts, out):
    """out[i] = ⊕ over row i's stored values (already mapped), then the fill's share
    for its K − nnz unstored entries (``fill_counts``: the fill differs from the
    identity), as ``CPUBackend.row_reduce`` does."""
    for i in range(out.shape[0]):
        acc = identity
        for p in range(ptr[i], ptr[i + 1]):
            v = np.float64(val[p])
            if how == PLUS:
                acc = acc + v
            elif how == TIMES:
                acc = acc * v
            elif how == MAX:
                acc = gb_max(acc, v)
            else:
                acc = gb_min(acc, v)
        missing = K - (ptr[i + 1] - ptr[i])
        if fill_counts and missing > 0:
            if how == PLUS:
                acc = acc + missing * fill
            elif how == TIMES:
                acc = acc * fill ** np.float64(missing)
            elif how == MAX:
                acc = gb_max(acc, fill)
            else:
                acc = gb_min(acc, fill)
        out[i] = acc


@njit(**OPT)
def condition_rows(indptr, data, ncols, shift, scale, tiny, big_max, out, r0, r1):
    """``gbdist.backends.rows.condition_rows`` for rows r0..r1 (same arithmetic, same order):
    a row storing all ``ncols`` columns is shifted by its mean (``shift``, when its
    sum is finite); then each row is scaled by the power of two that brings its
    largest |value| into [0.5, 1) (``scale``), unless that pushes its smallest
    nonzero |value| below ``tiny`` or its largest past ``big_max`` (the dtype's)."""
    for i in range(r0, r1):
        a0, a1 = indptr[i], indptr[i + 1]
        mean = 0.0
        if shift and ncols > 0 and a1 - a0 == ncols:
            total = 0.0
            for p in range(a0, a1):
                total += np.float64(data[p])
            if math.isfinite(total):
                mean = total / ncols
        factor = 1.0
        if scale:
            big = 0.0
            small = INF
            for p in range(a0, a1):
                a = abs(np.float64(data[p]) - mean)
                big = gb_max(big, a)
                if a > 0.0:
                    small = min(small, a)
            if big > 0.0:
                e = math.frexp(big)[1]
                f = math.ldexp(1.0, -e)
                if small * f >= tiny and big * f < big_max:
                    factor = f
        for p in range(a0, a1):
            out[p] = (np.float64(data[p]) - mean) * factor


_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


@njit(**OPT)
def _mix(z):
    z = z ^ (z >> np.uint64(30))
    z = z * _M2
    z = z ^ (z >> np.uint64(27))
    z = z * _M3
    return z ^ (z >> np.uint64(31))


@njit(**OPT)
def _bits(data, bits, p):
    """The value's bit pattern, -0.0 as +0.0 (``exact._value_bits``)."""
    if data[p] == 0:
        return np.uint64(0)
    return np.uint64(bits[p])


@njit(**OPT)
def row_hashes(indptr, indices, data, bits, out, r0, r1):
    """``exact.row_hashes`` for rows r0..r1: a hash of the (index, value bits) entries."""
    for i in range(r0, r1):
        h = np.uint64(0)
        for p in range(indptr[i], indptr[i + 1]):
            h += _mix(np.uint64(indices[p]) * _M1 + _bits(data, bits, p))
        out[i] = _mix(h + np.uint64(indptr[i + 1] - indptr[i]) * _M3)


@njit(**OPT)
def write_self_value(lp, li, ld, lb, rp, ri, rd, rb, hl, hr_sorted, hr_order, value, out, r0, r1):
    """Where left row i (r0 <= i < r1) equals right row j entry by entry (same columns,
    same value bits), and out[i, j] is finite, write ``value`` (``exact.apply_self_value``)."""
    for i in range(r0, r1):
        lo = np.searchsorted(hr_sorted, hl[i])
        t = lo
        while t < hr_sorted.shape[0] and hr_sorted[t] == hl[i]:
            j = hr_order[t]
            t += 1
            na = lp[i + 1] - lp[i]
            if na != rp[j + 1] - rp[j]:
                continue
            same = True
            for q in range(na):
                pa, pb = lp[i] + q, rp[j] + q
                if li[pa] != ri[pb] or _bits(ld, lb, pa) != _bits(rd, rb, pb):
                    same = False
                    break
            if same and math.isfinite(out[i, j]):
                out[i, j] = value
