"""Helpers for the graph tests: random graphs with explicit zeros and empty rows/columns,
brute-force references (dense float64 values with a presence mask), and moving operands
to where a kernel set computes. Importable by other test folders (tests/backends) too."""
from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sps

import gbdist as gb

KERNEL_SETS = ("reference", "compiled", "cuda")


def dev(kernels, x):
    """The operand where ``kernels`` compute (device for cuda)."""
    if kernels == "cuda" and x is not None and hasattr(x, "to_device"):
        return x.to_device()
    return x


def host(x):
    return x.to_host() if hasattr(x, "to_host") else x


def random_graph(rng, m=14, n=None, p=0.3, dtype=np.float64, zeros=3, empty=True):
    """(CSR, W dense float64 values, P presence): integer weights 1..4, ``zeros`` explicit
    0-weight entries, row 0 and column 1 empty when ``empty``."""
    n = m if n is None else n
    P = rng.random((m, n)) < p
    if empty:
        P[0, :] = False
        P[:, min(1, n - 1)] = False
    W = np.where(P, rng.integers(1, 5, (m, n)), 0).astype(np.float64)
    r, c = np.nonzero(P)
    if zeros and r.size:
        z = rng.choice(r.size, size=min(zeros, r.size), replace=False)
        W[r[z], c[z]] = 0.0
    if np.dtype(dtype) == np.bool_:
        W = np.where(P, (W != 0).astype(float), 0.0)
    csr = sps.csr_matrix((W[r, c].astype(dtype), (r, c)), shape=(m, n))
    assert csr.nnz == P.sum()
    return csr, W, P


def random_vector(rng, n, p=0.5, dtype=np.float64):
    P = rng.random(n) < p
    W = np.where(P, rng.integers(0, 4, n), 0).astype(np.float64)
    if np.dtype(dtype) == np.bool_:
        W = (W != 0).astype(float) * P
    idx = np.nonzero(P)[0]
    return gb.Vector.from_coo(idx, W[idx].astype(dtype), n), W, P


# Python scalar versions of the semirings (independent of gbdist's formulas)
PY = {
    "plus_times": (lambda a, b: a * b, lambda a, b: a + b),
    "min_plus": (lambda a, b: a + b, min),
    "max_plus": (lambda a, b: a + b, max),
    "max_min": (min, max),
    "min_times": (lambda a, b: a * b, min),
    "lor_land": (lambda a, b: float(a != 0 and b != 0), lambda a, b: float(a != 0 or b != 0)),
    "plus_pair": (lambda a, b: 1.0, lambda a, b: a + b),
    "any_pair": (lambda a, b: 1.0, lambda a, b: a),
    "por_times": (lambda a, b: a * b, lambda a, b: a + b - a * b),
    "plus_first": (lambda a, b: a, lambda a, b: a + b),
    "plus_minus": (lambda a, b: a - b, lambda a, b: a + b),
}


@functools.lru_cache(maxsize=None)
def semiring(name):
    if name in gb.semirings:
        return gb.semirings[name]
    if name == "por_times":
        return gb.semiring(gb.ops.times, gb.monoid(gb.op("por", lambda x, y: x + y - x * y)))
    if name == "plus_first":
        return gb.semiring(gb.ops.first, gb.ops.plus)
    if name == "plus_minus":
        return gb.semiring(gb.ops.minus, gb.ops.plus)
    raise KeyError(name)


def cast(values, dtype):
    dtype = np.dtype(dtype)
    values = np.asarray(values, dtype=np.float64)
    return values != 0 if dtype == np.bool_ else values.astype(dtype)


def brute_mxm(WA, PA, WB, PB, name):
    mul, add = PY[name]
    m, n = WA.shape[0], WB.shape[1]
    out, present = np.zeros((m, n)), np.zeros((m, n), bool)
    for i in range(m):
        for j in range(n):
            terms = [mul(WA[i, k], WB[k, j]) for k in range(WA.shape[1]) if PA[i, k] and PB[k, j]]
            if terms:
                out[i, j] = functools.reduce(add, terms)
                present[i, j] = True
    return out, present


def assert_matches(result, values, present, dtype, rtol=0.0):
    """A graph result (Matrix / Vector) equals the brute force in pattern and values."""
    result = host(result)
    assert result.dtype == np.dtype(dtype), (result.dtype, dtype)
    if result.ndim == 2:
        r, c, v = result.to_coo()
        got_p = np.zeros(result.shape, bool)
        got_p[r, c] = True
        got_v = np.zeros(result.shape, dtype=v.dtype)
        got_v[r, c] = v
    else:
        got_p = np.zeros(result.size, bool)
        got_p[result.indices] = True
        got_v = np.zeros(result.size, dtype=result.dtype)
        got_v[result.indices] = result.values
    np.testing.assert_array_equal(got_p, present)
    want = cast(np.where(present, values, 0), dtype)
    if rtol:
        np.testing.assert_allclose(got_v[present].astype(float), want[present].astype(float), rtol=rtol)
    else:
        np.testing.assert_array_equal(got_v[present], want[present])
