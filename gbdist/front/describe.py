"""A text-defined metric as its author wrote it: the definition's lines and its ``let`` names.

``explain`` works on the IR, where ``let`` bindings are already inlined; this
module recovers them so an explanation can print Jaccard as

    where(union = 0, 0, (union − both)/union)   with both = P1, union = S1 + S2 − both

Each binding is rebuilt by the same builder that built the metric (with the
same operands and parameters), so its IR node has the same structural key as
the subtree it names in the metric's expression.
"""
from __future__ import annotations

from lark import Tree

from ..compiler import ir
from .expr import ExprBuilder
from .library import LibraryBody, definition, get_metric
from .loader import MetricBody


def describe(name: str, **params) -> tuple[str, tuple[tuple[str, ir.Node], ...]]:
    """(definition text, ((let name, IR node), ...)) of a metric; ('', ()) for one defined
    in Python (there is no text to show)."""
    m = get_metric(name)
    body = m.build
    if isinstance(body, LibraryBody):  # a built-in metric: the library's definition
        body = definition(body.name).build
    if not isinstance(body, MetricBody):
        return "", ()
    return _text(body), _lets(body, {**{k: v for k, v in m.params.items() if v is not None},
                                     **params})


def _text(body: MetricBody) -> str:
    tree = body.body
    if tree.meta.empty:
        return ""
    lines = body.src.text.splitlines()
    start = tree.meta.line - 1
    while start > 0 and not lines[start].lstrip().startswith(f"metric {body.name}"):
        start -= 1
    return "\n".join(lines[start:tree.meta.end_line])


def _lets(body: MetricBody, params: dict) -> tuple[tuple[str, ir.Node], ...]:
    tree = body.body
    if not (isinstance(tree, Tree) and tree.data == "let"):
        return ()
    from . import colparams
    vectors = {k for k, v in params.items() if isinstance(v, ir.ColVector)}
    facts, _ = colparams.split_requires(body.requires, vectors, body.src)
    params = colparams.upgraded({k: v if k in vectors else float(v)
                                 for k, v in params.items()}, facts)
    env = {body.operands[0]: ir.Matrix("A"), body.operands[1]: ir.Matrix("B"), **params}
    builder = ExprBuilder(body.src, body.scope)
    out = []
    *bindings, _ = tree.children
    for b in bindings:
        bname, value = b.children
        node = builder.visit(value, env)
        env[str(bname)] = node
        if isinstance(node, ir.Node):
            out.append((str(bname), node))
    return tuple(out)
