"""``gb.explain`` of a graph definition: each step, its algebra and the compiler's decision.

Before running (``gb.explain("triangle_count")``), each step shows its semiring, monoid or
op, the fill decision of :mod:`gbdist.compiler.graph` for the fills the operands are
*assumed* to have (``fills=``: ``"absent"`` — graphs — by default, ``0`` for data, or one
per operand), the mask (structural or by value, complemented, replace), the accumulator
and the result-dtype rule. The rule is the compiler's own (``rule.product``, ``rule.ewise``,
``rule.apply_value``, ``rule.reduction``), called as the operations call it; a step it
refuses shows why. After a run (``gr.trace``) each step also shows the decision taken.
"""
from __future__ import annotations

import html as _html
import re
from dataclasses import dataclass, replace

from ..algebra.lazy import sympy as sp
from ..algebra.ops import Monoid, Op
from ..algebra.positional import INDEX_UNARY, IndexUnaryOp
from ..algebra.semirings import Semiring
from ..compiler import graph as rule
from ..errors import GbdistError, InputError
from .graphdef import GraphDef, MaskRef, Ref, Step

_SELECT_WORDS = {"tril": "j <= i + k", "triu": "j >= i + k", "diag": "j == i + k",
                 "offdiag": "j != i + k", "nonzero": "value != 0"}


@dataclass(frozen=True)
class StepExplanation:
    step: Step
    text: str  # the step in the language, inputs by name
    lines: tuple  # algebra, decision, mask, accumulator, dtype
    result_fill: object  # "absent", 0, or None (unknown: refused or decided at run time)
    ran: tuple = ()  # after a run: the decision taken and the result


@dataclass(frozen=True)
class GraphExplanation:
    """What a graph definition will do (and, after ``gr.trace``, what it did)."""

    graph: GraphDef
    fills: dict
    steps: tuple
    result: object = None
    has_run: bool = False

    def with_run(self, values, result) -> "GraphExplanation":
        steps = tuple(replace(e, ran=_ran(v)) for e, v in zip(self.steps, values))
        return replace(self, steps=steps, result=result, has_run=True)

    def _lines(self) -> list[str]:
        g = self.graph
        assumed = ", ".join(f"{o} ({g.kinds[o] if g.kinds[o] != 'any' else 'matrix or vector'}): "
                            f"fill={f!r}" for o, f in self.fills.items())
        out = [f"{g!r}" + (f" — {g.doc.splitlines()[0]}" if g.doc else ""),
               "  " + " ".join(re.sub(r"#[^\n]*", "", g.text).split()),  # comments dropped
               ("operand fills (as run): " if self.has_run else
                "operand fills assumed: ") + (assumed or "none"),
               "  fill 'absent': a graph, only stored entries exist; fill 0: data, unstored "
               "entries are zeros"]
        out += _render(g, self.steps)
        out.append(f"result: {g.label(g.result)}")
        if self.has_run:
            out.append(f"  = {_show(self.result)}")
        return out

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def to_markdown(self) -> str:
        return f"### `{self.graph!r}`\n\n```text\n{self}\n```\n"

    _repr_markdown_ = to_markdown

    def _repr_html_(self) -> str:
        return f"<pre>{_html.escape(str(self))}</pre>"

    # -- the picture (gbdist.compiler.explain_diagram) -------------------------

    def diagram(self):
        """The plan as a :class:`~gbdist.compiler.explain_diagram.Diagram`: operands, steps
        (with mask and result fill), which step feeds which, each loop a box round its body."""
        from ..compiler.explain_diagram import Diagram, Edge, Node
        g = self.graph
        d = Diagram(f"{g!r}: its steps, which feeds which, masks dashed, loops boxed")
        ids = {}
        for o in g.operands:
            kind = {"any": "matrix or vector", "index": "vertex"}.get(g.kinds[o], g.kinds[o])
            d.nodes.append(Node(f"operand-{o}", f"{o} ({kind})", "operand"))
            ids[o] = f"operand-{o}"
        fills = {e.step.index: e.result_fill for e in self.steps}
        _draw_steps(d, g, ids, "", 0, fills)
        d.nodes.append(Node("result", f"result: {g.label(g.result)}", "result"))
        d.edges.append(Edge(_ref_id(ids, "", g.result), "result"))
        return d

    def figure(self):
        """A matplotlib Figure of :meth:`diagram`."""
        from ..compiler.explain_diagram import figure
        return figure(self.diagram())

    def picture(self, fmt: str = "svg") -> bytes:
        """The picture as ``svg`` or ``png`` bytes."""
        from ..compiler.explain_diagram import figure_bytes
        if fmt not in ("svg", "png"):
            raise InputError("a graph definition's picture is svg or png", got=repr(fmt))
        return figure_bytes(self.diagram(), fmt)

    def save(self, path, fmt: str | None = None) -> None:
        """Write the explanation as text, md, html (the text and the picture), svg or png
        (by ``fmt`` or the file's suffix)."""
        from pathlib import Path
        path = Path(path)
        fmt = fmt or {"txt": "text", "htm": "html", "markdown": "md"}.get(
            path.suffix.lstrip(".").lower(), path.suffix.lstrip(".").lower())
        path.write_bytes(self.render(fmt))

    def render(self, fmt: str) -> bytes:
        """The explanation in one of text, md, html, svg, png, as bytes."""
        if fmt in ("svg", "png"):
            return self.picture(fmt)
        if fmt == "html":
            try:
                svg = self.picture("svg").decode("utf-8")
                svg = svg[svg.index("<svg"):]
            except ImportError:  # matplotlib missing (MissingDependency)
                svg = "<p>(install matplotlib for the picture)</p>"
            return ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>gbdist explain"
                    "</title></head><body>\n" + svg + "\n" + self._repr_html_()
                    + "\n</body></html>\n").encode("utf-8")
        if fmt == "md":
            return self.to_markdown().encode("utf-8")
        if fmt == "text":
            return (str(self) + "\n").encode("utf-8")
        raise InputError("unknown explain format", expected="text, md, html, svg or png",
                         got=repr(fmt))


