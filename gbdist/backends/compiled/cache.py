"""The on-disk cache of generated Numba modules.

A generated module's source is written to ``<cache>/cpu/gb_<key>.py`` and
imported from there, so that Numba's ``cache=True`` (which keys its compiled
objects by the source file's path and stamp, in ``__pycache__`` beside it) finds
the machine code of an earlier process: a built-in metric's first call in a new
process loads kernels instead of compiling them.

* ``<cache>/cpu`` is ``gbdist.paths.cache_dir("cpu")`` (``$GBDIST_CACHE_DIR/cpu``, else the
  platform's user cache directory). ``GBDIST_CACHE_DIR=off`` and an unwritable directory
  use a temporary directory of this process instead (kernels then compile in every
  process).
* ``key`` = sha256 of the generated source, the text of ``helpers.py`` (whose kernels
  the modules call: Numba's cache keeps them inlined), and the Numba, NumPy, Python and
  gbdist versions (everything that changes the binary).
* Concurrent processes: the source is written to a temporary file in the same
  directory and linked into place only if no file has that name yet
  (``os.link`` fails if it exists; ``os.replace`` where links are not
  supported), so a module file, once there, never changes: its stamp stays
  valid for every process's Numba index.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading

from ... import paths
from ...errors import BackendError
from ...version import __version__ as gbdist_version

_LOCK = threading.Lock()
_MODULES: dict = {}


_PRIVATE: list = []  # this process's temporary directory, when the cache is off


def cache_dir() -> str:
    """The directory generated modules are written to (created if missing):
    ``gbdist.paths.cache_dir("cpu")``, else a temporary directory of this process."""
    path = paths.cache_dir("cpu")
    if path is not None:
        try:
            os.makedirs(path, exist_ok=True)
            if os.access(path, os.W_OK):
                return str(path)
        except OSError:
            pass
    if not _PRIVATE:
        _PRIVATE.append(tempfile.mkdtemp(prefix="gbdist-cpu-"))
    return _PRIVATE[0]


_HELPERS: list = []


def _helpers_source() -> str:
    """The text of ``helpers.py``: the generated modules call its kernels, and Numba's cache
    of a module keeps their machine code inlined, so a change there must change the key."""
    if not _HELPERS:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers.py")
        with open(path, encoding="utf-8") as f:
            _HELPERS.append(f.read())
    return _HELPERS[0]


def module_key(source: str) -> str:
    import numba
    import numpy
    parts = (source, _helpers_source(), numba.__version__, numpy.__version__, sys.version,
             gbdist_version)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _write_once(path: str, source: str) -> None:
    """Create ``path`` holding ``source`` unless it exists; safe against other writers."""
    if os.path.exists(path):
        return
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".py", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        try:
            os.link(tmp, path)  # fails when another process got there first: keep theirs
        except FileExistsError:
            pass
        except OSError:  # no hard links on this filesystem
            if not os.path.exists(path):
                os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load(source: str):
    """The imported module for ``source`` (written to the cache on first use)."""
    key = module_key(source)
    with _LOCK:
        mod = _MODULES.get(key)
        if mod is not None:
            return mod
        path = os.path.join(cache_dir(), f"gb_{key}.py")
        _write_once(path, source)
        with open(path, encoding="utf-8") as f:
            if f.read() != source:  # a damaged or foreign file under our name: rewrite it
                tmp = path + f".{os.getpid()}.tmp"
                with open(tmp, "w", encoding="utf-8") as g:
                    g.write(source)
                os.replace(tmp, path)
        name = f"gbdist_cpu_{key}"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except RecursionError:  # CPython's compiler on a very long generated expression
            sys.modules.pop(name, None)
            raise BackendError("a formula is too long or too deeply nested for the compiled CPU "
                               "backend", got=f"generated module of {len(source)} characters",
                               hint="set GBDIST_CPU_BACKEND=numpy (the NumPy evaluator) for this "
                                    "formula, or write it with fewer terms") from None
        _MODULES[key] = mod
        return mod
