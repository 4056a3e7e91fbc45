"""Where gbdist keeps files between processes: one cache directory per kind.

    cache_dir("analyses")  # the compiler's analyses (gbdist.compiler.cache)
    cache_dir("cuda")      # compiled CUDA modules
    cache_dir("cpu")       # compiled CPU kernels
    cache_dir("parser")    # the metric language's parser tables (gbdist.front.parser_cache)

The root is ``$GBDIST_CACHE_DIR`` when it is set (``off``, ``0``, ``none`` or
``false`` turn every cache off: :func:`cache_dir` then returns None), else the
platform's user cache directory as platformdirs names it: ``~/.cache/gbdist``
on Linux (``$XDG_CACHE_HOME/gbdist`` when that is set), ``~/Library/Caches/gbdist``
on macOS, ``%LOCALAPPDATA%\\gbdist\\Cache`` on Windows.

Nothing is created here: the caller makes the directory when it first writes.
A foundation module: it imports nothing of gbdist.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

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
