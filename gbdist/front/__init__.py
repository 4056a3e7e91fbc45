"""The front ends: text and Python in, IR and named definitions out.

What this stage owns
    * the text language: ``grammar/gbdist.lark`` parsed by lark
      (:mod:`.syntax`: reading files, parse trees, syntax errors with a caret,
      positions, the limits), names and scopes (:mod:`.scope`), the two
      builders — op bodies to sympy formulas (:mod:`.formula`), metric bodies
      to IR (:mod:`.expr`) over a shared walk and work budget
      (:mod:`.builder`), graph definitions to checked steps (:mod:`.graphdef`,
      :mod:`.graph_builder`; their explanation :mod:`.graph_explain`) —, the loader that turns a text into definitions and
      registers them (:mod:`.loader`), and ``gbdist check`` (:mod:`.check`);
    * the built-in libraries ``metrics.gbd`` and ``graph.gbd``, written in the text language, and
      the lookups that must see it (:mod:`.library`: ``get_metric``,
      ``metric_names``, ``define``, ``load``, ``define_metric``);
    * the Python API (:mod:`.api`: ``gb.mxm``, ``gb.op``, ``gb.compile`` ...).

Both front ends build the same IR (:mod:`gbdist.ir`), so a metric written in
text and the same metric written in Python are equal nodes with one key.
No text is ever turned into code: every sympy and IR node is built by a
method named after the grammar rule it handles.

What it may import
    the algebra (``ops``, ``algebra``, ``proofs``), the compiler (``ir``,
    ``typecheck``, ``plan``, ``explain``) and the registry :mod:`gbdist.names`
    (which imports nothing from here: the built-ins are loaded *into* it by
    :func:`ensure_builtins`, and caches elsewhere key on
    :func:`gbdist.names.generation` instead of being cleared from here).
    Never the runtime or the backends — with one exception: :mod:`.api`,
    whose ``Program`` runs a plan and whose ``mxm``/``reduce``/``apply``
    evaluate eagerly on concrete matrices, imports the runtime. It is a leaf:
    no other module of this package imports it, and this ``__init__`` does
    not either, so ``import gbdist.front`` does not load the runtime
    (``gbdist/__init__`` imports ``gbdist.front.api`` for the public names).

Import order inside the package (no circle): syntax → scope → builder →
formula → expr → graphdef → graph_builder → loader → library → check
(graph_explain after graphdef); api stands apart. This ``__init__`` imports none of them:
each public name is imported from its module on first use, so that a process asking
for a named metric whose program is stored loads neither lark nor sympy (``library``
imports the loader only when the library's text must be read).
"""
import importlib

from .check import CheckReport, check  # light: the function imports what it needs

# public name -> the module of this package that defines it, imported on first use
# (PEP 562): the lookups of named metrics (library) need neither lark nor sympy once the
# library's names are stored, while the parser, the loader and ``check`` import both.
_LAZY = {
    **dict.fromkeys(("LIBRARY", "define", "define_metric", "ensure_builtins", "find_metric",
                     "get_metric", "load", "metric_names", "parse_expression"), "library"),
    **dict.fromkeys(("Definitions", "Loader"), "loader"),
    **dict.fromkeys(("parse_tree", "parser", "read_source"), "syntax"),
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CheckReport", "check", "LIBRARY", "define", "define_metric", "ensure_builtins", "find_metric",
    "get_metric", "load", "metric_names", "parse_expression", "Definitions", "Loader",
    "parse_tree", "parser", "read_source",
]