def _ref_id(ids: dict, prefix: str, ref) -> str | None:
    """The diagram node a Ref reads: an operand or outer value by name, a step by index."""
    if not isinstance(ref, Ref):
        return None
    return ids.get(ref.source) if isinstance(ref.source, str) else ids.get((prefix, ref.source))


def _draw_steps(d, g: GraphDef, ids: dict, prefix: str, depth: int, fills: dict) -> None:
    """Add ``g``'s steps (a loop's body when ``prefix`` is "N.") to the diagram ``d``."""
    from ..compiler.explain_diagram import Edge, Node
    for s in g.steps:
        number = f"{prefix}{s.index + 1}"
        if s.operation == "loop":
            _draw_loop(d, g, s, ids, prefix, depth)
            continue
        if s.operation == "loop_value":  # the loop's final value: its carried variable's box
            ids[(prefix, s.index)] = ids.get((prefix, s.inputs[0].source, s.k))
            continue
        names = g.names.get(s.index)
        target = names[0] if names else f"%{number}"
        details = [f"step {number}: {target} = {g.step_text(s)}"]
        if s.mask is not None:
            details.append(f"  mask {g.label(s.mask)}" + (", replace" if s.replace else ""))
        if s.index in fills and fills[s.index] is not None and s.kind != "scalar":
            details.append(f"  result fill {fills[s.index]!r}")
        nid = f"step-{number}"
        d.nodes.append(Node(nid, "\n".join(details), "step", depth))
        ids[(prefix, s.index)] = nid
        refs = [(r, "input") for r in s.inputs] + [(s.out, "out")] + \
            [(x, "input") for x in (s.k, s.at, s.rows, s.cols) + ((s.bound[1],) if s.bound else ())]
        if s.mask is not None:
            refs.append((s.mask.ref, "mask"))
        for r, kind in refs:
            src = _ref_id(ids, prefix, r)
            if src is not None:
                d.edges.append(Edge(src, nid, kind))


