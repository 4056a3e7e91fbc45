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
import re

import numpy as np

from ..errors import ParameterError, ResultTooLargeError
from ..inputs import physical_memory

MIB = 2**20
DEFAULT_WORKING_MEMORY = 512 * MIB
TOO_LARGE_HINT = ("compute it in pieces: gbdist.pairwise_distances_chunked(X, Y, ...) yields row "
                  "blocks within working_memory, gbdist.knn(X, Y, k) keeps only the nearest "
                  "neighbours; or pass fewer rows")


SIZE_UNITS = {"b": 1, "k": 2**10, "kib": 2**10, "m": 2**20, "mib": 2**20, "g": 2**30,
              "gib": 2**30, "t": 2**40, "tib": 2**40,
              "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
"""Size suffixes, case-insensitive: ``B``; ``KiB MiB GiB TiB`` (and the bare letters ``K M G T``)
are powers of 1024, ``kB MB GB TB`` powers of 1000, as in IEC 80000-13."""
MAX_WORKING_MEMORY = 2**50  # 1 PiB: anything larger is a typo
WORKING_MEMORY_EXPECTED = ("a positive number of MiB (as scikit-learn counts it) or a size with a "
                           "unit: 512MiB, 2GB, 1.5GiB, 300kB")
WORKING_MEMORY_HINT = ("e.g. working_memory=256 (MiB) or working_memory=\"1.5GiB\"; units: B, "
                       "KiB/MiB/GiB/TiB (1024s; K/M/G/T alone too), kB/MB/GB/TB (1000s)")
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?\s*([a-zA-Z]*)\s*")


def parse_size(value, unit: int = MIB, name: str = "working_memory") -> int | None:
    """A memory size as bytes: a number counts ``unit`` bytes (MiB for every
    ``working_memory``, as scikit-learn counts it), a string may carry a unit
    (``"512MiB"``, ``"2GB"``, ``"1.5GiB"``, ``"300kB"``, ``"4096B"``; a bare number in
    a string counts ``unit`` too). None stays None (the backend's default). Fractions
    are honoured (``working_memory=1500 / 2**20`` is 1500 bytes); a size under one byte,
    zero, negative, NaN, infinite or over 1 PiB is a :class:`ParameterError`."""
    if value is None:
        return None
    nbytes = None
    if isinstance(value, str):
        m = _SIZE.fullmatch(value)
        if m and (m.group(3).lower() in SIZE_UNITS or not m.group(3)):
            scale = SIZE_UNITS[m.group(3).lower()] if m.group(3) else unit
            nbytes = float(m.group(1)) * 10.0 ** int(m.group(2) or 0) * scale
    elif not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real):
        nbytes = float(value) * unit
    if nbytes is None or not np.isfinite(nbytes) or not nbytes >= 1 or nbytes > MAX_WORKING_MEMORY:
        why = ("is too large (at most 1 PiB)" if nbytes is not None and nbytes > MAX_WORKING_MEMORY
               else "must be at least one byte" if nbytes is not None and np.isfinite(nbytes)
               else "is not a memory size")
        raise ParameterError(f"{name} {why}", expected=WORKING_MEMORY_EXPECTED, got=repr(value),
                             hint=WORKING_MEMORY_HINT.replace("working_memory", name))
    return int(nbytes)


def working_memory_bytes(working_memory) -> int | None:
    """A user's ``working_memory`` (MiB, or a string with a unit: :func:`parse_size`) as
    bytes; None stays None (the backend's default)."""
    return parse_size(working_memory)


def check_working_memory(nbytes) -> int | None:
    """An internal budget already in bytes (what :func:`working_memory_bytes` returns):
    None (the default) or a positive number, checked, as an int. Users' values go
    through :func:`working_memory_bytes` first: this one counts bytes."""
    return parse_size(nbytes, unit=1, name="the budget in bytes")


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
