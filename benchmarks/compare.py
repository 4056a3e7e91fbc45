"""Two runs of benchmarks/run.py side by side: gbdist's time per (data set, metric) and the ratio.

    python benchmarks/compare.py BEFORE.json AFTER.json [--labels before,after]

Prints a Markdown table (ms, after / before) and the median ratio. Only meaningful for runs
on the same kind of machine; each run's own peers (cuSPARSE, torch) show how much the
machine itself moved between them.
"""
from __future__ import annotations

import argparse
import json
import statistics


def _rows(path: str) -> dict:
    data = json.load(open(path, encoding="utf-8"))
    rows = data["results"] if isinstance(data, dict) else data
    return {(r["dataset"], r["metric"]): r for r in rows if r.get("gbdist_ms")}


def _peer(r: dict):
    v = r.get("cusparse")
    return v.get("ms") if isinstance(v, dict) else v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--labels", default="before,after")
    args = ap.parse_args(argv)
    a_label, b_label = args.labels.split(",")
    a, b = _rows(args.before), _rows(args.after)
    print(f"| data set | metric | {a_label} ms | {b_label} ms | {b_label} / {a_label} "
          f"| cuSPARSE {a_label} | cuSPARSE {b_label} |")
    print("|---|---|---:|---:|---:|---:|---:|")
    ratios = []
    for key in a:
        if key not in b:
            continue
        ta, tb = a[key]["gbdist_ms"], b[key]["gbdist_ms"]
        ratios.append(tb / ta)
        pa, pb = _peer(a[key]), _peer(b[key])
        f = (lambda v: f"{v:.2f}" if isinstance(v, (int, float)) else "-")
        print(f"| {key[0]} | {key[1]} | {ta:.2f} | {tb:.2f} | {tb / ta:.2f} | {f(pa)} | {f(pb)} |")
    if ratios:
        print(f"\nmedian {b_label} / {a_label}: {statistics.median(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f}, {len(ratios)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
