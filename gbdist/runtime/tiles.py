"""The one tile loop: every backend, pairwise results and neighbour searches alike.

:func:`tiles` cuts the output grid by the memory model (:mod:`gbdist.runtime.memory`)
into tiles, column tiles the outer loop (in increasing order), row blocks the inner
one, and yields each tile's values from ``backend.run_tile`` after the direct-form
repair (:class:`gbdist.runtime.direct.Repair`). A tile whose allocation fails
(CuPy's OutOfMemoryError, MemoryError) is split in two by rows and retried, down to a
single row: the tile shrinks instead of the run failing, with the same result.
"""
from __future__ import annotations

import functools
from typing import Iterator

import numpy as np

from ..backends.base import Tile
from .direct import Repair
from .memory import allocate_result, tile_shape


def select_columns(backend, D, k: int, offset: int, xp):
    """Each column's k best of tile D (``select_k`` of its transpose, rows + offset as
    indices): the backend's ``select_k_columns`` where it has one (the CUDA backend's
    transposes D by its own kernel), else a transposed copy of D through ``select_k``."""
    fn = getattr(backend, "select_k_columns", None)
    if fn is not None:
        return fn(D, k, offset)
    return backend.select_k(xp.ascontiguousarray(D.T), k, offset)


def takes_upper(backend) -> bool:
    """Whether ``backend.run_tile`` computes diagonal tiles on and above the diagonal: it
    says so (``upper_tiles``) and its ``run_tile`` (a subclass may override it) takes
    ``upper``."""
    if not getattr(backend, "upper_tiles", False):
        return False
    return _takes_upper(type(backend))


@functools.lru_cache(maxsize=None)
def _takes_upper(kind) -> bool:
    import inspect
    try:
        return "upper" in inspect.signature(kind.run_tile).parameters
    except (TypeError, ValueError):
        return False


def run_shrinking(backend, prepared, r0: int, r1: int, c0: int, c1: int,
                  upper: bool = False) -> Tile:
    """``backend.run_tile`` on rows r0:r1, split in halves (recursively) on out-of-memory.
    ``upper``: the tile is a diagonal one (r0:r1 == c0:c1) of a self-join under a metric
    proven symmetric, which a backend with ``upper_tiles`` may compute on and above its
    diagonal only and mirror; the halves of a split tile are computed whole."""
    try:
        if upper and (r0, r1) == (c0, c1) and takes_upper(backend):
            return backend.run_tile(prepared, r0, r1, c0, c1, upper=True)
        return backend.run_tile(prepared, r0, r1, c0, c1)
    except Exception as e:  # noqa: BLE001 — re-raised unless it is out-of-memory
        if not backend.is_out_of_memory(e) or r1 - r0 <= 1:
            raise
    backend.release()  # outside the except block: the failed tile's memory is released
    mid = (r0 + r1) // 2
    a = run_shrinking(backend, prepared, r0, mid, c0, c1)
    b = run_shrinking(backend, prepared, mid, r1, c0, c1)
    xp = backend.xp
    suspect = None
    if a.suspect is not None or b.suspect is not None:
        import numpy as np
        sa = a.suspect if a.suspect is not None else np.zeros(a.values.shape, dtype=bool)
        sb = b.suspect if b.suspect is not None else np.zeros(b.values.shape, dtype=bool)
        suspect = np.concatenate([sa, sb], axis=0)
    return Tile(xp.concatenate([a.values, b.values], axis=0), suspect)


def tiles(backend, prepared, bound, budget: int | None, full_width: bool = False,
          repair: Repair | None = None, select: bool = False
          ) -> Iterator[tuple[int, int, int, int, object]]:
    """Yield ``(r0, r1, c0, c1, values)`` of every output tile (``backend.xp`` arrays,
    repaired). ``full_width`` keeps whole rows (pairwise results, chunked distances);
    ``select``: a search selects from each tile (its temporaries count)."""
    rows, width = tile_shape(backend, bound, budget, full_width, select)
    repair = repair if repair is not None else Repair(bound, budget)
    m, n = bound.m, bound.n
    for c0 in range(0, max(n, 1), width):
        c1 = min(n, c0 + width)
        for r0 in range(0, max(m, 1), rows):
            r1 = min(m, r0 + rows)
            tile = run_shrinking(backend, prepared, r0, r1, c0, c1)
            yield r0, r1, c0, c1, repair(tile, r0, r1, c0, c1)


def evaluate(be, prepared, b, budget: int | None):
    """The whole result of a prepared plan (``be.xp`` array, the bound's dtype)."""
    kind = b.plan.output_kind
    xp = be.xp
    if kind != "matrix":
        values = run_shrinking(be, prepared, 0, b.m, 0, b.n).values
        if kind == "scalar" or getattr(values, "ndim", 0) == 0:
            return b.dtype.type(values) if xp is np else values.astype(b.dtype)
        return values.astype(b.dtype, copy=False)
    allocate_result((b.m, b.n), b.dtype, xp, check_only=True)  # refused before any work
    out = None
    for r0, r1, c0, c1, values in tiles(be, prepared, b, budget, full_width=True):
        if (r0, r1, c0, c1) == (0, b.m, 0, b.n):
            return values.astype(b.dtype, copy=False)  # one tile: no copy
        if out is None:
            out = allocate_result((b.m, b.n), b.dtype, xp)
        out[r0:r1, c0:c1] = values
    return out