def _draw_loop(d, g: GraphDef, s: Step, ids: dict, prefix: str, depth: int) -> None:
    """A loop: its carried variables (fed by their initial values and by each iteration's
    next values) and its body, in a box titled with the stop test."""
    from ..compiler.explain_diagram import Edge, Group, Node
    loop = s.loop
    number = f"{prefix}{s.index + 1}"
    body = loop.graph(g.name)
    inner = {name: _ref_id(ids, prefix, r) for name, r in loop.captures}
    first = len(d.nodes)
    for k, (c, r) in enumerate(zip(loop.carried, s.inputs)):
        vid = f"carried-{number}-{c}"
        d.nodes.append(Node(vid, f"{c}: carried by loop {number}, starts as {g.label(r)}",
                            "carried", depth + 1))
        inner[c] = ids[(prefix, s.index, k)] = vid
        src = _ref_id(ids, prefix, r)
        if src is not None:
            d.edges.append(Edge(src, vid, "initial"))
    _draw_steps(d, body, inner, f"{number}.", depth + 1, {})
    for c, r in zip(loop.carried, loop.next):
        src = _ref_id(inner, f"{number}.", r)
        if src is not None and src != inner[c]:
            d.edges.append(Edge(src, f"carried-{number}-{c}", "next"))
    members = tuple(n.id for n in d.nodes[first:])
    stop = loop.stop
    title = (f"repeat {g.label(stop.args[0])} times" if stop.kind == "repeat" else
             f"until {stop.text} (tested after each iteration)")
    d.groups.append(Group(f"loop-{number}", f"loop {number}: {title}", members, depth))


def _render(g: GraphDef, steps, prefix: str = "") -> list[str]:
    """Each step: ``step N: target = text -> kind``, then its lines, indented."""
    out = []
    for e in steps:
        names = g.names.get(e.step.index)
        target = names[0] if names else f"%{e.step.index + 1}"
        kind = {"any": "matrix or vector (as its input)", "loop": "the loop's variables"}.get(
            e.step.kind, e.step.kind)
        out.append(f"step {prefix}{e.step.index + 1}: {target} = {e.text}    -> {kind}")
        out += [f"    {line}" for line in e.lines]
        out += [f"    ran: {line}" for line in e.ran]
    return out


def _show(v) -> str:
    if hasattr(v, "nvals"):
        return repr(v)
    return f"{v!r} ({type(v).__name__})"


def _ran(v) -> tuple:
    if hasattr(v, "iterations") and hasattr(v, "state"):  # a loop (gbdist.graph.loops.LoopRun)
        lines = [f"{v.iterations} iteration(s); the last one's steps:"]
        for i, x in enumerate(v.last):
            lines += [f"  %{i + 1}: {line}" for line in _ran(x)]
        return tuple(lines)
    d = getattr(v, "decision", None)
    lines = []
    if d is not None:
        kind = "structural" if d.structural else "fill"
        lines.append(f"{kind} semantics, result fill {d.result_fill!r}")
    lines.append(_show(v))
    return tuple(lines)


def _fills_of(g: GraphDef, fills) -> dict:
    arrays = [o for o in g.operands if g.kinds[o] not in ("index", "scalar")]
    if isinstance(fills, dict):
        unknown = sorted(set(fills) - set(arrays))
        if unknown:
            raise InputError(f"graph {g.name!r} has no matrix or vector operand {unknown[0]!r}",
                             expected=", ".join(arrays))
        out = {o: fills.get(o, rule.ABSENT) for o in arrays}
    else:
        out = {o: fills for o in arrays}
    for o, f in out.items():
        if not (f == rule.ABSENT or (f == 0 and not isinstance(f, (str, bool)))):
            raise InputError(f"the fill of operand {o!r} is 'absent' (a graph) or 0 (data)",
                             got=repr(f))
    return out


