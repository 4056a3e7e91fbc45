"""Every process-wide cache of the CUDA backend, in one place.

* generated sources, by the plan's structural key, dtype and accumulator type;
* compiled RawModules — ONE cache for the plan kernels, the top-k kernels
  (:mod:`~gbdist.backends.cuda.topk`) and the check kernels
  (:mod:`~gbdist.backends.cuda.rows`), keyed by (source key, kernel names, device);
* strategy choices (a performance decision, reused for same-shaped inputs);
* the device's attributes;
* what the latest run did (:func:`last_run`) and what was compiled (:func:`compile_log`).

:func:`clear` empties them (``gbdist.clear_caches()`` calls it).
"""
from __future__ import annotations

import functools
import os
import threading
import time

from ...paths import cache_dir

_LOCK = threading.Lock()
GENERATED: dict = {}
MODULES: dict = {}
CHOICES: dict = {}
COMPILE_LOG: list = []  # (key, seconds) of each compilation in this process
LAST_RUN: dict = {"strategy": None}  # the strategy the latest tile in this process used


def last_run() -> dict:
    """A copy of what the latest CUDA tile did: ``{"strategy": name or None,
    "float_split": whether a product evaluated f in float (compiler/plan.float_split)}``."""
    return dict(LAST_RUN)


def compile_log() -> list:
    """(key, seconds) of every compilation in this process."""
    return list(COMPILE_LOG)


def clear() -> None:
    """Forget generated sources, compiled modules, strategy choices and the logs."""
    with _LOCK:
        GENERATED.clear()
        MODULES.clear()
        CHOICES.clear()
        COMPILE_LOG.clear()
        LAST_RUN["strategy"] = None
        LAST_RUN.pop("float_split", None)
    attributes.cache_clear()


def generated(key, make):
    """The generated source under ``key``, made by ``make()`` once."""
    gen = GENERATED.get(key)
    if gen is None:
        gen = GENERATED[key] = make()
    return gen


# IEEE float arithmetic, stated: subnormals kept (a subnormal float32 input was read as 0
# in the float64 path otherwise: distances of 0 between rows of size 1e-42, found
# 2026-11-24), correctly rounded division and square root (gbdist/algebra/rounding.py
# bounds float splits with them).
OPTIONS = ("-std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true")


def module(key, source: str, names: tuple[str, ...]):
    """Compile ``source`` (once per process, key, kernel names and device) and return the
    RawModule with every kernel of ``names`` loaded (not inside a timed launch)."""
    import cupy
    full = (key, names, cupy.cuda.Device().id)
    mod = MODULES.get(full)
    if mod is not None:
        return mod
    with _LOCK:
        mod = MODULES.get(full)
        if mod is None:
            where = cache_dir("cuda")  # gbdist's cache folder (None: caching off, CuPy's own)
            if where is not None:
                os.environ.setdefault("CUPY_CACHE_DIR", str(where))
            t0 = time.perf_counter()
            mod = cupy.RawModule(code=source, options=OPTIONS, name_expressions=names)
            for n in names:
                mod.get_function(n)
            COMPILE_LOG.append((key, time.perf_counter() - t0))
            MODULES[full] = mod
    return mod


@functools.lru_cache(maxsize=None)
def attributes(device_id: int) -> dict:
    """The device's attributes, read once per process (``Device.attributes`` queries every
    attribute from the driver on each access)."""
    import cupy
    return dict(cupy.cuda.Device(device_id).attributes)
