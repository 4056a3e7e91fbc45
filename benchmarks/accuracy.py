"""float32 accuracy and its cost on the GPU (issue 8): for every named metric in
float32 on the five real data sets,

* the max error against float64 SciPy (cdist on dense copies of a sample of rows),
  relative to the row scale (tests/accuracy_cases.py says which scale per metric;
  bound 1e-6),
* whether identical rows give exactly 0 (the self-join diagonal and copies of
  index rows placed among the queries),
* the time of the distance matrix (``--queries`` rows against all rows, as in
  benchmarks/run.py) with float32 and with float64 accumulation, and the cost.

Rows are normalised to sum 1 for jensenshannon, hellinger and kl_divergence (the
probability metrics), for the reference alike.

    python benchmarks/accuracy.py --data-dir .bench_data [--metrics cosine,euclidean]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import gbdist as gb  # noqa: E402
from accuracy_cases import BOUND, max_scaled_error  # noqa: E402
from benchmarks import datasets, peers  # noqa: E402

PROBABILITY = ("jensenshannon", "hellinger", "kl_divergence")
NO_ZERO_SELF = ("inner_product", "russellrao")  # d(a, a) is not a constant


def _normalise_rows(X):
    s = np.asarray(X.sum(axis=1)).ravel()
    s[s == 0] = 1.0
    return sps.csr_matrix(sps.diags(1.0 / s) @ X, dtype=np.float32)


def check_accuracy(metric, data, args):
    """(max scaled error, identical rows exact?) on a sample: Q = rows 0..q plus copies
    of index rows, against the first ``--index-rows`` rows."""
    n = min(args.index_rows, data.shape[0])
    idx = data[:n]
    q = sps.vstack([data[: args.check_rows], idx[n - 8: n]]).tocsr()  # 8 copies of index rows
    D = gb.pairwise_distances(q, idx, metric=metric, backend=args.backend)
    err = max_scaled_error(metric, D, q.toarray(), idx.toarray())
    exact = True
    if metric not in NO_ZERO_SELF:
        copies = D[args.check_rows:, n - 8:n]
        diag = np.diagonal(copies)
        S = gb.pairwise_distances(q, metric=metric, backend=args.backend)
        sd = np.diagonal(S)
        exact = bool(((diag == 0) | np.isnan(diag)).all() and ((sd == 0) | np.isnan(sd)).all())
    return err, exact


def time_modes(metric, data, args):
    import cupy
    import cupyx.scipy.sparse as cps
    from gbdist.backends.cuda import accumulate
    Qg, Xg = cps.csr_matrix(data[: args.queries]), cps.csr_matrix(data)
    out = {}
    for mode in ("float32", "auto"):
        with accumulate(mode):
            out[mode] = peers.timeit_cuda(
                lambda: gb.pairwise_distances(Qg, Xg, metric=metric, backend="cuda"), args.repeats, 2)
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=".bench_data")
    ap.add_argument("--datasets", default=",".join(datasets.REAL_NAMES))
    ap.add_argument("--metrics", default=",".join(sorted(gb.metric_names())))
    ap.add_argument("--queries", type=int, default=2048, help="query rows of the timed run")
    ap.add_argument("--check-rows", type=int, default=24, help="query rows of the accuracy check")
    ap.add_argument("--index-rows", type=int, default=256, help="index rows of the accuracy check")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--backend", default="cuda", help="cuda (default) or cpu (accuracy only)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows = []
    print(f"{'data set':<13} {'metric':<26} {'max err/scale':>13} {'ok':>3} {'d(a,a)=0':>8}"
          f" {'f32 acc ms':>10} {'f64 acc ms':>10} {'cost':>6}")
    for name in [d for d in args.datasets.split(",") if d]:
        X = datasets.load(name, args.data_dir)[0].astype(np.float32)
        for metric in [m for m in args.metrics.split(",") if m]:
            data = _normalise_rows(X) if metric in PROBABILITY else X
            r = {"dataset": name, "metric": metric}
            try:
                r["max_err"], r["identical_exact"] = check_accuracy(metric, data, args)
                if not args.no_timing and args.backend == "cuda":
                    t = time_modes(metric, data, args)
                    r["ms_float32"], r["ms_float64"] = t["float32"], t["auto"]
                    r["cost"] = t["auto"] / t["float32"] - 1.0
            except Exception as e:  # report, never hide
                r["error"] = f"{type(e).__name__}: {e}"[:200]
            rows.append(r)
            ok = "yes" if r.get("max_err", np.inf) <= BOUND else "NO"
            f = (lambda v, s="{:10.2f}": s.format(v) if isinstance(v, float) else f"{'-':>10}")
            print(f"{name:<13} {metric:<26} {r.get('max_err', float('nan')):>13.2e} {ok:>3}"
                  f" {str(r.get('identical_exact', '-')):>8} {f(r.get('ms_float32'))} {f(r.get('ms_float64'))}"
                  f" {('%+5.0f%%' % (100 * r['cost'])) if 'cost' in r else '-':>6}"
                  + (f"  {r['error']}" if "error" in r else ""), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    bad = [r for r in rows if "error" in r or r.get("max_err", np.inf) > BOUND or not r.get("identical_exact", True)]
    costs = [r["cost"] for r in rows if "cost" in r]
    if costs:
        print(f"\nfloat64 accumulation cost: median {100 * np.median(costs):+.0f}%, "
              f"max {100 * max(costs):+.0f}% (target <= +15%)")
    print(f"{len(rows) - len(bad)} of {len(rows)} rows meet the bound with exact zeros")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
