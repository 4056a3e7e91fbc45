"""Rows whose largest |value| is subnormal (issue 24, item 5), shared by the CPU and CUDA
tests, and their exact references: the input floats as rationals (every float is one),
sums and products exact, square roots to 60 digits by mpmath."""
from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np


def exact_cosine(a, b) -> float:
    return exact_cosine_frac([Fraction(float(x)) for x in a], [Fraction(float(y)) for y in b])


def exact_correlation(a, b) -> float:
    a = [Fraction(float(x)) for x in a]
    b = [Fraction(float(x)) for x in b]
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    return exact_cosine_frac([x - ma for x in a], [y - mb for y in b])


def exact_cosine_frac(a, b) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = sum(x * x for x in a), sum(y * y for y in b)
    if na == 0 or nb == 0:
        return float("nan")
    with mpmath.workdps(60):
        r = mpmath.mpf(dot.numerator) / dot.denominator
        den = mpmath.sqrt(mpmath.mpf(na.numerator) / na.denominator) * \
            mpmath.sqrt(mpmath.mpf(nb.numerator) / nb.denominator)
        return float(1 - r / den)


REFS = {"cosine": exact_cosine, "correlation": exact_correlation}


def exact_matrix(X, Y, metric):
    ref = REFS[metric]
    return np.array([[ref(a, b) for b in Y] for a in X])


SUB64 = np.array([
    [1e-310, 0.0, 3e-320, 0.0],       # the row: its largest value is subnormal
    [5e-324, 0.0, 0.0, 0.0],          # the smallest subnormal, alone
    [-2e-308, 1e-315, 0.0, 4e-312],   # just below the normal range, mixed signs
    [1e-310, 2e-310, 3e-320, -5e-311],  # stores every column: correlation shifts, then scales
    [2e-300, 0.0, 1e-310, 0.0],       # a normal largest value with a subnormal beside it
])
NORMAL64 = np.array([
    [1.0, 0.0, 2.0, 0.0],
    [0.5, -1.5, 0.0, 3.0],
    [1.0, 2.0, 3.0, 4.0],
    [1e300, 0.0, 1e-10, 0.0],
])
SUB32 = np.array([
    [1e-40, 0.0, 3e-44, 0.0],         # float32 subnormals (< 1.18e-38)
    [1.4e-45, 0.0, 0.0, 0.0],         # float32's smallest subnormal
    [-1e-38, 2e-42, 0.0, 5e-41],
    [1e-39, 2e-39, 3e-44, -5e-40],    # every column stored
], dtype=np.float32)
