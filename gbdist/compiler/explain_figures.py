"""Pictures of what the compiler decided (matplotlib, an optional dependency).

For each product, a small worked example: two rows ``a`` and ``b`` over k = 8
columns, the cells each pass of the chosen strategy visits, the value every
visited cell contributes (the op's formula evaluated as written, by the
reference evaluator) and how the passes add up, next to the sum taken directly
over the union. Then the plan as a diagram: operands → steps → epilogue.

Every visited cell is a rectangle with ``gid="visit-<pass>-<column>"`` and every
plan box ``gid="step-<name>"``, so a saved SVG can be checked (tests count them).
"""
from __future__ import annotations

import io

import numpy as np

from ..errors import GbdistError

# The worked example: a stores columns {0, 1, 3, 5}, b stores {1, 2, 5, 6}; 4 and 7 are in neither.
EXAMPLE_A = (3.0, 1.0, 0.0, 2.0, 0.0, 4.0, 0.0, 0.0)
EXAMPLE_B = (0.0, 2.0, 1.0, 0.0, 0.0, 4.0, 3.0, 0.0)
FORMATS = ("text", "md", "html", "svg", "png")


class MissingDependency(GbdistError, ImportError):
    """An optional package that a feature needs is not installed."""


def _matplotlib():
    try:
        import matplotlib
        from matplotlib.figure import Figure
        from matplotlib.patches import FancyBboxPatch, Rectangle
    except ImportError:
        raise MissingDependency(
            "pictures of an explanation need matplotlib",
            got="matplotlib is not installed",
            hint="pip install matplotlib (or use --format text/md, which need nothing)") from None
    del matplotlib
    return Figure, Rectangle, FancyBboxPatch


def example_rows(p):
    """The worked example's rows as the product sees them: a boolean domain takes the
    pattern, and each operand's apply() chain (Jaccard's nonzero) transforms its values."""
    from ..algebra.evaluate import evaluate
    a, b = np.array(EXAMPLE_A), np.array(EXAMPLE_B)
    rows = []
    for row, chain in ((a, p.left_ops), (b, p.right_ops)):
        stored = row != 0
        vals = row.copy()
        for formula in chain:
            with np.errstate(all="ignore"):
                vals = np.broadcast_to(np.asarray(evaluate(formula, {"x": vals}), dtype=float),
                                       vals.shape).copy()
        vals[~stored] = 0.0
        rows.append(vals)
    a, b = rows
    if p.domain == "boolean":
        a, b = (a != 0).astype(float), (b != 0).astype(float)
    return a, b


def passes(p) -> list[tuple[str, str, list[int], np.ndarray]]:
    """(pass id, label, columns visited, value per visited column) for a product's strategy,
    on the worked example; the values are the op's formulas evaluated as written."""
    from ..algebra.evaluate import evaluate
    from ..algebra.formulas import X, Y
    a, b = example_rows(p)
    k = len(a)
    sa = set(np.flatnonzero(np.array(EXAMPLE_A)))
    sb = set(np.flatnonzero(np.array(EXAMPLE_B)))
    both, union = sorted(sa & sb), sorted(sa | sb)

    def f_of(expr, cols, xs=None, ys=None):
        xs = a[cols] if xs is None else xs
        ys = b[cols] if ys is None else ys
        with np.errstate(all="ignore"):
            v = evaluate(expr, {"x": xs.astype(float), "y": ys.astype(float)})
        return np.broadcast_to(np.asarray(v, dtype=float), (len(cols),)).copy()

    if p.strategy == "intersection":
        return [("inter", f"{_oplus(p.semiring_add)} over A∩B of f", both, f_of(p.f, both))]
    if p.strategy == "union-correction":
        out = [("inter", "Σ over A∩B of g", both, f_of(p.g, both))]
        ca, cb = sorted(sa), sorted(sb)
        out.append(("rowA", "Σ over A of L − C", ca, f_of(p.L - p.C, ca, a[ca], np.zeros(len(ca)))))
        out.append(("rowB", "Σ over B of R − C", cb, f_of(p.R - p.C, cb, np.zeros(len(cb)), b[cb])))
        if p.C != 0:
            allc = list(range(k))
            out.append(("corner", "k·C", allc, np.full(k, float(p.C))))
        return out
    # two-pass union: B's stored columns first, then A's (all of them when ⊕ is idempotent,
    # only those B lacks when it is plus)
    first = sorted(sb)
    second = sorted(sa) if p.semiring_add != "plus" else sorted(sa - sb)
    out = [("pass1", "pass 1: B's stored columns", first, f_of(p.f, first)),
           ("pass2", "pass 2: A's stored columns" + (" (A∩B again)" if p.semiring_add != "plus"
                                                     else " that B lacks"),
            second, f_of(p.f, second))]
    del union
    return out


