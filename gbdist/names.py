"""ONE registry of names: ops, semirings, monoids, helpers, graph definitions and metrics,
built-in and user.

Two tiers, one lookup:

* **built-in** ops and semirings are Python objects of the algebra
  (:data:`gbdist.algebra.ops.BY_NAME`, :data:`gbdist.algebra.semirings`, and the
  row-normalising ``normalize``); they are fixed and cannot be redefined;
* **library** names are the ops, semirings and helpers that the built-in
  library ``metrics.gbd`` defines for its metrics (``nnz``, ``norm2``,
  ``total``, ``spread``, ``pow``, ``abssum`` ...) and the graph definitions of
  ``graph.gbd`` (``triangle_count`` ...): visible by their plain names,
  but in a tier of their own, so a user may define the same name; the user's
  definition then wins for every later text, while the built-in metrics keep
  the library's (each captured its own scope when it was defined);
* **defined** names come from users' texts and from Python
  (``gb.define_metric``): ops, semirings, monoids, helpers and graph definitions
  (``graph NAME(A) = ...``) by name with the source that defined them, and
  metrics (built-in ones included, with their aliases) as :class:`Metric` objects.

Lookup order (:func:`lookup`): user-defined, built-in, library, metric.

This module knows nothing of the front end that fills it: the built-in
metrics are loaded from ``gbdist/front/metrics.gbd`` by the front end's
loader, which registers them here like any other text
(:func:`gbdist.front.ensure_builtins`), or registered by name from the stored
index of the library (:func:`gbdist.front.library.ensure_names`: each one's
``build`` reads the library when first called). Lookups that need the built-in
metrics go through the front end (``gbdist.front.get_metric``); the lookups
here see what has been registered so far.

**Generation.** Every (re)definition increments :func:`generation`. A cache
of anything built from a name (``pairwise``'s compiled metric programs) keys
on it, so a redefined metric is never served from a stale entry and no layer
has to clear another layer's cache.
"""
from __future__ import annotations

import difflib
import inspect
import math
from dataclasses import dataclass, field
from typing import Callable

from .compiler import ir
from .algebra import ops as _ops
from .algebra.semirings import semirings as _builtin_semirings
from .errors import (DefinitionError, InputError, ParameterError, RedefinitionError,
                     UnknownNameError)
from .algebra.ops import ROW_OPS as _ROW_OPS  # normalize: a row op

# The operands of a metric and the output index each one's rows give.
ROLES = (("A", "i"), ("B", "j"))


