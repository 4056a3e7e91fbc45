"""Pictures of a plan of steps: boxes for the operands and steps, arrows for which step
feeds which (inputs solid, masks dashed, a loop's next values dotted), and a loop as a
box around its body with its stop test as the title (matplotlib, optional: see
``explain_figures``).

The front end that knows the steps (a graph definition, :mod:`gbdist.front.graph_explain`)
describes them as a :class:`Diagram` (plain data); this module only lays it out and draws
it. Every box carries ``gid=<node id>`` and every loop box ``gid=<group id>``, so a saved
SVG can be checked (tests look for each step's text and id).
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field

from .explain_figures import _matplotlib

# what each kind of box and arrow looks like
FILL = {"operand": "#cfe2f3", "step": "#fff2cc", "carried": "#ead1dc", "result": "#d9ead3"}
EDGE = {"input": ("-", "#666666"), "mask": ("--", "#e69138"), "out": ("-.", "#3d85c6"),
        "next": (":", "#8e7cc3"), "initial": ("-", "#8e7cc3")}


@dataclass(frozen=True)
class Node:
    id: str
    label: str  # first line: what the box is; more lines: its details (mask, fill)
    kind: str = "step"  # operand, step, carried (a loop variable), result
    depth: int = 0  # how many loops it sits in


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    kind: str = "input"  # input, mask, out, next, initial


@dataclass(frozen=True)
class Group:
    id: str
    label: str  # the loop and its stop test
    members: tuple  # node ids
    depth: int = 0


@dataclass
class Diagram:
    title: str
    nodes: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    groups: list = field(default_factory=list)


ROW = 0.42  # inches per line of text


def _rows(d: Diagram) -> dict:
    """Node id -> (top row, number of lines); operands in the left column, every other
    node below the one before it, a group's title taking a row above its first member."""
    place, row, op_row = {}, 0, 0
    for n in d.nodes:
        lines = n.label.count("\n") + 1
        if n.kind == "operand":
            place[n.id] = (op_row, lines)
            op_row += lines + 0.4
            continue
        row += sum(1 for g in d.groups if g.members and g.members[0] == n.id)  # loop titles
        place[n.id] = (row, lines)
        row += lines + 0.35
    return place


def figure(d: Diagram):
    """A matplotlib Figure of the diagram."""
    Figure, Rectangle, FancyBboxPatch = _matplotlib()
    place = _rows(d)
    height = max((r + n for r, n in place.values()), default=1) + 1
    fig = Figure(figsize=(11, ROW * height + 0.6))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(-0.2, 11.2)
    ax.set_ylim(-height, 1.0)
    ax.axis("off")
    ax.text(0, 0.5, d.title, fontsize=9, va="center", fontweight="bold")
    boxes = {}
    for n in d.nodes:
        row, lines = place[n.id]
        x = 0.0 if n.kind == "operand" else 2.4 + 0.35 * n.depth
        w = 1.7 if n.kind == "operand" else 10.6 - x - 0.35 * n.depth
        y = -row - lines + 0.3
        ax.add_patch(FancyBboxPatch((x, y), w, lines - 0.4, boxstyle="round,pad=0.06",
                                    facecolor=FILL.get(n.kind, "#eeeeee"), edgecolor="#333333",
                                    linewidth=0.7, gid=n.id))
        ax.text(x + 0.1, y + (lines - 0.4) / 2, n.label, fontsize=7, va="center", ha="left",
                family="monospace", linespacing=1.5)
        boxes[n.id] = (x, y, w, lines - 0.4)
    for g in d.groups:
        inside = [boxes[m] for m in g.members if m in boxes]
        if not inside:
            continue
        x0 = min(b[0] for b in inside) - 0.15
        y0 = min(b[1] for b in inside) - 0.2
        y1 = max(b[1] + b[3] for b in inside) + 0.9
        x1 = max(b[0] + b[2] for b in inside) + 0.15
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor="none", edgecolor="#8e7cc3",
                               linewidth=1.2, linestyle="-", gid=g.id))
        ax.text(x0 + 0.1, y1 - 0.35, g.label, fontsize=7.5, va="center", color="#5b3f99",
                fontweight="bold")
    for e in d.edges:
        if e.source not in boxes or e.target not in boxes:
            continue
        (sx, sy, sw, sh), (tx, ty, _, th) = boxes[e.source], boxes[e.target]
        style, color = EDGE.get(e.kind, EDGE["input"])
        if e.source.startswith("operand-"):  # across, from the operand column
            start, rad = (sx + sw, sy + sh / 2), 0.0
        else:  # down (or, for a loop's next value, up) the left side of the step column
            start, rad = (sx, sy + sh / 2), (0.45 if ty < sy else -0.45)
        ax.annotate("", xy=(tx, ty + th / 2), xytext=start,
                    arrowprops=dict(arrowstyle="->", linewidth=0.7, color=color, linestyle=style,
                                    connectionstyle=f"arc3,rad={rad}"))
    return fig


def figure_bytes(d: Diagram, fmt: str = "svg") -> bytes:
    """The picture as SVG (text as text, stable ids) or PNG."""
    import matplotlib
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "gbdist"}):
        fig = figure(d)
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else None,
                    bbox_inches="tight", pad_inches=0.1)
    return buf.getvalue()


__all__ = ["Diagram", "Edge", "Group", "Node", "figure", "figure_bytes"]
