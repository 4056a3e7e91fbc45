"""sympy on demand, and objects whose sympy parts are rebuilt on first read.

A process that only runs what earlier processes analysed (a named metric whose plan is
stored on disk, a graph algorithm over the built-in semirings) never imports sympy
(docs/cpu.md, "Start-up"). Modules on that path write ``from .lazy import sympy as sp``:
``sp`` is a stand-in that imports sympy the first time one of its attributes is read
(``sp.Piecewise``), so a function that needs sympy gets it, and importing the module costs
nothing. The stand-in is not ``sys.modules["sympy"]``: ``"sympy" in sys.modules`` stays
the honest answer to "has this process loaded sympy?".

:class:`Deferred` is the other half: an object read back from a stored record (an op, a
monoid, an analysis) carries its sympy-free parts (names, flags, the formula as a
:mod:`~gbdist.algebra.terms` tree) and rebuilds each sympy field on first read.

A foundation of the algebra stage: it imports nothing of gbdist.
"""
from __future__ import annotations

import importlib
import re
import sys
from importlib.util import find_spec


class _LazyModule:
    """A module imported on the first read of one of its attributes; later reads are plain
    attribute reads of this object."""

    def __init__(self, name: str):
        self.__dict__["_name"] = name

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__"):  # pickle, copy, inspect probing
            raise AttributeError(attr)
        value = getattr(importlib.import_module(self.__dict__["_name"]), attr)
        self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        return f"<module {self.__dict__['_name']!r}, imported on first use>"


sympy = _LazyModule("sympy")


def module(name: str) -> _LazyModule:
    """A stand-in for the module ``name``, imported on the first read of an attribute
    (``lark = module("lark")``, then ``lark.Tree``)."""
    return _LazyModule(name)


def loaded() -> bool:
    """Whether this process has imported sympy."""
    return "sympy" in sys.modules


def is_sympy(value) -> bool:
    """Whether ``value`` is a sympy object (False, and sympy not imported, when it is not
    loaded: nothing can be a sympy object then)."""
    module = sys.modules.get("sympy")
    return module is not None and isinstance(value, module.Basic)


_VERSION: list = []
_RELEASE = re.compile(r"""__version__\s*=\s*["']([^"']{1,64})["']""")


def sympy_version() -> str:
    """sympy's version, without importing sympy (its ``release.py`` read as text; the
    imported module's ``__version__`` once it is loaded). A cache key part: records that
    hold sympy's results are keyed on it."""
    if "sympy" in sys.modules:
        return sys.modules["sympy"].__version__
    if not _VERSION:
        version = "unknown"
        try:
            spec = find_spec("sympy")
            if spec is not None and spec.origin:
                from pathlib import Path
                text = Path(spec.origin).with_name("release.py").read_text(encoding="utf-8")
                found = _RELEASE.search(text)
                if found:
                    version = found.group(1)
        except (OSError, ValueError, ImportError):
            pass
        _VERSION.append(version)
    return _VERSION[0]


class Deferred:
    """Fields rebuilt on first read: ``self.__dict__["_deferred"]`` maps a field's name to
    plain data (a term, a record) and :meth:`_rebuild` turns it into the field's value.

    Only an instance made from a stored record has pending fields; one built the usual way
    has every field set and never reaches :meth:`__getattr__`. A field with a class-level
    default must be listed in :func:`without_class_defaults`, or the default would hide it.
    The pending data is plain (tuples, strings, numbers), so such objects pickle as they are.
    """

    __slots__ = ()

    def __getattr__(self, name: str):
        pending = self.__dict__.get("_deferred") if name != "__dict__" else None
        if not pending or name not in pending:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = self._rebuild(name, pending[name])
        object.__setattr__(self, name, value)  # frozen dataclasses too: set once, then plain
        return value

    def _rebuild(self, name: str, data):  # pragma: no cover - each stored class defines it
        raise AttributeError(name)


def without_class_defaults(cls, *names: str):
    """Remove the class attributes a dataclass made from the defaults of ``names`` (its
    ``__init__`` keeps them), so that a :class:`Deferred` instance without the field reaches
    ``__getattr__`` instead of reading the default."""
    for name in names:
        if name in cls.__dict__:
            delattr(cls, name)
    return cls
