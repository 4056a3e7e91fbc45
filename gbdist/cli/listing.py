"""``gbdist metrics``: every metric and graph definition gbdist knows, read from the registry.

    gbdist metrics                       # metrics, then graph definitions: aligned tables
    gbdist metrics --file my.gbd         # and the file's own (marked as such)
    gbdist metrics --graphs              # graph definitions only (--no-graphs: metrics only)
    gbdist metrics --format json         # for scripts: full docs, parameters, aliases, sources

Nothing here lists names by hand: metrics, their parameters (with defaults), aliases
and docs come from :mod:`gbdist.names` (built-ins through the stored library index,
:func:`gbdist.front.library.ensure_names`), graph definitions from
:func:`gbdist.front.library.graph_names`, so a metric or alias added anywhere shows up.
"""
from __future__ import annotations

import json
import math

SUMMARY_WIDTH = 72  # the most characters of a doc shown in the table


def add_arguments(p) -> None:
    p.add_argument("--file", "-f", action="append", default=[], metavar="F",
                   help="a metric file (.gbd) whose metrics and graph definitions are listed "
                        "too, marked as the file's (may be repeated)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--graphs", action="store_true",
                       help="list only the graph definitions (what `gbdist run` runs)")
    which.add_argument("--no-graphs", action="store_true", help="list only the metrics")
    p.add_argument("--format", default="text", choices=("text", "json"),
                   help="text: aligned tables (default); json: one object {\"metrics\": [...], "
                        "\"graphs\": [...]} with each entry's full doc (infinite defaults are "
                        "the strings \"inf\" / \"-inf\")")


def run(args) -> int:
    from ..front import load
    from ..front.library import ensure_names
    ensure_names()
    user_metrics: dict = {}  # name -> file, in the order of the files
    user_graphs: dict = {}
    for path in args.file:
        defs = load(path)
        user_metrics.update(dict.fromkeys(defs.metrics, str(path)))
        user_graphs.update(dict.fromkeys(defs.graphs, str(path)))
    metrics = [] if args.graphs else metric_entries(user_metrics)
    graphs = [] if args.no_graphs else graph_entries(user_graphs)
    if args.format == "json":
        keep = {k: v for k, v in (("metrics", metrics), ("graphs", graphs))
                if not (k == "metrics" and args.graphs) and not (k == "graphs" and args.no_graphs)}
        print(json.dumps(keep, indent=2, ensure_ascii=False, allow_nan=False))
        return 0
    blocks = []
    if not args.graphs:
        blocks += _metric_tables(metrics)
    if not args.no_graphs:
        blocks += _graph_tables(graphs)
    print("\n\n".join(blocks))
    return 0


# --- what the registry holds ------------------------------------------------------------


def metric_entries(user: dict) -> list[dict]:
    """One dict per metric: name, parameters (default or None: required), aliases, doc,
    summary, source ("built-in", or the file: ``user`` maps names to the --file that defined
    them), user (not built-in)."""
    from .. import names
    aliases: dict = {}
    for n in names.metric_names(aliases=True):  # every spelling the registry resolves
        m = names.find_metric(n)
        if m is not None and m.name != n:
            aliases.setdefault(m.name, []).append(n)
    out = []
    for n in names.metric_names():
        m = names.find_metric(n)
        spelled = list(dict.fromkeys(list(m.aliases) + aliases.get(n, [])))
        source = user.get(n) or _source(m)
        out.append({"name": n, "parameters": {k: _number(v) for k, v in m.params.items()},
                    "aliases": spelled, "doc": m.doc.strip(), "summary": summary(m.doc),
                    "source": source, "user": source != "built-in"})
    return out


def graph_entries(user: dict) -> list[dict]:
    """One dict per graph definition: name, operands (name and kind), result kind, doc,
    summary, source, user."""
    from ..front.library import GRAPH_LIBRARY, find_graph, graph_names
    out = []
    for n in graph_names():
        g = find_graph(n)
        source = user.get(n) or ("built-in" if g.source == str(GRAPH_LIBRARY) else g.source)
        out.append({"name": n,
                    "operands": [{"name": o, "kind": _kind(g.kinds.get(o)),
                                  **({"default": g.defaults[o]} if g.defaults.get(o) is not None
                                     else {})} for o in g.operands],
                    "result": result_kind(g), "doc": g.doc.strip(), "summary": summary(g.doc),
                    "source": source, "user": source != "built-in"})
    return out


