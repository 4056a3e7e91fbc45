"""Per-call host-side overhead of the CUDA path, phase by phase (ms per call).

Each phase function (validation, conditioning, the exact d(a, a) pass, the result
repair) is wrapped with a timer bracketed by device syncs; the rest of a call
(kernels, binding) is "other". Data: float32 on the device, the first --queries rows
against all rows.

    python benchmarks/overhead.py --data-dir .bench_data [--repeats 20]
"""
from __future__ import annotations

import argparse
import functools
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

PHASES = (("gbdist.backends.rows", "apply_self_value"), ("gbdist.runtime.bind", "_device_csr"),
          ("gbdist.backends.rows", "condition_rows"), ("gbdist.runtime.direct", "Repair.__call__"))


def _wrap(times: dict):
    """Replace each phase function by a synchronised timer (the callers' module globals)."""
    import importlib

    import cupy
    import gbdist.runtime as runtime
    for modname, phase in PHASES:
        mod = importlib.import_module(modname)
        *owner, fname = phase.split(".", 1) if "." in phase else (phase,)
        if owner:  # a method: wrapped on its class
            mod = getattr(mod, owner[0])
        fn = getattr(mod, fname)

        def timed(*a, _fn=fn, _name=phase, **k):
            cupy.cuda.runtime.deviceSynchronize()
            t0 = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                cupy.cuda.runtime.deviceSynchronize()
                times[_name] += time.perf_counter() - t0

        setattr(mod, fname, functools.wraps(fn)(timed))
    return runtime  # every caller reaches the phases through their module (or class)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=".bench_data")
    ap.add_argument("--datasets", default="movielens,newsgroups")
    ap.add_argument("--metrics", default="cosine,manhattan")
    ap.add_argument("--queries", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args(argv)

    import cupy
    import cupyx.scipy.sparse as cps

    import gbdist as gb
    from benchmarks.datasets import load
    times: dict = defaultdict(float)
    _wrap(times)
    dev = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"device: {dev}; CuPy {cupy.__version__}; ms per call, each phase bracketed by syncs")
    head = f"{'data':<11} {'metric':<10} {'total':>7} " + " ".join(f"{n:>17}" for _, n in PHASES) + \
        f" {'other':>7}"
    print(head)
    for name in args.datasets.split(","):
        X, _ = load(name, args.data_dir)
        X = X.astype(np.float32)
        Xg = cps.csr_matrix(X)
        Qg = cps.csr_matrix(X[:min(args.queries, X.shape[0])])
        for metric in args.metrics.split(","):
            for _ in range(2):  # compile, caches
                gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda")
            cupy.cuda.runtime.deviceSynchronize()
            times.clear()
            t0 = time.perf_counter()
            for _ in range(args.repeats):
                gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda")
            cupy.cuda.runtime.deviceSynchronize()
            total = (time.perf_counter() - t0) / args.repeats * 1e3
            per = {n: times[n] / args.repeats * 1e3 for _, n in PHASES}
            other = total - sum(per.values())
            print(f"{name:<11} {metric:<10} {total:7.2f} " +
                  " ".join(f"{per[n]:17.2f}" for _, n in PHASES) + f" {other:7.2f}")
            cupy.get_default_memory_pool().free_all_blocks()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
