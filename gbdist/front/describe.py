"""A text-defined metric as its author wrote it: the definition's lines and its ``let`` names;
and a value that is no metric, described in the user's terms (:func:`not_a_metric`).

``explain`` works on the IR, where ``let`` bindings are already inlined; this
module recovers them so an explanation can print Jaccard as

    where(union = 0, 0, (union − both)/union)   with both = P1, union = S1 + S2 − both

Each binding is rebuilt by the same builder that built the metric (with the
same operands and parameters), so its IR node has the same structural key as
the subtree it names in the metric's expression.
"""
from __future__ import annotations

import numbers

from lark import Tree

from ..compiler import ir
from .expr import ExprBuilder
from .library import LibraryBody, definition, get_metric
from .loader import MetricBody
from ..errors import ParameterError

from .hints import EQ_HINT


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


def not_a_metric(value, message: str) -> ParameterError:
    """The error for a value that is no metric: what was passed, said in the user's terms
    (a formula as mathematics, not its Python class), and the way to what was meant."""
    from ..algebra.formulas import Built
    if isinstance(value, Built):  # a gb.op formula: gb.where(...), x + y over scalars
        from ..algebra.mathtext import math as _fmt
        expr = value.expr
        what = "the constant" if not expr.free_symbols else "the scalar formula"
        got = (f"{what} {_fmt(expr)} (a formula of the kind gb.op's lambda x, y: ... builds), "
               "not an expression over matrices")
        if not expr.free_symbols:  # a constant: the condition was a Python bool
            hint = ("gb.where(cond, a, b) got a True/False condition, so it made a constant. "
                    + EQ_HINT)
        else:
            hint = ("a formula in x, y defines an op: gb.mxm(A, B.T, gb.semiring(gb.op('f', "
                    "lambda x, y: ...), gb.ops.plus)) is the metric that sums it")
        return ParameterError(message, got=got, hint=hint)
    got = repr(value) if isinstance(value, (numbers.Number, bytes, type(None))) else \
        f"a {type(value).__module__.split('.')[0]}.{type(value).__qualname__} object"
    return ParameterError(message, got=got.replace("a builtins.", "a "),
                          hint="a name such as 'cosine' (gb.metric_names() lists them), or "
                               "lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_times)")
