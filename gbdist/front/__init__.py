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
(graph_explain after graphdef); api stands apart.
"""
from .check import CheckReport, check
from .library import (
    LIBRARY, define, define_metric, ensure_builtins, find_metric, get_metric, load, metric_names,
    parse_expression)
from .loader import Definitions, Loader
from .syntax import parse_tree, parser, read_source

__all__ = [
    "CheckReport", "check", "LIBRARY", "define", "define_metric", "ensure_builtins", "find_metric",
    "get_metric", "load", "metric_names", "parse_expression", "Definitions", "Loader",
    "parse_tree", "parser", "read_source",
]
