"""The main job on generated data: distances under several metrics over a
power-law sparse matrix, with the compiler's decisions and the timings."""
from __future__ import annotations

import argparse
import sys
import time

from ..version import __version__
from .base import add_progress_options, progress


def powerlaw_matrix(n_rows: int, n_cols: int, nnz: int, seed: int = 0, exponent: float = 1.1):
    """Rows and columns with Zipf-like degrees; ratings-like values in (0, 5]."""
    import numpy as np
    import scipy.sparse as sps

    rng = np.random.default_rng(seed)
    row_w = 1.0 / np.arange(1, n_rows + 1) ** (exponent - 0.4)
    col_w = 1.0 / np.arange(1, n_cols + 1) ** exponent
    rows = rng.choice(n_rows, size=nnz, p=row_w / row_w.sum())
    cols = rng.choice(n_cols, size=nnz, p=col_w / col_w.sum())
    vals = rng.integers(1, 11, size=nnz).astype(np.float32) / 2
    m = sps.csr_matrix((vals, (rng.permutation(n_rows)[rows], cols)), shape=(n_rows, n_cols))
    m.sum_duplicates()
    m.data = np.minimum(m.data, 5.0)
    return m


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The demo's options (shared by `gbdist demo` and `python -m gbdist.cli.demo`)."""
    p.add_argument("--rows", type=int, default=4000, help="rows of the generated matrix (default 4000)")
    p.add_argument("--cols", type=int, default=3000, help="columns of the generated matrix (default 3000)")
    p.add_argument("--nnz", type=int, default=60000,
                   help="stored entries of the generated matrix, power-law distributed (default 60000)")
    p.add_argument("--queries", type=int, default=500,
                   help="rows used as queries in the pairwise stage (default 500)")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "compiled", "cuda"),
                   help="where to compute: cpu, compiled (Numba), cuda, or auto (cuda when "
                        "a GPU and CuPy are available; default)")
    p.add_argument("--metrics", default="cosine,euclidean,manhattan,chebyshev,canberra,jensenshannon",
                   help="comma-separated metrics timed in the pairwise stage (default cosine, "
                        "euclidean, manhattan, chebyshev, canberra, jensenshannon)")
    p.add_argument("-k", type=int, default=10,
                   help="neighbours per row in the kNN stage (default 10)")
    p.add_argument("--knn-metrics", default="cosine,manhattan",
                   help="comma-separated metrics timed in the kNN stage (default cosine, manhattan)")
    add_progress_options(p)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="gbdist demo", description=__doc__)
    p.add_argument("--version", action="version", version=f"gbdist {__version__}",
                   help="print the gbdist version and exit")
    add_arguments(p)
    return run(p.parse_args(argv))


def run(args) -> int:
    import numpy as np

    from ..runtime import get_backend

    X = powerlaw_matrix(args.rows, args.cols, args.nnz)
    deg = np.diff(X.indptr)
    Q = X[: args.queries]
    print(f"data     power-law CSR {X.shape[0]} x {X.shape[1]}, {X.nnz} nonzeros, "
          f"row degree max {deg.max()} / median {int(np.median(deg))}")
    print(f"work     distances of {Q.shape[0]} query rows against all {X.shape[0]} rows")
    note = ""
    if args.backend == "auto":
        from ..runtime.core import auto_backend_note
        note = f"  ({auto_backend_note()})"
    print(f"backend  {get_backend(args.backend).name}{note}\n")
    print(f"{'metric':<15} {'strategy':<36} {'rank':>4} {'time (s)':>9} {'mean dist':>10}")
    metrics, knn_metrics = args.metrics.split(","), args.knn_metrics.split(",")
    with progress(args, len(metrics) + len(knn_metrics), "metrics", "demo") as bar:
        _pairwise_stage(X, Q, metrics, args, bar)
        _knn_stage(X, args, knn_metrics, bar)
    print("\n`gbdist explain <metric>` shows each decision with its proofs.")
    return 0


def _pairwise_stage(X, Q, metrics, args, bar) -> None:
    """Distances of the query rows against all rows, one metric at a time."""
    import numpy as np
    import scipy.sparse as sps

    from ..pairwise import explain, pairwise_distances

    for name in metrics:
        bar.set_postfix_str(f"pairwise {name}")
        ex = explain(name)
        strat = ", ".join(p.strategy for p in ex.products)
        ranks = ",".join(str(p.expansion_rank) for p in ex.products if p.expansion_rank) or "-"
        t0 = time.perf_counter()
        data = X if name != "jensenshannon" else sps.diags(1 / np.maximum(X.sum(1).A1, 1e-30)) @ X
        D = pairwise_distances(data[: args.queries], data, metric=name, backend=args.backend)
        dt = time.perf_counter() - t0
        D = np.asarray(D.get() if hasattr(D, "get") else D)
        bar.write(f"{name:<15} {strat:<36} {ranks:>4} {dt:>9.3f} {np.nanmean(D):>10.4f}",
                  file=sys.stdout)
        bar.update(1)


def _knn_stage(X, args, metrics, bar) -> None:
    """All-pairs kNN of the whole matrix against itself, checked on a few rows."""
    import numpy as np

    from ..neighbors import knn
    from ..pairwise import pairwise_distances

    n = X.shape[0]
    bar.write(f"\nkNN      all {n} rows against each other, k = {args.k} (self excluded), "
              "checked against brute force on 20 rows", file=sys.stdout)
    bar.write(f"{'metric':<15} {'time (s)':>9} {'pairs/s':>10} {'recall@k':>9}", file=sys.stdout)
    rng = np.random.default_rng(0)
    sample = rng.choice(n, size=min(20, n), replace=False)
    for name in metrics:
        bar.set_postfix_str(f"knn {name}")
        t0 = time.perf_counter()
        dist, idx = knn(X, k=args.k, metric=name, backend=args.backend)
        dt = time.perf_counter() - t0
        dist = np.asarray(dist.get() if hasattr(dist, "get") else dist)
        idx = np.asarray(idx.get() if hasattr(idx, "get") else idx)
        # brute force for the sampled rows: the exact k-th distance; ties count as correct
        ref = np.asarray(pairwise_distances(X[sample], X, metric=name, backend="cpu"))
        ref[np.arange(len(sample)), sample] = np.inf
        hits = 0
        for r, i in enumerate(sample):
            kth = np.sort(ref[r])[args.k - 1]
            hits += int(np.sum(ref[r, idx[i]] <= kth * (1 + 1e-6) + 1e-12))
        recall = hits / (len(sample) * args.k)
        bar.write(f"{name:<15} {dt:>9.3f} {n * (n - 1) / dt:>10.3g} {recall:>9.3f}",
                  file=sys.stdout)
        bar.update(1)


if __name__ == "__main__":
    raise SystemExit(main())
