"""Dispatch: a plan and its inputs → one backend (:func:`get_backend`) → bound once
(:func:`bind`) → prepared (``backend.prepare``) → tiles (:func:`gbdist.runtime.tiles.tiles`)
→ the result, on the device the inputs live on."""
from __future__ import annotations

import logging
import os
import sys

import numpy as np

from ..backends.base import Backend
from ..backends.cpu import CPUBackend
from ..errors import BackendError, InputError, ResultTooLargeError
from ..inputs import ensure_all_finite_value
from . import bind as _bind
from .invariance import conditioned_names
from .memory import TOO_LARGE_HINT, budget_of, check_working_memory
from .tiles import evaluate

STRATEGIES = ("auto", "gather", "scatter", "dense", "sorted", "dense_union")


def bind(plan, inputs: dict, drop_zeros: bool = False, dtype=None, ensure_all_finite=True,
         labels: dict | None = None, ensure_non_empty: bool = False, condition: bool = True,
         xp=np):
    """:func:`gbdist.runtime.bind.bind_operands` with the plan's proven row conditioning
    (``condition``; :func:`gbdist.runtime.invariance.conditioned_names`)."""
    conditioning = conditioned_names(plan) if condition else None
    return _bind.bind_operands(plan, inputs, drop_zeros, dtype, ensure_all_finite, labels,
                               ensure_non_empty, conditioning, xp)


_ANNOUNCED = []


def _announce_cpu_fallback(reason: str) -> None:
    """Record once per process, on the ``gbdist`` logger at INFO level, that
    ``backend="auto"`` runs on the CPU and why. Most users have no GPU: the note is not
    printed on every run (a log record at INFO is shown only to those who ask for it). It
    appears where it matters instead: ``gbdist explain``, the demo's header, ``--verbose``
    (:func:`auto_backend_note`)."""
    if not _ANNOUNCED:
        _ANNOUNCED.append(reason)
        logging.getLogger("gbdist").info("%s", _cpu_note(reason))


def _cpu_note(reason: str) -> str:
    return (f"backend='auto' runs on the CPU: {reason}; pass backend='cpu' to choose it, or "
            "install gbdist[cuda] on a machine with an NVIDIA GPU")


def auto_backend_note() -> str:
    """One line on what ``backend="auto"`` runs on in this process, and why."""
    from ..backends.cuda import unavailable_reason
    reason = unavailable_reason()
    return "backend='auto' runs on the GPU (CUDA)" if reason is None else _cpu_note(reason)


CPU_BACKENDS = ("compiled", "numpy")


def _compiled(host):
    """The compiled CPU backend, or a BackendError naming Numba when it is missing."""
    from ..backends.compiled import CompiledCPUBackend, available
    if not available():
        raise BackendError("backend='compiled' needs Numba", got="numba is not installed",
                           hint="pip install 'gbdist[cpu]' (or numba), or backend='cpu'")
    return CompiledCPUBackend(host)


# Start-up: importing Numba and loading a cached kernel take ~0.4 s on 2 cores, more than
# the NumPy backend takes for a small product. The first few small calls of a process
# that has not loaded Numba run on the NumPy backend (the reference: the same results to
# rounding); the compiled backend takes over from the next call, or at once for larger work.
FIRST_CALLS_WORK = 1 << 22  # work (output cells × entries per row) of a "small" call
FIRST_CALLS = 3
_FIRST_CALLS = [0]


def cpu_backend(host, work: int | None = None) -> Backend:
    """What ``backend="cpu"`` (and ``"auto"`` without a GPU) runs on: ``GBDIST_CPU_BACKEND``
    (``compiled`` or ``numpy``); unset, the compiled backend when Numba imports, else the
    NumPy backend (the reference, always there). ``work`` (see :data:`FIRST_CALLS_WORK`):
    the first :data:`FIRST_CALLS` small calls of a process without Numba loaded run on
    the NumPy backend, so that a short script does not wait for Numba."""
    choice = os.environ.get("GBDIST_CPU_BACKEND", "").strip().lower()
    if choice and choice not in CPU_BACKENDS:
        raise InputError("unknown GBDIST_CPU_BACKEND", expected="'compiled' or 'numpy'",
                         got=repr(choice),
                         hint="unset it for the default (compiled when Numba is installed)")
    if choice == "numpy":
        return CPUBackend(host)
    if choice == "compiled":
        return _compiled(host)
    if (work is not None and work <= FIRST_CALLS_WORK and _FIRST_CALLS[0] < FIRST_CALLS
            and "numba" not in sys.modules):
        _FIRST_CALLS[0] += 1
        return CPUBackend(host)
    from ..backends.compiled import available
    return _compiled(host) if available() else CPUBackend(host)


FIRST_CALLS_COLUMNS = 1 << 16  # wider inputs: the compiled backend's memory model


