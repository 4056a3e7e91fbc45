"""What every CUDA strategy shares (:mod:`.strategies`, :mod:`.dense_strategies`): one tile's
work (:class:`Job`), a strategy's three callables (:class:`Strategy`) and the cost model's
rates."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import cache
from .kept import Kept
from .operands import DevCSR

# Rates of the cost model (per second), fitted to H100 runs (docs/benchmarks.md); the sorted
# union's refitted on an H200 (benchmarks/strategy_profile.py, 2,048 query rows: 27.6, 5.7,
# 13.1, 57.2 ms on the 283K power law, SEC names, Newsgroups, 66K x 26K; gather 1,578, 56,
# 81, 643 ms; the old rates sent the last to gather at 11x the sorted union's time).
RATES = {"gather_fixed": 3.5e-4, "gather_pairs": 7.8e11, "gather_rows": 3.2e9,
         "scatter_fixed": 9e-4, "scatter_pairs": 3.5e11, "scatter_cells": 4e10,
         "dense_fixed": 2e-4, "gemm_flops": 3.5e13, "bytes": 1.5e12,
         "sorted_fixed": 1.5e-3, "sort": 1e10, "sorted_pairs": 3e11, "sorted_cells": 3.3e11}


@dataclass
class Job:
    """One tile's work: the generated plan, its operands and buffers."""

    gen: object
    left: DevCSR
    right: DevCSR
    K: int
    dt: np.dtype
    at: np.dtype
    itype_c: str
    rows_per_block: int | None = None
    colbuf: object = None
    rowbuf: object = None
    # κ(w) of the weighted steps (codegen.Generated.weights), NW × K in the accumulator
    # type, read by the gather kernel at each column; None for an unweighted plan
    wts: object = None
    # the memos of the left and right operands when the tile reads them whole (None
    # otherwise): a strategy may keep a per-operand form there (dense: the densified rows)
    memos: tuple = (None, None)
    # forms of the tile's operand slices kept for the rest of the call (:class:`Kept`), and
    # the tile's (left rows, right rows) ranges that key them
    kept: Kept | None = None
    slices: tuple = ((0, 0), (0, 0))
    # a diagonal tile of a self-join under a metric proven symmetric (left and right the
    # same rows): a strategy with ``upper`` computes the cells on and above the diagonal only
    upper: bool = False

    @property
    def n_left(self) -> int:
        return self.left.shape[0]

    @property
    def n_right(self) -> int:
        return self.right.shape[0]


@dataclass(frozen=True)
class Strategy:
    name: str
    kernels: Callable  # (job) -> tuple of kernel names
    launch: Callable  # (mod, job) -> the tile's values (n_left × n_right, dt)
    estimate: Callable  # (job) -> seconds, or None when it cannot run the job
    # honours Job.upper (the cells below the diagonal left for gb_mirror_lower)
    upper: bool = False


def _device_attr(name: str, default: int) -> int:
    import cupy
    return int(cache.attributes(cupy.cuda.Device().id).get(name, default))