def explain_graph(g: GraphDef, fills="absent") -> GraphExplanation:
    """The explanation of ``g`` before it runs, its operands assumed to have ``fills``."""
    fills = _fills_of(g, fills)
    return GraphExplanation(g, fills, _explain_steps(g, fills)[0])


def _explain_steps(g: GraphDef, fills: dict):
    """(StepExplanations, step index -> result fill) of ``g``'s steps; ``fills``: string
    source -> fill."""
    step_fill: dict[int, object] = {}

    def fill(ref):
        if isinstance(ref, Ref):
            return fills.get(ref.source) if isinstance(ref.source, str) else step_fill.get(ref.source)
        return None  # a number

    steps = []
    for s in g.steps:
        if s.operation == "loop":
            lines, result_fill = _loop_lines(g, s, fill)
        elif s.operation == "loop_value":
            lines, result_fill = [], step_fill[s.inputs[0].source][s.k]
        else:
            lines, result_fill = _step_lines(g, s, fill)
        step_fill[s.index] = result_fill
        steps.append(StepExplanation(s, g.step_text(s), tuple(lines), result_fill))
    return tuple(steps), step_fill


def _loop_lines(g: GraphDef, s: Step, fill):
    """A loop: its variables, the body's steps (each with its decision), what each variable
    becomes, and when it stops. The fills of the carried variables are their initial ones
    when an iteration keeps them, else decided when it runs."""
    loop = s.loop
    body = loop.graph(g.name)
    outer = {n: fill(r) for n, r in loop.captures}
    carried = [fill(r) for r in s.inputs]
    for _ in range(3):
        steps, step_fill = _explain_steps(body, {**outer, **dict(zip(loop.carried, carried))})
        after = [step_fill.get(r.source) if isinstance(r.source, int) else
                 dict(zip(loop.carried, carried)).get(r.source, outer.get(r.source))
                 for r in loop.next]
        if after == carried:
            break
        carried = [a if a == b else None for a, b in zip(carried, after)]
    words = lambda f: "fill decided when it runs" if f is None else f"fill {f!r}"  # noqa: E731
    lines = ["carried: " + ", ".join(
        f"{c} = {g.label(r)} ({body.kinds.get(c)}, {words(f)})"
        for c, r, f in zip(loop.carried, s.inputs, carried))]
    lines.append("each iteration:")
    lines += ["  " + line for line in _render(body, steps, f"{s.index + 1}.")]
    lines.append("  next: " + ", ".join(
        f"{c} = " + (f"step {s.index + 1}.{r.source + 1}" if isinstance(r.source, int) and
                     not r.transpose else body.label(r)) for c, r in zip(loop.carried, loop.next)))
    lines.append("stop: " + _stop_text(g, loop))
    return lines, tuple(carried)


def _stop_text(g: GraphDef, loop) -> str:
    stop = loop.stop
    if stop.kind == "repeat":
        return f"repeat {g.label(stop.args[0])}: exactly that many iterations"
    limit = ("the largest dimension of the matrices and vectors it reads, plus 1"
             if loop.limit is None else g.label(loop.limit))
    return (f"until {stop.text}, tested after each iteration; at most {limit} iterations "
            "(LoopLimitError past it)")


def _algebra(a) -> str:
    if isinstance(a, Semiring):
        label = f"semiring {a.name}" if a.name else "semiring"
        return (f"{label}: ⊗ = {a.mul.name}(x, y) = {rule.shown(a.mul.formula)}, ⊕ = "
                f"{a.add.name} (identity {rule.shown(a.add.identity)})")
    if isinstance(a, Monoid):
        return f"monoid {a.name}: {rule.shown(a.op.formula)} (identity {rule.shown(a.identity)})"
    if isinstance(a, Op):
        return f"op {a.name}: {rule.shown(a.formula)}"
    if isinstance(a, IndexUnaryOp):
        return (f"index-unary op {a.name}(x, i, j, y) = {_iu_text(a)} (x the value, i the row, "
                "j the column, y the thunk)")
    return ""


