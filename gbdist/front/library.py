"""The library of names as users see it: the built-in metrics first, then what
users add (``gb.define``, ``gb.load``, ``gb.define_metric``).

The built-in metrics are the library file ``metrics.gbd`` beside this module,
written in gbdist's metric language (docs/language.md): the language is its
own first user. :func:`ensure_builtins` loads it once, through the same
:class:`~gbdist.front.loader.Loader` as any user text, which registers into
:mod:`gbdist.names`. Every lookup by name that must see the built-ins
(:func:`get_metric`, :func:`metric_names`, :func:`define`, ...) goes through
here; :mod:`gbdist.names` itself never reaches up to load them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..compiler import ir
from .. import names
from ..errors import DefinitionError, GbdistError, InputError, TypeCheckError
from ..names import Metric
from .expr import ExprBuilder
from .graphdef import GraphDef
from .loader import Definitions, Loader
from .scope import describe
from .syntax import Source, parse_tree, read_source

LIBRARY = Path(__file__).resolve().parent / "metrics.gbd"
GRAPH_LIBRARY = LIBRARY.with_name("graph.gbd")  # graph definitions (triangle_count, ...)

_LOADED = False


def ensure_builtins() -> None:
    """Load the built-in metrics (the library file ``metrics.gbd``) once."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        loader = Loader(LIBRARY.read_text(encoding="utf-8"), str(LIBRARY), typecheck=False)
        loader.run()
        loader.commit(library=True)  # its helpers (nnz, norm2, ...) leave the names to users
        loader = Loader(GRAPH_LIBRARY.read_text(encoding="utf-8"), str(GRAPH_LIBRARY))
        loader.run()
        loader.commit(library=True)


def find_graph(name):
    """The graph definition called ``name`` (a user's, or the built-in library's), or None."""
    ensure_builtins()
    thing = names.lookup(name) if isinstance(name, str) else None
    return thing if isinstance(thing, GraphDef) else None


def graph_names() -> list[str]:
    """The names of every graph definition, sorted."""
    ensure_builtins()
    return sorted(n for n in set(names.known_names()) if isinstance(names.lookup(n), GraphDef))


def find_metric(name) -> Metric | None:
    """The metric called ``name`` (or an alias of it; case-insensitive), or None."""
    ensure_builtins()
    return names.find_metric(name)


def get_metric(name) -> Metric:
    """The metric called ``name``; an UnknownNameError (with a close match) if there is none."""
    ensure_builtins()
    return names.get_metric(name)


def metric_names() -> list[str]:
    """The names of every metric, built-in and user-defined, sorted (``gb.metric_names()``)."""
    ensure_builtins()
    return names.metric_names()


def define_metric(name: str, fn: Callable, doc: str = "", replace: bool = False,
                  aliases: tuple = ()) -> Metric:
    """Register ``fn(A, B, **params)`` as a named metric usable everywhere.

    ``fn`` is called on symbolic operands and returns an expression, e.g. an
    ``mxm`` of ``A`` and ``B.T`` over a semiring (docs/api.md).
    """
    ensure_builtins()  # a built-in name is then taken whatever the order of calls
    m = names.python_metric(name, fn, doc, aliases)
    if all(v is not None for v in m.params.values()):
        try:
            m.expression()  # build once, so a broken definition fails here
        except (GbdistError, RecursionError, MemoryError):
            raise
        except Exception as e:  # noqa: BLE001 - the user's function failed: typed, named
            raise DefinitionError(f"metric {name!r}: its function raised {type(e).__name__}",
                                  got=str(e)[:200],
                                  hint="it is called once with symbolic operands A and B and "
                                       "returns an expression over them (docs/api.md)") from None
    return names.register_metric(m, replace=replace)


def define(text: str, source: str = "<text>") -> Definitions:
    """Parse ``text``, register its ops, semirings and metrics by name, and return them.

    ``gb.define("op chi2(x, y) = ...\\nmetric chi2_dist(A, B) = ...")`` makes
    ``gb.pairwise_distances(X, metric="chi2_dist")`` work.
    """
    if not isinstance(text, str):
        raise InputError("define() needs the text of a metric file", got=type(text).__name__)
    ensure_builtins()
    loader = Loader(text, source)
    loader.run()
    return loader.commit()


def load(path) -> Definitions:
    """:func:`define` the contents of a metric file; errors name the file."""
    return define(read_source(path), str(path))


def parse_expression(text: str, definitions: Definitions | None = None,
                     source: str = "<expression>") -> ir.Node:
    """One expression (``mxm(A, B.T, semiring(absdiff, plus))``) as IR.

    Single capital letters name matrix operands, single small letters vectors.
    """
    ensure_builtins()
    tree = parse_tree(text, source, start="expression")
    scope = definitions.scope if definitions is not None else {}
    out = ExprBuilder(Source(source, text), scope, free_operands=True).build(tree.children[0])
    if not isinstance(out, ir.Node):
        raise TypeCheckError("the expression does not compute anything over matrices",
                             got=describe(out), span=Source(source, text).span(tree.children[0]))
    return out
