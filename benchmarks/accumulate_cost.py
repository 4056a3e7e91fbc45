"""Where the cost of float64 accumulation comes from, strategy by strategy (issue 8).

For each data set and metric, times ``--queries`` rows against all rows on the GPU
with every CUDA strategy that can run the metric, forced (``strategy=``), and with
``strategy="auto"``, under float32 and float64 accumulation. Each timed result is
first checked against the float64 answer of the same strategy (max |diff| relative
to the largest distance, printed). The table shows, per accumulation mode, the
fastest strategy, what auto took, and the cost of float64 (auto vs auto, and best vs
best): if the best float64 strategy is within 15% of the best float32 one while auto
is not, the planner's cost model is what to fix, not the kernels.

    python benchmarks/accumulate_cost.py --data-dir .bench_data --json out.json

The two modes are timed one after the other here; benchmarks/accumulate_probe.py
interleaves them (and code-generator variants) round by round, which is what the
2026-11-24 table in docs/benchmarks.md used: on these 2-40 ms calls, drift between
two back-to-back blocks of timings is as large as the effect.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gbdist as gb  # noqa: E402
from benchmarks import datasets, peers  # noqa: E402

STRATEGIES = ("auto", "gather", "scatter", "dense", "sorted")
MODES = ("float32", "float64")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=".bench_data")
    ap.add_argument("--datasets", default="newsgroups,tabula_muris,kos,movielens,sec_names")
    ap.add_argument("--metrics", default="cosine,euclidean,manhattan,canberra,jensenshannon")
    ap.add_argument("--queries", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    import cupy
    import cupyx.scipy.sparse as cps
    from gbdist.backends.cuda import accumulate
    rows = []
    print(f"{'data set':<13} {'metric':<14} {'mode':<8} " + " ".join(f"{s:>8}" for s in STRATEGIES)
          + "   best")
    for name in args.datasets.split(","):
        X = datasets.load(name, args.data_dir)[0].astype(np.float32)
        Qg, Xg = cps.csr_matrix(X[: args.queries]), cps.csr_matrix(X)
        for metric in args.metrics.split(","):
            ref = None
            for mode in MODES:
                times, errs = {}, {}
                for strat in STRATEGIES:
                    def call():
                        with accumulate(mode):
                            return gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda",
                                                         strategy=strat)
                    try:
                        D = cupy.asnumpy(call())
                    except gb.GbdistError:
                        continue  # this strategy cannot run this metric
                    if ref is None:
                        with accumulate("float64"):
                            ref = cupy.asnumpy(gb.pairwise_distances(Qg, Xg, metric=metric,
                                                                     backend="cuda"))
                    scale = np.nanmax(np.abs(ref)) or 1.0
                    with np.errstate(invalid="ignore"):
                        errs[strat] = float(np.nanmax(np.abs(D - ref)) / scale)
                    times[strat] = peers.timeit_cuda(call, args.repeats, 2)
                    cupy.get_default_memory_pool().free_all_blocks()
                forced = {s: t for s, t in times.items() if s != "auto"}
                best = min(forced, key=forced.get) if forced else "-"
                rows.append({"dataset": name, "metric": metric, "mode": mode, "ms": times,
                             "err": errs, "best": best})
                print(f"{name:<13} {metric:<14} {mode:<8} "
                      + " ".join(f"{times[s]:8.2f}" if s in times else f"{'-':>8}" for s in STRATEGIES)
                      + f"   {best}  (max rel diff {max(errs.values()):.1e})", flush=True)
    print("\ncost of float64 accumulation (float64 / float32 - 1):")
    print(f"{'data set':<13} {'metric':<14} {'auto':>7} {'best':>7}")
    by = {(r["dataset"], r["metric"], r["mode"]): r for r in rows}
    for (name, metric, mode), r in by.items():
        if mode != "float64" or (name, metric, "float32") not in by:
            continue
        r32 = by[(name, metric, "float32")]
        auto = r["ms"].get("auto", np.nan) / r32["ms"].get("auto", np.nan) - 1
        b64 = min(v for s, v in r["ms"].items() if s != "auto")
        b32 = min(v for s, v in r32["ms"].items() if s != "auto")
        print(f"{name:<13} {metric:<14} {100 * auto:+6.0f}% {100 * (b64 / b32 - 1):+6.0f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