def _at_zero(op: Op, bound) -> float | None:
    """op at an unstored 0 (with the bound number), as ``apply`` computes it; None: unknown."""
    from ..algebra.formulas import X, Y
    if bound is None:
        subs = {X: 0}
    elif isinstance(bound[1], float):
        subs = {X: 0, Y: bound[1]} if bound[0] == "right" else {X: bound[1], Y: 0}
    else:
        return None  # a scalar computed by the graph: known when it runs
    try:
        v = complex(sp.N(op.formula.xreplace(subs)))
    except (TypeError, ValueError):
        return float("nan")
    return v.real if v.imag == 0 else float("nan")


def _decide(g: GraphDef, s: Step, fill):
    """(Decision or None, why not) from the compiler's rule, as the operation calls it."""
    if s.operation in ("vector", "ids"):
        return rule.Decision(s.operation, True, rule.ABSENT, "a new vector, its entries stored "
                             "(every one, or the one at=)"), None
    ins = [fill(r) for r in s.inputs if isinstance(r, Ref) and not _is_scalar(g, r)]
    if _REFUSED in ins:
        return _REFUSED, "not reached: a step before it is refused for these fills"
    if any(f is None for f in ins):
        return None, "decided when it runs (an input's fill is known only then)"
    op = s.operation
    try:
        if op in ("mxm", "mxv", "vxm"):
            return rule.product(op, s.algebra, tuple(ins), tuple(ins)), None
        if op in ("ewise_add", "ewise_mult"):
            return rule.ewise(op, s.algebra, op == "ewise_add", tuple(ins), tuple(ins)), None
        if op == "apply" and isinstance(s.algebra, IndexUnaryOp):
            return rule.Decision(op, True, rule.ABSENT, _POSITIONS.format(s.algebra.name)), None
        if op == "apply":
            at_zero = 0.0
            if ins[0] == 0:
                at_zero = _at_zero(s.algebra, s.bound)
                if at_zero is None:
                    return None, "decided when it runs (the bound scalar is known only then)"
            return rule.apply_value("apply", at_zero, tuple(ins), tuple(ins)), None
        if op.startswith("reduce_"):
            return rule.reduction(op, s.algebra, ins[0]), None
    except GbdistError as e:
        return _REFUSED, f"REFUSED: {e.message}"
    if op in _NEW_VALUES:  # counts and positions, or a new pattern: a graph's entries
        return rule.Decision(op, True, rule.ABSENT, _NEW_VALUES[op]), None
    why = {"select": "select keeps or drops stored entries; an unstored entry stays unstored",
           **dict.fromkeys(("extract", "assign", "subassign"),
                           "indexing moves stored entries; unstored entries stay unstored"),
           "diag": "the stored entries move onto (or off) the diagonal",
           "concat": "the stored entries move into the joined shape",
           "resize": "the stored entries inside the new shape are kept"}[op]
    return rule.Decision(op, True, ins[0], why), None


_POSITIONS = ("{0} reads the entries' positions: only stored entries take part, unstored "
              "ones stay unstored")
_NEW_VALUES = {
    "ewise_union": "the union of the stored entries; where one side is missing its default "
                   "stands in (not the fill)",
    "count": "counts the stored entries: a row (column) without one is unstored",
    "argmin": "the position of a stored value: a row (column) without one is unstored",
    "argmax": "the position of a stored value: a row (column) without one is unstored",
    "kronecker": "op of every pair of stored entries: only stored entries take part",
}


_REFUSED = "refused"


def _iu_text(iu: IndexUnaryOp) -> str:
    """An index-unary op's formula as mathematics."""
    from ..algebra import terms
    try:
        return rule.shown(terms.decode(iu.term))
    except Exception:  # noqa: BLE001 - a term sympy cannot rebuild: as stored
        return terms.text(iu.term)