def _oplus(add: str) -> str:
    """How a row of the picture names ⊕: Σ and Π for plus and times, else the monoid's
    name (min, max, lor …), never Σ for a ⊕ that does not add."""
    return {"plus": "Σ", "times": "Π"}.get(add, add)


def _combine(add: str, values) -> float:
    values = [v for v in values]
    if not values:
        return float("nan")
    if add == "max":
        return float(np.max(values))
    if add == "min":
        return float(np.min(values))
    if add == "times":
        return float(np.prod(values))
    return float(np.sum(values))


def direct_value(p) -> float:
    """⊕ of f over every column (the value the strategy must reproduce)."""
    from ..algebra.evaluate import evaluate
    a, b = example_rows(p)
    if p.structural:
        cols = np.flatnonzero((np.array(EXAMPLE_A) != 0) & (np.array(EXAMPLE_B) != 0))
        a, b = a[cols], b[cols]
    with np.errstate(all="ignore"):
        v = np.broadcast_to(np.asarray(evaluate(p.f, {"x": a, "y": b}), dtype=float), a.shape)
    return _combine(p.semiring_add, list(v))


def draw_product(ax, p) -> None:
    """One product's worked example on ``ax``."""
    _, Rectangle, _ = _matplotlib()
    a, b = example_rows(p)
    k = len(a)
    rows = passes(p)
    n = 2 + len(rows)
    ax.set_xlim(-3.2, k + 3.2)
    ax.set_ylim(-0.6, n + 0.9)
    ax.axis("off")
    ax.set_title(f"{p.strategy}: {p.expression}", fontsize=9, loc="left")
    for i, (name, vals) in enumerate((("a", a), ("b", b))):
        y = n - i
        ax.text(-0.2, y + 0.45, f"row {name}", ha="right", va="center", fontsize=8)
        pattern = np.array(EXAMPLE_A if name == "a" else EXAMPLE_B) != 0
        for c in range(k):
            stored = pattern[c]
            ax.add_patch(Rectangle((c, y), 0.95, 0.9, facecolor="#cfe2f3" if stored else "white",
                                   edgecolor="#555555", linewidth=0.6))
            ax.text(c + 0.47, y + 0.45, f"{vals[c]:g}" if stored else "·", ha="center", va="center",
                    fontsize=8)
    ax.text(k + 0.2, n + 0.45, "stored: blue; · = fill", fontsize=7, va="center")
    totals = []
    colors = {"inter": "#f6b26b", "rowA": "#93c47d", "rowB": "#8e7cc3", "corner": "#e06666",
              "pass1": "#f6b26b", "pass2": "#93c47d"}
    for r, (pid, label, cols, values) in enumerate(rows):
        y = n - 2 - r
        ax.text(-0.2, y + 0.45, label, ha="right", va="center", fontsize=7)
        for c in range(k):
            ax.add_patch(Rectangle((c, y), 0.95, 0.9, facecolor="#f3f3f3", edgecolor="#dddddd",
                                   linewidth=0.4))
        for c, v in zip(cols, values):
            ax.add_patch(Rectangle((c, y), 0.95, 0.9, facecolor=colors.get(pid, "#f6b26b"),
                                   edgecolor="#333333", linewidth=0.7, gid=f"visit-{pid}-{c}"))
            ax.text(c + 0.47, y + 0.45, f"{v:.3g}", ha="center", va="center", fontsize=7)
        total = _combine("plus" if p.strategy == "union-correction" else p.semiring_add, list(values))
        totals.append(total)
        ax.text(k + 0.2, y + 0.45, f"= {total:.4g}", va="center", fontsize=8)
    got = _combine("plus" if p.strategy == "union-correction" else p.semiring_add, totals)
    ax.text(0, -0.4, f"{p.semiring_add} of the passes = {got:.6g};   {p.semiring_add} of f over all "
            f"columns = {direct_value(p):.6g}", fontsize=8)


