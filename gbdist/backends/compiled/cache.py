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
        return _import(key, path, len(source))


def _import(key: str, path: str, size: int):
    name = f"gbdist_cpu_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except RecursionError:  # CPython's compiler on a very long generated expression
        sys.modules.pop(name, None)
        raise BackendError("a formula is too long or too deeply nested for the compiled CPU "
                           "backend", got=f"generated module of {size} characters",
                           hint="set GBDIST_CPU_BACKEND=numpy (the NumPy evaluator) for this "
                                "formula, or write it with fewer terms") from None
    _MODULES[key] = mod
    return mod


# --- stored recipes: a module found without generating its source -----------------------

_KEY_CHARS = frozenset("0123456789abcdef")
GRAPH_CODE = tuple(f"backends/{f}.py" for f in (
    "compiled/graph_codegen", "compiled/graph_spgemm", "compiled/graph_printer",
    "compiled/graph_helpers", "compiled/printer", "graph_reference"))
"""The files that make a graph kernel module's source from its recipe (:mod:`.graph`)."""


def load_recipe(recipe: tuple, code: tuple, generate):
    """The module ``generate()`` would give, found from a stored record when an earlier
    process generated it (DESIGN.md section 6: the graph kernels' sources are printed from
    sympy formulas, so generating one imports sympy; a process that only runs kernels made
    before must not). ``recipe``: what the source is made from (the ops' structural keys,
    the domain); ``code``: the generator's own files (:func:`~gbdist.algebra.records.
    code_digest`), so an edited generator never reads an old record.

    The record (``programs/``, digest-checked like every record) names the module's file,
    ``gb_<key>.py``; the file is used only if its text hashes to that key
    (:func:`module_key`: a damaged or stale file, or other Numba/NumPy/Python/gbdist
    versions, are a miss), else the source is generated again and the record rewritten.
    The trust is the folder's own: Numba's machine code beside the file is read from it."""
    from ...algebra import records
    rkey = records.key_of("cpu-module", records.code_digest(*code), recipe)
    found = records.load(rkey, "programs")
    key = found.get("module") if found is not None else None
    if isinstance(key, str) and len(key) == 24 and set(key) <= _KEY_CHARS:
        mod = _stored(key)
        if mod is not None:
            return mod
    source = generate()
    mod = load(source)
    records.store(rkey, {"module": module_key(source)}, "programs")
    return mod


def _stored(key: str):
    """The module of the file ``gb_<key>.py`` if its text hashes to ``key``, else None."""
    from ...algebra import records
    with _LOCK:
        mod = _MODULES.get(key)
        if mod is not None:
            return mod
        path = os.path.join(cache_dir(), f"gb_{key}.py")
        try:
            text = records._read_capped(path).decode("utf-8")
        except Exception:  # noqa: BLE001 - missing, not a regular file, too large: a miss
            return None
        if module_key(text) != key:
            return None
        return _import(key, path, len(text))
