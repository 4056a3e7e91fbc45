"""The metric registry: named distances as functions (A, B, **params) -> IR.

A metric is an expression over two operands, A (whose rows index the output
rows) and B (whose rows index the output columns), with optional numeric
parameters (Minkowski's ``p``). Parameters are substituted before analysis,
so ``minkowski`` with p=4 is analysed as |x − y|⁴ (expansion rank 3) and with
p=3 as a union correction without expansion.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Callable

from .compiler import ir
from .errors import DefinitionError, InputError, RedefinitionError, UnknownNameError

ROLES = (("A", "i"), ("B", "j"))


@dataclass(frozen=True)
class Metric:
    name: str
    build: Callable  # (A, B, **params) -> ir.Node
    params: dict = field(default_factory=dict)  # name -> default
    doc: str = ""
    source: str = "python"  # "python", or the metric file it came from
    aliases: tuple = ()

    def expression(self, **params) -> ir.Node:
        """The metric's IR over the operands ``A`` and ``B``, with ``params`` substituted."""
        return self.call(ir.Matrix("A"), ir.Matrix("B"), **params)

    def call(self, A: ir.Node, B: ir.Node, **params) -> ir.Node:
        """The metric's IR over the given operands (a metric used inside another)."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise InputError(f"metric {self.name!r} has no parameter {unknown[0]!r}",
                             expected=", ".join(self.params) or "no parameters", got=", ".join(unknown))
        values = {**self.params, **params}
        for k, v in values.items():
            if v is None:
                raise InputError(f"metric {self.name!r} needs the parameter {k!r}")
            if not isinstance(v, (int, float)) or isinstance(v, bool) or math.isnan(v):
                raise InputError(f"parameter {k!r} of {self.name!r} must be a number", got=repr(v))
        out = self.build(A, B, **values)
        if not isinstance(out, ir.Node):
            raise DefinitionError(f"metric {self.name!r} did not build an expression",
                                  got=type(out).__name__)
        return out


_REGISTRY: dict[str, Metric] = {}
_ALIASES: dict[str, str] = {}


def register(metric: Metric, replace: bool = False) -> Metric:
    if not replace and metric.name in _REGISTRY and _REGISTRY[metric.name].source != metric.source:
        raise RedefinitionError(f"metric {metric.name!r} is already defined",
                                got=f"defined in {_REGISTRY[metric.name].source}",
                                hint="choose another name, or pass replace=True")
    _REGISTRY[metric.name] = metric
    for a in metric.aliases:
        _ALIASES[a] = metric.name
    return metric


def define_metric(name: str, fn: Callable, doc: str = "", replace: bool = False,
                  aliases: tuple = ()) -> Metric:
    """Register ``fn(A, B, **params)`` as a named metric usable everywhere.

    ``gb.define_metric("chi2", lambda A, B: gb.mxm(A, B.T, gb.semiring(chi2, gb.ops.plus)))``
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise DefinitionError(f"metric {name!r}: cannot read the function's parameters") from None
    ps = list(sig.parameters.values())
    if len(ps) < 2:
        raise DefinitionError(f"metric {name!r} must take the operands A and B",
                              got=f"{len(ps)} parameter(s)")
    params = {p.name: (None if p.default is inspect.Parameter.empty else p.default) for p in ps[2:]}
    m = Metric(name, fn, params, doc or (fn.__doc__ or ""), "python", tuple(aliases))
    if all(v is not None for v in params.values()):
        m.expression()  # build once, so a broken definition fails here
    return register(m, replace=replace)


def find(name: str) -> Metric | None:
    """The metric called ``name`` (or an alias of it), or None; names are case-insensitive."""
    if not isinstance(name, str):
        return None
    for key in (name, name.lower()):
        key = _ALIASES.get(key, key)
        if key in _REGISTRY:
            return _REGISTRY[key]
    return None


def all_names() -> list[str]:
    """Metric names and aliases (for close-match suggestions)."""
    return list(_REGISTRY) + list(_ALIASES)


def get(name: str) -> Metric:
    _ensure_builtins()
    found = find(name)
    if found is None:
        import difflib
        close = difflib.get_close_matches(str(name), list(_REGISTRY) + list(_ALIASES), n=1)
        raise UnknownNameError(f"unknown metric {name!r}",
                               hint=f"did you mean {close[0]!r}?" if close else
                               "gb.metric_names() lists the known metrics")
    return found


def names() -> list[str]:
    _ensure_builtins()
    return sorted(_REGISTRY)


_LOADED = False


def ensure_builtins() -> None:
    """Load the built-in metrics (the library file ``gbdist/metrics.gbd``) once."""
    _ensure_builtins()


def _ensure_builtins() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from . import library
        library.load_builtins()
