"""How the scatter strategy's column-tile width trades occupancy for re-walks (issue 8).

The scatter kernel keeps one output row's tile of accumulators in shared memory. With
float64 accumulators a full Newsgroups row (18,846 columns) takes 147 KiB: one block per
SM. Narrower tiles fit more blocks per SM but walk A's row once per tile. This probe times
the forced scatter strategy, float32 and float64 accumulation, for several caps on the
accumulator bytes per block, each result checked against the uncapped one first.

    python benchmarks/scatter_tiles_probe.py --data-dir .bench_data --json out.json
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

CAPS_KIB = (None, 0, 112, 74, 56, 37)  # None: the occupancy rule; 0: the device's limit


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=".bench_data")
    ap.add_argument("--datasets", default="newsgroups,tabula_muris")
    ap.add_argument("--metrics", default="cosine,euclidean,manhattan")
    ap.add_argument("--queries", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    import cupy
    import cupyx.scipy.sparse as cps
    from gbdist.backends.cuda import accumulate, strategies
    rows = []
    print(f"{'data set':<13} {'metric':<10} {'mode':<8} " + " ".join(f"{'auto' if c is None else c or 'max':>7}" for c in CAPS_KIB)
          + "  (ms; cap KiB)")
    for name in args.datasets.split(","):
        X = datasets.load(name, args.data_dir)[0].astype(np.float32)
        Qg, Xg = cps.csr_matrix(X[: args.queries]), cps.csr_matrix(X)
        for metric in args.metrics.split(","):
            for mode in ("float32", "float64"):
                times, ref = {}, None
                for cap in CAPS_KIB:
                    strategies.SCATTER_SMEM_CAP = None if cap is None else cap * 1024
                    def call():
                        with accumulate(mode):
                            return gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda",
                                                         strategy="scatter")
                    try:
                        D = call()
                    except Exception as e:  # noqa: BLE001 - report and go on
                        times[cap] = None
                        print(f"  {name} {metric} {mode} cap {cap}: {type(e).__name__}: {e}")
                        continue
                    if ref is None:
                        ref = D
                    diff = float(cupy.max(cupy.abs(D - ref)))
                    if diff > 1e-5 * float(cupy.nanmax(cupy.abs(ref))):
                        print(f"  {name} {metric} {mode} cap {cap}: differs by {diff:.3g}")
                    times[cap] = peers.timeit_cuda(call, args.repeats, 2)
                    cupy.get_default_memory_pool().free_all_blocks()
                strategies.SCATTER_SMEM_CAP = None
                rows.append({"dataset": name, "metric": metric, "mode": mode, "queries": args.queries,
                             "times_ms": {str(c): t for c, t in times.items()}})
                print(f"{name:<13} {metric:<10} {mode:<8} " + " ".join(
                    f"{times[c]:7.2f}" if times[c] is not None else "      -" for c in CAPS_KIB), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
