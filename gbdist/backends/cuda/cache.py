"""Every process-wide cache of the CUDA backend, in one place.

* generated sources, by the plan's structural key, dtype and accumulator type;
* compiled modules — ONE cache for the plan kernels, the top-k kernels
  (:mod:`~gbdist.backends.cuda.topk`) and the check kernels
  (:mod:`~gbdist.backends.cuda.rows`), keyed by (source key, kernel names, device);
* strategy choices (a performance decision, reused for same-shaped inputs);
* the device's attributes;
* what the latest run did (:func:`last_run`) and what was compiled (:func:`compile_log`).

:func:`clear` empties them (``gbdist.clear_caches()`` calls it).
"""
from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import tempfile
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


# IEEE float arithmetic: subnormals kept, correctly rounded division and square root
# (gbdist/algebra/rounding.py bounds float splits with them). CuPy's RawModule and
# RawKernel append -ftz=true after the caller's options (cupy/cupy#9576), and the later
# flag wins: float32 subnormal inputs were read as 0 (distances of 0 between rows of
# size 1e-42) until 2026-11-24. So NVRTC is called through compile_using_nvrtc, which
# passes these options as given, and the binaries are cached here (_binary).
OPTIONS = ("-std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true")


class Module:
    """A compiled module: ``get_function(name expression)`` returns CuPy's RawKernel of
    that kernel, as ``RawModule(name_expressions=...)`` would."""

    def __init__(self, raw, mapping: dict):
        self._raw, self._mapping = raw, mapping

    def get_function(self, name: str):
        return self._raw.get_function(self._mapping.get(name, name))


def module(key, source: str, names: tuple[str, ...]) -> Module:
    """Compile ``source`` (once per process, key, kernel names and device) with
    :data:`OPTIONS` and return its :class:`Module`, every kernel of ``names`` loaded (not
    inside a timed launch)."""
    import cupy
    full = (key, names, cupy.cuda.Device().id)
    mod = MODULES.get(full)
    if mod is not None:
        return mod
    with _LOCK:
        mod = MODULES.get(full)
        if mod is None:
            where = cache_dir("cuda")  # gbdist's cache folder (None: caching off)
            if where is not None:  # CuPy's own kernels (cuSPARSE glue, reductions) cached there too
                os.environ.setdefault("CUPY_CACHE_DIR", str(where))
            t0 = time.perf_counter()
            path, mapping = _binary(source, names)
            mod = Module(cupy.RawModule(path=str(path)), mapping)
            for n in names:
                mod.get_function(n)
            COMPILE_LOG.append((key, time.perf_counter() - t0))
            MODULES[full] = mod
    return mod


def _binary(source: str, names: tuple[str, ...]):
    """(path of the compiled binary, {name expression: lowered name}): read from gbdist's
    cache folder when an earlier process compiled the same source with the same options
    for the same architecture, NVRTC and CuPy; compiled otherwise. Files are written
    whole and renamed into place, so a concurrent process reads an old file or a new
    one, never half of one."""
    import cupy
    from cupy.cuda import compiler
    stamp = (source, OPTIONS, tuple(names), cupy.cuda.Device().compute_capability,
             cupy.cuda.nvrtc.getVersion(), cupy.__version__)
    digest = hashlib.sha256(repr(stamp).encode()).hexdigest()[:40]
    folder = cache_dir("cuda") or _scratch()
    folder.mkdir(parents=True, exist_ok=True)
    path, names_file = folder / f"{digest}.cubin", folder / f"{digest}.names.json"
    try:
        mapping = json.loads(names_file.read_text())
        if path.is_file() and set(mapping) == set(names):
            return path, mapping
    except (OSError, ValueError):
        pass
    binary, lowered = compiler.compile_using_nvrtc(source, OPTIONS, name_expressions=list(names))
    mapping = {n: lowered[n] for n in names} if names else {}
    _write(path, binary if isinstance(binary, bytes) else binary.encode())
    _write(names_file, json.dumps(mapping).encode())
    return path, mapping


def _write(path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


@functools.lru_cache(maxsize=1)
def _scratch():
    """A folder for this process's binaries when gbdist's cache is off."""
    from pathlib import Path
    folder = Path(tempfile.mkdtemp(prefix="gbdist-cuda-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.lru_cache(maxsize=None)
def attributes(device_id: int) -> dict:
    """The device's attributes, read once per process (``Device.attributes`` queries every
    attribute from the driver on each access)."""
    import cupy
    return dict(cupy.cuda.Device(device_id).attributes)
