"""Where float64 accumulation's extra time goes (issue 8): interleaved timing, per
CUDA strategy, of code-generator variants. A variant is ``f32`` or ``f64`` (the
accumulator type, float32 data either way), optionally followed by tags:

* ``-ieee``: IEEE double divisions in ⊗ instead of ``gb_div`` (``codegen.FAST_DIV``);
* ``-nosplit``: no float split: f of a union correction in double too
  (``codegen.FLOAT_SPLIT``);
* ``-wide``: scatter's registers not capped for full occupancy
  (``codegen.SCATTER_FULL_OCCUPANCY``);
* ``-mulf``: all of ⊗ in float (``codegen.MUL_IN_STORAGE``, an experiment, not a
  mode: it breaks the accuracy bound where a sum cancels before a square root).

Each round times ``--batch`` calls of every (variant, strategy) in turn, so drift on
the machine lands on all of them alike; the table shows medians over the rounds and
the cost of each variant against the first one (auto against auto, best against
best). Every variant's result is first compared with the float64 one (max |diff|
relative to the largest distance).

    python benchmarks/accumulate_probe.py --data-dir .bench_data --json out.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gbdist as gb  # noqa: E402
from benchmarks import datasets  # noqa: E402

CELLS = ("newsgroups:cosine,manhattan,canberra,jensenshannon;"
         "tabula_muris:cosine,manhattan,canberra,jensenshannon;"
         "sec_names:cosine,euclidean")
VARIANTS = ("f32", "f64", "f64-nosplit", "f64-ieee", "f64-wide", "f32-wide")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=".bench_data")
    ap.add_argument("--cells", default=CELLS, help="set:metric,metric;set:metric")
    ap.add_argument("--strategies", default="auto,gather,scatter")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="f32 or f64, each optionally with -ieee, -nosplit, -wide, -mulf")
    ap.add_argument("--queries", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--batch", type=int, default=3, help="calls timed together per round")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    import cupy
    import cupyx.scipy.sparse as cps
    from gbdist.backends import cuda
    from gbdist.backends.cuda import codegen

    def run(variant, strat, Qg, Xg, metric):
        tags = set(variant.split("-")[1:])
        codegen.MUL_IN_STORAGE = "mulf" in tags
        codegen.FAST_DIV = "ieee" not in tags
        codegen.SCATTER_FULL_OCCUPANCY = "wide" not in tags
        codegen.FLOAT_SPLIT = "nosplit" not in tags
        try:
            with cuda.accumulate("float32" if variant.startswith("f32") else "auto"):
                return gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda", strategy=strat)
        finally:
            codegen.MUL_IN_STORAGE = False
            codegen.FAST_DIV = True
            codegen.SCATTER_FULL_OCCUPANCY = True
            codegen.FLOAT_SPLIT = True

    variants = args.variants.split(",")
    rows = []
    for cell in args.cells.split(";"):
        name, metrics = cell.split(":")
        X = datasets.load(name, args.data_dir)[0].astype(np.float32)
        Qg, Xg = cps.csr_matrix(X[: args.queries]), cps.csr_matrix(X)
        for metric in metrics.split(","):
            ref = cupy.asnumpy(run("f64", "auto", Qg, Xg, metric))
            scale = float(np.nanmax(np.abs(ref))) or 1.0
            runs, errs = {}, {}
            for v in variants:
                for s in args.strategies.split(","):
                    try:
                        D = cupy.asnumpy(run(v, s, Qg, Xg, metric))
                    except gb.GbdistError:
                        continue
                    with np.errstate(invalid="ignore"):
                        errs[(v, s)] = float(np.nanmax(np.abs(D - ref)) / scale)
                    runs[(v, s)] = []
            # generated sources are cached per variant (the knob is part of the key)
            times = {k: [] for k in runs}
            for _ in range(args.rounds):
                for (v, s) in runs:
                    start, end = cupy.cuda.Event(), cupy.cuda.Event()
                    start.record()
                    for _ in range(args.batch):
                        run(v, s, Qg, Xg, metric)
                    end.record()
                    end.synchronize()
                    times[(v, s)].append(cupy.cuda.get_elapsed_time(start, end) / args.batch)
            med = {k: statistics.median(t) for k, t in times.items()}
            row = {"dataset": name, "metric": metric,
                   "ms": {f"{v}/{s}": med[(v, s)] for (v, s) in med},
                   "spread": {f"{v}/{s}": [min(times[(v, s)]), max(times[(v, s)])] for (v, s) in med},
                   "err": {f"{v}/{s}": errs[(v, s)] for (v, s) in errs}}
            rows.append(row)
            line = f"{name:<13} {metric:<14}"
            for v in variants:
                vs = {s: t for (vv, s), t in med.items() if vv == v}
                if vs:
                    best = min(vs, key=vs.get)
                    line += f" | {v}: auto {vs.get('auto', float('nan')):6.2f} best {vs[best]:6.2f} ({best})"
            print(line, f"| max err {max(errs.values()):.1e}", flush=True)
            cupy.get_default_memory_pool().free_all_blocks()
    print(f"\ncost against {variants[0]} (auto/auto, best/best):")
    for r in rows:
        ms = r["ms"]
        base_auto = ms.get(f"{variants[0]}/auto")
        base_best = min((t for k, t in ms.items() if k.startswith(variants[0] + "/")), default=None)
        if not base_auto:
            continue
        out = f"{r['dataset']:<13} {r['metric']:<14}"
        for v in variants[1:]:
            va = ms.get(f"{v}/auto")
            vb = min((t for k, t in ms.items() if k.startswith(v + "/")), default=None)
            if va and vb:
                out += f"  {v}: {va / base_auto - 1:+.0%} / {vb / base_best - 1:+.0%}"
        print(out)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
