"""Where gbdist keeps files between processes: one cache directory per kind.

    cache_dir("analyses")  # the compiler's analyses (gbdist.compiler.cache)
    cache_dir("cuda")      # compiled CUDA modules
    cache_dir("cpu")       # compiled CPU kernels
    cache_dir("parser")    # the metric language's parser tables (gbdist.front.parser_cache)
    cache_dir("programs")  # stored built-ins, the library's names, plans, explanations
                           # (gbdist.algebra.records: gbdist.algebra.ops, gbdist.front.library)

The root is ``$GBDIST_CACHE_DIR`` when it is set (``off``, ``0``, ``none`` or
``false`` turn every cache off: :func:`cache_dir` then returns None), else the
platform's user cache directory as platformdirs names it: ``~/.cache/gbdist``
on Linux (``$XDG_CACHE_HOME/gbdist`` when that is set), ``~/Library/Caches/gbdist``
on macOS, ``%LOCALAPPDATA%\\gbdist\\Cache`` on Windows.

Nothing is created here: the caller makes the directory when it first writes.
:func:`file_name` checks a path a user names (a metric file, a matrix file) before any
OS call sees it. A foundation module: it imports only gbdist.errors.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import InputError

OFF = ("off", "0", "none", "false")
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def cache_root() -> Path | None:
    """The directory under which every kind of cache lives, or None when caching is off."""
    root = os.environ.get("GBDIST_CACHE_DIR", "").strip()
    if root.lower() in OFF:
        return None
    if root:
        return Path(root).expanduser()
    import platformdirs
    return Path(platformdirs.user_cache_dir("gbdist", appauthor=False))


def cache_dir(kind: str) -> Path | None:
    """The cache directory of one ``kind`` (``"analyses"``, ``"cuda"``, ``"cpu"``, ...),
    or None when caching is off (``GBDIST_CACHE_DIR=off``)."""
    if not isinstance(kind, str) or not _KIND.fullmatch(kind):
        raise ValueError(f"a cache kind is a short lower-case name such as 'cuda', got {kind!r}")
    root = cache_root()
    return None if root is None else root / kind


def file_name(path, what: str, hint: str | None = None) -> str:
    """``path`` as a str, or an InputError naming ``what`` ("a metric file", "a matrix
    file"): not a str or PathLike, empty, or holding a NUL byte (no file name can: the OS
    calls would raise a builtin ValueError)."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        raise InputError(f"{what} is named by a path", expected="a str or pathlib.Path",
                         got=type(path).__name__)
    try:
        name = os.fspath(path)
    except TypeError as e:  # a PathLike whose __fspath__ returns neither str nor bytes
        raise InputError(f"{what} is named by a path", expected="a str or pathlib.Path",
                         got=str(e)) from None
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if not name:
        raise InputError(f"cannot read {what}: the path is empty",
                         expected=f"the name of {what}", got="''", hint=hint)
    if "\0" in name:
        raise InputError(f"cannot read {what} {name!r}: the path contains a NUL byte",
                         expected="a file name without '\\0'", got=repr(name),
                         hint="check how the path was built (a C string or a fixed-width field?)")
    return name
