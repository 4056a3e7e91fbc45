"""One memory model for every backend: ``working_memory`` and the shape of output tiles.

A tile of r × c output cells costs ``r · c · backend.cell_bytes(plan, dtype)`` (its
values, the backend's per-cell temporaries; plus ``backend.select_bytes`` when a
search selects from it) plus
``r · backend.row_bytes(bound)`` (per left row, e.g. a two-pass union's dense rows).
Tiles are sized so this fits the budget: the user's ``working_memory``, or the
backend's default (:meth:`~gbdist.backends.base.Backend.default_budget`). The same
rules hold for host and device, for pairwise results and for searches.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import InputError, ParameterError, ResultTooLargeError
from ..inputs import physical_memory

MIB = 2**20
DEFAULT_WORKING_MEMORY = 512 * MIB
TOO_LARGE_HINT = ("compute it in pieces: gbdist.pairwise_distances_chunked(X, Y, ...) yields row "
                  "blocks within working_memory, gbdist.knn(X, Y, k) keeps only the nearest "
                  "neighbours; or pass fewer rows")


def working_memory_bytes(working_memory) -> int | None:
    """A ``working_memory`` given in MiB (scikit-learn's unit) as bytes; None stays None
    (the backend's default). Any positive number is honoured, fractions too
    (``working_memory=1500 / 2**20`` is 1500 bytes)."""
    if working_memory is None:
        return None
    if isinstance(working_memory, (bool, np.bool_)) or not isinstance(working_memory, numbers.Real) \
            or not working_memory > 0 or not np.isfinite(working_memory):
        raise ParameterError("working_memory must be a positive number of MiB",
                             got=repr(working_memory),
                             hint="e.g. working_memory=256 (MiB, as scikit-learn counts it)")
    return max(1, int(working_memory * MIB))


def check_working_memory(working_memory) -> int | None:
    """``working_memory`` in bytes: None (the default) or a positive integer."""
    if working_memory is None:
        return None
    if isinstance(working_memory, (bool, np.bool_)) or not isinstance(working_memory, numbers.Real) \
            or not working_memory >= 1 or working_memory != working_memory:
        raise InputError("working_memory must be a positive number of bytes", got=repr(working_memory),
                         hint="e.g. working_memory=256 * 2**20 (a number, not a string like '16M')")
    if isinstance(working_memory, numbers.Integral):
        return int(working_memory)
    if not np.isfinite(working_memory):
        raise InputError("working_memory must be a finite number of bytes", got=repr(working_memory))
    return int(working_memory)


def budget_of(backend, nbytes, result: bool = False) -> int | None:
    """The budget in bytes: ``nbytes`` when given (checked), else the backend's default;
    None (with ``result``, a materialised result) means no bound: one tile."""
    nbytes = check_working_memory(nbytes)
    return backend.default_budget(result) if nbytes is None else nbytes


def tile_shape(backend, bound, budget: int | None, full_width: bool = False,
               select: bool = False) -> tuple[int, int]:
    """(rows, columns) of the output tiles of a bound plan (:func:`grid_shape`)."""
    return grid_shape(backend, bound.plan, bound.m, bound.n, bound.dtype, budget, full_width,
                      backend.row_bytes(bound), bound.right_sliceable, select)


def cell_cost(backend, plan, dtype, select: bool = False) -> int:
    """Bytes per output cell of a tile: the backend's, plus its selection's in a search."""
    return backend.cell_bytes(plan, dtype) + (backend.select_bytes if select else 0)


def grid_shape(backend, plan, m: int, n: int, dtype, budget: int | None, full_width: bool = False,
               per_row: int = 0, sliceable: bool = True, select: bool = False) -> tuple[int, int]:
    """(rows, columns) of the output tiles of an m × n result.

    ``full_width`` (pairwise results) keeps whole rows: as many as fit. Otherwise whole
    index rows when at least min(m, 512) query rows of them fit (long rows keep a
    selection busy), else a near-square tile of the budget's cells. Columns are never
    tiled when the right operands cannot be sliced (``sliceable`` false: a vector, a
    transposed operand). ``budget`` None, or a result that is not a matrix: one tile.
    ``select``: the tiles feed a selection (kNN, radius), whose temporaries count too."""
    m, n = max(int(m), 1), max(int(n), 1)
    if budget is None or plan.output_kind != "matrix":
        return m, n
    cell = cell_cost(backend, plan, dtype, select)
    if full_width or not sliceable:
        return int(max(1, min(m, budget // (n * cell + per_row)))), n
    cells = max(1, int(budget) // cell)
    if cells >= n * min(m, 512):
        return int(max(1, min(m, budget // (n * cell + per_row)))), n
    rows = int(max(1, min(m, int(np.sqrt(cells)))))
    return rows, int(max(1, min(n, cells // rows)))


def symmetric_side(backend, plan, n: int, budget: int, dtype) -> int:
    """Side of the square tiles of a symmetric self-join: a tile, its transposed copy
    (one value per cell) and the backend's temporaries fit the budget."""
    per = cell_cost(backend, plan, dtype, select=True) + np.dtype(dtype).itemsize
    cells = max(1, int(budget) // per)
    return int(max(1, min(n, int(np.sqrt(cells)))))


SMALL_RESULT = 16 << 20  # bytes


def allocate_result(shape: tuple, dtype, xp=np, check_only: bool = False):
    """``xp.empty(shape, dtype)``, refused with a typed error before allocating when it
    cannot fit in memory (the host's available memory, the GPU's whole memory), and a
    typed error when the allocation fails anyway. ``check_only``: refuse, allocate nothing."""
    dtype = np.dtype(dtype)
    cells = 1
    for d in shape:
        cells *= int(d)
    nbytes = cells * dtype.itemsize
    # a small result is not checked: asking the system costs more than the call's kernel
    limit = None if nbytes <= SMALL_RESULT else physical_memory() if xp is np else _device_total()
    what = " × ".join(str(int(d)) for d in shape)
    if limit is not None and nbytes > limit:
        where = "memory available" if xp is np else "GPU's memory"
        raise ResultTooLargeError(
            f"the result ({what} {dtype.name}) needs {nbytes / 2**30:.1f} GiB, more than the "
            f"{where} ({limit / 2**30:.1f} GiB)", hint=TOO_LARGE_HINT)
    if check_only:
        return None
    try:
        return xp.empty(shape, dtype=dtype)
    except MemoryError:
        raise ResultTooLargeError(f"the result ({what} {dtype.name}, {nbytes / 2**30:.1f} GiB) "
                                  "could not be allocated", hint=TOO_LARGE_HINT) from None


def _device_total() -> int | None:
    try:
        import cupy
        return int(cupy.cuda.runtime.memGetInfo()[1])
    except Exception:  # noqa: BLE001 — no device: nothing to compare with
        return None