@dataclass(frozen=True)
class Metric:
    """A named distance: ``build(A, B, **params) -> ir.Node``.

    A metric is an expression over two operands, A (whose rows index the
    output rows) and B (whose rows index the output columns), with optional
    numeric parameters (Minkowski's ``p``). Parameters are substituted before
    analysis, so ``minkowski`` with p=4 is analysed as |x − y|⁴ (expansion
    rank 3) and with p=3 as a union correction without expansion.
    """

    name: str
    build: Callable  # (A, B, **params) -> ir.Node
    params: dict = field(default_factory=dict)  # name -> default (None: must be given)
    doc: str = ""
    source: str = "python"  # "python", or the metric file it came from
    aliases: tuple = ()

    def expression(self, **params) -> ir.Node:
        """The metric's IR over the operands ``A`` and ``B``, with ``params`` substituted."""
        return self.call(ir.Matrix("A"), ir.Matrix("B"), **params)

    def call(self, A: ir.Node, B: ir.Node, **params) -> ir.Node:
        """The metric's IR over the given operands (a metric used inside another)."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:  # a TypeError too: what Python, SciPy and scikit-learn raise for it
            raise ParameterError(f"metric {self.name!r} has no parameter {unknown[0]!r}",
                                 expected=", ".join(self.params) or "no parameters",
                                 got=", ".join(unknown))
        values = {**self.params, **params}
        for k, v in values.items():
            if v is None:
                raise InputError(f"metric {self.name!r} needs the parameter {k!r}")
            if isinstance(v, ir.ColVector):  # a column operand (gbdist.front.colparams)
                continue
            if not isinstance(v, (int, float)) or isinstance(v, bool) or math.isnan(v):
                raise InputError(f"parameter {k!r} of {self.name!r} must be a number", got=repr(v))
        out = self.build(A, B, **values)
        if not isinstance(out, ir.Node):
            raise _not_an_expression(self.name, out)
        return out


def _not_an_expression(name: str, out) -> DefinitionError:
    """What a metric function returned instead of an expression, and how to fix it."""
    kind = type(out).__name__
    if isinstance(out, bool) or kind == "bool_":
        return DefinitionError(
            f"metric {name!r} returned the Python value {bool(out)}, not an expression over A "
            "and B: `==` (or `!=`) between gbdist expressions tells whether the two are written "
            "the same (True/False at once); it does not compare their values",
            expected="an expression such as gb.eq(gb.mxm(A, B.T, sr), 0)", got=f"{kind} {out}",
            hint="write gb.eq(a, b) for 1 where a == b and 0 elsewhere, e.g. "
                 "gb.where(gb.eq(gb.mxm(A, B.T, sr), 0), 1, 0)")
    if kind == "Sym":
        return DefinitionError(
            f"metric {name!r} returned a scalar formula ({out.expr}), not an expression over A "
            "and B: none of its parts involves A or B (a comparison with `==` between gbdist "
            "expressions becomes True/False before gb.where sees it)",
            expected="an expression built from gb.mxm, gb.reduce, ... on A and B", got=kind,
            hint="compare expressions with gb.eq(a, b) (1 where a == b, else 0), e.g. "
                 "gb.where(gb.eq(gb.mxm(A, B.T, sr), 0), 1, 0)")
    return DefinitionError(f"metric {name!r} did not build an expression over A and B",
                           expected="an expression built from gb.mxm, gb.reduce, ... on A and B",
                           got=kind, hint="return e.g. gb.mxm(A, B.T, gb.semirings.plus_absdiff)")


def python_metric(name: str, fn: Callable, doc: str = "", aliases: tuple = ()) -> Metric:
    """A :class:`Metric` from a Python function ``fn(A, B, **params)``; its
    parameters (and their defaults) are read from the signature."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise DefinitionError(f"metric {name!r}: cannot read the function's parameters") from None
    ps = list(sig.parameters.values())
    if len(ps) < 2:
        raise DefinitionError(f"metric {name!r} must take the operands A and B",
                              got=f"{len(ps)} parameter(s)")
    params = {p.name: (None if p.default is inspect.Parameter.empty else p.default) for p in ps[2:]}
    return Metric(name, fn, params, doc or (fn.__doc__ or ""), "python", tuple(aliases))


# ---------------------------------------------------------------------------
# Built-ins: fixed Python objects of the algebra
# ---------------------------------------------------------------------------

BUILTINS: dict = {**_ops.BY_NAME, **_ROW_OPS, **dict(_builtin_semirings.__dict__)}


def builtin(name: str):
    """The built-in op or semiring called ``name``, or None."""
    return BUILTINS.get(name)


# ---------------------------------------------------------------------------
# Defined names
# ---------------------------------------------------------------------------


@dataclass
class Registry:
    """What has been defined: ``objects`` (users' ops, semirings, helpers: name ->
    (object, source)), ``metrics`` (name -> Metric), ``aliases`` (alias ->
    metric name) and ``library`` (the built-in library's ops, semirings and
    helpers: name -> (object, source); a tier below users' names)."""

    objects: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)
    library: dict = field(default_factory=dict)

    def copy(self) -> "Registry":
        return Registry(dict(self.objects), dict(self.metrics), dict(self.aliases),
                        dict(self.library))


_STATE = Registry()
_GENERATION = 0


def generation() -> int:
    """A counter incremented by every (re)definition: a cache key for anything built from names."""
    return _GENERATION


def _bump() -> None:
    global _GENERATION
    _GENERATION += 1


def snapshot() -> Registry:
    """A copy of what is defined now, for :func:`restore` (tests isolate their definitions)."""
    return _STATE.copy()


