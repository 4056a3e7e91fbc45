"""Tables and plots from the JSON of the distances section (``run.py distances --json``).

    python benchmarks/run.py report benchmarks/results/h100-2026-11-22.json \
        --table docs/benchmark_table.md --plot docs/img/benchmark.png
    python benchmarks/run.py report BEFORE.json --compare AFTER.json [--labels before,after]
    python benchmarks/run.py report latency-before.json --compare latency-after.json

:func:`table`: the docs table (gbdist and every peer, the ratios, the targets met).
:func:`plot`: the speed-up over each peer, per data set. :func:`compare`: two runs side by
side, gbdist's time per (data set, metric) and after / before, with each run's cuSPARSE time
(how much the machine itself moved between them); only meaningful for runs on the same kind
of machine. A latency JSON (``run.py latency --json``) gives its table, or with
``--compare`` :func:`latency_compare`: two runs' rows side by side with their targets.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

TARGETS = {"dot": 0.5, "union_naive": 0.2, "union_cosine": 2.0}
DOT, UNION = ("cosine", "euclidean"), ("manhattan", "canberra", "jensenshannon", "chebyshev")


def _num(v):
    return v if isinstance(v, (int, float)) else None


def _ratio(a, b):
    a, b = _num(a), _num(b)
    return a / b if a is not None and b else None


def table(rows: list[dict]) -> str:
    cos = {r["dataset"]: _num(r.get("gbdist_ms")) for r in rows if r["metric"] == "cosine"}
    out = ["| data set | metric | gbdist ms | cuSPARSE ms | naive ms | torch.cdist ms | sklearn ms* | "
           "gbdist/cuSPARSE | gbdist/naive | vs own cosine | target met |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]

    def f(v, d=2):
        v = _num(v)
        return "-" if v is None else f"{v:.{d}f}"

    for r in rows:
        g = r.get("gbdist_ms")
        rc, rn, ro = _ratio(g, r.get("cusparse")), _ratio(g, r.get("naive")), _ratio(g, cos.get(r["dataset"]))
        met = []
        if r["metric"] in DOT and rc is not None:
            met.append("yes" if rc <= TARGETS["dot"] else "NO (cuSPARSE)")
        if r["metric"] in UNION:
            if rn is not None:
                met.append("yes" if rn <= TARGETS["union_naive"] else "NO (naive)")
            if ro is not None:
                met.append("yes" if ro <= TARGETS["union_cosine"] else "NO (2x cosine)")
        if r["metric"] == "euclidean" and r["dataset"] == "tabula_muris" and _num(r.get("torch")):
            met.append("yes" if _ratio(g, r.get("torch")) <= 1 else "NO (torch.cdist)")
        out.append(f"| {r['dataset']} | {r['metric']} | {f(g)} | {f(r.get('cusparse'))} | {f(r.get('naive'))} | "
                   f"{f(r.get('torch'))} | {f(r.get('sklearn'), 0)} | {f(rc)} | {f(rn)} | "
                   f"{f(ro) if r['metric'] != 'cosine' else '-'} | {', '.join(met) or '-'} |")
    return "\n".join(out)


def plot(rows: list[dict], path: Path) -> None:
    """Speed-up of gbdist over each peer (peer time / gbdist time), log scale,
    with the targets drawn: 2x over cuSPARSE (0.5x its time), 5x over naive."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    sets = list(dict.fromkeys(r["dataset"] for r in rows))
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    fig, axes = plt.subplots(1, len(sets), figsize=(3.0 * len(sets), 3.4), sharey=True)
    peers_ = (("cusparse", "vs cuSPARSE", "tab:orange"), ("naive", "vs naive merge", "tab:green"),
              ("torch", "vs torch.cdist", "tab:purple"))
    for ax, ds in zip(np.atleast_1d(axes), sets):
        sub = {r["metric"]: r for r in rows if r["dataset"] == ds}
        x = np.arange(len(metrics))
        for k, (key, label, color) in enumerate(peers_):
            vals = []
            for m in metrics:
                r = sub.get(m, {})
                g, p = _num(r.get("gbdist_ms")), _num(r.get(key))
                vals.append(p / g if g and p else np.nan)
            ax.bar(x + (k - 1) * 0.27, vals, 0.27, label=label, color=color)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.axhline(2.0, color="tab:orange", lw=0.8, ls="--")
        ax.axhline(5.0, color="tab:green", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_title(ds, fontsize=9)
        ax.set_xticks(x, [m[:6] for m in metrics], rotation=60, fontsize=7)
    first = np.atleast_1d(axes)[0]
    first.set_ylabel("speed-up of gbdist (peer ms / gbdist ms)")
    first.legend(fontsize=6, loc="upper left")
    fig.suptitle("gbdist vs peers, H100, Q = 2048 rows; dashed: targets (2x cuSPARSE, 5x naive)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _rows(data) -> dict:
    rows = data["results"] if isinstance(data, dict) else data
    return {(r["dataset"], r["metric"]): r for r in rows if r.get("gbdist_ms")}


def compare(before: dict, after: dict, labels=("before", "after")) -> str:
    """Two runs' gbdist times side by side (Markdown), with the median of after / before."""
    a_label, b_label = labels
    a, b = _rows(before), _rows(after)
    out = [f"| data set | metric | {a_label} ms | {b_label} ms | {b_label} / {a_label} "
           f"| cuSPARSE {a_label} | cuSPARSE {b_label} |", "|---|---|---:|---:|---:|---:|---:|"]
    ratios = []

    def f(v):
        v = v.get("ms") if isinstance(v, dict) else v  # some runs stored {"ms": ...}
        return f"{v:.2f}" if isinstance(v, (int, float)) else "-"

    for key in a:
        if key not in b:
            continue
        ta, tb = a[key]["gbdist_ms"], b[key]["gbdist_ms"]
        ratios.append(tb / ta)
        out.append(f"| {key[0]} | {key[1]} | {ta:.2f} | {tb:.2f} | {tb / ta:.2f} | "
                   f"{f(a[key].get('cusparse'))} | {f(b[key].get('cusparse'))} |")
    if ratios:
        out.append(f"\nmedian {b_label} / {a_label}: {statistics.median(ratios):.2f} "
                   f"(min {min(ratios):.2f}, max {max(ratios):.2f}, {len(ratios)} rows)")
    return "\n".join(out)


def latency_compare(before: dict, after: dict, labels=("before", "after")) -> str:
    """Two runs of the latency section side by side (Markdown): each row's time and ratio to
    its peer in both, with the target and whether each run met it."""
    a_label, b_label = labels

    def key(r):
        return r["part"], r["case"], r["device"], r.get("peer", "-").split(" (")[0]

    def f(v, unit=""):
        if not isinstance(v, (int, float)):
            return "-"
        return (f"{v:,.0f}" if v >= 100 else f"{v:.3g}") + unit

    met = {True: "yes", False: "**no**", None: "-"}
    b = {key(r): r for r in after["rows"]}
    out = [f"| part | case | device | {a_label} ms | {b_label} ms | peer | {a_label} peer ms | "
           f"{b_label} peer ms | {a_label} ratio | {b_label} ratio | target | met "
           f"({a_label} / {b_label}) |",
           "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in before["rows"]:
        q = b.get(key(r), {})
        target = r.get("target") or q.get("target")
        out.append(f"| {r['part']} | {r['case']} | {r['device']} | {f(r.get('ms'))} | "
                   f"{f(q.get('ms'))} | {r.get('peer', '-')} | {f(r.get('peer_ms'))} | "
                   f"{f(q.get('peer_ms'))} | {f(r.get('ratio'), '×')} | {f(q.get('ratio'), '×')} | "
                   f"{target or '-'} | "
                   + (f"{met[r.get('met')]} / {met[q.get('met')]}" if target else "-") + " |")
    return "\n".join(out)


def add_arguments(p) -> None:
    p.add_argument("results", help="a JSON written by run.py distances (or latency) --json")
    p.add_argument("--table", help="write the table here (default: print it)")
    p.add_argument("--plot", help="write the plot here (needs matplotlib)")
    p.add_argument("--compare", metavar="AFTER", help="compare with this later run instead")
    p.add_argument("--labels", default="before,after", help="--compare: the two column labels")


def run(args) -> None:
    data = json.loads(Path(args.results).read_text())
    labels = tuple(args.labels.split(","))
    if isinstance(data, dict) and data.get("section") == "latency":
        from benchmarks.latency import table as latency_table
        print(latency_compare(data, json.loads(Path(args.compare).read_text()), labels)
              if args.compare else latency_table(data["rows"]))
        return None
    if args.compare:
        print(compare(data, json.loads(Path(args.compare).read_text()), labels))
        return None
    text = table(data["results"])
    if args.table:
        Path(args.table).write_text(text + "\n")
    else:
        print(text)
    if args.plot:
        plot(data["results"], Path(args.plot))
    return None
