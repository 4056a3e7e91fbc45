"""The runtime: from a plan and the user's arrays to a result, on any backend.

Stages, one module each (imports run downward only; nothing in gbdist.backends imports
from here):

* :mod:`~gbdist.runtime.bind` — inputs checked and made canonical ONCE for every backend
  (formats, dtype, index width, domains, finiteness, conditioned / normalised rows);
  CuPy inputs stay on the device when the backend computes there;
* :mod:`~gbdist.runtime.memory` — ONE memory model (``working_memory``, tile shapes)
  for host and device, pairwise results and searches alike;
* :mod:`~gbdist.runtime.tiles` — the one tile loop over ``backend.run_tile``, with
  shrink-on-out-of-memory;
* :mod:`~gbdist.runtime.direct` — the direct form that repairs entries a rewrite cannot
  get right (non-finite rows when allowed, overflow);
* :mod:`~gbdist.runtime.invariance` — numeric checks that need a CPU run (row
  invariances for conditioning, the check of a proven d(a, a));
* :mod:`~gbdist.runtime.core` — dispatch: :func:`get_backend`, :func:`bind`, :func:`run`.

Backends are driven only through :class:`gbdist.backends.base.Backend`. See docs/inputs.md.
"""
from ..inputs import is_cupy
from .bind import result_dtype, vector_to_row
from .prepared import to_csr
from .core import STRATEGIES, bind, evaluate, get_backend, run
from .invariance import run_reference
from .direct import Repair
from .memory import (
    DEFAULT_WORKING_MEMORY, MIB, TOO_LARGE_HINT, allocate_result, budget_of, cell_cost,
    check_working_memory, grid_shape, parse_size, symmetric_side, tile_shape, working_memory_bytes)
from .tiles import run_shrinking, select_columns, takes_upper, tiles


_CLEARERS: list = []


def register_cache(clear) -> None:
    """Have :func:`clear_caches` call ``clear()`` too (for caches of the stages above the
    runtime: compiled metric programs, symmetry proofs)."""
    if clear not in _CLEARERS:
        _CLEARERS.append(clear)


def clear_caches() -> None:
    """Empty every process-wide cache of compiled or derived things: generated CUDA
    sources, compiled modules and strategy choices (when CuPy is present), proven
    d(a, a) values and row invariances, small operands kept for reuse
    (:mod:`gbdist.runtime.prepared`), and what the stages above registered
    (:func:`register_cache`: compiled metric programs, symmetry proofs). The on-disk
    analysis cache (gbdist.compiler.cache) is kept. Public as ``gbdist.clear_caches()``."""
    import sys
    from .. import inputs
    from ..compiler import exact, ir
    from . import invariance, prepared
    # modules not yet imported hold nothing to clear: not imported here (sympy)
    proofs = sys.modules.get("gbdist.algebra.proofs")
    analysis = sys.modules.get("gbdist.compiler.analysis")
    plan = sys.modules.get("gbdist.compiler.plan")
    cached = [exact.operand_pair, exact.normalised_names, invariance.conditioned_names]
    cached += [m for m in (proofs and proofs._check, analysis and analysis.analyze,
                           plan and plan.cached_plan) if m]
    for c in cached:
        c.cache_clear()
    prepared.clear()
    for memo in (exact._CACHE, invariance._INV_CACHE, ir._SYMBOLS, inputs._SIDES):
        memo.clear()
    for clear in _CLEARERS:
        clear()
    cuda_cache = sys.modules.get("gbdist.backends.cuda.cache")
    if cuda_cache is not None:
        cuda_cache.clear()


__all__ = ["is_cupy", "result_dtype", "to_csr", "vector_to_row", "STRATEGIES", "bind", "evaluate",
           "get_backend", "run", "run_reference", "DEFAULT_WORKING_MEMORY", "MIB",
           "TOO_LARGE_HINT", "allocate_result", "budget_of", "check_working_memory",
           "symmetric_side", "tile_shape", "grid_shape", "cell_cost", "working_memory_bytes", "parse_size", "run_shrinking", "select_columns", "takes_upper", "tiles",
           "clear_caches", "register_cache", "Repair"]
