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
    "float_split": whether a product evaluated f in float (compiler/plan.float_split),
    "accumulate": the accumulator type ("float32" or "float64")}``."""
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
        LAST_RUN.pop("accumulate", None)
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
        self._raw, self._mapping, self._fns = raw, mapping, {}

    def get_function(self, name: str):
        """The kernel ``name`` (one RawKernel a name, kept: CuPy makes a new one a call, ~3 µs
        of host time each, a dozen a small graph product)."""
        fn = self._fns.get(name)
        if fn is None:
            fn = self._fns[name] = self._raw.get_function(self._mapping.get(name, name))
        return fn


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
            if where is not None and "CUPY_CACHE_DIR" not in os.environ:
                try:  # CuPy's own kernels (cuSPARSE glue, reductions) cached there too
                    where.mkdir(parents=True, exist_ok=True)
                    os.environ["CUPY_CACHE_DIR"] = str(where)
                except OSError:
                    pass  # not writable: CuPy keeps its default, gbdist's modules fall back
            t0 = time.perf_counter()
            try:
                mod = _load(source, names, cached=True)
            except cupy.cuda.driver.CUDADriverError:  # a cached binary the driver refuses
                mod = _load(source, names, cached=False)
            COMPILE_LOG.append((key, time.perf_counter() - t0))
            MODULES[full] = mod
    return mod


def _load(source: str, names: tuple[str, ...], cached: bool) -> Module:
    import cupy
    from cupy.cuda import compiler
    if not hasattr(compiler, "compile_using_nvrtc"):  # a CuPy without it: its own path
        _warn_flush()
        mod = Module(cupy.RawModule(code=source, options=OPTIONS, name_expressions=names), {})
    else:
        path, mapping = _binary(source, names, cached)
        mod = Module(cupy.RawModule(path=str(path)), mapping)
    for n in names:
        mod.get_function(n)
    return mod


@functools.lru_cache(maxsize=1)
def _warn_flush() -> None:
    import warnings
    warnings.warn("this CuPy has no cupy.cuda.compiler.compile_using_nvrtc: gbdist's kernels are "
                  "compiled through RawModule, which flushes float32 subnormal inputs to 0",
                  RuntimeWarning, stacklevel=4)


def _binary(source: str, names: tuple[str, ...], cached: bool = True):
    """(path of the compiled binary, {name expression: lowered name}).

    Read from gbdist's cache folder when an earlier process compiled the same source
    with the same options, for the same architecture, NVRTC build and CuPy, and the
    file is whole (its size and SHA-256 are in the entry's record: the driver may crash
    on a damaged binary rather than refuse it); compiled otherwise. Files are written
    whole, synced and renamed into place, so a concurrent process reads an old file or
    a new one, never half of one. A folder that cannot be written falls back to one of
    this process's own."""
    import cupy
    from cupy.cuda import compiler
    stamp = (source, OPTIONS, tuple(names), cupy.cuda.Device().compute_capability,
             cupy.cuda.nvrtc.getVersion(), _nvrtc_library(), _payload_kind(compiler),
             cupy.__version__)
    digest = hashlib.sha256(repr(stamp).encode()).hexdigest()[:40]
    folder = cache_dir("cuda") or _scratch()
    if cached:
        hit = _read(folder, digest, names)
        if hit is not None:
            return hit
    binary, lowered = compiler.compile_using_nvrtc(source, OPTIONS, name_expressions=list(names))
    binary = binary if isinstance(binary, bytes) else binary.encode()
    mapping = {n: lowered[n] for n in names} if names else {}
    record = json.dumps({"names": mapping, "size": len(binary),
                         "sha256": hashlib.sha256(binary).hexdigest()}).encode()
    for where in (folder, _scratch()):
        try:
            where.mkdir(parents=True, exist_ok=True)
            _write(where / f"{digest}.bin", binary)
            _write(where / f"{digest}.json", record)  # last: it vouches for the binary
            return where / f"{digest}.bin", mapping
        except OSError:
            continue
    raise OSError(f"cannot write a compiled CUDA module to {folder} or {_scratch()}")


def _read(folder, digest: str, names):
    """The cached (path, mapping) under ``digest`` if its record matches and the binary is
    whole, else None."""
    path = folder / f"{digest}.bin"
    try:
        record = json.loads((folder / f"{digest}.json").read_text())
        data = path.read_bytes()
    except (OSError, ValueError):
        return None
    if (not isinstance(record, dict) or set(record.get("names", ())) != set(names)
            or record.get("size") != len(data)
            or record.get("sha256") != hashlib.sha256(data).hexdigest()):
        return None
    return path, record["names"]


def _write(path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@functools.lru_cache(maxsize=1)
def _nvrtc_library() -> tuple:
    """(path, size, mtime) of the NVRTC library this process loaded (Linux), or (): its
    getVersion() is only major.minor, and a patch release compiles differently."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "libnvrtc" in line and "/" in line}
    except OSError:
        return ()
    out = []
    for lib in sorted(libs):
        try:
            st = os.stat(lib)
        except OSError:
            continue
        out.append((lib, st.st_size, int(st.st_mtime)))
    return tuple(out)


def _payload_kind(compiler) -> tuple:
    """CuPy's choice of cubin or PTX (CUPY_COMPILE_WITH_PTX, the architecture clamp)."""
    choose = getattr(compiler, "_get_arch_for_options_for_nvrtc", None)
    try:
        return tuple(choose()) if choose is not None else ()
    except Exception:  # noqa: BLE001 - a private helper: its absence must not stop compiling
        return ()


@functools.lru_cache(maxsize=1)
def _scratch():
    """A folder for this process's binaries when gbdist's cache is off or unwritable."""
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
