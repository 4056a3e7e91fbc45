"""Which :class:`~gbdist.backends.base.GraphKernels` run an operation.

``backend="auto"``: device data → ``CudaGraphKernels`` (``gbdist.backends.cuda.graph``);
host data → ``CompiledGraphKernels`` (``gbdist.backends.compiled.graph``) when it
imports (Numba present), else the NumPy reference — except that a product on host data
big enough for the GPU to win, operands moved there and the result back included, runs
on the GPU when one is present (:func:`device_pays`, the crossover measured by
``benchmarks/graph_crossover.py, retired: docs/benchmarks.md``). ``"cpu"`` is the best host set (compiled, else
reference); ``"compiled"``, ``"reference"`` and ``"cuda"`` force one (a missing one is a
BackendError). Kernel sets are constructed once, with no arguments, and imported only
when first used (importing gbdist stays cheap).
"""
from __future__ import annotations

import importlib
import os

from ..errors import BackendError, ParameterError

_SETS = {
    "reference": ("gbdist.backends.graph_reference_kernels", "ReferenceGraphKernels"),
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


SMALL_WORK = 512
"""Host work (stored entries of the matrix a product or reduction reads) below which
``backend="auto"`` / ``"cpu"`` runs the NumPy reference kernels instead of the compiled
ones: a graph this small needs no Numba (its import and kernel loads are most of a first
call), and the reference is the definition the compiled kernels are tested against. The
choice depends on the size alone, so a given input always takes the same path."""

_CHOSEN: dict = {}  # (backend, on_device, small) → the name of the set chosen


def get_kernels(backend: str = "auto", on_device: bool = False, work=None):
    """The kernel set for data on the host or the device; ``work``: the stored entries the
    call reads (:data:`SMALL_WORK`), None when unknown."""
    small = work is not None and work < SMALL_WORK and not on_device
    key = (backend, on_device, small)
    name = _CHOSEN.get(key)
    if name is not None:
        kernels = _made.get(name)
        if kernels is not None:
            return kernels
    name = _choose(backend, on_device, small)
    _CHOSEN[key] = name
    return _load(name)


def _choose(backend, on_device, small) -> str:
    if backend not in BACKENDS:
        raise ParameterError("unknown graph backend", got=repr(backend),
                             expected=" | ".join(map(repr, BACKENDS)))
    if on_device:
        if backend in ("auto", "cuda"):
            _load("cuda")
            return "cuda"
        raise BackendError(f"backend={backend!r} runs on host data, but the operands live on "
                           "the device", got="operands on the GPU (CuPy arrays)",
                           hint="use .to_host() first, or backend='auto'")
    if backend == "cuda":
        raise BackendError("backend='cuda' needs device operands", got="operands in host memory",
                           hint="move them with .to_device() (CuPy), or backend='auto'")
    if backend in ("auto", "cpu"):
        return "reference" if small or not available("compiled") else "compiled"
    _load(backend)
    return backend


DEVICE_FROM = {"mxv": 500_000, "mxm": 200_000, "mxm-masked": 300_000}
"""Work from which ``backend="auto"`` runs a product on host data on the GPU: stored
entries of the matrix (``mxv``/``vxm``), of both operands (a masked ``mxm``), or products
(``Σ deg_B`` over A's entries: an unmasked or complement-masked ``mxm``). Measured on the
H100 machine against the compiled kernels on 2 threads, moves included
(docs/benchmarks.md, "CPU or GPU for host data"): SpMV 0.29 ms CPU vs 0.72 ms GPU at 10⁵
entries, 1.8 vs 0.8 ms at 1.1·10⁶; masked products 5.6 vs 8.4 ms at 10⁵, 92 vs 21 ms at
1.1·10⁶; unmasked A·A already 7.0 vs 1.7 ms at 10⁴ entries (about 3·10⁵ products)."""


def device_pays(kind: str, work) -> bool:
    """Whether a product of ``work`` (see :data:`DEVICE_FROM`; a number, or a function that
    computes it, called only when a device could take the product) on host data should
    run on the GPU under ``backend="auto"``: not turned off with
    ``GBDIST_GRAPH_AUTO_DEVICE=0``, a CUDA device present, and big enough."""
    if not _device_present():  # asked once per process: the common answer costs nothing
        return False
    if os.environ.get("GBDIST_GRAPH_AUTO_DEVICE", "1").strip().lower() in ("0", "off", "no", "false"):
        return False
    return (work() if callable(work) else work) >= DEVICE_FROM[kind]


_PRESENT: list = []


def _device_present() -> bool:
    """A CUDA device with the graph kernels loaded, asked once per process (without CuPy
    an import is attempted on every ask otherwise)."""
    if not _PRESENT:
        from ..backends.cuda import available as cuda_present
        _PRESENT.append(cuda_present() and available("cuda"))
    return _PRESENT[0]