def restore(saved: Registry) -> None:
    """Make the definitions those of ``saved`` again (the generation still moves forward)."""
    global _STATE
    _STATE = saved.copy()
    _bump()


def define(name: str, obj, source: str, library: bool = False) -> None:
    """Register an op, semiring or helper defined by ``source`` (a file name or ``<text>``);
    ``library``: one of the built-in library's, in the tier users' names shadow."""
    (_STATE.library if library else _STATE.objects)[name] = (obj, source)
    _bump()


def defined(name: str) -> tuple | None:
    """(object, source) of the op, semiring or helper a user's text defined as ``name``,
    or None (the built-in library's names are not counted: users may take them)."""
    return _STATE.objects.get(name)


def library_name(name: str) -> tuple | None:
    """(object, source) of the built-in library's op, semiring or helper ``name``, or None."""
    return _STATE.library.get(name)


def register_metric(metric: Metric, replace: bool = False) -> Metric:
    """Register ``metric`` (and its aliases). A name taken by a metric from another
    source is refused unless ``replace``."""
    other = _STATE.metrics.get(metric.name)
    if not replace and other is not None and other.source != metric.source:
        raise RedefinitionError(f"metric {metric.name!r} is already defined",
                                got=f"defined in {other.source}",
                                hint="choose another name, or pass replace=True")
    _STATE.metrics[metric.name] = metric
    for a in metric.aliases:
        _STATE.aliases[a] = metric.name
    _bump()
    return metric


# SciPy's abbreviations of metric names (scipy.spatial.distance's aliases of one or two
# letters): accepted wherever a metric is named (pairwise_distances, cdist, knn, explain, the
# CLI), after every registered name and alias, but not names of the text language, where
# `metric m(A, B)` or an operand `C` stay the user's. The spelled-out aliases (euclid, cos,
# cheb, sqe, pnorm, ...) are `alias` lines of metrics.gbd.
SCIPY_ABBREVIATIONS = {
    "e": "euclidean", "eu": "euclidean", "c": "cityblock", "cb": "cityblock",
    "ch": "chebyshev", "co": "correlation", "h": "hamming", "ha": "hamming", "j": "jaccard",
    "ja": "jaccard", "m": "minkowski", "mi": "minkowski", "js": "jensenshannon",
    "s": "seuclidean", "se": "seuclidean",
}


def find_metric(name, abbreviations: bool = True) -> Metric | None:
    """The metric registered as ``name`` (or an alias of it), or None; names are
    case-insensitive. ``abbreviations``: SciPy's one- and two-letter spellings too (after
    every registered name). Built-in metrics are found only once the front end has loaded
    them."""
    if not isinstance(name, str):
        return None
    for key in (name, name.lower()):
        key = _STATE.aliases.get(key, key)
        if key in _STATE.metrics:
            return _STATE.metrics[key]
    if abbreviations and name.lower() in SCIPY_ABBREVIATIONS:
        return find_metric(SCIPY_ABBREVIATIONS[name.lower()], False)
    return None


# Names SciPy or scikit-learn give to metrics gbdist does not define (yet): canonical name
# -> (the peers' other spellings, what to use instead). A name defined later (a user's,
# or a library metric of that name) is found first and this table is not read.
NOT_HERE: dict = {
    "wminkowski": ((), "SciPy removed it in 1.8: use 'minkowski' with w= (gbdist's "
                       "weighted_minkowski, SciPy's minkowski(u, v, p, w))"),
    "kulsinski": ((), "SciPy removed it in 1.11: use 'yule' or 'kulczynski1'"),
}
_NOT_HERE_ALIASES = {a: n for n, (aka, _) in NOT_HERE.items() for a in aka}


def not_here(name) -> tuple[str, str] | None:
    """(canonical name, what to use) when ``name`` is a peer's metric gbdist lacks, else None."""
    if not isinstance(name, str):
        return None
    key = _NOT_HERE_ALIASES.get(name.lower(), name.lower())
    return (key, NOT_HERE[key][1]) if key in NOT_HERE else None


