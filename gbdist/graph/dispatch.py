"""Which :class:`~gbdist.backends.base.GraphKernels` run an operation.

``backend="auto"``: device data → ``CudaGraphKernels`` (``gbdist.backends.cuda.graph``);
host data → ``CompiledGraphKernels`` (``gbdist.backends.compiled.graph``) when it
imports (Numba present), else the NumPy reference. ``"cpu"`` is the best host set
(compiled, else reference); ``"compiled"``, ``"reference"`` and ``"cuda"`` force one
(a missing one is a BackendError). Kernel sets are constructed once, with no arguments,
and imported only when first used (importing gbdist stays cheap).
"""
from __future__ import annotations

import importlib

from ..errors import BackendError, ParameterError

_SETS = {
    "reference": ("gbdist.backends.graph_reference", "ReferenceGraphKernels"),
    "compiled": ("gbdist.backends.compiled.graph", "CompiledGraphKernels"),
    "cuda": ("gbdist.backends.cuda.graph", "CudaGraphKernels"),
}
BACKENDS = ("auto", "cpu", "compiled", "reference", "cuda")
_made: dict = {}
_failed: dict = {}


def _load(name: str):
    if name in _made:
        return _made[name]
    if name in _failed:
        raise _failed[name]
    module, cls = _SETS[name]
    try:
        kernels = getattr(importlib.import_module(module), cls)()
    except Exception as e:  # noqa: BLE001 - missing module, Numba/CuPy absent, no device
        err = BackendError(f"the {name!r} graph kernels are not available",
                           got=f"{type(e).__name__}: {e}",
                           hint="backend='reference' always works on host data")
        _failed[name] = err
        raise err from e
    _made[name] = kernels
    return kernels


def available(name: str) -> bool:
    """Whether the kernel set ``name`` ("reference", "compiled", "cuda") loads here."""
    try:
        _load(name)
    except BackendError:
        return False
    return True


def get_kernels(backend: str = "auto", on_device: bool = False):
    """The kernel set for data on the host or the device."""
    if backend not in BACKENDS:
        raise ParameterError("unknown graph backend", got=repr(backend),
                             expected=" | ".join(map(repr, BACKENDS)))
    if on_device:
        if backend in ("auto", "cuda"):
            return _load("cuda")
        raise BackendError(f"backend={backend!r} runs on host data, but the operands live on "
                           "the device", hint="use .to_host() first, or backend='auto'")
    if backend == "cuda":
        raise BackendError("backend='cuda' needs device operands",
                           hint="move them with .to_device() (CuPy)")
    if backend in ("auto", "cpu"):
        return _load("compiled") if available("compiled") else _load("reference")
    return _load(backend)
