"""Turn a runner JSON (benchmarks/run.py --json) into the docs table and a plot.

    python benchmarks/report.py benchmarks/results/h100-2026-11-22.json \
        --table docs/benchmark_table.md --plot docs/img/benchmark.png
"""
from __future__ import annotations

import argparse
import json
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("json")
    p.add_argument("--table")
    p.add_argument("--plot")
    a = p.parse_args(argv)
    data = json.loads(Path(a.json).read_text())
    text = table(data["results"])
    if a.table:
        Path(a.table).write_text(text + "\n")
    else:
        print(text)
    if a.plot:
        plot(data["results"], Path(a.plot))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
