"""Typecasts for the generated graph kernels (:mod:`.graph_codegen`), in Numba.

Each is GraphBLAS's typecast of one value into a domain, as
:func:`gbdist.backends.graph_reference.cast` does on arrays, chosen by the argument's
Numba type when a kernel is compiled (``numba.extending.overload``):

* ``gb_to_bool``: nonzero is true (NaN too);
* ``gb_to_int32`` / ``gb_to_int64``: an integer or bool wraps (two's complement); a
  float truncates toward zero and saturates (NaN → 0, ≥ the type's max → max, ≤ its min
  → min) — a plain ``np.int64(v)`` of a float out of range is undefined (x86 gives the
  minimum, so +inf became INT64_MIN);
* ``gb_upow``: an integer power on uint64 (wrapping; the printers do + and × on uint64
  too, as Numba's signed arithmetic is ``nsw``: an overflow would be undefined);
* ``gb_fmax`` / ``gb_fmin``: max / min as C's fmax / fmin (SuiteSparse's MAX / MIN on
  floats): a NaN argument is ignored, NaN only when both are NaN. Every ``Max`` / ``Min``
  of a graph formula is printed with them (the distance half's ``gb_max`` / ``gb_min``
  propagate NaN, as ``np.maximum``);
* ``gb_lower_bound``: the first position of a sorted index range whose index is not
  below a bound (a row's first column >= i: the half product's and the symmetry check's
  bisections).

:data:`VERSION` is printed into every generated module: a change here changes their
cache keys, so no kernel compiled against older helpers is reused.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

VERSION = "4"

_I32_MAX, _I32_MIN = np.int32(2**31 - 1), np.int32(-2**31)
_I64_MAX, _I64_MIN = np.int64(2**63 - 1), np.int64(-2**63)


def gb_to_bool(v):  # pragma: no cover - replaced by the overload in compiled code
    return v != 0


def gb_to_int32(v):  # pragma: no cover
    raise NotImplementedError


def gb_to_int64(v):  # pragma: no cover
    raise NotImplementedError


@overload(gb_to_bool, inline="always")
def _to_bool(v):
    if isinstance(v, types.Boolean):
        return lambda v: v
    if isinstance(v, (types.Integer, types.Float)):
        return lambda v: v != 0
    return None


def _int_cast(target, lo, hi, tmin, tmax):
    """The overload body for one integer target: ``hi``/``lo`` the float bounds
    (2^(bits-1) and −2^(bits-1), exact doubles)."""

    def choose(v):
        if isinstance(v, types.Float):
            def impl(v):
                d = np.float64(v)
                if d != d:
                    return target(0)
                if d >= hi:
                    return tmax
                if d <= lo:
                    return tmin
                return target(d)
            return impl
        if isinstance(v, (types.Integer, types.Boolean)):
            return lambda v: target(v)
        return None

    return choose


overload(gb_to_int32, inline="always")(_int_cast(np.int32, -2.0**31, 2.0**31, _I32_MIN, _I32_MAX))
overload(gb_to_int64, inline="always")(_int_cast(np.int64, -2.0**63, 2.0**63, _I64_MIN, _I64_MAX))


@njit(inline="always", cache=True, nogil=True)
def gb_upow(b, e):
    """``b ** e`` on uint64, wrapping (``e`` a small positive constant)."""
    r = np.uint64(1)
    for _ in range(e):
        r = r * b
    return r


@njit(inline="always", cache=True, nogil=True)
def gb_fmax(a, b):
    """C's fmax: ``b`` when ``a`` is NaN, ``a`` when ``b`` is NaN, else the larger."""
    return a if (b != b or a > b) else b


@njit(inline="always", cache=True, nogil=True)
def gb_fmin(a, b):
    """C's fmin: ``b`` when ``a`` is NaN, ``a`` when ``b`` is NaN, else the smaller."""
    return a if (b != b or a < b) else b


@njit(inline="always", cache=True, nogil=True)
def gb_lower_bound(idx, a, e, x):
    """The first position p in [a, e) with ``idx[p] >= x`` (``idx[a:e]`` sorted), e if
    none: the bisection of a CSR row for a column."""
    while a < e:
        mid = (a + e) >> 1
        if idx[mid] < x:
            a = mid + 1
        else:
            e = mid
    return a

