"""Shared cases of the stable-kernel tests (CPU: tests/algebra/test_stable.py, an
emulation of the kernel in float32; CUDA: tests/backends/test_stable_kernels_gpu.py):
float32 pairs where gb_js_term is weakest, and a long double reference."""
from __future__ import annotations

import numpy as np


def js_reference(x, y):
    """x log(2x/s) + y log(2y/s) in long double, as s·ψ(d): the series of positive terms
    for d < 0.5 (no cancellation), the logs above (they cancel by at most 3.7x there)."""
    x, y = np.asarray(x, np.longdouble), np.asarray(y, np.longdouble)
    s = x + y
    with np.errstate(all="ignore"):
        d = np.abs(x - y) / s
        t = d * d
        series = np.zeros_like(d)
        for n in range(60, 0, -1):
            series = series * t + np.longdouble(1) / ((2 * n) * (2 * n - 1))
        series *= t
        lo = np.where(d < 1, (1 - d) * np.log1p(-d), 0)
        logs = ((1 + d) * np.log1p(d) + lo) / 2
        psi = np.where(d < 0.5, series, logs)
        return np.where(s == 0, 0, s * psi)


def js_cases(rng, n=1 << 19):
    """float32 pairs, 0 or within 2^±32, where the kernel is weakest."""
    x = rng.lognormal(0, 3, n)
    k = n // 8
    y = np.empty(n)
    y[:k] = x[:k] * (1 + rng.choice([-1, 1], k) * 10.0 ** rng.uniform(-7.5, -0.5, k))
    for j, (lo, hi) in enumerate([(0.79, 0.81), (0.0, 0.8), (0.8, 1.0)], start=1):
        d = rng.uniform(lo, hi, k)  # y = x (1 − d)/(1 + d): |x − y|/(x + y) = d
        y[j * k:(j + 1) * k] = x[j * k:(j + 1) * k] * (1 - d) / (1 + d)
    y[4 * k:5 * k] = x[4 * k:5 * k] * 10.0 ** -rng.uniform(1, 18, k)  # far apart
    y[5 * k:] = rng.lognormal(0, 3, n - 5 * k)
    x, y = (np.clip(np.abs(v), 2.0 ** -32, 2.0 ** 32).astype(np.float32) for v in (x, y))
    x[:64], y[64:128] = 0, 0
    x[128:160], y[128:160] = 2.0 ** -32, 2.0 ** 32  # the ends of the range
    swap = rng.random(n) < 0.5
    return np.where(swap, y, x), np.where(swap, x, y)
