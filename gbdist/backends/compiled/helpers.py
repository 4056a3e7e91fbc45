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
def condition_rows(ip, data, ncols, shift, scale, minexp, out, r0, r1):
    """``gbdist.backends.rows.condition_rows`` on the host for rows r0:r1, one pass per row
    (same values: the row sum added in entry order, the same power of two and the same
    guards, :func:`gbdist.backends.rows.scale_exponents`; ``minexp``, the data type's
    smallest normal exponent), into ``out`` (float64)."""
    for i in range(r0, r1):
        a, b = ip[i], ip[i + 1]
        mean = 0.0
        if shift and ncols > 0 and b - a == ncols:
            total = 0.0
            for p in range(a, b):
                total += np.float64(data[p])
            if math.isfinite(total):
                mean = total / ncols
        big = 0.0
        small = INF
        nan = False  # NumPy's maximum propagates a NaN: such a row is left unscaled
        for p in range(a, b):
            v = np.float64(data[p]) - mean
            out[p] = v
            m = abs(v)
            if m != m:
                nan = True
            if m > big:
                big = m
            if m > 0.0 and m < small:
                small = m
        if scale and big > 0.0 and not nan and big < INF:
            s = -math.frexp(big)[1]
            # up: always exact (a subnormal big gives s > 1023: ldexp, 2^s is no float64);
            # down: only while the smallest value stays normal (compared on exponents)
            if s > 0 or (s < 0 and math.frexp(small)[1] + s > minexp):
                for p in range(a, b):
                    out[p] = math.ldexp(out[p], s)


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
def row_hashes(ip, idx, bits, negzero, out, r0, r1):
    """``gbdist.backends.rows.row_hashes`` of rows r0:r1 (the same 64-bit values), from the
    values' bit patterns ``bits`` (a uint32 or uint64 view of float32 / float64 values;
    ``negzero``, the pattern of -0.0, hashed as +0.0), one pass per row."""
    for i in range(r0, r1):
        h = np.uint64(0)
        for p in range(ip[i], ip[i + 1]):
            b = np.uint64(bits[p])
            if b == negzero:
                b = np.uint64(0)
            h += _mix(np.uint64(idx[p]) * _M1 + b)
        out[i] = _mix(h + np.uint64(ip[i + 1] - ip[i]) * _M3)


@njit(**OPT)
def same_rows(lp, li, lbits, rp, ri, rbits, negzero, ci, cj, ok):
    """ok[t]: left row ci[t] equals right row cj[t] entry by entry (indices and value bits,
    -0.0 as +0.0), as ``gbdist.backends.rows.identical_pairs`` verifies its candidates."""
    for t in range(ci.shape[0]):
        a, b = lp[ci[t]], rp[cj[t]]
        na = lp[ci[t] + 1] - a
        good = na == rp[cj[t] + 1] - b
        if good:
            for e in range(na):
                x, y = np.uint64(lbits[a + e]), np.uint64(rbits[b + e])
                if x == negzero:
                    x = np.uint64(0)
                if y == negzero:
                    y = np.uint64(0)
                if li[a + e] != ri[b + e] or x != y:
                    good = False
                    break
        ok[t] = good


@njit(**OPT)
def gb_before(dv, di, ev, ei):
    """(dv, di) sorts before (ev, ei): by value, NaN last, then by index."""
    if dv != dv:
        return ev != ev and di < ei
    if ev != ev:
        return True
    return dv < ev or (dv == ev and di < ei)


@njit(**OPT)
def gb_insert(bd, bi, cnt, kk, v, idx):
    """Insert (v, idx) into the sorted k-list bd/bi holding ``cnt`` entries (at most kk);
    returns the new count. Most candidates are rejected by one comparison with the k-th."""
    if cnt == kk and not gb_before(v, idx, bd[kk - 1], bi[kk - 1]):
        return cnt
    p = cnt if cnt < kk else kk - 1
    while p > 0 and gb_before(v, idx, bd[p - 1], bi[p - 1]):
        bd[p] = bd[p - 1]
        bi[p] = bi[p - 1]
        p -= 1
    bd[p] = v
    bi[p] = idx
    return cnt + 1 if cnt < kk else cnt


@njit(**OPT)
def dense_rows(ptr, idx, val, dpos, out, r0, r1):
    """Rows r0:r1 of a CSR operand on its dense columns (``dpos[k]``: k's column in
    ``out``, or -1) into the dense block ``out`` (zeroed by the caller)."""
    for i in range(r0, r1):
        for p in range(ptr[i], ptr[i + 1]):
            c = dpos[idx[p]]
            if c >= 0:
                out[i, c] = val[p]