def suggest_metric(name) -> str | None:
    """The closest known metric name (aliases of three letters or more included, and the
    peers' names gbdist lacks, said as such), or None when nothing is close."""
    candidates = [n for n in metric_names(aliases=True) if len(n) >= 3] + list(NOT_HERE)
    close = difflib.get_close_matches(str(name).lower(), candidates, n=1, cutoff=0.75)
    if not close:
        return None
    if close[0] in NOT_HERE and find_metric(close[0]) is None:
        return f"did you mean {close[0]!r}? (a SciPy / scikit-learn metric gbdist does not " \
               f"define: {NOT_HERE[close[0]][1]})"
    target = find_metric(close[0])
    also = f" (an alias of {target.name!r})" if target is not None and target.name != close[0] \
        else ""
    return f"did you mean {close[0]!r}?{also}"


def get_metric(name) -> Metric:
    """:func:`find_metric`, or an UnknownNameError: for a peer's metric gbdist lacks, what to
    use instead; else a close name when there is one."""
    found = find_metric(name)
    if found is None:
        missing = not_here(name)
        if missing is not None:
            also = f" ({missing[0]})" if missing[0] != str(name).lower() else ""
            raise UnknownNameError(
                f"metric {name!r}{also} is a SciPy / scikit-learn metric that gbdist "
                "does not define", hint=missing[1])
        raise UnknownNameError(f"unknown metric {name!r}",
                               hint=suggest_metric(name) or
                               "gb.metric_names() lists the known metrics")
    return found


def metric_names(aliases: bool = False) -> list[str]:
    """Registered metric names (sorted), with their aliases after them if ``aliases``."""
    out = sorted(_STATE.metrics)
    return out + list(_STATE.aliases) if aliases else out


def lookup(name: str):
    """What ``name`` means globally in the text language: a user's op/semiring/helper, a
    built-in, one of the built-in library's, a metric (by its exact name or alias), or None."""
    hit = _STATE.objects.get(name)
    if hit is not None:
        return hit[0]
    b = BUILTINS.get(name)
    if b is not None:
        return b
    hit = _STATE.library.get(name)
    if hit is not None:
        return hit[0]
    # a metric by its exact name or alias: the language is case-sensitive, so the operand
    # C is never SciPy's alias c (cityblock)
    return _STATE.metrics.get(_STATE.aliases.get(name, name))


def known_names() -> list[str]:
    """Every global name (for close-match suggestions)."""
    return (list(_STATE.objects) + list(BUILTINS) + list(_STATE.library) + list(_STATE.metrics)
            + list(_STATE.aliases))


# Keywords of other libraries' functions that mean one of ours.
KEYWORD_SYNONYMS = {"n_neighbors": "k"}


def check_keywords(func, params: dict, m) -> None:
    """Refuse a keyword that is neither a parameter of ``metric`` nor one of ``func``'s own,
    when it looks like a misspelt keyword of ``func`` (``metrc=``) or another library's
    name for one (``n_neighbors=`` for ``k=``): say so, rather than calling it an unknown
    parameter of the metric ``m`` (a :class:`Metric`). Other unknown names are left to the
    metric's own message."""
    if not isinstance(m, Metric) or all(key in m.params for key in params):
        return  # (a callable or an expression: its own checks)
    import inspect
    own = [p for p in inspect.signature(func).parameters
           if p not in ("params", "kwds", "kwargs")]
    for key in params:
        if key in m.params:
            continue
        target = KEYWORD_SYNONYMS.get(key) if KEYWORD_SYNONYMS.get(key) in own else None
        if target is None:
            close = difflib.get_close_matches(key, own, n=1, cutoff=0.75)
            target = close[0] if close else None
        if target is not None:
            raise InputError(f"{func.__name__}() has no keyword {key!r}, and metric "
                             f"{m.name!r} has no parameter of that name",
                             hint=f"did you mean {target}=?",
                             expected=f"{func.__name__}'s keywords ({', '.join(own)}) or the "
                                      f"metric's parameters ({', '.join(m.params) or 'none'})",
                             got=key)