def work_of(inputs: dict) -> int | None:
    """About the work of a product of ``inputs`` (rows × rows × stored entries per row),
    from their shapes and entry counts alone; None when unknown, or when an input is
    wider than :data:`FIRST_CALLS_COLUMNS` (the NumPy backend's temporaries grow with the
    columns)."""
    try:
        sizes = [(int(v.shape[0]), int(getattr(v, "nnz", 0) or v.shape[0] * v.shape[1]))
                 for v in inputs.values()]
        if any(int(v.shape[1]) > FIRST_CALLS_COLUMNS for v in inputs.values()):
            return None
    except (AttributeError, IndexError, TypeError):
        return None
    if not sizes:
        return None
    rows = [r for r, _ in sizes]
    per_row = max(nnz // max(r, 1) for r, nnz in sizes)
    return max(rows) * (rows[0] if len(rows) == 1 else min(rows)) * (1 + per_row)


def get_backend(name, working_memory: int | None = None, work: int | None = None) -> Backend:
    """Resolve ``backend=`` ("auto", "cpu", "compiled", "cuda", or an object implementing
    :class:`gbdist.backends.base.Backend`) to a backend object. "compiled" is the Numba
    backend; "cpu" is the compiled one when Numba imports, else the NumPy one
    (``GBDIST_CPU_BACKEND`` overrides: :func:`cpu_backend`)."""
    if not isinstance(name, str):
        if isinstance(name, Backend):
            return name
        raise InputError("unknown backend",
                         expected="'auto', 'cpu', 'compiled', 'cuda' or a backend object",
                         got=repr(name))
    working_memory = check_working_memory(working_memory)
    # the host backend's chunked temporaries within a tile (triplets, union passes) take
    # half the budget, as its cell_bytes counts them
    host = None if working_memory is None else max(1, working_memory // 2)
    if name == "cpu":
        return cpu_backend(host, work)
    if name == "compiled":
        return _compiled(host)
    if name in ("cuda", "auto"):
        from ..backends.cuda import CUDABackend, unavailable_reason
        reason = unavailable_reason()
        if reason is None:
            return CUDABackend(working_memory)
        if name == "cuda":
            raise BackendError("backend='cuda' needs CuPy and an NVIDIA GPU",
                               got=reason, hint="pip install 'gbdist[cuda]', or backend='cpu'")
        _announce_cpu_fallback(reason)
        return cpu_backend(host, work)
    raise InputError("unknown backend", expected="'auto', 'cpu', 'compiled' or 'cuda'",
                     got=repr(name))


def run(plan, inputs: dict, backend="auto", working_memory: int | None = None,
        drop_zeros: bool = False, dtype=None, strategy: str = "auto", ensure_all_finite=True,
        labels: dict | None = None, ensure_non_empty: bool = False):
    """Execute ``plan`` on ``inputs`` and return the whole result.

    ``working_memory`` (bytes: this internal entry takes what
    :func:`~gbdist.runtime.memory.working_memory_bytes` made of the user's MiB) bounds
    every tile, on every backend; None: the
    backend's default (on the GPU: the whole result as one tile). ``strategy``
    forces a CUDA kernel strategy ("gather", "scatter", "dense", "sorted", "dense_union"); the CPU
    backend accepts "auto" only. ``ensure_all_finite`` (True, False or "allow-nan")
    is scikit-learn's keyword: NaN and ±inf are refused unless allowed; when allowed,
    entries that involve them are computed in the direct form (the formula's IEEE
    value). ``labels`` and ``ensure_non_empty``: see :func:`bind`.
    """
    if strategy not in STRATEGIES:
        raise InputError("unknown strategy", expected=", ".join(STRATEGIES), got=repr(strategy))
    if backend == "auto" and not _bind.device_sums_as_written(plan):
        # a union summed directly (steep ops with plus) that the CUDA pass for it (gather's
        # SKIP_SHARED, codegen.DIRECT_UNION) does not generate (switched off, or a corner
        # f(0, 0) it cannot absorb): the CPU runs it. A weighted step (κ(w) read at each
        # column, compiler/colfactor.py) runs on the CUDA backend
        backend = "cpu"
    ensure_all_finite = ensure_all_finite_value(ensure_all_finite)
    working_memory = check_working_memory(working_memory)
    if dtype is not None:
        _bind.result_dtype({}, dtype)
    be = get_backend(backend, working_memory, work_of(inputs))
    b = bind(plan, inputs, drop_zeros, dtype, ensure_all_finite, labels, ensure_non_empty,
             xp=be.xp)
    prepared = be.prepare(b, strategy)
    try:
        out = evaluate(be, prepared, b, budget_of(be, working_memory, result=True))
    except Exception as e:  # noqa: BLE001 — out-of-memory of a single row, as a typed error
        if not be.is_out_of_memory(e) or isinstance(e, MemoryError):
            raise
        raise ResultTooLargeError("the GPU ran out of memory for this product",
                                  got=str(e).split("\n")[0], hint=TOO_LARGE_HINT) from None
    return out if b.on_device else be.to_host(out)


__all__ = ["bind", "get_backend", "run", "evaluate", "STRATEGIES"]