def _is_scalar(g: GraphDef, r: Ref) -> bool:
    kind = g.kinds[r.source] if isinstance(r.source, str) else g.steps[r.source].kind
    return kind == "scalar"


def _step_lines(g: GraphDef, s: Step, fill):
    lines = []
    if s.algebra is not None:
        lines.append("algebra: " + _algebra(s.algebra))
    if s.operation == "select":
        k = f", k = {g.label(s.k)}" if s.k is not None else (
            ", k = 0" if s.selector in ("tril", "triu", "diag", "offdiag") else "")
        iu = s.algebra if isinstance(s.algebra, IndexUnaryOp) else (
            INDEX_UNARY.get(s.selector) if s.selector not in _SELECT_WORDS else None)
        if iu is not None:
            lines.append(f"selector: {s.selector}{k} (keeps stored entries with {_iu_text(iu)}, "
                         "y = k)")
        else:
            lines.append(f"selector: {s.selector}{k} (keeps stored entries with "
                         f"{_SELECT_WORDS.get(s.selector, f'value {s.selector} k')})")
    if s.bound is not None:
        lines.append(f"bound scalar: {s.bound[0]}={g.label(s.bound[1])} "
                     + ("(op(a, s))" if s.bound[0] == "right" else "(op(s, a))"))
    d, why_not = _decide(g, s, fill)
    if d is not None and d is not _REFUSED:
        head, *rest = str(d).splitlines()
        lines.append("decision: " + head)
        lines += [line.strip() and "  " + line.strip() for line in rest]
        result_fill = d.result_fill
    else:
        lines.append("decision: " + why_not)
        result_fill = d  # None (known at run time) or _REFUSED
    if s.kind != "scalar":
        lines.append("mask: " + _mask_text(g, s.mask, s.replace, s.operation == "subassign"))
        if s.accum is not None:
            lines.append(f"accumulator: {s.accum.name} — out={g.label(s.out)} keeps its entries; "
                         f"where both are stored the value is {s.accum.name}(out, result)")
        elif s.out is not None:
            lines.append(f"out={g.label(s.out)}: the result is written into a copy of it "
                         "(no accumulator: inside the mask its entries are replaced)")
    lines.append("result dtype: " + _dtype_text(s))
    return lines, result_fill


def _mask_text(g: GraphDef, m: MaskRef | None, replace_: bool, region: bool = False) -> str:
    if m is None:
        return "none (every entry of the result may be written)"
    kind = "structural (the stored entries" if m.structural else "by value (the stored nonzero entries"
    text = f"{kind} of {g.label(m.ref)})"
    if m.complement:
        text = f"complemented {text}: written only where the pattern has no entry"
    if replace_:
        where = "region C(rows, cols) (C outside it is untouched)" if region else "output"
        text += f"; replace: entries of the {where} outside the mask are deleted"
    return text


def _dtype_text(s: Step) -> str:
    if s.dtype is not None:
        return f"{s.dtype} (dtype=)"
    if s.out is not None:
        return "out's dtype"
    if s.operation in ("select", "extract", "assign", "subassign", "diag", "resize"):
        return "the input's dtype"
    if s.operation in ("count", "argmin", "argmax") or (
            s.operation == "apply" and getattr(s.algebra, "result", None) == "int64"):
        return "int64"
    if s.operation == "concat":
        return "the operands' common dtype"
    if s.operation in ("vector", "ids"):
        return "int64" if s.operation == "ids" else "the value's (a number: float64)"
    ops = {"mxm": "⊗ and ⊕ keep", "mxv": "⊗ and ⊕ keep", "vxm": "⊗ and ⊕ keep"}.get(
        s.operation, "the op keeps")
    return ("the operands' common dtype when it is floating, or when " + ops +
            " integers and bool (+, −, ×, min, max, comparisons); else float64")


__all__ = ["GraphExplanation", "StepExplanation", "explain_graph"]