def draw_plan(ax, ex) -> None:
    """The plan: operands → steps (primitives) → the fused epilogue."""
    _, _, FancyBboxPatch = _matplotlib()
    from .explain_math import text
    steps = ex.steps
    n = max(len(steps), 2)
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.5, n + 0.5)
    ax.axis("off")
    ax.set_title("plan: operands → steps → epilogue", fontsize=9, loc="left")

    def box(x, y, w, label, gid, color):
        ax.add_patch(FancyBboxPatch((x, y - 0.3), w, 0.6, boxstyle="round,pad=0.05", facecolor=color,
                                    edgecolor="#333333", linewidth=0.7, gid=gid))
        ax.text(x + w / 2, y, label, ha="center", va="center", fontsize=7)

    names = sorted({side[1][0] for st in ex.plan.steps for side in st.sides}) or ["A", "B"]
    ops = {name: n * (len(names) - j - 0.5) / len(names) for j, name in enumerate(names)}
    for name, y in ops.items():
        box(0.1, y, 0.8, name, f"operand-{name}", "#cfe2f3")
    from .explain_math import STEP_SHAPE
    plan_steps = list(ex.plan.steps)
    for i, (name, txt, kind) in enumerate(steps):
        y = n - 0.5 - i
        read = {side[1][0] for side in plan_steps[i].sides} if i < len(plan_steps) else set()
        short = txt if len(txt) <= 44 else txt[:41] + "…"
        box(1.6, y, 4.8, f"{name} = {short}  [{STEP_SHAPE.get(kind, kind)}]", f"step-{name}",
            "#fff2cc")
        for op_name, oy in ops.items():
            if op_name in read:
                ax.annotate("", xy=(1.6, y), xytext=(0.9, oy),
                            arrowprops=dict(arrowstyle="->", linewidth=0.6, color="#666666"))
        ax.annotate("", xy=(7.0, n / 2), xytext=(6.4, y),
                    arrowprops=dict(arrowstyle="->", linewidth=0.6, color="#666666"))
    result = text(ex.result) if ex.result is not None else ex.epilogue
    short = result if len(result) <= 30 else result[:27] + "…"
    box(7.0, n / 2, 2.9, f"result = {short}", "epilogue", "#d9ead3")


def figure(ex, which: str = "all"):
    """A matplotlib Figure: ``"all"`` (every product, then the plan), ``"decision"`` or ``"plan"``."""
    Figure, _, _ = _matplotlib()
    if which not in ("all", "decision", "plan"):
        raise GbdistError("unknown figure", expected="'all', 'decision' or 'plan'", got=repr(which))
    prods = list(ex.products) if which in ("all", "decision") else []
    heights = [2 + len(passes(p)) for p in prods]
    if which in ("all", "plan"):
        heights.append(max(len(ex.steps), 2) + 1)
    fig = Figure(figsize=(9, 0.55 * sum(heights) + 0.6 * len(heights)))
    axes = fig.subplots(len(heights), 1, gridspec_kw={"height_ratios": heights}, squeeze=False)[:, 0]
    for ax, p in zip(axes, prods):
        draw_product(ax, p)
    if which in ("all", "plan"):
        draw_plan(axes[-1], ex)
    fig.subplots_adjust(left=0.2, right=0.88, top=0.94, bottom=0.03, hspace=0.45)
    return fig


def figure_bytes(ex, fmt: str = "svg", which: str = "all") -> bytes:
    import matplotlib
    # text as text (small files, searchable), and ids that do not change between runs
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "gbdist"}):
        fig = figure(ex, which)
        buf = io.BytesIO()
        # "tight": the titles above the first panel stay inside the picture
        fig.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else None,
                    bbox_inches="tight", pad_inches=0.1)
    return buf.getvalue()


def render(ex, fmt: str) -> bytes:
    """The explanation in one of FORMATS, as bytes."""
    if fmt == "text":
        return (str(ex) + "\n").encode("utf-8")
    if fmt == "md":
        return ex.to_markdown().encode("utf-8")
    if fmt == "html":
        try:
            svg = figure_bytes(ex, "svg").decode("utf-8")
            svg = svg[svg.index("<svg"):]
        except MissingDependency:
            svg = "<p>(install matplotlib for the pictures)</p>"
        page = ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>gbdist explain</title>"
                + MATHJAX + "</head><body>\n" + ex._repr_html_() + "\n" + svg + "\n<pre>"
                + _escape(str(ex)) + "</pre>\n</body></html>\n")
        return page.encode("utf-8")
    if fmt in ("svg", "png"):
        return figure_bytes(ex, fmt)
    raise GbdistError("unknown explain format", expected=", ".join(FORMATS), got=repr(fmt))


# The page's \(…\) mathematics is typeset by MathJax, loaded from its CDN (a notebook
# brings its own). Offline, the page still reads: the plain-text explanation follows the
# typeset one.
MATHJAX = ("<script>window.MathJax = {tex: {inlineMath: [['\\\\(', '\\\\)']]}};</script>"
           "<script async src='https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js'>"
           "</script>")


def _escape(s: str) -> str:
    import html
    return html.escape(s)


def save(ex, path, fmt: str | None = None) -> None:
    from pathlib import Path
    path = Path(path)
    if fmt is None:
        suffix = path.suffix.lstrip(".").lower()
        fmt = {"txt": "text", "markdown": "md", "htm": "html"}.get(suffix, suffix)
    data = render(ex, fmt)
    path.write_bytes(data)
