"""Where the shipped source files live: grammar/*.lark and kernels/*.cuh.

In a wheel, ``grammar/`` and ``kernels/`` are installed as the packages
``gbdist.grammar`` and ``gbdist.kernels``; in a source checkout (editable
install, tests) they are the top-level folders beside ``gbdist/``. (The built-in metric
library ``gbdist/front/metrics.gbd`` is package data of ``gbdist.front``, read
from beside its loader: ``gbdist.front.library.LIBRARY``.)
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

_ROOT = Path(__file__).resolve().parent


def folder(name: str) -> Path:
    """The directory holding ``grammar`` or ``kernels`` files."""
    beside = _ROOT.parent / name
    if (_ROOT.parent / "pyproject.toml").is_file() and beside.is_dir():
        return beside  # a source checkout: its own files, even where another is installed
    spec = importlib.util.find_spec(f"gbdist.{name}")
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            if Path(loc).is_dir():
                return Path(loc)
    return _ROOT.parent / name


def read(name: str, filename: str) -> str:
    return (folder(name) / filename).read_text(encoding="utf-8")