def result_kind(g) -> str:
    """What running ``g`` returns: scalar, vector or matrix ("matrix or vector" when it
    follows an operand's kind)."""
    ref = g.result
    kind = g.kinds.get(ref.source) if isinstance(ref.source, str) else g.steps[ref.source].kind
    return _kind(kind)


def _kind(kind) -> str:
    return "matrix or vector" if kind in (None, "any", "array") else kind


def _source(m) -> str:
    from ..front.library import is_builtin
    return "built-in" if is_builtin(m) else str(m.source)


def _number(v):
    """A parameter default as JSON: a number ("inf", "-inf", "nan" as strings), or a
    column operand's default as text (``var(A, B)``)."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    if v is None or isinstance(v, (int, float)):
        return v
    return param_default(v)


def summary(doc: str, width: int = SUMMARY_WIDTH) -> str:
    """The first sentence of ``doc`` on one line, cut at a clause (``,`` ``;`` ``:`` outside
    brackets) when longer than ``width``; " …" marks a cut."""
    text = " ".join(doc.split())
    end = len(text)
    for stop in (". ", "; "):
        i = _outside(text, stop)
        if i is not None:
            end = min(end, i)
    text = text[:end].rstrip(".")
    if len(text) <= width:
        return text
    cut = None
    for sep in (": ", "; ", ", "):
        i = _outside(text[:width], sep, last=True)
        if i is not None and i > 0:
            cut = i if cut is None else max(cut, i)
    if cut is None:
        cut = text.rfind(" ", 0, width) if " " in text[:width] else width
    return text[:cut].rstrip(" ,;:") + " …"


def _outside(text: str, sep: str, last: bool = False):
    """The first (or last) index of ``sep`` in ``text`` outside brackets, or None."""
    depth, found = 0, None
    for i, ch in enumerate(text):
        if ch in "([{⟨":
            depth += 1
        elif ch in ")]}⟩":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(sep, i):
            found = i
            if not last:
                return i
    return found


# --- tables ---------------------------------------------------------------------------


def param_default(v) -> str:
    """A parameter's default as the table shows it: a number, or for a column operand the
    column statistic it defaults to (``var(A, B)``, ``range(A, B)``)."""
    if isinstance(v, (int, float)):
        return f"{v:g}"
    default = getattr(v, "default", None)
    return f"{default}(A, B)" if default else str(v)


def _params_text(params: dict) -> str:
    return ", ".join(k if v is None else f"{k}={param_default(v)}"
                     for k, v in params.items()) or "-"


def _table(header: tuple, rows: list) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for r in [header, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(r, widths)] + [str(r[-1])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _metric_tables(metrics: list) -> list[str]:
    out = []
    for title, group in _groups(metrics, "metrics"):
        rows = [(m["name"], _params_text(m["parameters"]), ", ".join(m["aliases"]) or "-",
                 m["summary"]) for m in group]
        out.append(f"{title}\n\n" + _table(("NAME", "PARAMETERS", "ALIASES", "DESCRIPTION"), rows))
    if any(v is None for m in metrics for v in m["parameters"].values()):
        out[-1] += "\n\nA parameter without =default must be given (--param NAME=VALUE)."
    return out or ["No metrics."]


def _operand_text(o: dict) -> str:
    """``alpha (scalar) = 0.85``: an operand, its kind and its default."""
    return f"{o['name']} ({o['kind']})" + (f" = {o['default']:g}" if "default" in o else "")


def _graph_tables(graphs: list) -> list[str]:
    out = []
    for title, group in _groups(graphs, "graph definitions"):
        rows = [(g["name"], ", ".join(_operand_text(o) for o in g["operands"]),
                 g["result"], g["summary"]) for g in group]
        out.append(f"{title}\n\n" + _table(("NAME", "OPERANDS", "RESULT", "DESCRIPTION"), rows))
    return out or ["No graph definitions."]


def _groups(entries: list, what: str):
    """(title, entries) for the built-in ones, then those of each file."""
    use = ("gbdist knn/pairwise --metric NAME; gbdist explain NAME" if what == "metrics" else
           "gbdist run NAME FILE; gbdist explain NAME")
    builtin = [e for e in entries if not e["user"]]
    if builtin:
        yield f"Built-in {what} ({len(builtin)}; {use})", builtin
    files = list(dict.fromkeys(e["source"] for e in entries if e["user"]))
    for f in files:
        group = [e for e in entries if e["user"] and e["source"] == f]
        yield f"User {what} from {f} ({len(group)})", group
